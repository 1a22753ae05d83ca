/*
 * tokenpin's virtual pinpad reader: a pcscd reader driver (IFD handler 3.0) for tests.
 *
 * The card is tokenpin-sim, connected over vpcd's protocol (link.h) on a loopback TCP port. The reader has a keypad (keypad.h: scripted entries in a file) and answers PC/SC v2 part 10:
 * CM_IOCTL_GET_FEATURE_REQUEST lists FEATURE_VERIFY_PIN_DIRECT, FEATURE_MODIFY_PIN_DIRECT,
 * FEATURE_IFD_PIN_PROPERTIES and FEATURE_GET_TLV_PROPERTIES; the two PIN features run pinpad.c's operation.
 *
 * reader.conf:  FRIENDLYNAME "tokenpin pinpad 0"
 *               DEVICENAME   tokenpin-pinpad:port=35998:keys=/path/keys:log=/path/pinpad.log
 *               LIBPATH      /path/libifd-tokenpin-pinpad.so
 * DEVICENAME options, `:`-separated after `tokenpin-pinpad`: port (required), keys (the keypad script; without it
 * every entry times out), log (a debug log: every control call, APDU header and status word, keypad step; never
 * a PIN or an APDU's data), min and max (bMinPINSize, bMaxPINSize; 4 and 16), vendor and product (wIdVendor,
 * wIdProduct; 0x1209 and 0x0001, pid.codes' test IDs), timeout (seconds for bTimerOut 00; 30), maxapdu
 * (dwMaxAPDUDataSize; 0, short APDUs, as clients assume behind vpcd), cardtimeout (milliseconds the card may take
 * to answer; 30000). Without DEVICENAME (IFDHCreateChannel) the port is CHANNELID and the keys and log files come
 * from TOKENPIN_PINPAD_KEYS and TOKENPIN_PINPAD_LOG.
 *
 * Every length from pcscd, the card and the structures is checked before use; buffers that held a PIN are wiped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ifdhandler.h>
#include <reader.h>

#include "keypad.h"
#include "link.h"
#include "pinpad.h"

#define EXPORT __attribute__((visibility("default")))

#define MAX_READERS 16
#define MAX_OPTION_PATH 1024
#define DEVICE_PREFIX "tokenpin-pinpad"

/* The control codes for the features, numbered as the CCID driver numbers its own. */
#define CLASS2_IOCTL_MAGIC 0x330000
#define IOCTL_VERIFY_PIN_DIRECT SCARD_CTL_CODE(FEATURE_VERIFY_PIN_DIRECT + CLASS2_IOCTL_MAGIC)
#define IOCTL_MODIFY_PIN_DIRECT SCARD_CTL_CODE(FEATURE_MODIFY_PIN_DIRECT + CLASS2_IOCTL_MAGIC)
#define IOCTL_IFD_PIN_PROPERTIES SCARD_CTL_CODE(FEATURE_IFD_PIN_PROPERTIES + CLASS2_IOCTL_MAGIC)
#define IOCTL_GET_TLV_PROPERTIES SCARD_CTL_CODE(FEATURE_GET_TLV_PROPERTIES + CLASS2_IOCTL_MAGIC)

struct options {
    unsigned port;
    char keys[MAX_OPTION_PATH];
    char log[MAX_OPTION_PATH];
    struct pp_reader limits;
    unsigned vendor, product, max_apdu, card_timeout_ms;
};

struct reader {
    int used;
    DWORD lun;
    struct options options;
    struct link link;
    int connected; /* a card was connected at the last look */
    int log;
    UCHAR atr[MAX_ATR_SIZE];
    size_t atr_length;
    unsigned long controls, apdus;
};

/* The table's lock guards `used` and `lun`; each reader's own lock (taken after the table's, never while holding
 * it) guards the rest of it. pcscd already calls a reader's functions one at a time; the locks keep the driver safe
 * when readers share it. */
