/*
 * The virtual pinpad's keypad: scripted entries in a file, one per PIN request, taken in order.
 *
 * One entry a line: a PIN (1 to PP_MAX_DIGITS digits), CANCEL or TIMEOUT, optionally followed by `after MS` (the
 * person takes MS milliseconds, at most 3600000, to finish the entry). Blank lines and lines starting with # are
 * skipped. Taking an entry removes it, and the lines before it, from the file (under flock), so a test can append
 * or rewrite entries at any time and see what is left.
 */
#ifndef TOKENPIN_KEYPAD_H
#define TOKENPIN_KEYPAD_H

#include "pinpad.h"

#define KEYPAD_MAX_FILE 65536
#define KEYPAD_MAX_AFTER_MS 3600000u

enum keypad_status {
    KEYPAD_ENTRY,      /* `entry` holds the next entry, now removed from the file */
    KEYPAD_EMPTY,      /* no entry: the file is missing or holds none */
    KEYPAD_BAD_LINE,   /* the next line is not an entry; it was removed (its number is in entry->line) */
    KEYPAD_UNREADABLE, /* not a regular file, a symbolic link, larger than KEYPAD_MAX_FILE, or an I/O error */
};

struct keypad_entry {
    enum pp_key key;     /* PP_KEY_PIN, PP_KEY_CANCEL or PP_KEY_TIMEOUT */
    struct pp_pin pin;   /* with PP_KEY_PIN; wiped by the caller */
    unsigned after_ms;
    unsigned line;       /* the line it came from, counted from 1 */
    unsigned left;       /* entries still in the file */
};

/* Takes the next entry out of the script at `path`. */
enum keypad_status keypad_take(const char *path, struct keypad_entry *entry);

#endif
