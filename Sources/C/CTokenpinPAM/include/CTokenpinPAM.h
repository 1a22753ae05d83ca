#ifndef CTOKENPIN_PAM_H
#define CTOKENPIN_PAM_H

#include <stddef.h>

/// Asks for the password: writes at most `size` bytes into `buffer` and returns how many, or -1 to cancel.
/// The buffer is wiped by the caller once PAM has its copy.
typedef int (*tokenpin_password_reader)(void *context, char *buffer, size_t size);

/// Checks `user`'s password through the PAM service `service` (pam_authenticate, then pam_acct_mgmt), asking
/// for it with `read` at most once. Returns the PAM status (PAM_SUCCESS, PAM_AUTH_ERR, ...).
/// Every copy of the password this code makes is wiped before it is freed.
int tokenpin_pam_check_password(const char *service, const char *user, tokenpin_password_reader read, void *context);

/// The text PAM gives for a status.
const char *tokenpin_pam_describe(int status);

/// PAM_SUCCESS.
int tokenpin_pam_status_success(void);
/// PAM_CONV_ERR: the conversation failed (the client cancelled or went away).
int tokenpin_pam_status_conversation_error(void);
/// Whether `status` says the password or the account was refused (as opposed to a broken PAM setup).
int tokenpin_pam_status_is_refusal(int status);

#endif
