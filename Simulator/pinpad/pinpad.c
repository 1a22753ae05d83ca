/*
 * The virtual pinpad's core: reading part 10 structures, putting PINs into the APDU template, running an
 * operation. No I/O: the keypad and the card come in through struct pp_io. pinpad.h states the rules.
 */
#define _GNU_SOURCE
#include "pinpad.h"

#include <string.h>

#define REFUSE(status, reason) \
    do {                       \
        *why = (reason);       \
        return (status);       \
    } while (0)

/* Reader answers, PC/SC v2 part 10 §2.5 (SW1 SW2). */
#define SW_TIMEOUT 0x6400
#define SW_CANCELLED 0x6401
#define SW_MISMATCH 0x6402
#define SW_LENGTH 0x6403

static uint32_t little_endian32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
}

int pp_write_bits(uint8_t *buffer, size_t size, size_t offset, unsigned width, unsigned value)
{
    if (!buffer || width > 16 || size > SIZE_MAX / 8 || offset > size * 8 || width > size * 8 - offset)
        return -1;
    for (unsigned i = 0; i < width; i++) {
        size_t bit = offset + i;
        uint8_t mask = (uint8_t)(0x80u >> (bit % 8));
        if ((value >> (width - 1 - i)) & 1u)
            buffer[bit / 8] |= mask;
        else
            buffer[bit / 8] &= (uint8_t)~mask;
    }
    return 0;
}

/* The bits the longest PIN's frame can cover in a block of `size` bytes, or -1 with *why when a PIN or its length
 * field cannot fit there. */
static int check_block(const struct pp_request *request, size_t size, const char **why)
{
    size_t size_bits = size * 8;
    size_t frame_bits = (size_t)request->max_digits * request->digit_bits;
    if (request->frame_offset_bits + frame_bits > size_bits) {
        *why = "the longest PIN does not fit its PIN block";
        return -1;
    }
    if (request->length_bits == 0)
        return 0;
    size_t length_start = request->length_offset_bits, length_end = length_start + request->length_bits;
    if (length_end > size_bits) {
        *why = "the PIN length field lies outside its PIN block";
        return -1;
    }
    size_t frame_start = request->right_justified ? size_bits - frame_bits : request->frame_offset_bits;
    size_t frame_end = request->right_justified ? size_bits : request->frame_offset_bits + frame_bits;
    if (length_start < frame_end && frame_start < length_end) {
        *why = "the PIN length field overlaps the PIN";
        return -1;
    }
    return 0;
}

/* The APDU template: CLA INS P1 P2 [Lc data] [Le], short lengths only. */
static enum pp_status read_template(struct pp_request *request, const uint8_t *apdu, size_t length, const char **why)
{
    if (length < 4)
        REFUSE(PP_INVALID, "the APDU template is shorter than CLA INS P1 P2");
    memcpy(request->header, apdu, 4);
    if (length == 4)
        return PP_OK;
    size_t lc = apdu[4];
    if (length == 5) {
        if (lc != 0)
            REFUSE(PP_INVALID, "a 5-byte APDU template must end in Lc 00");
        return PP_OK;
    }
    if (lc == 0)
        REFUSE(PP_INVALID, "extended-length APDU templates are not supported");
    if (length != 5 + lc && length != 5 + lc + 1)
        REFUSE(PP_INVALID, "the APDU template's length disagrees with its Lc");
    memcpy(request->data, apdu + 5, lc);
    request->data_length = lc;
    if (length == 5 + lc + 1) {
        request->has_le = 1;
        request->le = apdu[5 + lc];
    }
    return PP_OK;
}

