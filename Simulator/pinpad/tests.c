/*
 * Unit tests of the virtual pinpad's core (pinpad.c) and keypad script (keypad.c): the byte layouts clients send
 * (gnupg, OpenSC's PIV and PKCS#15 drivers, ISO 9564 format 2 blocks), every PIN coding, justification, unit and
 * length field, MODIFY with one to three entries, the reader's own answers, and refusals of truncated, oversized
 * and odd structures; then a seeded random run over structures and entries. Built with AddressSanitizer and
 * UndefinedBehaviorSanitizer (make pinpad), run by Simulator/Tests/EndToEnd/pinpad-clients.sh.
 * Output: "ok - ..." / "not ok - ...", then "N passed, N failed"; exit status 1 when anything failed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hex.h"
#include "keypad.h"
#include "pinpad.h"

static int passed, failed;

static void check(int condition, const char *name)
{
    if (condition) {
        passed++;
        printf("ok - %s\n", name);
    } else {
        failed++;
        printf("not ok - %s\n", name);
    }
}

/* Hex text to bytes (hex.h); the count. A test's own text: bad hex is a bug in the test. */
static size_t hex(const char *text, uint8_t *out, size_t capacity)
{
    size_t count;
    if (hex_bytes(text, out, capacity, &count) != 0)
        abort();
    return count;
}

static int equals_hex(const uint8_t *bytes, size_t length, const char *expected)
{
    uint8_t want[PP_MAX_APDU + 16];
    size_t want_length = hex(expected, want, sizeof want);
    if (want_length == length && memcmp(want, bytes, length) == 0)
        return 1;
    printf("    # got     ");
    for (size_t i = 0; i < length; i++)
        printf(" %02X", bytes[i]);
    printf("\n    # expected");
    for (size_t i = 0; i < want_length; i++)
        printf(" %02X", want[i]);
    printf("\n");
    return 0;
}

/* The fields of a structure, named as in reader.h. */
struct fields {
    uint8_t timeout, format, block, length_format, offset_old, offset_new, max, min, confirm, validation, messages;
    uint8_t index[3];
};

static size_t put_le32(uint8_t *out, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(value >> (8 * i));
    return 4;
}

static size_t make(enum pp_operation operation, struct fields f, const char *apdu, uint8_t *out)
{
    size_t at = 0;
    out[at++] = f.timeout;
    out[at++] = f.timeout; /* bTimerOut2 */
    out[at++] = f.format;
    out[at++] = f.block;
    out[at++] = f.length_format;
    if (operation == PP_MODIFY) {
        out[at++] = f.offset_old;
        out[at++] = f.offset_new;
    }
    out[at++] = f.max;
    out[at++] = f.min;
    if (operation == PP_MODIFY)
        out[at++] = f.confirm;
    out[at++] = f.validation;
    out[at++] = f.messages;
    out[at++] = 0x09; /* wLangId 0409 */
    out[at++] = 0x04;
    out[at++] = f.index[0];
    if (operation == PP_MODIFY) {
        out[at++] = f.index[1];
        out[at++] = f.index[2];
    }
    out[at++] = 0; /* bTeoPrologue */
    out[at++] = 0;
    out[at++] = 0;
    size_t length = hex(apdu, out + at + 4, 1024);
    at += put_le32(out + at, (uint32_t)length);
    return at + length;
}

static const struct pp_reader reader = { .min_digits = 4, .max_digits = 16, .default_timeout = 30 };

/* --- a fake keypad and card ------------------------------------------------------------------------------------ */

struct fake {
    const char *entries[4];
    size_t next;
    enum pp_step steps[4];
    uint8_t sent[PP_MAX_APDU];
    size_t sent_length;
    int transmits;
    uint8_t reply[300];
    size_t reply_length;
    int card_fails;
};

static enum pp_key fake_enter(void *context, const struct pp_request *request, enum pp_step step, struct pp_pin *pin)
{
    (void)request;
    struct fake *fake = context;
    if (fake->next >= 4 || !fake->entries[fake->next])
        return PP_KEY_ABORT;
    fake->steps[fake->next] = step;
    const char *entry = fake->entries[fake->next++];
    if (strcmp(entry, "CANCEL") == 0)
        return PP_KEY_CANCEL;
    if (strcmp(entry, "TIMEOUT") == 0)
        return PP_KEY_TIMEOUT;
    if (strcmp(entry, "ABORT") == 0)
        return PP_KEY_ABORT;
    pin->count = strlen(entry);
    memcpy(pin->digits, entry, pin->count);
    return PP_KEY_PIN;
}

