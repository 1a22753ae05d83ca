/*
 * A test-only PKCS#11 module that misbehaves on request, for tokenpin's hostile-module tests.
 *
 * One slot (1) with one token ("hostile", serial HOSTILE1, user PIN 123456) holding a P-256 key pair under
 * CKA_ID 01 whose private scalar is 1: its public key is the generator, so the honest ECDH answer to a point Q is
 * Q's own x coordinate, and the module needs no cryptography to give it. With TOKENPIN_HOSTILE=decrypt-* an RSA
 * private key (CKA_ID 02) is there too.
 *
 * TOKENPIN_HOSTILE (read at C_Initialize) picks one misbehaviour; see the `mode_is` calls below. Built by
 * HostileModuleTests with `cc -shared -fPIC` against p11-kit's pkcs11.h; never installed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <p11-kit/pkcs11.h>

static char mode[64] = "honest";
static int logged_in = 0;
static int locked = 0;
static CK_OBJECT_HANDLE found[8];
static CK_ULONG found_count = 0;
static CK_ULONG found_next = 0;
static unsigned char derived_x[32];
static int has_derived = 0;
static int decrypt_active = 0;

static int mode_is(const char *name) { return strcmp(mode, name) == 0; }

static void hang(void) {
    for (;;) pause();
}

/* A real fault, as a broken module has one (raise() could be caught and returned from). */
static void crash(void) {
    volatile int *nowhere = NULL;
    *nowhere = 1;
}

static void chatter(void) {
    if (mode_is("print-stdout")) {
        fputs("\x01\x02\x03garbage from the module on stdout\n", stdout);
        fflush(stdout);
    }
}

enum { PRIVATE_EC = 10, PUBLIC_EC = 11, PRIVATE_RSA = 20, SECRET = 30 };

static const unsigned char p256_oid[] = {0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07};
/* The P-256 generator, DER-wrapped as CKA_EC_POINT: 04 41 04 || Gx || Gy. */
static unsigned char generator_der[] = {
    0x04, 0x41, 0x04,
    0x6B, 0x17, 0xD1, 0xF2, 0xE1, 0x2C, 0x42, 0x47, 0xF8, 0xBC, 0xE6, 0xE5, 0x63, 0xA4, 0x40, 0xF2,
    0x77, 0x03, 0x7D, 0x81, 0x2D, 0xEB, 0x33, 0xA0, 0xF4, 0xA1, 0x39, 0x45, 0xD8, 0x98, 0xC2, 0x96,
    0x4F, 0xE3, 0x42, 0xE2, 0xFE, 0x1A, 0x7F, 0x9B, 0x8E, 0xE7, 0xEB, 0x4A, 0x7C, 0x0F, 0x9E, 0x16,
    0x2B, 0xCE, 0x33, 0x57, 0x6B, 0x31, 0x5E, 0xCE, 0xCB, 0xB6, 0x40, 0x68, 0x37, 0xBF, 0x51, 0xF5,
};
static const unsigned char id_ec[] = {0x01};
static const unsigned char id_rsa[] = {0x02};
static unsigned char rsa_modulus[256];
static const unsigned char rsa_exponent[] = {0x01, 0x00, 0x01};

static void pad(unsigned char *field, size_t size, const char *text) {
    memset(field, ' ', size);
    memcpy(field, text, strlen(text) < size ? strlen(text) : size);
}

static CK_RV hostile_Initialize(void *args) {
    (void) args;
    const char *wanted = getenv("TOKENPIN_HOSTILE");
    if (wanted) snprintf(mode, sizeof mode, "%s", wanted);
    if (mode_is("hang-init")) hang();
    if (mode_is("crash-init")) crash();
    if (mode_is("bad-point")) generator_der[40] ^= 0x01;
    memset(rsa_modulus, 0xC5, sizeof rsa_modulus);
    rsa_modulus[255] = 0x01;
    locked = mode_is("locked");
    return CKR_OK;
}

static CK_RV hostile_Finalize(void *reserved) {
    (void) reserved;
    if (mode_is("crash-finalize")) crash();
    return CKR_OK;
}

static CK_RV hostile_GetInfo(CK_INFO *info) {
    memset(info, 0, sizeof *info);
    info->cryptokiVersion.major = 2;
    info->cryptokiVersion.minor = 40;
    pad(info->manufacturerID, sizeof info->manufacturerID, "tokenpin tests");
    pad(info->libraryDescription, sizeof info->libraryDescription, "hostile module");
    return CKR_OK;
}