/* Where the PINs go: fixed blocks, pre-padded variable blocks, or variable blocks appended to empty data. */
static enum pp_status place_blocks(struct pp_request *request, unsigned offset_old, unsigned offset_new,
                                   const char **why)
{
    int modify = request->operation == PP_MODIFY;
    int two = modify && request->wants_current;
    size_t data_length = request->data_length;
    request->pin.offset = modify ? offset_new : 0;
    request->current.offset = offset_old;

    if (request->block_size > 0) {
        request->pin.size = request->current.size = request->block_size;
        if (request->pin.offset + request->block_size > data_length
            || (two && request->current.offset + request->block_size > data_length))
            REFUSE(PP_INVALID, "the PIN block lies outside the APDU template's data");
        if (two && request->current.offset < request->pin.offset + request->block_size
            && request->pin.offset < request->current.offset + request->block_size)
            REFUSE(PP_INVALID, "the current and new PIN blocks overlap");
    } else if (data_length == 0) {
        if (request->pin.offset != 0 || (two && request->current.offset != 0))
            REFUSE(PP_INVALID, "variable-length PINs without template data need insertion offsets 0");
        if (request->length_bits && request->length_offset_bits + request->length_bits > request->frame_offset_bits)
            REFUSE(PP_INVALID, "in a variable-length PIN block the PIN length field must precede the PIN");
        size_t block_bits = request->frame_offset_bits + (size_t)request->max_digits * request->digit_bits;
        size_t blocks = two ? 2 : 1;
        if (blocks * ((block_bits + 7) / 8) > PP_MAX_DATA)
            REFUSE(PP_INVALID, "the longest PINs would not fit a short APDU");
        request->pin.grows = 1;
        request->current.grows = two;
        return PP_OK;
    } else if (two) {
        if (request->current.offset == request->pin.offset)
            REFUSE(PP_INVALID, "the current and new PIN have one insertion offset");
        if (request->current.offset >= data_length || request->pin.offset >= data_length)
            REFUSE(PP_INVALID, "an insertion offset lies outside the APDU template's data");
        struct pp_region *low = request->current.offset < request->pin.offset ? &request->current : &request->pin;
        struct pp_region *high = low == &request->current ? &request->pin : &request->current;
        low->size = high->offset - low->offset;
        high->size = data_length - high->offset;
    } else {
        if (request->pin.offset >= data_length)
            REFUSE(PP_INVALID, "an insertion offset lies outside the APDU template's data");
        request->pin.size = data_length - request->pin.offset;
    }
    if (check_block(request, request->pin.size, why) != 0 || (two && check_block(request, request->current.size, why)))
        return PP_INVALID;
    return PP_OK;
}

enum pp_status pp_parse(enum pp_operation operation, const uint8_t *structure, size_t length,
                        const struct pp_reader *reader, struct pp_request *request, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    *why = NULL;
    if (!structure || !reader || !request || (operation != PP_VERIFY && operation != PP_MODIFY))
        REFUSE(PP_MALFORMED, "no structure");
    size_t header = operation == PP_VERIFY ? PP_VERIFY_HEADER : PP_MODIFY_HEADER;
    if (length < header)
        REFUSE(PP_MALFORMED, "the structure is shorter than its header");
    if (little_endian32(structure + header - 4) != length - header)
        REFUSE(PP_MALFORMED, "ulDataLength disagrees with the bytes that follow it");

    memset(request, 0, sizeof *request);
    request->operation = operation;
    const uint8_t *field = structure;
    unsigned timeout = field[0];
    /* field[1] bTimerOut2: this reader does not tell the two timeouts apart (its bTimeOut2 property is 0). */
    unsigned format = field[2], block = field[3], length_format = field[4];
    unsigned offset_old = 0, offset_new = 0, confirm = 0;
    size_t next = 5;
    if (operation == PP_MODIFY) {
        offset_old = field[5];
        offset_new = field[6];
        next = 7;
    }
    unsigned max = field[next], min = field[next + 1]; /* wPINMaxExtraDigit 0xXXYY, little-endian: YY first */
    next += 2;
    if (operation == PP_MODIFY)
        confirm = field[next++];
    unsigned validation = field[next++];
    unsigned messages = field[next++];
    next += 2; /* wLangId: any language; there is no display */
    const uint8_t *message_index = field + next;

    if ((format & 0x03) == 0x03)
        REFUSE(PP_INVALID, "bmFormatString names the RFU PIN coding 11");
    if (length_format & 0xE0)
        REFUSE(PP_INVALID, "bmPINLengthFormat sets RFU bits 7-5");
    if (validation == 0 || (validation & ~0x07u))
        REFUSE(PP_INVALID, "bEntryValidationCondition is 00 or sets RFU bits");
    if ((validation & PP_VALIDATION_SUPPORTED) == 0)
        REFUSE(PP_INVALID, "bEntryValidationCondition asks only for 'timeout occurred', which this reader does not offer");
    unsigned shown = messages == 0xFF ? 0 : messages;
    if (operation == PP_VERIFY ? shown > 1 : shown > 3)
        REFUSE(PP_INVALID, operation == PP_VERIFY ? "bNumberMessage must be 00, 01 or FF for a verification"
                                                  : "bNumberMessage must be 00-03 or FF for a modification");
    for (unsigned i = 0; i < shown; i++)
        if (message_index[i] > 2)
            REFUSE(PP_INVALID, "bMsgIndex names a message this reader does not have");
    if (confirm & 0xFC)
        REFUSE(PP_INVALID, "bConfirmPIN sets RFU bits 7-2");
    if (max == 0)
        REFUSE(PP_INVALID, "wPINMaxExtraDigit gives no maximum PIN size");
    if (min > max)
        REFUSE(PP_INVALID, "wPINMaxExtraDigit's minimum exceeds its maximum");

    request->timeout = timeout ? timeout : reader->default_timeout;
    request->coding = (enum pp_coding)(format & 0x03);
    request->digit_bits = request->coding == PP_BCD ? 4 : 8;
    request->right_justified = (format >> 2) & 1;
    request->frame_offset_bits = ((format >> 3) & 0x0F) * ((format & 0x80) ? 8 : 1);
    request->length_bits = block >> 4;
    request->block_size = block & 0x0F;
    request->length_offset_bits = (length_format & 0x0F) * ((length_format & 0x10) ? 8 : 1);
    request->validation = validation;
    request->wants_current = (confirm >> 1) & 1;
    request->wants_confirmation = confirm & 1;
    request->min_digits = min > reader->min_digits ? min : reader->min_digits;
    if (request->min_digits == 0)
        request->min_digits = 1;
    request->max_digits = max < reader->max_digits ? max : reader->max_digits;
    if (request->max_digits > PP_MAX_DIGITS)
        request->max_digits = PP_MAX_DIGITS;
    if (request->min_digits > request->max_digits)
        REFUSE(PP_INVALID, "wPINMaxExtraDigit's range lies outside the reader's bMinPINSize-bMaxPINSize");
    if (request->length_bits && request->max_digits >= (1u << request->length_bits))
        REFUSE(PP_INVALID, "the PIN length field is too narrow for the longest PIN");

    enum pp_status status = read_template(request, structure + header, length - header, why);
    if (status != PP_OK)
        return status;
    return place_blocks(request, offset_old, offset_new, why);
}