static struct reader readers[MAX_READERS];
static pthread_mutex_t reader_locks[MAX_READERS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;

static void init_locks(void)
{
    for (size_t i = 0; i < MAX_READERS; i++)
        pthread_mutex_init(&reader_locks[i], NULL);
}

/* --- logging --------------------------------------------------------------------------------------------------- */

static void say(struct reader *reader, int error, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* One line to the debug log (when there is one) and, for errors, to pcscd's standard error. */
static void say(struct reader *reader, int error, const char *format, ...)
{
    char line[512];
    struct timespec now;
    struct tm local;
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &local);
    int at = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld tokenpin pinpad: ", local.tm_hour, local.tm_min,
                      local.tm_sec, now.tv_nsec / 1000000);
    va_list arguments;
    va_start(arguments, format);
    if (at > 0 && (size_t)at < sizeof line)
        vsnprintf(line + at, sizeof line - (size_t)at, format, arguments);
    va_end(arguments);
    size_t length = strnlen(line, sizeof line - 2);
    line[length++] = '\n';
    if (reader && reader->log >= 0 && write(reader->log, line, length) < 0) {
        /* A log that cannot be written is not worth failing a card operation for. */
    }
    if (error && write(STDERR_FILENO, line, length) < 0) {
    }
}

/* "CLA INS P1 P2" of an APDU, for the log: never its data, which may hold a PIN. */
static void hex_header(char *out, size_t size, const uint8_t *apdu, size_t length)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < length && i < 4; i++) {
        int put = snprintf(out + at, size - at, i ? " %02X" : "%02X", apdu[i]);
        if (put < 0 || (size_t)put >= size - at)
            break;
        at += (size_t)put;
    }
}

/* --- the table of readers -------------------------------------------------------------------------------------- */

static size_t index_of(const struct reader *reader)
{
    return (size_t)(reader - readers);
}

/* The reader for `lun`, with its lock held; NULL when there is none. */
static struct reader *find_reader(DWORD lun)
{
    pthread_once(&locks_once, init_locks);
    for (size_t i = 0; i < MAX_READERS; i++) {
        pthread_mutex_lock(&table_lock);
        int match = readers[i].used && readers[i].lun == lun;
        pthread_mutex_unlock(&table_lock);
        if (!match)
            continue;
        pthread_mutex_lock(&reader_locks[i]);
        pthread_mutex_lock(&table_lock);
        match = readers[i].used && readers[i].lun == lun; /* closed meanwhile? */
        pthread_mutex_unlock(&table_lock);
        if (match)
            return &readers[i];
        pthread_mutex_unlock(&reader_locks[i]);
    }
    return NULL;
}

static void release(struct reader *reader)
{
    pthread_mutex_unlock(&reader_locks[index_of(reader)]);
}

/* --- the card ------------------------------------------------------------------------------------------------ */

/* Notes a card the link dropped (pulled, silent, or breaking the protocol). */
static void check_gone(struct reader *reader)
{
    if (reader->connected && reader->link.card < 0) {
        reader->connected = 0;
        reader->atr_length = 0;
        say(reader, 0, "card gone: %s", reader->link.gone ? reader->link.gone : "?");
    }
}

/* Takes a waiting tokenpin-sim connection; 1 when a card is connected. */
static int accept_card(struct reader *reader)
{
    if (!link_accept(&reader->link))
        return 0;
    if (!reader->connected) {
        reader->connected = 1;
        reader->apdus = 0;
        say(reader, 0, "card connected");
    }
    return 1;
}

/* Sends a message to the card (and reads its answer); 0, or -1 when the card is gone. */
static int exchange(struct reader *reader, const uint8_t *message, size_t length, size_t *answer)
{
    int result = link_exchange(&reader->link, message, length, answer);
    check_gone(reader);
    return result;
}

static int control_card(struct reader *reader, enum link_control code)
{
    uint8_t byte = (uint8_t)code;
    return exchange(reader, &byte, 1, NULL);
}

/* Asks the card for its ATR and keeps it; 0, or -1 when no card answers with one. */
static int read_atr(struct reader *reader)
{
    uint8_t byte = LINK_ATR;
    size_t length = 0;
    if (exchange(reader, &byte, 1, &length) != 0)
        return -1;
    if (length == 0 || length > MAX_ATR_SIZE) {
        link_drop(&reader->link, "its ATR is empty or longer than 33 bytes");
        check_gone(reader);
        return -1;
    }
    memcpy(reader->atr, link_answer(&reader->link), length);
    reader->atr_length = length;
    return 0;
}

/* --- channels -------------------------------------------------------------------------------------------------- */