static CK_RV hostile_GetSlotList(CK_BBOOL present, CK_SLOT_ID *list, CK_ULONG *count) {
    (void) present;
    chatter();
    if (mode_is("absurd-slots")) {
        *count = (CK_ULONG) 1 << 40;
        return CKR_OK;
    }
    if (list == NULL) {
        *count = 1;
        return CKR_OK;
    }
    if (*count < 1) return CKR_BUFFER_TOO_SMALL;
    list[0] = 1;
    *count = mode_is("slot-overfill") ? 5 : 1;
    return CKR_OK;
}

static CK_RV hostile_GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO *info) {
    if (slot != 1) return CKR_SLOT_ID_INVALID;
    memset(info, 0, sizeof *info);
    pad(info->slotDescription, sizeof info->slotDescription, "hostile slot");
    pad(info->manufacturerID, sizeof info->manufacturerID, "tokenpin tests");
    info->flags = CKF_TOKEN_PRESENT | CKF_REMOVABLE_DEVICE | CKF_HW_SLOT;
    return CKR_OK;
}

static CK_RV hostile_GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO *info) {
    if (slot != 1) return CKR_SLOT_ID_INVALID;
    memset(info, 0, sizeof *info);
    pad(info->label, sizeof info->label, "hostile");
    pad(info->manufacturerID, sizeof info->manufacturerID, "tokenpin tests");
    pad(info->model, sizeof info->model, "hostile");
    pad(info->serialNumber, sizeof info->serialNumber, "HOSTILE1");
    info->flags = CKF_LOGIN_REQUIRED | CKF_USER_PIN_INITIALIZED | CKF_TOKEN_INITIALIZED;
    if (locked) info->flags |= CKF_USER_PIN_LOCKED;
    info->ulMinPinLen = 4;
    info->ulMaxPinLen = 64;
    return CKR_OK;
}

static CK_RV hostile_GetMechanismList(CK_SLOT_ID slot, CK_MECHANISM_TYPE *list, CK_ULONG *count) {
    (void) slot;
    if (list == NULL) {
        *count = 2;
        return CKR_OK;
    }
    if (*count < 2) return CKR_BUFFER_TOO_SMALL;
    list[0] = CKM_ECDH1_DERIVE;
    list[1] = CKM_RSA_PKCS;
    *count = 2;
    return CKR_OK;
}

static CK_RV hostile_OpenSession(CK_SLOT_ID slot, CK_FLAGS flags, void *app, CK_NOTIFY notify, CK_SESSION_HANDLE *session) {
    (void) flags; (void) app; (void) notify;
    if (slot != 1) return CKR_SLOT_ID_INVALID;
    *session = 7;
    return CKR_OK;
}

static CK_RV hostile_CloseSession(CK_SESSION_HANDLE session) {
    (void) session;
    return CKR_OK;
}

static CK_RV hostile_Login(CK_SESSION_HANDLE session, CK_USER_TYPE user, CK_UTF8CHAR *pin, CK_ULONG length) {
    (void) session; (void) user;
    chatter();
    if (mode_is("hang-login")) hang();
    if (mode_is("crash-login")) crash();
    if (locked) return CKR_PIN_LOCKED;
    if (pin == NULL || length != 6 || memcmp(pin, "123456", 6) != 0) return CKR_PIN_INCORRECT;
    logged_in = 1;
    return CKR_OK;
}

static CK_RV hostile_Logout(CK_SESSION_HANDLE session) {
    (void) session;
    logged_in = 0;
    return CKR_OK;
}

static CK_RV hostile_SetPIN(CK_SESSION_HANDLE session, CK_UTF8CHAR *old, CK_ULONG old_length, CK_UTF8CHAR *new_pin,
                      CK_ULONG new_length) {
    (void) session; (void) new_pin; (void) new_length;
    if (old == NULL || old_length != 6 || memcmp(old, "123456", 6) != 0) return CKR_PIN_INCORRECT;
    return CKR_OK;
}

static int attribute_is(const CK_ATTRIBUTE *template, CK_ULONG count, CK_ATTRIBUTE_TYPE type, CK_ULONG value) {
    for (CK_ULONG i = 0; i < count; i++) {
        if (template[i].type != type) continue;
        if (template[i].ulValueLen != sizeof(CK_ULONG)) return 0;
        CK_ULONG got;
        memcpy(&got, template[i].pValue, sizeof got);
        return got == value;
    }
    return -1;  /* not in the template */
}