static int valid_pin(const struct pp_request *request, const struct pp_pin *pin)
{
    if (!pin || pin->count < request->min_digits || pin->count > request->max_digits)
        return 0;
    for (size_t i = 0; i < pin->count; i++)
        if (pin->digits[i] < '0' || pin->digits[i] > '9')
            return 0;
    return 1;
}

/* Writes the PIN and its length into a block of `size` bytes. */
static int fill_block(const struct pp_request *request, uint8_t *block, size_t size, const struct pp_pin *pin,
                      int justify_right)
{
    size_t frame_bits = pin->count * request->digit_bits;
    size_t start = justify_right ? size * 8 - frame_bits : request->frame_offset_bits;
    for (size_t i = 0; i < pin->count; i++) {
        unsigned digit = (unsigned)(pin->digits[i] - '0');
        unsigned value = request->coding == PP_ASCII ? '0' + digit : digit;
        if (pp_write_bits(block, size, start + i * request->digit_bits, request->digit_bits, value) != 0)
            return -1;
    }
    if (request->length_bits
        && pp_write_bits(block, size, request->length_offset_bits, request->length_bits, (unsigned)pin->count) != 0)
        return -1;
    return 0;
}

enum pp_status pp_build(const struct pp_request *request, const struct pp_pin *current, const struct pp_pin *pin,
                        uint8_t *apdu, size_t *apdu_length, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    *why = NULL;
    if (!request || !apdu || !apdu_length)
        REFUSE(PP_INVALID, "no request");
    *apdu_length = 0;
    int two = request->operation == PP_MODIFY && request->wants_current;
    if (!valid_pin(request, pin) || (two && !valid_pin(request, current)))
        REFUSE(PP_INVALID, "a PIN has a length outside the range or a character other than a digit");

    uint8_t data[PP_MAX_DATA];
    size_t length = request->data_length;
    memcpy(data, request->data, length);
    const struct pp_region *regions[2] = { two ? &request->current : NULL, &request->pin };
    const struct pp_pin *pins[2] = { current, pin };
    enum pp_status status = PP_OK;
    for (int i = 0; i < 2 && status == PP_OK; i++) {
        const struct pp_region *region = regions[i];
        if (!region)
            continue;
        if (region->grows) {
            size_t bits = request->frame_offset_bits + pins[i]->count * request->digit_bits;
            size_t bytes = (bits + 7) / 8;
            if (length + bytes > PP_MAX_DATA) {
                status = PP_INVALID;
                *why = "the PINs do not fit a short APDU";
                break;
            }
            memset(data + length, 0xFF, bytes);
            if (fill_block(request, data + length, bytes, pins[i], 0) != 0)
                status = PP_INVALID;
            length += bytes;
        } else if (region->offset + region->size > length
                   || fill_block(request, data + region->offset, region->size, pins[i], request->right_justified)) {
            status = PP_INVALID;
        }
        if (status != PP_OK && !*why)
            *why = "a PIN does not fit its block";
    }
    if (status == PP_OK) {
        size_t at = 4;
        memcpy(apdu, request->header, 4);
        if (length > 0) {
            apdu[at++] = (uint8_t)length;
            memcpy(apdu + at, data, length);
            at += length;
        }
        if (request->has_le)
            apdu[at++] = request->le;
        *apdu_length = at;
    }
    explicit_bzero(data, sizeof data);
    return status;
}

