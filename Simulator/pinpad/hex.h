/*
 * Hex text to bytes, for the pinpad's test programs (tests.c, control.c): "00 20 00 80" (spaces optional), and
 * "FF*8" for a byte repeated.
 */
#ifndef TOKENPIN_HEX_H
#define TOKENPIN_HEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0 and the bytes in `out`, or -1 when `text` is not hex bytes or does not fit `capacity`. */
static inline int hex_bytes(const char *text, uint8_t *out, size_t capacity, size_t *length)
{
    *length = 0;
    while (*text) {
        if (*text == ' ') {
            text++;
            continue;
        }
        unsigned value;
        int used;
        if (sscanf(text, "%2x%n", &value, &used) != 1 || used != 2)
            return -1;
        text += used;
        unsigned long repeat = 1;
        if (*text == '*') {
            char *end;
            repeat = strtoul(text + 1, &end, 10);
            text = end;
        }
        if (repeat > capacity - *length)
            return -1;
        memset(out + *length, (int)value, repeat);
        *length += repeat;
    }
    return 0;
}

#endif