static int fake_transmit(void *context, const uint8_t *apdu, size_t length, uint8_t *answer, size_t capacity,
                         size_t *answer_length)
{
    struct fake *fake = context;
    fake->transmits++;
    memcpy(fake->sent, apdu, length);
    fake->sent_length = length;
    if (fake->card_fails)
        return -1;
    size_t reply_length = fake->reply_length ? fake->reply_length : 2;
    if (!fake->reply_length)
        fake->reply[0] = 0x90, fake->reply[1] = 0x00;
    if (reply_length > capacity)
        return -2;
    memcpy(answer, fake->reply, reply_length);
    *answer_length = reply_length;
    return 0;
}

struct outcome {
    enum pp_status status;
    const char *why;
    enum pp_result result;
    uint8_t answer[300];
    size_t answer_length;
    unsigned entries;
    size_t apdus;
};

static struct outcome run(enum pp_operation operation, struct fields f, const char *apdu, struct fake *fake)
{
    uint8_t structure[2048];
    size_t length = make(operation, f, apdu, structure);
    struct outcome outcome;
    memset(&outcome, 0, sizeof outcome);
    struct pp_request request;
    outcome.status = pp_parse(operation, structure, length, &reader, &request, &outcome.why);
    if (outcome.status != PP_OK)
        return outcome;
    struct pp_io io = { .context = fake, .enter = fake_enter, .transmit = fake_transmit };
    outcome.result = pp_run(&request, &io, outcome.answer, 258, &outcome.answer_length, &outcome.entries,
                            &outcome.apdus);
    return outcome;
}

/* Runs a structure with entries and checks the APDU the card got. */
static void sends(const char *name, enum pp_operation operation, struct fields f, const char *apdu,
                  const char *entries[3], const char *expected)
{
    struct fake fake;
    memset(&fake, 0, sizeof fake);
    for (int i = 0; i < 3 && entries[i]; i++)
        fake.entries[i] = entries[i];
    struct outcome outcome = run(operation, f, apdu, &fake);
    if (outcome.status != PP_OK)
        printf("    # refused: %s\n", outcome.why);
    check(outcome.status == PP_OK && outcome.result == PP_ANSWERED && fake.transmits == 1
              && equals_hex(fake.sent, fake.sent_length, expected)
              && equals_hex(outcome.answer, outcome.answer_length, "90 00"),
          name);
}

static void answers(const char *name, enum pp_operation operation, struct fields f, const char *apdu,
                    const char *entries[3], const char *status_word, unsigned entries_taken)
{
    struct fake fake;
    memset(&fake, 0, sizeof fake);
    for (int i = 0; i < 3 && entries[i]; i++)
        fake.entries[i] = entries[i];
    struct outcome outcome = run(operation, f, apdu, &fake);
    check(outcome.status == PP_OK && outcome.result == PP_ANSWERED && fake.transmits == 0
              && outcome.entries == entries_taken && equals_hex(outcome.answer, outcome.answer_length, status_word),
          name);
}

static void refuses(const char *name, enum pp_operation operation, struct fields f, const char *apdu,
                    enum pp_status status, const char *why)
{
    struct fake fake;
    memset(&fake, 0, sizeof fake);
    struct outcome outcome = run(operation, f, apdu, &fake);
    int right = outcome.status == status && outcome.why && strstr(outcome.why, why) && fake.next == 0;
    if (!right)
        printf("    # status %d, why '%s'\n", outcome.status, outcome.why ? outcome.why : "");
    check(right, name);
}

/* --- the tests ------------------------------------------------------------------------------------------------- */

static void test_bits(void)
{
    uint8_t buffer[2] = { 0xFF, 0xFF };
    check(pp_write_bits(buffer, 2, 4, 8, 0x12) == 0 && buffer[0] == 0xF1 && buffer[1] == 0x2F,
          "pp_write_bits writes across a byte boundary, most significant bit first");
    check(pp_write_bits(buffer, 2, 9, 8, 0) == -1 && pp_write_bits(buffer, 2, 17, 0, 0) == -1
              && pp_write_bits(buffer, 2, 0, 17, 0) == -1 && pp_write_bits(buffer, 2, 16, 0, 0) == 0,
          "pp_write_bits refuses bits past the buffer and widths over 16");
}

