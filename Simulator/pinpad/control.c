/*
 * pinpad-control: sends one SCardControl to a reader through pcscd and prints what came back, so the end-to-end
 * suite can hand the pinpad driver the structures no real client sends (truncated, oversized, odd fields, a
 * buffer too small for the answer) and check pcscd's and the driver's answers.
 *
 * Usage: pinpad-control READER verify|modify|tlv|features|CODE [HEX] [RXLEN]
 *   verify, modify, tlv: the control code the reader lists for FEATURE_VERIFY_PIN_DIRECT (06),
 *   FEATURE_MODIFY_PIN_DIRECT (07) or FEATURE_GET_TLV_PROPERTIES (12); features: CM_IOCTL_GET_FEATURE_REQUEST;
 *   CODE: a control code in hex. HEX: the bytes to send ("-" or absent: none; "FF*8": a byte repeated).
 *   RXLEN: the answer buffer's size (default 65536).
 * Prints "rv 0xXXXXXXXX <pcsc_stringify_error>" and, on success, "answer XX XX ...". Exit status 0, or 2 for usage
 * errors and 1 when the reader cannot be reached.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reader.h>
#include <winscard.h>

#include "hex.h"

static int parse_hex(const char *text, unsigned char *out, size_t capacity, size_t *length)
{
    *length = 0;
    return strcmp(text, "-") == 0 ? 0 : hex_bytes(text, out, capacity, length);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: pinpad-control READER verify|modify|tlv|features|CODE [HEX] [RXLEN]\n");
        return 2;
    }
    static unsigned char send[70000], answer[65536];
    size_t send_length = 0;
    DWORD capacity = sizeof answer;
    if (argc >= 4 && parse_hex(argv[3], send, sizeof send, &send_length) != 0) {
        fprintf(stderr, "error: HEX is not hex bytes\n");
        return 2;
    }
    if (argc == 5)
        capacity = (DWORD)strtoul(argv[4], NULL, 10);
    if (capacity > sizeof answer)
        capacity = sizeof answer;

    SCARDCONTEXT context;
    SCARDHANDLE card = 0;
    DWORD protocol;
    LONG rv = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context);
    if (rv == SCARD_S_SUCCESS) {
        rv = SCardConnect(context, argv[1], SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card,
                          &protocol);
        if (rv == (LONG)SCARD_E_NO_SMARTCARD || rv == (LONG)SCARD_W_REMOVED_CARD)
            rv = SCardConnect(context, argv[1], SCARD_SHARE_DIRECT, 0, &card, &protocol);
    }
    if (rv != SCARD_S_SUCCESS) {
        printf("connect failed: rv 0x%08lX %s\n", (unsigned long)rv, pcsc_stringify_error(rv));
        return 1;
    }

    DWORD code = 0;
    int feature = strcmp(argv[2], "verify") == 0   ? FEATURE_VERIFY_PIN_DIRECT
                  : strcmp(argv[2], "modify") == 0 ? FEATURE_MODIFY_PIN_DIRECT
                  : strcmp(argv[2], "tlv") == 0    ? FEATURE_GET_TLV_PROPERTIES
                                                   : 0;
    if (strcmp(argv[2], "features") == 0) {
        code = CM_IOCTL_GET_FEATURE_REQUEST;
    } else if (feature) {
        unsigned char features[256];
        DWORD got = 0;
        rv = SCardControl(card, CM_IOCTL_GET_FEATURE_REQUEST, NULL, 0, features, sizeof features, &got);
        for (DWORD i = 0; rv == SCARD_S_SUCCESS && i + 6 <= got; i += 6)
            if (features[i] == feature && features[i + 1] == 4)
                code = (DWORD)features[i + 2] << 24 | (DWORD)features[i + 3] << 16 | (DWORD)features[i + 4] << 8
                       | features[i + 5];
        if (!code) {
            printf("the reader lists no feature %02X\n", (unsigned)feature);
            return 1;
        }
    } else {
        code = (DWORD)strtoul(argv[2], NULL, 16);
    }

    DWORD returned = 0;
    rv = SCardControl(card, code, send_length ? send : NULL, (DWORD)send_length, answer, capacity, &returned);
    printf("rv 0x%08lX %s\n", (unsigned long)rv, pcsc_stringify_error(rv));
    if (rv == SCARD_S_SUCCESS) {
        printf("answer");
        for (DWORD i = 0; i < returned; i++)
            printf(" %02X", answer[i]);
        printf("\n");
    }
    SCardDisconnect(card, SCARD_LEAVE_CARD);
    SCardReleaseContext(context);
    return 0;
}
