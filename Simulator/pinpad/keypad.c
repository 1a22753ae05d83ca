/* The virtual pinpad's scripted keypad (keypad.h). */
#define _GNU_SOURCE
#include "keypad.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The next whitespace-separated word of [*at, end): its start and length; 0 when there is none. */
static size_t next_word(const char **at, const char *end, const char **word)
{
    while (*at < end && is_space(**at))
        (*at)++;
    *word = *at;
    while (*at < end && !is_space(**at))
        (*at)++;
    return (size_t)(*at - *word);
}

static int word_is(const char *word, size_t length, const char *text)
{
    return length == strlen(text) && memcmp(word, text, length) == 0;
}

/* Reads one entry line (without its newline); 0, or -1 when it is not an entry. */
static int parse_line(const char *line, const char *end, struct keypad_entry *entry)
{
    const char *word;
    size_t length = next_word(&line, end, &word);
    if (word_is(word, length, "CANCEL")) {
        entry->key = PP_KEY_CANCEL;
    } else if (word_is(word, length, "TIMEOUT")) {
        entry->key = PP_KEY_TIMEOUT;
    } else {
        if (length == 0 || length > PP_MAX_DIGITS)
            return -1;
        for (size_t i = 0; i < length; i++)
            if (word[i] < '0' || word[i] > '9')
                return -1;
        entry->key = PP_KEY_PIN;
        memcpy(entry->pin.digits, word, length);
        entry->pin.count = length;
    }
    length = next_word(&line, end, &word);
    if (length == 0)
        return 0;
    if (!word_is(word, length, "after"))
        return -1;
    length = next_word(&line, end, &word);
    if (length == 0 || length > 7)
        return -1;
    unsigned value = 0;
    for (size_t i = 0; i < length; i++) {
        if (word[i] < '0' || word[i] > '9')
            return -1;
        value = value * 10 + (unsigned)(word[i] - '0');
    }
    if (value > KEYPAD_MAX_AFTER_MS)
        return -1;
    entry->after_ms = value;
    const char *rest;
    return next_word(&line, end, &rest) == 0 ? 0 : -1;
}

static int is_entry_line(const char *line, const char *end)
{
    while (line < end && is_space(*line))
        line++;
    return line < end && *line != '#';
}

static int read_all(int fd, char *buffer, size_t capacity, size_t *length)
{
    *length = 0;
    while (*length < capacity) {
        ssize_t got = read(fd, buffer + *length, capacity - *length);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            return 0;
        *length += (size_t)got;
    }
    return 0;
}

static int rewrite(int fd, const char *bytes, size_t length)
{
    size_t written = 0;
    while (written < length) {
        ssize_t put = pwrite(fd, bytes + written, length - written, (off_t)written);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return -1;
        written += (size_t)put;
    }
    return ftruncate(fd, (off_t)length);
}

enum keypad_status keypad_take(const char *path, struct keypad_entry *entry)
{
    memset(entry, 0, sizeof *entry);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? KEYPAD_EMPTY : KEYPAD_UNREADABLE;
    enum keypad_status status = KEYPAD_UNREADABLE;
    char *buffer = NULL;
    size_t length = 0;
    struct stat info;
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size > KEYPAD_MAX_FILE)
        goto done;
    /* One byte more than the limit: a file that grew after fstat is refused too. */
    buffer = malloc(KEYPAD_MAX_FILE + 1);
    if (!buffer || read_all(fd, buffer, KEYPAD_MAX_FILE + 1, &length) != 0 || length > KEYPAD_MAX_FILE)
        goto done;

    status = KEYPAD_EMPTY;
    const char *end = buffer + length, *line = buffer, *taken_end = NULL;
    unsigned number = 0;
    while (line < end) {
        const char *newline = memchr(line, '\n', (size_t)(end - line));
        const char *line_end = newline ? newline : end;
        number++;
        if (!taken_end && is_entry_line(line, line_end)) {
            entry->line = number;
            status = parse_line(line, line_end, entry) == 0 ? KEYPAD_ENTRY : KEYPAD_BAD_LINE;
            taken_end = newline ? newline + 1 : end;
        } else if (taken_end && is_entry_line(line, line_end)) {
            entry->left++;
        }
        line = newline ? newline + 1 : end;
    }
    if (taken_end && rewrite(fd, taken_end, (size_t)(end - taken_end)) != 0)
        status = KEYPAD_UNREADABLE;
    if (status != KEYPAD_ENTRY)
        explicit_bzero(&entry->pin, sizeof entry->pin);

done:
    if (buffer) {
        explicit_bzero(buffer, length);
        free(buffer);
    }
    close(fd);
    return status;
}