/* Verification layouts: the structure's fields, the APDU template, the PIN typed, the APDU the card must get. */
static const struct layout {
    const char *name;
    struct fields fields;
    const char *template, *pin, *expected;
} layouts[] = {
    { "gnupg variable length (enable-pinpad-varlen): Lc 00 becomes the PIN's length",
      { .format = 0x82, .max = 15, .min = 6, .validation = 0x02, .messages = 1 }, "00 20 00 81 00", "123456",
      "00 20 00 81 06 31 32 33 34 35 36" },
    { "a case 1 template (CLA INS P1 P2) gets Lc and the PIN",
      { .format = 0x82, .max = 15, .min = 6, .validation = 0x02, .messages = 1 }, "00 20 00 82", "123456",
      "00 20 00 82 06 31 32 33 34 35 36" },
    { "OpenSC PIV: ASCII in an 8-byte block, the template's FF padding kept",
      { .timeout = 30, .format = 0x82, .block = 0x08, .max = 8, .min = 6, .validation = 0x02 },
      "00 20 00 80 08 FF*8", "123456", "00 20 00 80 08 31 32 33 34 35 36 FF FF" },
    { "a case 4 template keeps its Le",
      { .timeout = 30, .format = 0x82, .block = 0x08, .max = 8, .min = 6, .validation = 0x02 },
      "00 20 00 80 08 FF*8 00", "123456", "00 20 00 80 08 31 32 33 34 35 36 FF FF 00" },
    { "ISO 9564 format 2: BCD from bit 8, a 4-bit length at bit 4, F filler",
      { .format = 0x41, .block = 0x48, .length_format = 0x04, .max = 12, .min = 4, .validation = 0x02 },
      "00 20 00 01 08 20 FF*7", "12345", "00 20 00 01 08 25 12 34 5F FF FF FF FF" },
    { "ASCII right-justified: fillers at the left",
      { .format = 0x86, .block = 0x08, .max = 8, .min = 4, .validation = 0x02 }, "00 20 00 80 08 30*8", "1234",
      "00 20 00 80 08 30 30 30 30 31 32 33 34" },
    { "BCD right-justified in bit units: an odd digit count ends on the block's last nibble",
      { .format = 0x05, .block = 0x04, .max = 8, .min = 4, .validation = 0x02 }, "00 20 00 00 04 00*4", "12345",
      "00 20 00 00 04 00 01 23 45" },
    { "binary coding: one byte 00-09 per digit",
      { .format = 0x80, .block = 0x06, .max = 6, .min = 4, .validation = 0x02 }, "00 20 00 00 06 FF*6", "1234",
      "00 20 00 00 06 01 02 03 04 FF FF" },
    { "an 8-bit PIN length in byte 0, the PIN from byte 1 (byte units for both)",
      { .format = 0x8A, .block = 0x89, .length_format = 0x10, .max = 8, .min = 4, .validation = 0x02 },
      "00 20 00 80 09 00 FF*8", "123456", "00 20 00 80 09 06 31 32 33 34 35 36 FF FF" },
    { "a variable-length block with its length byte first",
      { .format = 0x8A, .block = 0x80, .length_format = 0x10, .max = 12, .min = 4, .validation = 0x02 },
      "00 20 00 81 00", "123456", "00 20 00 81 07 06 31 32 33 34 35 36" },
    { "block size 0 with template data: the data is a pre-padded frame, Lc kept",
      { .format = 0x82, .max = 16, .min = 4, .validation = 0x02 }, "00 20 00 80 10 FF*16", "1234",
      "00 20 00 80 10 31 32 33 34 FF*12" },
    { "BCD variable length: an odd digit count gets an F nibble",
      { .format = 0x81, .max = 12, .min = 4, .validation = 0x02 }, "00 20 00 81 00", "12345",
      "00 20 00 81 03 12 34 5F" },
    { "validation 'maximum size reached': the last digit of a full-length PIN ends the entry",
      { .format = 0x82, .block = 0x06, .max = 6, .min = 6, .validation = 0x01 }, "00 20 00 80 06 FF*6", "123456",
      "00 20 00 80 06 31 32 33 34 35 36" },
};

static void test_verify_layouts(void)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const char *entries[3] = { layouts[i].pin };
        sends(layouts[i].name, PP_VERIFY, layouts[i].fields, layouts[i].template, entries, layouts[i].expected);
    }
}

