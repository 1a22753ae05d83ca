/* pcsc-rtt: median round-trip time of one APDU through libpcsclite -> pcscd -> reader driver -> card.
 *
 * Usage: pcsc-rtt READER COUNT HEX-APDU
 * Connects once (shared, T=1), sends the APDU COUNT times, prints "apdus=N median_us=.. p95_us=.. min_us=..".
 * Part of the simulator's benchmark (Simulator/bench.sh); build: cc -O2 pcsc-rtt.c $(pkg-config --cflags --libs libpcsclite)
 */
#include <PCSC/winscard.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t parse_hex(const char *text, unsigned char *out, size_t capacity) {
    size_t count = 0;
    while (text[0] && text[1] && count < capacity) {
        unsigned int byte;
        if (sscanf(text, "%2x", &byte) != 1) return 0;
        out[count++] = (unsigned char)byte;
        text += 2;
    }
    return count;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: pcsc-rtt READER COUNT HEX-APDU\n");
        return 64;
    }
    int count = atoi(argv[2]);
    unsigned char apdu[300];
    size_t apdu_length = parse_hex(argv[3], apdu, sizeof apdu);
    if (count <= 0 || apdu_length < 4) {
        fprintf(stderr, "error: bad COUNT or APDU\n");
        return 64;
    }
    SCARDCONTEXT context;
    SCARDHANDLE card;
    DWORD protocol;
    LONG rv = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context);
    if (rv == SCARD_S_SUCCESS)
        rv = SCardConnect(context, argv[1], SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card, &protocol);
    if (rv != SCARD_S_SUCCESS) {
        fprintf(stderr, "error: %s\n", pcsc_stringify_error(rv));
        return 1;
    }
    const SCARD_IO_REQUEST *pci = protocol == SCARD_PROTOCOL_T1 ? SCARD_PCI_T1 : SCARD_PCI_T0;
    unsigned char select[] = {0x00, 0xA4, 0x04, 0x00, 0x06, 0xD2, 0x76, 0x00, 0x01, 0x24, 0x01};
    unsigned char response[258 + 2];
    DWORD response_length = sizeof response;
    SCardTransmit(card, pci, select, sizeof select, NULL, response, &response_length);
    double *samples = calloc((size_t)count, sizeof *samples);
    for (int i = 0; i < count; i++) {
        struct timespec start, end;
        response_length = sizeof response;
        clock_gettime(CLOCK_MONOTONIC, &start);
        rv = SCardTransmit(card, pci, apdu, (DWORD)apdu_length, NULL, response, &response_length);
        clock_gettime(CLOCK_MONOTONIC, &end);
        if (rv != SCARD_S_SUCCESS || response_length < 2) {
            fprintf(stderr, "error: transmit %d: %s\n", i, pcsc_stringify_error(rv));
            return 1;
        }
        samples[i] = (double)(end.tv_sec - start.tv_sec) * 1e6 + (double)(end.tv_nsec - start.tv_nsec) / 1e3;
    }
    qsort(samples, (size_t)count, sizeof *samples, compare);
    printf("apdus=%d median_us=%.1f p95_us=%.1f min_us=%.1f sw=%02X%02X\n", count, samples[count / 2],
           samples[count * 95 / 100], samples[0], response[response_length - 2], response[response_length - 1]);
    free(samples);
    SCardDisconnect(card, SCARD_LEAVE_CARD);
    SCardReleaseContext(context);
    return 0;
}