static void set_status(uint8_t *answer, size_t *answer_length, unsigned status_word)
{
    answer[0] = (uint8_t)(status_word >> 8);
    answer[1] = (uint8_t)status_word;
    *answer_length = 2;
}

enum pp_result pp_run(const struct pp_request *request, const struct pp_io *io, uint8_t *answer, size_t capacity,
                      size_t *answer_length, unsigned *entries, size_t *apdus)
{
    *answer_length = 0;
    *entries = 0;
    *apdus = 0;
    if (!answer || capacity < 2)
        return PP_SMALL_BUFFER;

    enum pp_step steps[3];
    size_t step_count = 0;
    if (request->operation == PP_VERIFY) {
        steps[step_count++] = PP_STEP_PIN;
    } else {
        if (request->wants_current)
            steps[step_count++] = PP_STEP_CURRENT;
        steps[step_count++] = PP_STEP_NEW;
        if (request->wants_confirmation)
            steps[step_count++] = PP_STEP_CONFIRM;
    }

    struct pp_pin current, pin, again;
    uint8_t apdu[PP_MAX_APDU];
    size_t apdu_length = 0;
    memset(&current, 0, sizeof current);
    memset(&pin, 0, sizeof pin);
    memset(&again, 0, sizeof again);
    enum pp_result result = PP_ANSWERED;
    unsigned reader_answer = 0;

    for (size_t i = 0; i < step_count && !reader_answer && result == PP_ANSWERED; i++) {
        struct pp_pin *target = steps[i] == PP_STEP_CURRENT ? &current : steps[i] == PP_STEP_CONFIRM ? &again : &pin;
        enum pp_key key = io->enter(io->context, request, steps[i], target);
        (*entries)++;
        if (key == PP_KEY_CANCEL) {
            reader_answer = SW_CANCELLED;
        } else if (key == PP_KEY_TIMEOUT) {
            reader_answer = SW_TIMEOUT;
        } else if (key != PP_KEY_PIN || target->count > PP_MAX_DIGITS) {
            result = PP_FAILED;
        } else if (target->count > request->max_digits) {
            reader_answer = SW_LENGTH;
        } else if (!(request->validation & PP_VALIDATION_KEY) && target->count < request->max_digits) {
            reader_answer = SW_TIMEOUT; /* no validation key: only the last digit of the longest PIN ends the entry */
        } else if (target->count < request->min_digits) {
            reader_answer = SW_LENGTH;
        }
    }
    if (result == PP_ANSWERED && !reader_answer && request->wants_confirmation
        && (pin.count != again.count || memcmp(pin.digits, again.digits, pin.count) != 0))
        reader_answer = SW_MISMATCH;

    if (result == PP_ANSWERED && reader_answer) {
        set_status(answer, answer_length, reader_answer);
    } else if (result == PP_ANSWERED) {
        if (pp_build(request, &current, &pin, apdu, &apdu_length, NULL) != PP_OK) {
            result = PP_FAILED;
        } else {
            int sent = io->transmit(io->context, apdu, apdu_length, answer, capacity, answer_length);
            (*apdus)++;
            if (sent == -2)
                result = PP_SMALL_BUFFER;
            else if (sent != 0 || *answer_length < 2 || *answer_length > capacity)
                result = PP_FAILED;
        }
    }
    if (result != PP_ANSWERED)
        *answer_length = 0;
    explicit_bzero(&current, sizeof current);
    explicit_bzero(&pin, sizeof pin);
    explicit_bzero(&again, sizeof again);
    explicit_bzero(apdu, sizeof apdu);
    return result;
}