static void test_verify_answers(void)
{
    struct fields piv = { .format = 0x82, .block = 0x08, .max = 8, .min = 6, .validation = 0x02 };
    const char *cancel[3] = { "CANCEL" }, *timeout[3] = { "TIMEOUT" }, *short_pin[3] = { "12345" },
               *long_pin[3] = { "123456789" };
    answers("CANCEL is answered 64 01 by the reader, nothing sent", PP_VERIFY, piv, "00 20 00 80 08 FF*8", cancel,
            "64 01", 1);
    answers("TIMEOUT is answered 64 00 by the reader, nothing sent", PP_VERIFY, piv, "00 20 00 80 08 FF*8", timeout,
            "64 00", 1);
    answers("a PIN shorter than the minimum is answered 64 03", PP_VERIFY, piv, "00 20 00 80 08 FF*8", short_pin,
            "64 03", 1);
    answers("a PIN longer than the maximum is answered 64 03", PP_VERIFY, piv, "00 20 00 80 08 FF*8", long_pin,
            "64 03", 1);
    struct fields max_only = { .format = 0x82, .block = 0x08, .max = 8, .min = 6, .validation = 0x01 };
    const char *pin6[3] = { "123456" };
    answers("without a validation key a PIN shorter than the maximum never completes: 64 00", PP_VERIFY, max_only,
            "00 20 00 80 08 FF*8", pin6, "64 00", 1);

    struct fake fake;
    memset(&fake, 0, sizeof fake);
    fake.entries[0] = "000000";
    hex("63 C2", fake.reply, sizeof fake.reply);
    fake.reply_length = 2;
    struct outcome outcome = run(PP_VERIFY, piv, "00 20 00 80 08 FF*8", &fake);
    check(outcome.result == PP_ANSWERED && equals_hex(outcome.answer, outcome.answer_length, "63 C2")
              && outcome.apdus == 1,
          "the card's answer (63 C2, a wrong PIN) comes back as it is");

    memset(&fake, 0, sizeof fake);
    fake.entries[0] = "123456";
    fake.card_fails = 1;
    outcome = run(PP_VERIFY, piv, "00 20 00 80 08 FF*8", &fake);
    check(outcome.result == PP_FAILED && outcome.answer_length == 0, "a card that does not answer fails the operation");

    memset(&fake, 0, sizeof fake);
    fake.entries[0] = "ABORT";
    outcome = run(PP_VERIFY, piv, "00 20 00 80 08 FF*8", &fake);
    check(outcome.result == PP_FAILED && fake.transmits == 0, "an aborted entry (card pulled) fails, nothing sent");

    memset(&fake, 0, sizeof fake);
    fake.entries[0] = "123456";
    fake.reply_length = 260;
    memset(fake.reply, 0x61, 260);
    outcome = run(PP_VERIFY, piv, "00 20 00 80 08 FF*8", &fake);
    check(outcome.result == PP_SMALL_BUFFER && outcome.answer_length == 0,
          "a card answer longer than the caller's buffer is PP_SMALL_BUFFER");

    uint8_t structure[64], answer[1];
    size_t length = make(PP_VERIFY, piv, "00 20 00 80 08 FF*8", structure), answer_length = 9, apdus = 9;
    struct pp_request request;
    unsigned entries = 9;
    memset(&fake, 0, sizeof fake);
    struct pp_io io = { .context = &fake, .enter = fake_enter, .transmit = fake_transmit };
    check(pp_parse(PP_VERIFY, structure, length, &reader, &request, NULL) == PP_OK
              && pp_run(&request, &io, answer, 1, &answer_length, &entries, &apdus) == PP_SMALL_BUFFER
              && entries == 0 && fake.next == 0 && answer_length == 0,
          "a 1-byte answer buffer is refused before any entry is taken");

    struct fields wide = { .format = 0x82, .max = 40, .min = 2, .validation = 0x02 };
    length = make(PP_VERIFY, wide, "00 20 00 81 00", structure);
    check(pp_parse(PP_VERIFY, structure, length, &reader, &request, NULL) == PP_OK && request.min_digits == 4
              && request.max_digits == 16 && request.timeout == 30,
          "the structure's PIN range is narrowed to the reader's (4-16) and bTimerOut 00 is the default 30 s");
}