static int parse_number(const char *text, unsigned long low, unsigned long high, unsigned *value)
{
    if (!*text)
        return -1;
    char *end;
    errno = 0;
    unsigned long number = strtoul(text, &end, 0);
    if (errno || *end || text[0] == '-' || number < low || number > high)
        return -1;
    *value = (unsigned)number;
    return 0;
}

static void default_options(struct options *options)
{
    memset(options, 0, sizeof *options);
    options->limits.min_digits = 4;
    options->limits.max_digits = 16;
    options->limits.default_timeout = PP_DEFAULT_TIMEOUT;
    options->vendor = 0x1209;
    options->product = 0x0001;
    options->card_timeout_ms = 30000;
}

static int set_path(char *target, const char *value)
{
    size_t length = strlen(value);
    if (length == 0 || length >= MAX_OPTION_PATH || value[0] != '/')
        return -1;
    memcpy(target, value, length + 1);
    return 0;
}

/* Reads DEVICENAME; 0, or -1 with the offending part logged. */
static int parse_device(const char *device, struct options *options)
{
    default_options(options);
    size_t prefix = strlen(DEVICE_PREFIX);
    if (!device || strncmp(device, DEVICE_PREFIX, prefix) != 0 || (device[prefix] != ':' && device[prefix] != '\0')) {
        say(NULL, 1, "DEVICENAME must start with %s: (got '%s')", DEVICE_PREFIX, device ? device : "");
        return -1;
    }
    char copy[4096];
    if (strlen(device) >= sizeof copy) {
        say(NULL, 1, "DEVICENAME is longer than %zu bytes", sizeof copy - 1);
        return -1;
    }
    strcpy(copy, device + prefix);
    const struct {
        const char *name;
        unsigned *number; /* a number in [low, high], or */
        char *path;       /* an absolute path */
        unsigned long low, high;
    } known[] = {
        { "port", &options->port, NULL, 1, 65535 },
        { "keys", NULL, options->keys, 0, 0 },
        { "log", NULL, options->log, 0, 0 },
        { "min", &options->limits.min_digits, NULL, 1, PP_MAX_DIGITS },
        { "max", &options->limits.max_digits, NULL, 1, PP_MAX_DIGITS },
        { "vendor", &options->vendor, NULL, 0, 0xFFFF },
        { "product", &options->product, NULL, 0, 0xFFFF },
        { "timeout", &options->limits.default_timeout, NULL, 1, 255 },
        { "maxapdu", &options->max_apdu, NULL, 0, 0x10000 },
        { "cardtimeout", &options->card_timeout_ms, NULL, 1, 600000 },
    };
    for (char *save = NULL, *part = strtok_r(copy, ":", &save); part; part = strtok_r(NULL, ":", &save)) {
        char *value = strchr(part, '=');
        int bad = 1;
        if (value) {
            *value++ = '\0';
            for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
                if (strcmp(part, known[i].name) == 0)
                    bad = known[i].number ? parse_number(value, known[i].low, known[i].high, known[i].number)
                                          : set_path(known[i].path, value);
        }
        if (bad) {
            say(NULL, 1, "DEVICENAME option '%s' is unknown or has a bad value", part);
            return -1;
        }
    }
    if (options->port == 0 || options->limits.min_digits > options->limits.max_digits) {
        say(NULL, 1, "DEVICENAME needs port=N, and min may not exceed max");
        return -1;
    }
    return 0;
}

