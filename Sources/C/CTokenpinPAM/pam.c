// The login-password check tokenpind runs before a first way in (enrol, import): libpam with a conversation
// that asks the caller once for the password. Plain C because PAM hands out C callbacks and frees replies with free().
#define _GNU_SOURCE
#include "CTokenpinPAM.h"

#include <security/pam_appl.h>
#include <stdlib.h>
#include <string.h>

struct conversation {
    tokenpin_password_reader read;
    void *context;
    int asked;
};

static void drop_replies(struct pam_response *replies, int count) {
    for (int i = 0; i < count; i++) {
        if (replies[i].resp != NULL) {
            explicit_bzero(replies[i].resp, strlen(replies[i].resp));
            free(replies[i].resp);
        }
    }
    free(replies);
}

static int converse(int count, const struct pam_message **messages, struct pam_response **result, void *data) {
    struct conversation *conversation = data;
    if (count <= 0 || count > PAM_MAX_NUM_MSG || messages == NULL || result == NULL) return PAM_CONV_ERR;
    struct pam_response *replies = calloc((size_t)count, sizeof *replies);
    if (replies == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        switch (messages[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON: {
            // One password per check: a module asking again (a second factor, a new password) is not ours to answer.
            if (conversation->asked++ > 0) goto fail;
            char buffer[PAM_MAX_RESP_SIZE];
            int length = conversation->read(conversation->context, buffer, sizeof buffer - 1);
            if (length < 0 || (size_t)length >= sizeof buffer || memchr(buffer, 0, (size_t)length) != NULL) {
                explicit_bzero(buffer, sizeof buffer);
                goto fail;
            }
            buffer[length] = 0;
            replies[i].resp = strdup(buffer);
            explicit_bzero(buffer, sizeof buffer);
            if (replies[i].resp == NULL) goto fail;
            break;
        }
        case PAM_ERROR_MSG:
        case PAM_TEXT_INFO:
            break;
        default:
            goto fail;
        }
    }
    *result = replies;
    return PAM_SUCCESS;
fail:
    drop_replies(replies, count);
    return PAM_CONV_ERR;
}

int tokenpin_pam_check_password(const char *service, const char *user, tokenpin_password_reader read, void *context) {
    struct conversation conversation = {read, context, 0};
    struct pam_conv conv = {converse, &conversation};
    pam_handle_t *handle = NULL;
    int status = pam_start(service, user, &conv, &handle);
    if (status != PAM_SUCCESS) return status;
    status = pam_authenticate(handle, PAM_DISALLOW_NULL_AUTHTOK);
    if (status == PAM_SUCCESS) status = pam_acct_mgmt(handle, PAM_DISALLOW_NULL_AUTHTOK);
    pam_end(handle, status);
    return status;
}

const char *tokenpin_pam_describe(int status) { return pam_strerror(NULL, status); }

int tokenpin_pam_status_success(void) { return PAM_SUCCESS; }

int tokenpin_pam_status_conversation_error(void) { return PAM_CONV_ERR; }

int tokenpin_pam_status_is_refusal(int status) {
    switch (status) {
    case PAM_AUTH_ERR:
    case PAM_USER_UNKNOWN:
    case PAM_MAXTRIES:
    case PAM_PERM_DENIED:
    case PAM_ACCT_EXPIRED:
    case PAM_NEW_AUTHTOK_REQD:
    case PAM_CRED_INSUFFICIENT:
        return 1;
    default:
        return 0;
    }
}