static CK_RV hostile_FindObjectsInit(CK_SESSION_HANDLE session, CK_ATTRIBUTE *template, CK_ULONG count) {
    (void) session;
    found_count = 0;
    found_next = 0;
    int private_class = attribute_is(template, count, CKA_CLASS, CKO_PRIVATE_KEY);
    int public_class = attribute_is(template, count, CKA_CLASS, CKO_PUBLIC_KEY);
    int ec = attribute_is(template, count, CKA_KEY_TYPE, CKK_EC);
    int rsa = attribute_is(template, count, CKA_KEY_TYPE, CKK_RSA);
    if (private_class != 0 && ec != 0) found[found_count++] = PRIVATE_EC;
    if (public_class != 0 && ec != 0 && private_class != 1) found[found_count++] = PUBLIC_EC;
    if (strncmp(mode, "decrypt-", 8) == 0 && private_class != 0 && rsa != 0) found[found_count++] = PRIVATE_RSA;
    return CKR_OK;
}

static CK_RV hostile_FindObjects(CK_SESSION_HANDLE session, CK_OBJECT_HANDLE *objects, CK_ULONG max, CK_ULONG *count) {
    (void) session;
    if (mode_is("find-overfill")) {
        *count = max + 100;
        return CKR_OK;
    }
    CK_ULONG n = 0;
    while (found_next < found_count && n < max) objects[n++] = found[found_next++];
    *count = n;
    return CKR_OK;
}

static CK_RV hostile_FindObjectsFinal(CK_SESSION_HANDLE session) {
    (void) session;
    return CKR_OK;
}

/* Copies `value` into an attribute as PKCS#11 2.40 §5.7 says: the length alone when there is no buffer. */
static CK_RV put(CK_ATTRIBUTE *attribute, const void *value, CK_ULONG length) {
    if (attribute->pValue == NULL) {
        attribute->ulValueLen = length;
        return CKR_OK;
    }
    if (attribute->ulValueLen < length) {
        attribute->ulValueLen = (CK_ULONG) -1;
        return CKR_BUFFER_TOO_SMALL;
    }
    memcpy(attribute->pValue, value, length);
    attribute->ulValueLen = length;
    return CKR_OK;
}

static CK_RV hostile_GetAttributeValue(CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, CK_ATTRIBUTE *template,
                                 CK_ULONG count) {
    (void) session;
    CK_RV result = CKR_OK;
    static const CK_BBOOL yes = CK_TRUE;
    CK_ULONG ec = CKK_EC, rsa = CKK_RSA;
    for (CK_ULONG i = 0; i < count; i++) {
        CK_ATTRIBUTE *a = &template[i];
        CK_RV r = CKR_OK;
        int missing = 0;
        switch (a->type) {
        case CKA_KEY_TYPE:
            if (object == PRIVATE_RSA) r = put(a, &rsa, sizeof rsa);
            else if (object == PRIVATE_EC || object == PUBLIC_EC) r = put(a, &ec, sizeof ec);
            else missing = 1;
            break;
        case CKA_ID:
            if (object == PRIVATE_RSA) r = put(a, id_rsa, sizeof id_rsa);
            else if (object == PRIVATE_EC || object == PUBLIC_EC) r = put(a, id_ec, sizeof id_ec);
            else missing = 1;
            break;
        case CKA_LABEL:
            r = put(a, "hostile key", 11);
            break;
        case CKA_DERIVE:
            if (object == PRIVATE_EC) r = put(a, &yes, 1); else missing = 1;
            break;
        case CKA_DECRYPT:
            if (object == PRIVATE_RSA) r = put(a, &yes, 1); else missing = 1;
            break;
        case CKA_EC_PARAMS:
            if (object == PRIVATE_EC || object == PUBLIC_EC) r = put(a, p256_oid, sizeof p256_oid); else missing = 1;
            break;
        case CKA_EC_POINT:
            if (object != PUBLIC_EC) { missing = 1; break; }
            if (mode_is("long-attribute") && a->pValue == NULL) { a->ulValueLen = (CK_ULONG) 1 << 30; break; }
            r = put(a, generator_der, sizeof generator_der);
            if (mode_is("attribute-grows") && a->pValue != NULL) a->ulValueLen = 4096;
            break;
        case CKA_MODULUS:
            if (object == PRIVATE_RSA) r = put(a, rsa_modulus, sizeof rsa_modulus); else missing = 1;
            break;
        case CKA_PUBLIC_EXPONENT:
            if (object == PRIVATE_RSA) r = put(a, rsa_exponent, sizeof rsa_exponent); else missing = 1;
            break;
        case CKA_VALUE: {
            if (object != SECRET || !has_derived) { missing = 1; break; }
            unsigned char value[33];
            memcpy(value, derived_x, 32);
            value[32] = 0xAA;
            CK_ULONG length = 32;
            if (mode_is("short-secret")) length = 31;
            if (mode_is("long-secret") && a->pValue != NULL) {
                /* Claims more than the buffer it was given holds. */
                memcpy(a->pValue, value, a->ulValueLen);
                a->ulValueLen = 33;
                break;
            }
            if (mode_is("other-secret")) value[0] ^= 0x5A;
            r = put(a, value, length);
            break;
        }
        default:
            missing = 1;
        }
        if (missing) {
            a->ulValueLen = (CK_ULONG) -1;
            result = CKR_ATTRIBUTE_TYPE_INVALID;
        } else if (r != CKR_OK) {
            result = r;
        }
    }
    return result;
}