static RESPONSECODE open_channel(DWORD lun, const struct options *options)
{
    pthread_once(&locks_once, init_locks);
    pthread_mutex_lock(&table_lock);
    struct reader *reader = NULL;
    for (size_t i = 0; i < MAX_READERS; i++) {
        if (readers[i].used && readers[i].lun == lun) {
            pthread_mutex_unlock(&table_lock);
            return IFD_COMMUNICATION_ERROR;
        }
        if (!readers[i].used && !reader)
            reader = &readers[i];
    }
    RESPONSECODE result = IFD_COMMUNICATION_ERROR;
    if (!reader) {
        say(NULL, 1, "more than %d pinpad readers", MAX_READERS);
        goto done;
    }
    /* An unused entry's lock is free: nobody finds an unused reader. */
    memset(reader, 0, sizeof *reader);
    reader->options = *options;
    reader->log = -1;
    if (options->log[0])
        reader->log = open(options->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (link_open(&reader->link, options->port, options->card_timeout_ms) != 0) {
        say(reader, 1, "cannot listen for the card on 127.0.0.1:%u: %s", options->port, strerror(errno));
        if (reader->log >= 0)
            close(reader->log);
        goto done;
    }
    reader->lun = lun;
    reader->used = 1;
    say(reader, 0, "reader open (lun %lX): waiting for tokenpin-sim on 127.0.0.1:%u; keypad %s", (unsigned long)lun,
        options->port, options->keys[0] ? options->keys : "(none: every entry times out)");
    result = IFD_SUCCESS;
done:
    pthread_mutex_unlock(&table_lock);
    return result;
}

EXPORT RESPONSECODE IFDHCreateChannelByName(DWORD Lun, LPSTR DeviceName)
{
    struct options options;
    if (parse_device(DeviceName, &options) != 0)
        return IFD_COMMUNICATION_ERROR;
    return open_channel(Lun, &options);
}

EXPORT RESPONSECODE IFDHCreateChannel(DWORD Lun, DWORD Channel)
{
    struct options options;
    default_options(&options);
    const char *keys = getenv("TOKENPIN_PINPAD_KEYS"), *log = getenv("TOKENPIN_PINPAD_LOG");
    if (Channel < 1 || Channel > 65535 || (keys && set_path(options.keys, keys) != 0)
        || (log && set_path(options.log, log) != 0))
        return IFD_COMMUNICATION_ERROR;
    options.port = (unsigned)Channel;
    return open_channel(Lun, &options);
}

EXPORT RESPONSECODE IFDHCloseChannel(DWORD Lun)
{
    struct reader *reader = find_reader(Lun);
    if (!reader)
        return IFD_COMMUNICATION_ERROR;
    if (reader->link.card >= 0)
        control_card(reader, LINK_POWER_OFF);
    link_close(&reader->link);
    say(reader, 0, "reader closed");
    if (reader->log >= 0)
        close(reader->log);
    pthread_mutex_lock(&table_lock);
    reader->used = 0;
    pthread_mutex_unlock(&table_lock);
    release(reader);
    return IFD_SUCCESS;
}

/* --- capabilities, power, presence, APDUs ---------------------------------------------------------------------- */

static RESPONSECODE put_value(PUCHAR value, PDWORD length, const void *bytes, size_t size)
{
    if (*length < size)
        return IFD_ERROR_INSUFFICIENT_BUFFER;
    memcpy(value, bytes, size);
    *length = size;
    return IFD_SUCCESS;
}

EXPORT RESPONSECODE IFDHGetCapabilities(DWORD Lun, DWORD Tag, PDWORD Length, PUCHAR Value)
{
    if (!Length || !Value)
        return IFD_COMMUNICATION_ERROR;
    struct reader *reader = find_reader(Lun);
    if (!reader) {
        *Length = 0;
        return IFD_COMMUNICATION_ERROR;
    }
    RESPONSECODE result;
    UCHAR byte;
    switch (Tag) {
    case TAG_IFD_ATR:
    case SCARD_ATTR_ATR_STRING:
        result = put_value(Value, Length, reader->atr, reader->atr_length);
        break;
    case TAG_IFD_SLOTS_NUMBER:
        byte = 1;
        result = put_value(Value, Length, &byte, 1);
        break;
    case TAG_IFD_SIMULTANEOUS_ACCESS:
        byte = MAX_READERS;
        result = put_value(Value, Length, &byte, 1);
        break;
    case TAG_IFD_THREAD_SAFE: /* each reader has its own lock */
        byte = 1;
        result = put_value(Value, Length, &byte, 1);
        break;
    case TAG_IFD_SLOT_THREAD_SAFE:
        byte = 0;
        result = put_value(Value, Length, &byte, 1);
        break;
    case SCARD_ATTR_VENDOR_NAME:
        result = put_value(Value, Length, "tokenpin", sizeof "tokenpin");
        break;
    case SCARD_ATTR_VENDOR_IFD_TYPE:
        result = put_value(Value, Length, "virtual pinpad", sizeof "virtual pinpad");
        break;
    default:
        result = IFD_ERROR_TAG;
    }
    if (result != IFD_SUCCESS)
        *Length = 0;
    release(reader);
    return result;
}

EXPORT RESPONSECODE IFDHSetCapabilities(DWORD Lun, DWORD Tag, DWORD Length, PUCHAR Value)
{
    (void)Lun, (void)Tag, (void)Length, (void)Value;
    return IFD_NOT_SUPPORTED;
}

EXPORT RESPONSECODE IFDHSetProtocolParameters(DWORD Lun, DWORD Protocol, UCHAR Flags, UCHAR PTS1, UCHAR PTS2,
                                              UCHAR PTS3)
{
    (void)Lun, (void)Flags, (void)PTS1, (void)PTS2, (void)PTS3;
    return Protocol == SCARD_PROTOCOL_T0 || Protocol == SCARD_PROTOCOL_T1 ? IFD_SUCCESS : IFD_PROTOCOL_NOT_SUPPORTED;
}

EXPORT RESPONSECODE IFDHPowerICC(DWORD Lun, DWORD Action, PUCHAR Atr, PDWORD AtrLength)
{
    if (!AtrLength || (!Atr && *AtrLength > 0))
        return IFD_COMMUNICATION_ERROR;
    DWORD capacity = *AtrLength;
    *AtrLength = 0;
    struct reader *reader = find_reader(Lun);
    if (!reader)
        return IFD_COMMUNICATION_ERROR;
    RESPONSECODE result = IFD_ERROR_POWER_ACTION;
    if (Action != IFD_POWER_UP && Action != IFD_POWER_DOWN && Action != IFD_RESET) {
        result = IFD_NOT_SUPPORTED;
    } else if (!accept_card(reader)) {
        result = Action == IFD_POWER_DOWN ? IFD_SUCCESS : IFD_ERROR_POWER_ACTION;
    } else if (Action == IFD_POWER_DOWN) {
        result = control_card(reader, LINK_POWER_OFF) == 0 ? IFD_SUCCESS : IFD_ERROR_POWER_ACTION;
        say(reader, 0, "power off");
    } else if (control_card(reader, Action == IFD_POWER_UP ? LINK_POWER_ON : LINK_RESET) == 0
               && read_atr(reader) == 0) {
        if (capacity < reader->atr_length) {
            result = IFD_ERROR_INSUFFICIENT_BUFFER;
        } else {
            memcpy(Atr, reader->atr, reader->atr_length);
            *AtrLength = reader->atr_length;
            result = IFD_SUCCESS;
        }
        say(reader, 0, "%s: ATR of %zu bytes", Action == IFD_POWER_UP ? "power on" : "reset", reader->atr_length);
    }
    release(reader);
    return result;
}

EXPORT RESPONSECODE IFDHICCPresence(DWORD Lun)
{
    struct reader *reader = find_reader(Lun);
    if (!reader)
        return IFD_COMMUNICATION_ERROR;
    /* As vpcd: a card is present while tokenpin-sim is connected and answers with an ATR. */
    RESPONSECODE result = accept_card(reader) && read_atr(reader) == 0 ? IFD_ICC_PRESENT : IFD_ICC_NOT_PRESENT;
    check_gone(reader);
    release(reader);
    return result;
}

EXPORT RESPONSECODE IFDHTransmitToICC(DWORD Lun, SCARD_IO_HEADER SendPci, PUCHAR TxBuffer, DWORD TxLength,
                                      PUCHAR RxBuffer, PDWORD RxLength, PSCARD_IO_HEADER RecvPci)
{
    if (!RxLength)
        return IFD_COMMUNICATION_ERROR;
    DWORD capacity = *RxLength;
    *RxLength = 0;
    /* A 1-byte message would be a control code on the link: no command APDU is that short. */
    if (!TxBuffer || TxLength < 2 || TxLength > LINK_MAX_MESSAGE || (!RxBuffer && capacity > 0))
        return IFD_COMMUNICATION_ERROR;
    struct reader *reader = find_reader(Lun);
    if (!reader)
        return IFD_COMMUNICATION_ERROR;
    RESPONSECODE result = IFD_COMMUNICATION_ERROR;
    size_t length = 0;
    char header[16];
    hex_header(header, sizeof header, TxBuffer, TxLength);
    if (reader->link.card < 0) {
        result = IFD_ICC_NOT_PRESENT;
    } else if (exchange(reader, TxBuffer, TxLength, &length) == 0) {
        const uint8_t *bytes = link_answer(&reader->link);
        reader->apdus++;
        if (length < 2) {
            say(reader, 0, "apdu %s -> no answer (%zu bytes)", header, length);
        } else if (length > capacity) {
            say(reader, 0, "apdu %s -> %zu bytes, more than pcscd's %lu", header, length, (unsigned long)capacity);
            result = IFD_ERROR_INSUFFICIENT_BUFFER;
        } else {
            memcpy(RxBuffer, bytes, length);
            *RxLength = length;
            if (RecvPci)
                RecvPci->Protocol = SendPci.Protocol;
            result = IFD_SUCCESS;
            say(reader, 0, "apdu %s -> %02X %02X (%zu bytes)", header, RxBuffer[length - 2], RxBuffer[length - 1],
                length);
        }
        link_wipe_answer(&reader->link, length);
    }
    release(reader);
    return result;
}

/* --- the pinpad ------------------------------------------------------------------------------------------------ */

static const char *step_name(enum pp_step step)
{
    switch (step) {
    case PP_STEP_CURRENT:
        return "current PIN";
    case PP_STEP_NEW:
        return "new PIN";
    case PP_STEP_CONFIRM:
        return "new PIN again";
    case PP_STEP_PIN:
    default:
        return "PIN";
    }
}

static enum pp_key keypad_enter(void *context, const struct pp_request *request, enum pp_step step,
                                struct pp_pin *pin)
{
    struct reader *reader = context;
    if (!reader->options.keys[0]) {
        say(reader, 0, "keypad (%s): no script, so nobody types: timeout", step_name(step));
        return PP_KEY_TIMEOUT;
    }
    struct keypad_entry entry;
    enum keypad_status status = keypad_take(reader->options.keys, &entry);
    if (status == KEYPAD_EMPTY) {
        say(reader, 0, "keypad (%s): no entry left: timeout", step_name(step));
        return PP_KEY_TIMEOUT;
    }
    if (status == KEYPAD_UNREADABLE) {
        say(reader, 1, "keypad (%s): cannot use the script %s (not a regular file, too large, or unreadable)",
            step_name(step), reader->options.keys);
        return PP_KEY_ABORT;
    }
    if (status == KEYPAD_BAD_LINE) {
        say(reader, 1, "keypad (%s): line %u of %s is not a PIN, CANCEL or TIMEOUT (removed)", step_name(step),
            entry.line, reader->options.keys);
        return PP_KEY_ABORT;
    }
    unsigned limit_ms = request->timeout * 1000u;
    enum pp_key key = entry.key;
    unsigned wait_ms = entry.after_ms;
    if (key != PP_KEY_TIMEOUT && wait_ms > limit_ms) {
        key = PP_KEY_TIMEOUT;
        wait_ms = limit_ms;
    }
    const char *typed = entry.key == PP_KEY_PIN ? "PIN" : entry.key == PP_KEY_CANCEL ? "CANCEL" : "TIMEOUT";
    if (key != entry.key)
        say(reader, 0, "keypad (%s): %s after %u ms, slower than the reader's %u s: timeout (line %u, %u left)",
            step_name(step), typed, entry.after_ms, request->timeout, entry.line, entry.left);
    else
        say(reader, 0, "keypad (%s): %s after %u ms (line %u, %u left)", step_name(step), typed, entry.after_ms,
            entry.line, entry.left);
    if (wait_ms && link_idle(&reader->link, wait_ms) != 0) {
        check_gone(reader);
        say(reader, 0, "keypad: the card went during the entry");
        explicit_bzero(&entry, sizeof entry);
        return PP_KEY_ABORT;
    }
    if (key == PP_KEY_PIN)
        *pin = entry.pin;
    explicit_bzero(&entry, sizeof entry);
    return key;
}

static int pinpad_transmit(void *context, const uint8_t *apdu, size_t length, uint8_t *answer, size_t capacity,
                           size_t *answer_length)
{
    struct reader *reader = context;
    char header[16];
    hex_header(header, sizeof header, apdu, length);
    size_t got = 0;
    *answer_length = 0;
    if (exchange(reader, apdu, length, &got) != 0) {
        say(reader, 0, "pinpad apdu %s [sensitive] -> no answer", header);
        return -1;
    }
    reader->apdus++;
    const uint8_t *bytes = link_answer(&reader->link);
    int result = 0;
    if (got < 2) {
        result = -1;
    } else if (got > capacity) {
        result = -2;
    } else {
        memcpy(answer, bytes, got);
        *answer_length = got;
    }
    say(reader, 0, "pinpad apdu %s [sensitive, %zu bytes] -> %02X %02X (%zu bytes)", header, length,
        got >= 2 ? bytes[got - 2] : 0u, got >= 2 ? bytes[got - 1] : 0u, got);
    link_wipe_answer(&reader->link, got);
    return result;
}

static const char *coding_name(enum pp_coding coding)
{
    return coding == PP_ASCII ? "ASCII" : coding == PP_BCD ? "BCD" : "binary";
}

static RESPONSECODE pinpad(struct reader *reader, enum pp_operation operation, const uint8_t *structure,
                           size_t length, PUCHAR answer, DWORD capacity, LPDWORD returned)
{
    const char *name = operation == PP_VERIFY ? "VERIFY_PIN_DIRECT" : "MODIFY_PIN_DIRECT";
    if (capacity < 2) {
        say(reader, 0, "control %s: a %lu-byte answer buffer cannot take a status word", name,
            (unsigned long)capacity);
        return IFD_ERROR_INSUFFICIENT_BUFFER;
    }
    struct pp_request request;
    const char *why = NULL;
    enum pp_status status = pp_parse(operation, structure, length, &reader->options.limits, &request, &why);
    if (status == PP_MALFORMED) {
        say(reader, 1, "control %s: refused: %s (%zu bytes)", name, why, length);
        return IFD_NOT_SUPPORTED;
    }
    if (status == PP_INVALID) {
        say(reader, 1, "control %s: 6B 80: %s", name, why);
        answer[0] = 0x6B;
        answer[1] = 0x80;
        *returned = 2;
        return IFD_SUCCESS;
    }
    if (reader->link.card < 0) {
        say(reader, 0, "control %s: no card", name);
        return IFD_ICC_NOT_PRESENT;
    }
    char header[16];
    hex_header(header, sizeof header, request.header, 4);
    say(reader, 0,
        "control %s: %s, %s %s-justified, block %u bytes%s, length field %u bits, PIN %u-%u digits, timeout %u s",
        name, header, coding_name(request.coding), request.right_justified ? "right" : "left", request.block_size,
        request.block_size ? "" : request.data_length ? " (pre-padded)" : " (variable)", request.length_bits,
        request.min_digits, request.max_digits, request.timeout);
    struct pp_io io = { .context = reader, .enter = keypad_enter, .transmit = pinpad_transmit };
    size_t answer_length = 0, apdus = 0;
    unsigned entries = 0;
    enum pp_result result = pp_run(&request, &io, answer, capacity, &answer_length, &entries, &apdus);
    explicit_bzero(&request, sizeof request);
    if (result != PP_ANSWERED) {
        say(reader, 0, "control %s -> %s (entries %u, apdus %zu)", name,
            result == PP_SMALL_BUFFER ? "the card's answer does not fit" : "failed", entries, apdus);
        return result == PP_SMALL_BUFFER ? IFD_ERROR_INSUFFICIENT_BUFFER : IFD_COMMUNICATION_ERROR;
    }
    say(reader, 0, "control %s -> %02X %02X (%s; entries %u, apdus %zu)", name, answer[answer_length - 2],
        answer[answer_length - 1], apdus ? "the card's answer" : "the reader's answer", entries, apdus);
    *returned = answer_length;
    return IFD_SUCCESS;
}

static size_t put_feature(PUCHAR out, uint8_t tag, uint32_t code)
{
    out[0] = tag;
    out[1] = 4;
    out[2] = (uint8_t)(code >> 24); /* big-endian, part 10 §2.2 */
    out[3] = (uint8_t)(code >> 16);
    out[4] = (uint8_t)(code >> 8);
    out[5] = (uint8_t)code;
    return 6;
}

static size_t put_property(uint8_t *out, uint8_t tag, size_t size, uint32_t value)
{
    out[0] = tag;
    out[1] = (uint8_t)size;
    for (size_t i = 0; i < size; i++)
        out[2 + i] = (uint8_t)(value >> (8 * i)); /* little-endian */
    return 2 + size;
}

EXPORT RESPONSECODE IFDHControl(DWORD Lun, DWORD dwControlCode, PUCHAR TxBuffer, DWORD TxLength, PUCHAR RxBuffer,
                                DWORD RxLength, LPDWORD pdwBytesReturned)
{
    if (!pdwBytesReturned)
        return IFD_COMMUNICATION_ERROR;
    *pdwBytesReturned = 0;
    if ((!TxBuffer && TxLength > 0) || (!RxBuffer && RxLength > 0))
        return IFD_COMMUNICATION_ERROR;
    struct reader *reader = find_reader(Lun);
    if (!reader)
        return IFD_COMMUNICATION_ERROR;
    reader->controls++;
    RESPONSECODE result = IFD_SUCCESS;
    uint8_t properties[64];
    size_t size = 0;
    if (dwControlCode == CM_IOCTL_GET_FEATURE_REQUEST) {
        if (RxLength < 4 * 6) {
            result = IFD_ERROR_INSUFFICIENT_BUFFER;
        } else {
            size += put_feature(RxBuffer + size, FEATURE_VERIFY_PIN_DIRECT, IOCTL_VERIFY_PIN_DIRECT);
            size += put_feature(RxBuffer + size, FEATURE_MODIFY_PIN_DIRECT, IOCTL_MODIFY_PIN_DIRECT);
            size += put_feature(RxBuffer + size, FEATURE_IFD_PIN_PROPERTIES, IOCTL_IFD_PIN_PROPERTIES);
            size += put_feature(RxBuffer + size, FEATURE_GET_TLV_PROPERTIES, IOCTL_GET_TLV_PROPERTIES);
            *pdwBytesReturned = size;
        }
        say(reader, 0, "control GET_FEATURE_REQUEST -> %zu bytes (control #%lu)", size, reader->controls);
    } else if (dwControlCode == IOCTL_GET_TLV_PROPERTIES) {
        const struct options *options = &reader->options;
        static const char firmware[] = "tokenpin virtual pinpad 1";
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_wLcdLayout, 2, 0); /* no display */
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_bEntryValidationCondition, 1,
                             PP_VALIDATION_SUPPORTED);
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_bTimeOut2, 1, 0);
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_bMinPINSize, 1, options->limits.min_digits);
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_bMaxPINSize, 1, options->limits.max_digits);
        properties[size++] = PCSCv2_PART10_PROPERTY_sFirmwareID;
        properties[size++] = sizeof firmware - 1;
        memcpy(properties + size, firmware, sizeof firmware - 1);
        size += sizeof firmware - 1;
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_bPPDUSupport, 1, 0);
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_dwMaxAPDUDataSize, 4, options->max_apdu);
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_wIdVendor, 2, options->vendor);
        size += put_property(properties + size, PCSCv2_PART10_PROPERTY_wIdProduct, 2, options->product);
        if (RxLength < size) {
            result = IFD_ERROR_INSUFFICIENT_BUFFER;
        } else {
            memcpy(RxBuffer, properties, size);
            *pdwBytesReturned = size;
        }
        say(reader, 0, "control GET_TLV_PROPERTIES -> %zu bytes (control #%lu)", size, reader->controls);
    } else if (dwControlCode == IOCTL_IFD_PIN_PROPERTIES) {
        /* PIN_PROPERTIES_STRUCTURE: wLcdLayout 0000 (no display), bEntryValidationCondition, bTimeOut2 00. */
        if (RxLength < 4) {
            result = IFD_ERROR_INSUFFICIENT_BUFFER;
        } else {
            RxBuffer[0] = RxBuffer[1] = RxBuffer[3] = 0;
            RxBuffer[2] = PP_VALIDATION_SUPPORTED;
            *pdwBytesReturned = 4;
        }
        say(reader, 0, "control IFD_PIN_PROPERTIES -> 4 bytes (control #%lu)", reader->controls);
    } else if (dwControlCode == IOCTL_VERIFY_PIN_DIRECT || dwControlCode == IOCTL_MODIFY_PIN_DIRECT) {
        say(reader, 0, "control #%lu", reader->controls);
        result = pinpad(reader, dwControlCode == IOCTL_VERIFY_PIN_DIRECT ? PP_VERIFY : PP_MODIFY, TxBuffer, TxLength,
                        RxBuffer, RxLength, pdwBytesReturned);
    } else {
        say(reader, 0, "control %08lX: not supported (control #%lu)", (unsigned long)dwControlCode, reader->controls);
        result = IFD_ERROR_NOT_SUPPORTED;
    }
    if (result != IFD_SUCCESS)
        *pdwBytesReturned = 0;
    release(reader);
    return result;
}