static void test_modify(void)
{
    struct fields gnupg = { .format = 0x82, .max = 15, .min = 6, .confirm = 0x03, .validation = 0x02, .messages = 3,
                            .index = { 0, 1, 2 } };
    const char *three[3] = { "123456", "654321", "654321" };
    sends("gnupg variable-length change: current then new PIN concatenated, Lc set", PP_MODIFY, gnupg,
          "00 24 00 81 00", three, "00 24 00 81 0C 31 32 33 34 35 36 36 35 34 33 32 31");

    struct fields piv = { .format = 0x82, .block = 0x08, .offset_new = 8, .max = 8, .min = 6, .confirm = 0x03,
                          .validation = 0x02 };
    const char *piv_entries[3] = { "123456", "24681357", "24681357" };
    sends("OpenSC PIV change: two FF-padded 8-byte blocks at offsets 0 and 8", PP_MODIFY, piv,
          "00 24 00 80 10 FF*16", piv_entries, "00 24 00 80 10 31 32 33 34 35 36 FF FF 32 34 36 38 31 33 35 37");
    struct fields reversed = piv;
    reversed.offset_old = 8;
    reversed.offset_new = 0;
    sends("insertion offsets reversed: the new PIN first", PP_MODIFY, reversed, "00 24 00 80 10 FF*16", piv_entries,
          "00 24 00 80 10 32 34 36 38 31 33 35 37 31 32 33 34 35 36 FF FF");
    struct fields prepadded = piv;
    prepadded.block = 0;
    sends("block size 0 with template data: each PIN's frame runs to the next offset", PP_MODIFY, prepadded,
          "00 24 00 80 10 FF*16", piv_entries, "00 24 00 80 10 31 32 33 34 35 36 FF FF 32 34 36 38 31 33 35 37");

    struct fields confirm_only = { .format = 0x82, .block = 0x08, .max = 8, .min = 6, .confirm = 0x01,
                                   .validation = 0x02 };
    const char *two[3] = { "24681357", "24681357" };
    struct fake fake;
    memset(&fake, 0, sizeof fake);
    fake.entries[0] = two[0];
    fake.entries[1] = two[1];
    struct outcome outcome = run(PP_MODIFY, confirm_only, "00 2C 02 80 08 FF*8", &fake);
    check(outcome.result == PP_ANSWERED && outcome.entries == 2 && fake.steps[0] == PP_STEP_NEW
              && fake.steps[1] == PP_STEP_CONFIRM && equals_hex(fake.sent, fake.sent_length, "00 2C 02 80 08 32 34 36 38 31 33 35 37"),
          "bConfirmPIN 01: the new PIN twice, no current PIN (two entries)");
    struct fields new_only = confirm_only;
    new_only.confirm = 0;
    memset(&fake, 0, sizeof fake);
    fake.entries[0] = "24681357";
    outcome = run(PP_MODIFY, new_only, "00 2C 02 80 08 FF*8", &fake);
    check(outcome.result == PP_ANSWERED && outcome.entries == 1 && fake.transmits == 1,
          "bConfirmPIN 00: the new PIN once (one entry)");
    memset(&fake, 0, sizeof fake);
    for (int i = 0; i < 3; i++)
        fake.entries[i] = three[i];
    outcome = run(PP_MODIFY, gnupg, "00 24 00 81 00", &fake);
    check(fake.steps[0] == PP_STEP_CURRENT && fake.steps[1] == PP_STEP_NEW && fake.steps[2] == PP_STEP_CONFIRM,
          "bConfirmPIN 03 asks for the current PIN, the new PIN, the new PIN again, in that order");

    const char *mismatch[3] = { "123456", "654321", "654322" }, *cancel_new[3] = { "123456", "CANCEL", "654321" },
               *timeout_confirm[3] = { "123456", "654321", "TIMEOUT" }, *short_new[3] = { "123456", "65432", "x" };
    answers("new PINs that differ are answered 64 02, nothing sent", PP_MODIFY, gnupg, "00 24 00 81 00", mismatch,
            "64 02", 3);
    answers("CANCEL at the new PIN: 64 01 after two entries, the third left", PP_MODIFY, gnupg, "00 24 00 81 00",
            cancel_new, "64 01", 2);
    answers("TIMEOUT at the confirmation: 64 00", PP_MODIFY, gnupg, "00 24 00 81 00", timeout_confirm, "64 00", 3);
    answers("a new PIN shorter than the minimum: 64 03 at once", PP_MODIFY, gnupg, "00 24 00 81 00", short_new,
            "64 03", 2);
}

static void test_refusals(void)
{
    uint8_t structure[2048];
    struct pp_request request;
    const char *why;
    struct fields piv = { .format = 0x82, .block = 0x08, .max = 8, .min = 6, .validation = 0x02 };
    size_t length = make(PP_VERIFY, piv, "00 20 00 80 08 FF*8", structure);
    int prefixes_refused = 1;
    for (size_t cut = 0; cut < length; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, structure, cut);
        if (pp_parse(PP_VERIFY, copy, cut, &reader, &request, &why) != PP_MALFORMED)
            prefixes_refused = 0;
        free(copy);
    }
    check(prefixes_refused, "every prefix of a valid PIN_VERIFY_STRUCTURE is refused as malformed");
    structure[length] = 0x00;
    check(pp_parse(PP_VERIFY, structure, length + 1, &reader, &request, &why) == PP_MALFORMED
              && strstr(why, "ulDataLength"),
          "a trailing byte after the APDU is refused (ulDataLength)");
    uint8_t swapped[64];
    memcpy(swapped, structure, length);
    swapped[15] = 0, swapped[18] = 13;
    check(pp_parse(PP_VERIFY, swapped, length, &reader, &request, &why) == PP_MALFORMED,
          "a big-endian ulDataLength is refused: part 10 fields are little-endian");
    check(pp_parse(PP_VERIFY, NULL, 0, &reader, &request, &why) == PP_MALFORMED, "no structure at all is refused");

    struct fields modify = { .format = 0x82, .block = 0x08, .offset_new = 8, .max = 8, .min = 6, .confirm = 3,
                             .validation = 0x02 };
    length = make(PP_MODIFY, modify, "00 24 00 80 10 FF*16", structure);
    prefixes_refused = 1;
    for (size_t cut = 0; cut < length; cut++)
        if (pp_parse(PP_MODIFY, structure, cut, &reader, &request, &why) != PP_MALFORMED)
            prefixes_refused = 0;
    check(prefixes_refused, "every prefix of a valid PIN_MODIFY_STRUCTURE is refused as malformed");
    check(pp_parse(PP_VERIFY, structure, length, &reader, &request, &why) != PP_OK,
          "a PIN_MODIFY_STRUCTURE sent as a verification is refused");

    uint8_t *huge = calloc(1, PP_VERIFY_HEADER + 100000);
    memcpy(huge, structure, PP_VERIFY_HEADER);
    huge[2] = 0x82, huge[3] = 0x08, huge[5] = 8, huge[6] = 6, huge[7] = 2, huge[8] = 0;
    put_le32(huge + 15, 100000);
    huge[PP_VERIFY_HEADER + 4] = 0x08;
    check(pp_parse(PP_VERIFY, huge, PP_VERIFY_HEADER + 100000, &reader, &request, &why) == PP_INVALID
              && strstr(why, "Lc"),
          "an oversized template (100000 bytes, consistent ulDataLength) is refused, 6B 80");
    free(huge);

