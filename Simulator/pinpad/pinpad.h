/*
 * The virtual pinpad's core: PC/SC v2 part 10 secure PIN entry, without I/O.
 *
 * pp_parse reads a PIN_VERIFY_STRUCTURE or PIN_MODIFY_STRUCTURE (pcsc-lite's reader.h layout: byte-packed,
 * multi-byte fields little-endian) and checks every field against the APDU template and the reader's limits;
 * pp_build puts entered PINs into the template as the structure says; pp_run asks the keypad for the entries the
 * operation needs, in order, and sends the command it built to the card. The pcscd driver (ifd.c) and the unit
 * tests (tests.c) give pp_run their keypad and card.
 *
 * The rules (Simulator/README.md, "A pinpad reader", has them with examples):
 *   - The APDU template is a short APDU: CLA INS P1 P2, optionally Lc and Lc data bytes, optionally Le. A 5-byte
 *     template ending in 00 is a command whose data the PINs make up (gnupg's variable-length form).
 *   - Positions are counted from the first byte of the APDU's data field. A PIN block is bmPINBlockString's low
 *     nibble bytes long, at byte 0 for VERIFY and at bInsertionOffsetOld / bInsertionOffsetNew for MODIFY; the
 *     template supplies its filler (FF for PIV, F nibbles for an ISO 9564 format 2 block). Inside the block, the
 *     PIN frame starts at bmFormatString's position (bits or bytes, bit 7) and the PIN length field, when
 *     bmPINBlockString's high nibble gives it bits, sits at bmPINLengthFormat's position (bits or bytes, bit 4).
 *     Digits are coded binary (one byte, 00-09), BCD (a nibble) or ASCII ('0'-'9'), justified left (from the
 *     frame's start) or right (ending at the block's end).
 *   - A block size of 0 is a variable-length PIN: with template data, each PIN's block runs from its offset to the
 *     next PIN's offset or the end of the data (a pre-padded frame); without template data the blocks are exactly
 *     as long as the formatted PINs, concatenated (current PIN, then new PIN; the offsets must be 0), and Lc is
 *     set to their length.
 *   - A structure that cannot be read (shorter than its header, ulDataLength other than the bytes that follow) is
 *     PP_MALFORMED; a readable structure with a value the reader cannot honour is PP_INVALID, answered 6B 80.
 *     Neither touches the keypad or the card.
 */
#ifndef TOKENPIN_PINPAD_H
#define TOKENPIN_PINPAD_H

#include <stddef.h>
#include <stdint.h>

#define PP_VERIFY_HEADER 19       /* PIN_VERIFY_STRUCTURE up to abData */
#define PP_MODIFY_HEADER 24       /* PIN_MODIFY_STRUCTURE up to abData */
#define PP_MAX_DATA 255           /* a short APDU's data field */
#define PP_MAX_APDU (5 + PP_MAX_DATA + 1)
#define PP_MAX_DIGITS 64          /* the longest keypad entry */
#define PP_DEFAULT_TIMEOUT 30     /* seconds, for bTimerOut 00 */

/* bEntryValidationCondition bits this reader honours: maximum size reached, validation key pressed. */
#define PP_VALIDATION_MAX_SIZE 0x01
#define PP_VALIDATION_KEY 0x02
#define PP_VALIDATION_TIMEOUT 0x04
#define PP_VALIDATION_SUPPORTED (PP_VALIDATION_MAX_SIZE | PP_VALIDATION_KEY)

enum pp_operation { PP_VERIFY, PP_MODIFY };
enum pp_coding { PP_BINARY = 0, PP_BCD = 1, PP_ASCII = 2 };
enum pp_status { PP_OK = 0, PP_MALFORMED, PP_INVALID };

/* The reader's own limits, as its TLV properties announce them. */
struct pp_reader {
    unsigned min_digits;      /* bMinPINSize, at least 1 */
    unsigned max_digits;      /* bMaxPINSize, at most PP_MAX_DIGITS */
    unsigned default_timeout; /* seconds, for bTimerOut 00 */
};

/* Where one PIN goes in the command's data field. */
struct pp_region {
    size_t offset;  /* byte offset in the template's data field */
    size_t size;    /* bytes; 0 with `grows` */
    int grows;      /* a variable-length block appended to the data */
};