static CK_RV hostile_DeriveKey(CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, CK_OBJECT_HANDLE base,
                         CK_ATTRIBUTE *template, CK_ULONG count, CK_OBJECT_HANDLE *key) {
    (void) session; (void) template; (void) count;
    chatter();
    if (mode_is("crash-derive")) crash();
    if (mode_is("hang-derive")) hang();
    if (!logged_in) return CKR_USER_NOT_LOGGED_IN;
    if (base != PRIVATE_EC || mechanism->mechanism != CKM_ECDH1_DERIVE) return CKR_KEY_HANDLE_INVALID;
    if (mechanism->ulParameterLen != sizeof(CK_ECDH1_DERIVE_PARAMS)) return CKR_MECHANISM_PARAM_INVALID;
    CK_ECDH1_DERIVE_PARAMS *parameters = mechanism->pParameter;
    if (parameters->kdf != CKD_NULL || parameters->ulPublicDataLen != 65 || parameters->pPublicData[0] != 0x04) {
        return CKR_MECHANISM_PARAM_INVALID;
    }
    /* The private scalar is 1: the shared point is the peer's, its x coordinate the secret. */
    memcpy(derived_x, parameters->pPublicData + 1, 32);
    has_derived = 1;
    *key = SECRET;
    return CKR_OK;
}

static CK_RV hostile_DestroyObject(CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object) {
    (void) session;
    if (object == SECRET) has_derived = 0;
    return CKR_OK;
}

static CK_RV hostile_DecryptInit(CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, CK_OBJECT_HANDLE key) {
    (void) session; (void) mechanism;
    if (!logged_in) return CKR_USER_NOT_LOGGED_IN;
    if (key != PRIVATE_RSA) return CKR_KEY_HANDLE_INVALID;
    decrypt_active = 1;
    return CKR_OK;
}

static CK_RV hostile_Decrypt(CK_SESSION_HANDLE session, CK_BYTE *input, CK_ULONG input_length, CK_BYTE *output,
                       CK_ULONG *output_length) {
    (void) session; (void) input; (void) input_length;
    if (!decrypt_active) return CKR_OPERATION_NOT_INITIALIZED;
    decrypt_active = 0;
    if (mode_is("decrypt-overflow")) {
        *output_length = *output_length + 1000;
        return CKR_OK;
    }
    /* decrypt-short: a plaintext of the wrong length. */
    CK_ULONG length = mode_is("decrypt-short") ? 16 : 32;
    if (output != NULL) memset(output, 0x42, length);
    *output_length = length;
    return CKR_OK;
}

static CK_FUNCTION_LIST functions = {
    .version = {2, 40},
    .C_Initialize = hostile_Initialize,
    .C_Finalize = hostile_Finalize,
    .C_GetInfo = hostile_GetInfo,
    .C_GetSlotList = hostile_GetSlotList,
    .C_GetSlotInfo = hostile_GetSlotInfo,
    .C_GetTokenInfo = hostile_GetTokenInfo,
    .C_GetMechanismList = hostile_GetMechanismList,
    .C_OpenSession = hostile_OpenSession,
    .C_CloseSession = hostile_CloseSession,
    .C_Login = hostile_Login,
    .C_Logout = hostile_Logout,
    .C_SetPIN = hostile_SetPIN,
    .C_FindObjectsInit = hostile_FindObjectsInit,
    .C_FindObjects = hostile_FindObjects,
    .C_FindObjectsFinal = hostile_FindObjectsFinal,
    .C_GetAttributeValue = hostile_GetAttributeValue,
    .C_DeriveKey = hostile_DeriveKey,
    .C_DestroyObject = hostile_DestroyObject,
    .C_DecryptInit = hostile_DecryptInit,
    .C_Decrypt = hostile_Decrypt,
};

CK_RV C_GetFunctionList(CK_FUNCTION_LIST **list) {
    *list = &functions;
    return CKR_OK;
}