#define REFUSES(name, op, fields, apdu, reason) refuses(name, op, fields, apdu, PP_INVALID, reason)
    struct fields f = piv;
    f.format = 0x83;
    REFUSES("PIN coding 11 (RFU) is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "RFU PIN coding");
    f = piv, f.length_format = 0x20;
    REFUSES("bmPINLengthFormat RFU bits are refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "RFU bits 7-5");
    f = piv, f.validation = 0;
    REFUSES("bEntryValidationCondition 00 is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "is 00");
    f = piv, f.validation = 0x0A;
    REFUSES("bEntryValidationCondition with RFU bit 3 is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "RFU bits");
    f = piv, f.validation = 0x04;
    REFUSES("'timeout occurred' as the only validation is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8",
            "timeout occurred");
    f = piv, f.messages = 2;
    REFUSES("bNumberMessage 02 for a verification is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "00, 01 or FF");
    f = piv, f.messages = 1, f.index[0] = 3;
    REFUSES("bMsgIndex 03 is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "bMsgIndex");
    f = piv, f.max = 0, f.min = 0;
    REFUSES("a maximum PIN size of 0 is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "no maximum");
    f = piv, f.max = 6, f.min = 8;
    REFUSES("a minimum above the maximum is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "exceeds");
    f = piv, f.block = 0, f.min = 17, f.max = 20;
    REFUSES("a PIN range outside the reader's 4-16 is refused", PP_VERIFY, f, "00 20 00 80 00", "reader's");
    f = piv, f.block = 0x38;
    REFUSES("a 3-bit length field for 8-digit PINs is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8", "too narrow");
    f = piv;
    REFUSES("a PIN block beyond the template's data is refused", PP_VERIFY, f, "00 20 00 80 04 FF*4", "outside the APDU");
    f = piv, f.block = 0x04;
    REFUSES("an 8-digit ASCII PIN in a 4-byte block is refused", PP_VERIFY, f, "00 20 00 80 04 FF*4", "does not fit");
    struct fields format2 = { .format = 0x41, .block = 0x48, .length_format = 0x08, .max = 12, .min = 4,
                              .validation = 0x02 };
    REFUSES("a length field on top of the PIN frame is refused", PP_VERIFY, format2, "00 20 00 01 08 20 FF*7",
            "overlaps");
    f = piv, f.format = 0x82 | (9 << 3);
    REFUSES("a PIN frame offset that pushes the PIN out of its block is refused", PP_VERIFY, f, "00 20 00 80 08 FF*8",
            "does not fit");
    struct fields variable = { .format = 0x82, .block = 0x80, .length_format = 0x18, .max = 8, .min = 4,
                               .validation = 0x02 };
    REFUSES("a variable-length block with its length after the PIN is refused", PP_VERIFY, variable, "00 20 00 81 00",
            "must precede");
    REFUSES("a 3-byte template is refused", PP_VERIFY, piv, "00 20 00", "shorter than CLA");
    REFUSES("a 5-byte template with Lc 08 and no data is refused", PP_VERIFY, piv, "00 20 00 80 08", "must end in Lc 00");
    REFUSES("an extended-length template is refused", PP_VERIFY, piv, "00 20 00 80 00 00 08 FF*8", "extended-length");
    REFUSES("a template whose Lc disagrees with its data is refused", PP_VERIFY, piv, "00 20 00 80 08 FF*9 00",
            "disagrees with its Lc");

    f = modify, f.offset_new = 4;
    REFUSES("overlapping current and new PIN blocks are refused", PP_MODIFY, f, "00 24 00 80 10 FF*16", "overlap");
    f = modify, f.block = 0, f.offset_new = 4;
    REFUSES("variable-length PINs without template data need offsets 0", PP_MODIFY, f, "00 24 00 80 00", "offsets 0");
    f = modify, f.block = 0, f.offset_new = 0;
    REFUSES("pre-padded frames at one offset are refused", PP_MODIFY, f, "00 24 00 80 10 FF*16", "one insertion offset");
    f = modify, f.block = 0, f.offset_new = 16;
    REFUSES("an insertion offset past the template's data is refused", PP_MODIFY, f, "00 24 00 80 10 FF*16",
            "outside the APDU");
    f = modify, f.confirm = 0x07;
    REFUSES("bConfirmPIN RFU bits are refused", PP_MODIFY, f, "00 24 00 80 10 FF*16", "bConfirmPIN");
    f = modify, f.messages = 4;
    REFUSES("bNumberMessage 04 for a modification is refused", PP_MODIFY, f, "00 24 00 80 10 FF*16", "00-03 or FF");
    f = modify, f.messages = 3, f.index[2] = 5;
    REFUSES("a third message index of 05 is refused", PP_MODIFY, f, "00 24 00 80 10 FF*16", "bMsgIndex");
    f = modify, f.messages = 0xFF, f.index[2] = 5;
    struct fake fake;
    memset(&fake, 0, sizeof fake);
    check(run(PP_MODIFY, f, "00 24 00 80 10 FF*16", &fake).status == PP_OK,
          "bNumberMessage FF (default messages) ignores the message indexes");
}

/* A seeded random walk over structures and entries: nothing traps, every accepted structure yields a well-formed
 * short APDU that carries the template's header. */
static uint64_t state = 0x9E3779B97F4A7C15ull;
static unsigned random_below(unsigned bound)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (unsigned)(state % bound);
}

static void test_random(void)
{
    /* Valid structures to mutate, and bytes worth trying in their fields. */
    struct fields piv = { .format = 0x82, .block = 0x08, .max = 8, .min = 6, .validation = 0x02 };
    struct fields format2 = { .format = 0x41, .block = 0x48, .length_format = 0x04, .max = 12, .min = 4,
                              .validation = 0x02 };
    struct fields gnupg = { .format = 0x82, .max = 15, .min = 6, .confirm = 0x03, .validation = 0x02, .messages = 3,
                            .index = { 0, 1, 2 } };
    struct fields piv_change = { .format = 0x82, .block = 0x08, .offset_new = 8, .max = 8, .min = 6, .confirm = 0x03,
                                 .validation = 0x02 };
    uint8_t bases[4][80];
    size_t base_lengths[4] = {
        make(PP_VERIFY, piv, "00 20 00 80 08 FF*8", bases[0]),
        make(PP_VERIFY, format2, "00 20 00 01 08 20 FF*7", bases[1]),
        make(PP_MODIFY, gnupg, "00 24 00 81 00", bases[2]),
        make(PP_MODIFY, piv_change, "00 24 00 80 10 FF*16", bases[3]),
    };
    static const uint8_t interesting[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x0F, 0x10, 0x41, 0x48,
                                           0x80, 0x81, 0x82, 0x86, 0x89, 0x8A, 0xFF };
    unsigned accepted = 0, well_formed = 1;
    for (unsigned round = 0; round < 200000; round++) {
        unsigned base = random_below(4);
        enum pp_operation operation = base < 2 ? PP_VERIFY : PP_MODIFY;
        size_t header = operation == PP_VERIFY ? PP_VERIFY_HEADER : PP_MODIFY_HEADER;
        uint8_t structure[PP_MODIFY_HEADER + 300];
        size_t length = base_lengths[base];
        memcpy(structure, bases[base], length);
        if (random_below(4) == 0) {
            /* Another template: random bytes with a consistent ulDataLength, and mostly a consistent Lc. */
            size_t apdu_length = random_below(8) ? random_below(30) : random_below(290);
            for (size_t i = header; i < header + apdu_length; i++)
                structure[i] = random_below(2) ? 0xFF : (uint8_t)random_below(256);
            if (apdu_length > 5 && random_below(4))
                structure[header + 4] = (uint8_t)(apdu_length - 5 - random_below(2));
            put_le32(structure + header - 4, (uint32_t)apdu_length);
            length = header + apdu_length;
        }
        for (unsigned mutations = random_below(4); mutations > 0; mutations--) {
            size_t at = random_below((unsigned)length);
            structure[at] = random_below(2) ? interesting[random_below(sizeof interesting)] : (uint8_t)random_below(256);
        }
        if (random_below(50) == 0)
            length = random_below((unsigned)length + 1);
        struct pp_request request;
        const char *why;
        if (pp_parse(operation, structure, length, &reader, &request, &why) != PP_OK) {
            if (!why)
                well_formed = 0;
            continue;
        }
        accepted++;
        struct pp_pin current = { .count = 0 }, pin = { .count = 0 };
        current.count = request.min_digits + random_below(request.max_digits - request.min_digits + 1);
        pin.count = request.min_digits + random_below(request.max_digits - request.min_digits + 1);
        for (size_t i = 0; i < PP_MAX_DIGITS; i++)
            current.digits[i] = (char)('0' + random_below(10)), pin.digits[i] = (char)('0' + random_below(10));
        uint8_t apdu[PP_MAX_APDU];
        size_t built = 0;
        if (pp_build(&request, &current, &pin, apdu, &built, &why) != PP_OK) {
            well_formed = 0;
            printf("    # accepted but not built: %s\n", why ? why : "?");
            continue;
        }
        size_t data = built - 4 - (request.has_le ? 1 : 0);
        if (built < 4 || built > PP_MAX_APDU || memcmp(apdu, structure + header, 4) != 0
            || (data > 0 && (size_t)apdu[4] + 1 != data))
            well_formed = 0;
    }
    printf("    # %u of 200000 mutated structures accepted\n", accepted);
    check(well_formed && accepted > 10000, "mutated structures: refusals say why, accepted ones build well-formed APDUs");
}

static void test_keypad(void)
{
    char directory[] = "/tmp/pinpad-tests.XXXXXX";
    if (!mkdtemp(directory)) {
        check(0, "a temporary directory for the keypad tests");
        return;
    }
    char path[256], link_path[256];
    snprintf(path, sizeof path, "%s/keys", directory);
    snprintf(link_path, sizeof link_path, "%s/link", directory);
    FILE *file = fopen(path, "w");
    fputs("# the keypad script\n123456\r\n\n  CANCEL after 250\nTIMEOUT\n000000 after 10\nlater\n", file);
    fclose(file);

    struct keypad_entry entry;
    int ok = keypad_take(path, &entry) == KEYPAD_ENTRY && entry.key == PP_KEY_PIN && entry.pin.count == 6
             && memcmp(entry.pin.digits, "123456", 6) == 0 && entry.line == 2 && entry.left == 4
             && entry.after_ms == 0;
    check(ok, "keypad: the first entry (a PIN, CRLF line end) after a comment, with the count left");
    ok = keypad_take(path, &entry) == KEYPAD_ENTRY && entry.key == PP_KEY_CANCEL && entry.after_ms == 250
         && entry.line == 2;
    check(ok, "keypad: CANCEL after 250 ms, the line counted in the rewritten file");
    check(keypad_take(path, &entry) == KEYPAD_ENTRY && entry.key == PP_KEY_TIMEOUT, "keypad: TIMEOUT");
    check(keypad_take(path, &entry) == KEYPAD_ENTRY && entry.key == PP_KEY_PIN && entry.after_ms == 10,
          "keypad: a PIN after 10 ms");
    check(keypad_take(path, &entry) == KEYPAD_BAD_LINE && entry.line == 1 && entry.pin.count == 0,
          "keypad: a line that is not an entry is reported (and removed)");
    check(keypad_take(path, &entry) == KEYPAD_EMPTY, "keypad: an emptied script has no entry");
    struct stat info;
    check(stat(path, &info) == 0 && info.st_size == 0, "keypad: taken entries are removed from the file");

    static const char *bad[] = { "12a456\n", "123456 before 10\n", "123456 after\n", "123456 after 3600001\n",
                                 "123456 after 10 more\n", "cancel\n",
                                 "12345678901234567890123456789012345678901234567890123456789012345\n" };
    int all_bad = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        file = fopen(path, "w");
        fputs(bad[i], file);
        fclose(file);
        if (keypad_take(path, &entry) != KEYPAD_BAD_LINE)
            all_bad = 0;
    }
    check(all_bad, "keypad: letters in a PIN, unknown words, a missing or too long wait, lower case, 65 digits refused");

    unlink(path);
    check(keypad_take(path, &entry) == KEYPAD_EMPTY, "keypad: a missing script has no entry");
    file = fopen(path, "w");
    fputs("123456\n", file);
    fclose(file);
    if (symlink(path, link_path) == 0)
        check(keypad_take(link_path, &entry) == KEYPAD_UNREADABLE, "keypad: a symbolic link is refused");
    check(keypad_take(directory, &entry) == KEYPAD_UNREADABLE, "keypad: a directory is refused");
    file = fopen(path, "w");
    for (int i = 0; i < KEYPAD_MAX_FILE / 7 + 1; i++)
        fputs("123456\n", file);
    fclose(file);
    check(keypad_take(path, &entry) == KEYPAD_UNREADABLE, "keypad: a script over 64 KiB is refused");
    unlink(link_path);
    unlink(path);
    rmdir(directory);
}

int main(void)
{
    test_bits();
    test_verify_layouts();
    test_verify_answers();
    test_modify();
    test_refusals();
    test_random();
    test_keypad();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