/* A structure that pp_parse accepted: everything pp_build and pp_run need. */
struct pp_request {
    enum pp_operation operation;
    unsigned timeout;            /* seconds */
    enum pp_coding coding;
    unsigned digit_bits;         /* 4 for BCD, else 8 */
    int right_justified;
    unsigned frame_offset_bits;  /* the PIN frame inside its block */
    unsigned length_bits;        /* the PIN length field's size; 0: none */
    unsigned length_offset_bits; /* the PIN length field inside its block */
    unsigned block_size;         /* bytes; 0: variable */
    unsigned min_digits, max_digits; /* the structure's range within the reader's */
    unsigned validation;         /* bEntryValidationCondition */
    int wants_current;           /* MODIFY: bConfirmPIN bit 1 */
    int wants_confirmation;      /* MODIFY: bConfirmPIN bit 0 */
    struct pp_region current;    /* MODIFY with wants_current */
    struct pp_region pin;        /* VERIFY: the PIN; MODIFY: the new PIN */
    uint8_t header[4];
    uint8_t data[PP_MAX_DATA];
    size_t data_length;
    int has_le;
    uint8_t le;
};

/* An entered PIN: digits '0'-'9'. Wiped by whoever owns it. */
struct pp_pin {
    char digits[PP_MAX_DIGITS];
    size_t count;
};

/* What the person did at one step. */
enum pp_key { PP_KEY_PIN, PP_KEY_CANCEL, PP_KEY_TIMEOUT, PP_KEY_ABORT };
enum pp_step { PP_STEP_PIN, PP_STEP_CURRENT, PP_STEP_NEW, PP_STEP_CONFIRM };

struct pp_io {
    void *context;
    /* The person's entry for `step`: PP_KEY_PIN fills `pin`; PP_KEY_ABORT is a failure (card pulled during the
     * entry, a broken keypad script) that ends the operation without an answer. */
    enum pp_key (*enter)(void *context, const struct pp_request *request, enum pp_step step, struct pp_pin *pin);
    /* Sends one command APDU to the card: 0 with its answer (at most `capacity` bytes), -1 when the card did not
     * answer, -2 when its answer is longer than `capacity`. */
    int (*transmit)(void *context, const uint8_t *apdu, size_t length, uint8_t *answer, size_t capacity,
                    size_t *answer_length);
};

enum pp_result {
    PP_ANSWERED,     /* `answer` holds the card's response or the reader's status word */
    PP_FAILED,       /* the keypad aborted or the card did not answer */
    PP_SMALL_BUFFER, /* the card's answer does not fit `capacity` (the card has acted on the command) */
};

/* Reads a structure of `length` bytes. On PP_MALFORMED or PP_INVALID, `*why` says what is wrong. */
enum pp_status pp_parse(enum pp_operation operation, const uint8_t *structure, size_t length,
                        const struct pp_reader *reader, struct pp_request *request, const char **why);

/* Builds the command APDU with the PINs in place (`current` NULL unless the request wants it) into `apdu`
 * (PP_MAX_APDU bytes). The caller wipes `apdu` after use. */
enum pp_status pp_build(const struct pp_request *request, const struct pp_pin *current, const struct pp_pin *pin,
                        uint8_t *apdu, size_t *apdu_length, const char **why);

/* Runs the operation: the entries it needs, then the command, or the reader's own answer (64 00 timeout, 64 01
 * cancelled, 64 02 new PINs differ, 64 03 PIN length outside the range). `answer` needs at least 2 bytes.
 * `*entries` counts the keypad entries taken. PINs and the built command are wiped before it returns. */
enum pp_result pp_run(const struct pp_request *request, const struct pp_io *io, uint8_t *answer, size_t capacity,
                      size_t *answer_length, unsigned *entries, size_t *apdus);

/* Sets `width` bits (at most 16) of `value`, most significant first, from bit `offset` of `buffer` (bit 0 is the
 * high bit of byte 0); 0, or -1 when they do not fit `size` bytes. */
int pp_write_bits(uint8_t *buffer, size_t size, size_t offset, unsigned width, unsigned value);

#endif
