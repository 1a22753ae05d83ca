/*
 * A test-only PKCS#11 module that wraps a real one (SoftHSM) and gives its tokens what SoftHSM cannot have: a keypad
 * and a slot a token can be pulled from. Every call goes to the module TOKENPIN_WRAP_INNER names, except:
 *
 * - TOKENPIN_WRAP_KEYPAD=FILE: the token has a protected authentication path (CKF_PROTECTED_AUTHENTICATION_PATH).
 *   C_Login must come without a PIN (one sent is CKR_ARGUMENTS_BAD: a PIN must not cross the host); the PIN
 *   "typed on the keypad" is the first line of FILE, which is taken from it, and goes to the inner module as a
 *   pinpad reader sends it to its card. A line CANCEL is CKR_FUNCTION_CANCELED (nothing reaches the token).
 * - TOKENPIN_WRAP_PRESENT=FILE: the token is in its slot only while FILE exists (CKF_TOKEN_PRESENT, C_GetSlotList
 *   with tokenPresent, C_GetTokenInfo CKR_TOKEN_NOT_PRESENT and CKR_DEVICE_REMOVED for sessions otherwise).
 * - TOKENPIN_WRAP_EVENTS=1: C_WaitForSlotEvent(CKF_DONT_BLOCK) reports a slot once after each change of presence
 *   (as OpenSC does); otherwise it is not supported (as in SoftHSM).
 *
 * Built by the tests with `cc -shared -fPIC` against p11-kit's pkcs11.h; never installed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <p11-kit/pkcs11.h>

static CK_FUNCTION_LIST *inner = NULL;
static CK_FUNCTION_LIST functions;

static int present(void) {
    const char *marker = getenv("TOKENPIN_WRAP_PRESENT");
    return marker == NULL || access(marker, F_OK) == 0;
}

/* The next keypad entry: the first line of the keypad file, removed from it. Empty when there is none. */
static void keypad_entry(const char *path, char *entry, size_t size) {
    entry[0] = '\0';
    FILE *file = fopen(path, "r");
    if (file == NULL) return;
    char rest[4096];
    if (fgets(entry, (int) size, file) == NULL) entry[0] = '\0';
    entry[strcspn(entry, "\n")] = '\0';
    size_t kept = fread(rest, 1, sizeof rest, file);
    fclose(file);
    file = fopen(path, "w");
    if (file == NULL) return;
    fwrite(rest, 1, kept, file);
    fclose(file);
}

static CK_RV wrap_GetSlotList(CK_BBOOL token_present, CK_SLOT_ID *list, CK_ULONG *count) {
    if (token_present && !present()) {
        *count = 0;
        return CKR_OK;
    }
    return inner->C_GetSlotList(token_present, list, count);
}

static CK_RV wrap_GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO *info) {
    CK_RV rv = inner->C_GetSlotInfo(slot, info);
    if (rv == CKR_OK) {
        info->flags |= CKF_REMOVABLE_DEVICE;
        if (!present()) info->flags &= ~(CK_FLAGS) CKF_TOKEN_PRESENT;
    }
    return rv;
}

static CK_RV wrap_GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO *info) {
    if (!present()) return CKR_TOKEN_NOT_PRESENT;
    CK_RV rv = inner->C_GetTokenInfo(slot, info);
    if (rv == CKR_OK && getenv("TOKENPIN_WRAP_KEYPAD") != NULL) info->flags |= CKF_PROTECTED_AUTHENTICATION_PATH;
    return rv;
}

static CK_RV wrap_OpenSession(CK_SLOT_ID slot, CK_FLAGS flags, void *app, CK_NOTIFY notify, CK_SESSION_HANDLE *s) {
    if (!present()) return CKR_TOKEN_NOT_PRESENT;
    return inner->C_OpenSession(slot, flags, app, notify, s);
}

static CK_RV wrap_Login(CK_SESSION_HANDLE session, CK_USER_TYPE user, CK_UTF8CHAR *pin, CK_ULONG length) {
    if (!present()) return CKR_DEVICE_REMOVED;
    const char *keypad = getenv("TOKENPIN_WRAP_KEYPAD");
    if (keypad == NULL) return inner->C_Login(session, user, pin, length);
    if (pin != NULL || length != 0) return CKR_ARGUMENTS_BAD;
    char entry[128];
    keypad_entry(keypad, entry, sizeof entry);
    if (strcmp(entry, "CANCEL") == 0) return CKR_FUNCTION_CANCELED;
    return inner->C_Login(session, user, (CK_UTF8CHAR *) entry, (CK_ULONG) strlen(entry));
}

static CK_RV wrap_WaitForSlotEvent(CK_FLAGS flags, CK_SLOT_ID *slot, void *reserved) {
    static int last = -1;
    (void) reserved;
    if (getenv("TOKENPIN_WRAP_EVENTS") == NULL || !(flags & CKF_DONT_BLOCK)) return CKR_FUNCTION_NOT_SUPPORTED;
    int now = present();
    if (now == last) return CKR_NO_EVENT;
    last = now;
    CK_ULONG count = 1;
    CK_SLOT_ID first = 0;
    if (inner->C_GetSlotList(CK_FALSE, &first, &count) != CKR_OK && count == 0) return CKR_NO_EVENT;
    *slot = first;
    return CKR_OK;
}

CK_RV C_GetFunctionList(CK_FUNCTION_LIST **list) {
    if (inner == NULL) {
        const char *path = getenv("TOKENPIN_WRAP_INNER");
        void *library = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        CK_C_GetFunctionList get = library != NULL ? (CK_C_GetFunctionList) dlsym(library, "C_GetFunctionList") : NULL;
        if (get == NULL || get(&inner) != CKR_OK || inner == NULL) return CKR_GENERAL_ERROR;
        functions = *inner;
        functions.C_GetSlotList = wrap_GetSlotList;
        functions.C_GetSlotInfo = wrap_GetSlotInfo;
        functions.C_GetTokenInfo = wrap_GetTokenInfo;
        functions.C_OpenSession = wrap_OpenSession;
        functions.C_Login = wrap_Login;
        functions.C_WaitForSlotEvent = wrap_WaitForSlotEvent;
    }
    *list = &functions;
    return CKR_OK;
}
