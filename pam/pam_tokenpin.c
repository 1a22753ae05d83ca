/*
 * pam_tokenpin: a PAM module that verifies and changes a tokenpin PIN through tokenpind.
 *
 * C with no Swift runtime, so that login, sshd, sudo and screen lockers load nothing heavy. It speaks
 * protocol version 1 (docs/protocol.md) over the daemon's Unix socket: newline-delimited JSON, of which
 * it reads only flat objects (prompt, event, the verify/change result, error).
 *
 *   auth      asks for the PIN (and any relayed card PIN) through the conversation, shows tries left and
 *             "last try" as PAM_TEXT_INFO.
 *   setcred   PAM_SUCCESS.
 *   password  changes the PIN, passwd-style (current PIN, new PIN, new PIN again).
 *
 * Return codes: PAM_SUCCESS; PAM_AUTH_ERR wrong PIN; PAM_MAXTRIES locked; PAM_AUTHINFO_UNAVAIL not
 * enrolled, daemon down or token unavailable with fallback denied; PAM_IGNORE only with the option
 * `ignore_unavailable`. Nothing ever succeeds by default. Buffers that held a secret are wiped with
 * explicit_bzero. `debug` logs steps to syslog, never a secret.
 *
 * Options: mode=either|pin|token  fallback=allow|deny  socket=PATH  timeout=SECONDS  ignore_unavailable  debug
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define PAM_SM_AUTH
#define PAM_SM_PASSWORD
#include <security/pam_appl.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#define TP_DEFAULT_SOCKET "/run/tokenpin/socket"
#define TP_MAX_LINE 65536
#define TP_MAX_FIELDS 32
#define TP_MAX_STRING 4096

enum tp_mode { TP_MODE_EITHER, TP_MODE_PIN, TP_MODE_TOKEN };

struct tp_options {
    enum tp_mode mode;
    int fallback_allow;
    int ignore_unavailable;
    int debug;
    int timeout_ms;
    const char *socket_path;
};

enum tp_kind { TP_STRING, TP_INT, TP_BOOL, TP_NULL };

struct tp_field {
    char key[32];
    enum tp_kind kind;
    char *text;      /* TP_STRING: NUL-terminated, may be wiped */
    size_t length;
    long long number; /* TP_INT and TP_BOOL */
};

struct tp_message {
    int count;
    struct tp_field fields[TP_MAX_FIELDS];
};

struct tp_conn {
    int fd;
    char buffer[TP_MAX_LINE + 1];
    size_t used;
};

/* ---------------------------------------------------------------------------------------------- */
/* Options and logging                                                                            */

static void tp_debug(pam_handle_t *pamh, const struct tp_options *options, const char *format, ...) {
    if (!options->debug) return;
    va_list args;
    va_start(args, format);
    pam_vsyslog(pamh, LOG_DEBUG, format, args);
    va_end(args);
}

static int tp_parse_options(pam_handle_t *pamh, int argc, const char **argv, struct tp_options *options) {
    options->mode = TP_MODE_EITHER;
    options->fallback_allow = 1;
    options->ignore_unavailable = 0;
    options->debug = 0;
    options->timeout_ms = 120000;
    options->socket_path = TP_DEFAULT_SOCKET;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "debug") == 0) options->debug = 1;
        else if (strcmp(arg, "ignore_unavailable") == 0) options->ignore_unavailable = 1;
        else if (strcmp(arg, "mode=either") == 0) options->mode = TP_MODE_EITHER;
        else if (strcmp(arg, "mode=pin") == 0) options->mode = TP_MODE_PIN;
        else if (strcmp(arg, "mode=token") == 0) options->mode = TP_MODE_TOKEN;
        else if (strcmp(arg, "fallback=allow") == 0) options->fallback_allow = 1;
        else if (strcmp(arg, "fallback=deny") == 0) options->fallback_allow = 0;
        else if (strncmp(arg, "socket=", 7) == 0 && arg[7] == '/') options->socket_path = arg + 7;
        else if (strncmp(arg, "timeout=", 8) == 0) {
            char *end = NULL;
            long seconds = strtol(arg + 8, &end, 10);
            if (end == arg + 8 || *end != '\0' || seconds < 1 || seconds > 3600) {
                pam_syslog(pamh, LOG_ERR, "bad option %s (seconds from 1 to 3600)", arg);
                return -1;
            }
            options->timeout_ms = (int)seconds * 1000;
        } else {
            pam_syslog(pamh, LOG_ERR, "unknown option %s", arg);
            return -1;
        }
    }
    return 0;
}

/* What "unavailable" returns: PAM_AUTHINFO_UNAVAIL, or PAM_IGNORE when the admin asked for it. */
static int tp_unavailable(const struct tp_options *options) {
    return options->ignore_unavailable ? PAM_IGNORE : PAM_AUTHINFO_UNAVAIL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Socket and lines                                                                               */

/* Connects with `timeout_ms` bounding connect and every send (a wedged daemon with a full backlog must not
   hang a login: Linux applies SO_SNDTIMEO to connect on Unix stream sockets). */
static int tp_connect(struct tp_conn *conn, const char *path, int timeout_ms) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof(address));
    address.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(address.sun_path)) return -1;
    strcpy(address.sun_path, path);
    conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    conn->used = 0;
    if (conn->fd < 0) return -1;
    struct timeval limit = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    (void)setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    if (connect(conn->fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        close(conn->fd);
        conn->fd = -1;
        return -1;
    }
    return 0;
}

static void tp_close(struct tp_conn *conn) {
    if (conn->fd >= 0) close(conn->fd);
    conn->fd = -1;
    explicit_bzero(conn->buffer, sizeof(conn->buffer));
    conn->used = 0;
}

static int tp_write_all(int fd, const char *data, size_t length) {
    size_t offset = 0;
    while (offset < length) {
        ssize_t written = send(fd, data + offset, length - offset, MSG_NOSIGNAL);
        if (written < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        offset += (size_t)written;
    }
    return 0;
}

/* Reads one line (without the newline) into `line` (TP_MAX_LINE + 1 bytes). 0 on success, -1 on
   end of stream, timeout, overlong line or error. */
static int tp_read_line(struct tp_conn *conn, char *line, int timeout_ms) {
    for (;;) {
        char *newline = memchr(conn->buffer, '\n', conn->used);
        if (newline != NULL) {
            size_t length = (size_t)(newline - conn->buffer);
            memcpy(line, conn->buffer, length);
            line[length] = '\0';
            size_t rest = conn->used - length - 1;
            memmove(conn->buffer, newline + 1, rest);
            explicit_bzero(conn->buffer + rest, conn->used - rest);
            conn->used = rest;
            return 0;
        }
        if (conn->used >= TP_MAX_LINE) return -1;
        struct pollfd pfd = {.fd = conn->fd, .events = POLLIN, .revents = 0};
        int ready = poll(&pfd, 1, timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return -1;
        ssize_t count = recv(conn->fd, conn->buffer + conn->used, TP_MAX_LINE - conn->used, 0);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) return -1;
        conn->used += (size_t)count;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* A strict parser for flat JSON objects: strings, whole numbers, true, false, null.              */

static void tp_message_free(struct tp_message *message) {
    for (int i = 0; i < message->count; i++) {
        if (message->fields[i].text != NULL) {
            explicit_bzero(message->fields[i].text, message->fields[i].length);
            free(message->fields[i].text);
        }
    }
    message->count = 0;
}

static const char *tp_skip(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    return p;
}

static int tp_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int tp_read_hex4(const char *p, unsigned *value) {
    *value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = tp_hex(p[i]);
        if (digit < 0) return -1;
        *value = (*value << 4) | (unsigned)digit;
    }
    return 0;
}

/* Parses the string at *p (which points at the opening quote) into out (capacity bytes). */
static int tp_parse_string(const char **p, char *out, size_t capacity, size_t *length) {
    const char *s = *p + 1;
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*s;
        if (c == '\0' || c < 0x20) return -1;
        if (c == '"') break;
        unsigned codepoint;
        if (c == '\\') {
            s++;
            switch (*s) {
            case '"': codepoint = '"'; break;
            case '\\': codepoint = '\\'; break;
            case '/': codepoint = '/'; break;
            case 'b': codepoint = '\b'; break;
            case 'f': codepoint = '\f'; break;
            case 'n': codepoint = '\n'; break;
            case 'r': codepoint = '\r'; break;
            case 't': codepoint = '\t'; break;
            case 'u': {
                if (tp_read_hex4(s + 1, &codepoint) != 0) return -1;
                s += 4;
                if (codepoint >= 0xD800 && codepoint <= 0xDBFF) {
                    unsigned low;
                    if (s[1] != '\\' || s[2] != 'u' || tp_read_hex4(s + 3, &low) != 0) return -1;
                    if (low < 0xDC00 || low > 0xDFFF) return -1;
                    codepoint = 0x10000 + ((codepoint - 0xD800) << 10) + (low - 0xDC00);
                    s += 6;
                } else if (codepoint >= 0xDC00 && codepoint <= 0xDFFF) {
                    return -1;
                }
                break;
            }
            default: return -1;
            }
            s++;
            char encoded[4];
            size_t size;
            if (codepoint < 0x80) { encoded[0] = (char)codepoint; size = 1; }
            else if (codepoint < 0x800) {
                encoded[0] = (char)(0xC0 | (codepoint >> 6)); encoded[1] = (char)(0x80 | (codepoint & 0x3F)); size = 2;
            } else if (codepoint < 0x10000) {
                encoded[0] = (char)(0xE0 | (codepoint >> 12)); encoded[1] = (char)(0x80 | ((codepoint >> 6) & 0x3F));
                encoded[2] = (char)(0x80 | (codepoint & 0x3F)); size = 3;
            } else {
                encoded[0] = (char)(0xF0 | (codepoint >> 18)); encoded[1] = (char)(0x80 | ((codepoint >> 12) & 0x3F));
                encoded[2] = (char)(0x80 | ((codepoint >> 6) & 0x3F)); encoded[3] = (char)(0x80 | (codepoint & 0x3F));
                size = 4;
            }
            if (n + size >= capacity) return -1;
            memcpy(out + n, encoded, size);
            n += size;
            continue;
        }
        if (n + 1 >= capacity) return -1;
        out[n++] = (char)c;
        s++;
    }
    out[n] = '\0';
    *length = n;
    *p = s + 1;
    return 0;
}

/* Parses one flat object. 0 on success; -1 on anything else (nested values included). */
static int tp_parse(const char *line, struct tp_message *message) {
    message->count = 0;
    const char *p = tp_skip(line);
    if (*p != '{') return -1;
    p = tp_skip(p + 1);
    if (*p == '}') return *tp_skip(p + 1) == '\0' ? 0 : -1;
    char *scratch = malloc(TP_MAX_STRING);
    if (scratch == NULL) return -1;
    int status = -1;
    for (;;) {
        if (message->count >= TP_MAX_FIELDS || *p != '"') break;
        struct tp_field *field = &message->fields[message->count];
        memset(field, 0, sizeof(*field));
        size_t length;
        if (tp_parse_string(&p, scratch, sizeof(field->key), &length) != 0) break;
        memcpy(field->key, scratch, length + 1);
        p = tp_skip(p);
        if (*p != ':') break;
        p = tp_skip(p + 1);
        if (*p == '"') {
            if (tp_parse_string(&p, scratch, TP_MAX_STRING, &length) != 0) break;
            field->text = malloc(length + 1);
            if (field->text == NULL) break;
            memcpy(field->text, scratch, length + 1);
            field->length = length;
            field->kind = TP_STRING;
        } else if (strncmp(p, "true", 4) == 0) { field->kind = TP_BOOL; field->number = 1; p += 4; }
        else if (strncmp(p, "false", 5) == 0) { field->kind = TP_BOOL; field->number = 0; p += 5; }
        else if (strncmp(p, "null", 4) == 0) { field->kind = TP_NULL; p += 4; }
        else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            char *end = NULL;
            errno = 0;
            field->number = strtoll(p, &end, 10);
            if (errno != 0 || end == p || *end == '.' || *end == 'e' || *end == 'E') break;
            field->kind = TP_INT;
            p = end;
        } else {
            break; /* nested objects and arrays are not part of the messages this module reads */
        }
        message->count++;
        p = tp_skip(p);
        if (*p == ',') { p = tp_skip(p + 1); continue; }
        if (*p == '}' && *tp_skip(p + 1) == '\0') status = 0;
        break;
    }
    explicit_bzero(scratch, TP_MAX_STRING);
    free(scratch);
    if (status != 0) tp_message_free(message);
    return status;
}

static const struct tp_field *tp_get(const struct tp_message *message, const char *key) {
    for (int i = 0; i < message->count; i++) {
        if (strcmp(message->fields[i].key, key) == 0) return &message->fields[i];
    }
    return NULL;
}

static const char *tp_string(const struct tp_message *message, const char *key) {
    const struct tp_field *field = tp_get(message, key);
    return (field != NULL && field->kind == TP_STRING) ? field->text : NULL;
}

static long long tp_int(const struct tp_message *message, const char *key, long long fallback) {
    const struct tp_field *field = tp_get(message, key);
    return (field != NULL && (field->kind == TP_INT || field->kind == TP_BOOL)) ? field->number : fallback;
}

/* Appends `text` JSON-escaped to out (which has room: 6 bytes per input byte). */
static size_t tp_escape(char *out, const char *text, size_t length) {
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c < 0x20 || c == 0x7F) {
            out[n++] = '\\'; out[n++] = 'u'; out[n++] = '0'; out[n++] = '0';
            out[n++] = hex[c >> 4]; out[n++] = hex[c & 0xF];
        } else out[n++] = (char)c;
    }
    return n;
}

/* Sends a request naming `op`, `user` and, for verify, the method the options force (NULL: token first, then
 * the PIN as the daemon's fallback setting allows). */
static int tp_send_request(struct tp_conn *conn, const char *op, const char *user, const char *method) {
    char line[512];
    char escaped[6 * 64 + 1];
    size_t length = strlen(user);
    if (length > 64) return -1;
    size_t n = tp_escape(escaped, user, length);
    escaped[n] = '\0';
    char extra[64] = "";
    if (strcmp(op, "change") == 0) snprintf(extra, sizeof(extra), ",\"newPINAttempts\":1");
    else if (method != NULL) snprintf(extra, sizeof(extra), ",\"method\":\"%s\"", method);
    int written = snprintf(line, sizeof(line), "{\"v\":1,\"type\":\"request\",\"op\":\"%s\",\"user\":\"%s\"%s}\n",
                           op, escaped, extra);
    if (written < 0 || (size_t)written >= sizeof(line)) return -1;
    return tp_write_all(conn->fd, line, (size_t)written);
}

/* Sends the answer to `prompt`; every buffer that held the secret is wiped. */
static int tp_send_secret(struct tp_conn *conn, const char *prompt, const char *secret) {
    size_t length = strlen(secret);
    size_t prompt_length = strlen(prompt);
    size_t capacity = 64 + 6 * (length + prompt_length);
    char *line = malloc(capacity);
    if (line == NULL) return -1;
    size_t n = 0;
    memcpy(line, "{\"v\":1,\"type\":\"secret\",\"prompt\":\"", 33);
    n = 33;
    n += tp_escape(line + n, prompt, prompt_length);
    memcpy(line + n, "\",\"value\":\"", 11);
    n += 11;
    n += tp_escape(line + n, secret, length);
    memcpy(line + n, "\"}\n", 3);
    n += 3;
    int status = tp_write_all(conn->fd, line, n);
    explicit_bzero(line, capacity);
    free(line);
    return status;
}

static void tp_send_cancel(struct tp_conn *conn) {
    static const char line[] = "{\"v\":1,\"type\":\"cancel\"}\n";
    (void)tp_write_all(conn->fd, line, sizeof(line) - 1);
}

/* ---------------------------------------------------------------------------------------------- */
/* Conversation                                                                                   */

static void tp_say(pam_handle_t *pamh, int style, const char *format, ...) {
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    (void)pam_prompt(pamh, style, NULL, "%s", text);
}

/* The prompt text for a prompt name; NULL for prompts this module does not answer. */
static void tp_prompt_text(const struct tp_message *message, const char *name, int changing, char *text, size_t size) {
    const char *card = tp_string(message, "card");
    long long tries = tp_int(message, "triesLeft", -1);
    if (strcmp(name, "pin") == 0) snprintf(text, size, "PIN: ");
    else if (strcmp(name, "current-pin") == 0) snprintf(text, size, "Current PIN: ");
    else if (strcmp(name, "new-pin") == 0) snprintf(text, size, "New PIN: ");
    else if (strcmp(name, "confirm-pin") == 0) snprintf(text, size, "Retype new PIN: ");
    else if (strcmp(name, "card-pin") == 0)
        snprintf(text, size, "Card PIN for card %s (%lld %s left): ", card ? card : "?", tries, tries == 1 ? "try" : "tries");
    else snprintf(text, size, "%s: ", name);
    (void)changing;
}

/* ---------------------------------------------------------------------------------------------- */
/* The exchange                                                                                   */

/* Runs `op` for `user`: answers prompts through the conversation, shows events, maps the final message. */
static int tp_run(pam_handle_t *pamh, const struct tp_options *options, const char *op, const char *user) {
    struct tp_conn *conn = calloc(1, sizeof(struct tp_conn));
    char *line = malloc(TP_MAX_LINE + 1);
    struct tp_message *message = calloc(1, sizeof(struct tp_message));
    int result = PAM_AUTHINFO_UNAVAIL;
    int changing = strcmp(op, "change") == 0;
    if (conn == NULL || line == NULL || message == NULL) {
        free(conn);
        free(line);
        free(message);
        return PAM_BUF_ERR;
    }
    conn->fd = -1;
    if (tp_connect(conn, options->socket_path, options->timeout_ms) != 0) {
        pam_syslog(pamh, LOG_NOTICE, "tokenpind is not reachable on %s", options->socket_path);
        result = tp_unavailable(options);
        goto done;
    }
    tp_debug(pamh, options, "connected to %s, op %s for %s", options->socket_path, op, user);
    /* mode=pin forces the PIN; mode=token, or fallback=deny, forces the token (no PIN after a token failure). */
    const char *method = NULL;
    if (options->mode == TP_MODE_PIN) method = "pin";
    else if (options->mode == TP_MODE_TOKEN || !options->fallback_allow) method = "token";
    if (tp_send_request(conn, op, user, strcmp(op, "verify") == 0 ? method : NULL) != 0) {
        result = tp_unavailable(options);
        goto done;
    }
    for (;;) {
        if (tp_read_line(conn, line, options->timeout_ms) != 0) {
            pam_syslog(pamh, LOG_NOTICE, "tokenpind did not answer (closed or timed out)");
            result = tp_unavailable(options);
            goto done;
        }
        int parsed = tp_parse(line, message);
        explicit_bzero(line, strlen(line));
        if (parsed != 0 || tp_int(message, "v", 0) != 1 || tp_string(message, "type") == NULL) {
            pam_syslog(pamh, LOG_ERR, "tokenpind sent a message this module cannot read");
            tp_message_free(message);
            result = tp_unavailable(options);
            goto done;
        }
        const char *type = tp_string(message, "type");
        if (strcmp(type, "prompt") == 0) {
            const char *name = tp_string(message, "prompt");
            if (name == NULL) { tp_message_free(message); result = PAM_AUTHINFO_UNAVAIL; goto done; }
            long long tries = tp_int(message, "triesLeft", -1);
            if ((strcmp(name, "pin") == 0 || strcmp(name, "current-pin") == 0) && tries == 1)
                tp_say(pamh, PAM_TEXT_INFO, "Last try: one wrong entry more locks the PIN.");
            char text[256];
            tp_prompt_text(message, name, changing, text, sizeof(text));
            char *answer = NULL;
            tp_debug(pamh, options, "asking for the %s", name);
            int status = pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &answer, "%s", text);
            if (status != PAM_SUCCESS || answer == NULL) {
                tp_send_cancel(conn);
                tp_message_free(message);
                result = PAM_CONV_ERR;
                goto done;
            }
            status = tp_send_secret(conn, name, answer);
            explicit_bzero(answer, strlen(answer));
            free(answer);
            tp_message_free(message);
            if (status != 0) { result = tp_unavailable(options); goto done; }
            continue;
        }
        if (strcmp(type, "question") == 0) {
            static const char no[] = "{\"v\":1,\"type\":\"confirm\",\"answer\":false}\n";
            (void)tp_write_all(conn->fd, no, sizeof(no) - 1);
            tp_message_free(message);
            continue;
        }
        if (strcmp(type, "event") == 0) {
            const char *event = tp_string(message, "event");
            if (event != NULL && strcmp(event, "tokenFailed") == 0) {
                const char *reason = tp_string(message, "reason");
                tp_say(pamh, PAM_TEXT_INFO, "Token not used: %s", reason ? reason : "unavailable");
            } else if (event != NULL && strcmp(event, "policyViolation") == 0) {
                const char *rule = tp_string(message, "rule");
                tp_say(pamh, PAM_ERROR_MSG, "New PIN refused by the PIN policy (rule %s).", rule ? rule : "?");
            }
            tp_debug(pamh, options, "event %s", event ? event : "?");
            tp_message_free(message);
            continue;
        }
        if (strcmp(type, "result") == 0) {
            const char *outcome = tp_string(message, "outcome");
            long long code = tp_int(message, "exitCode", -1);
            if (code == 0 && outcome != NULL && strcmp(outcome, "verified") == 0) {
                result = PAM_SUCCESS;
                if (changing) tp_say(pamh, PAM_TEXT_INFO, "PIN changed.");
            } else if (outcome != NULL && strcmp(outcome, "rejected") == 0) {
                long long tries = tp_int(message, "triesLeft", -1);
                if (tp_int(message, "lastTry", 0))
                    tp_say(pamh, PAM_TEXT_INFO, "Wrong PIN. Last try: one wrong entry more locks the PIN.");
                else
                    tp_say(pamh, PAM_TEXT_INFO, "Wrong PIN. %lld %s left.", tries, tries == 1 ? "try" : "tries");
                result = PAM_AUTH_ERR;
            } else if (outcome != NULL && strcmp(outcome, "locked") == 0) {
                tp_say(pamh, PAM_ERROR_MSG, "PIN locked: no tries left. Unlock it with `tokenpin reset` and the recovery key.");
                result = PAM_MAXTRIES;
            } else if (outcome != NULL && strcmp(outcome, "tokenRejected") == 0) {
                const char *reason = tp_string(message, "reason");
                tp_say(pamh, PAM_TEXT_INFO, "Token not verified: %s", reason ? reason : "the card refused");
                result = PAM_AUTH_ERR;
            } else if (outcome != NULL && strcmp(outcome, "delayed") == 0) {
                tp_say(pamh, PAM_TEXT_INFO, "Too many wrong entries: try again in %lld s.", tp_int(message, "retryAfter", 0));
                result = PAM_AUTH_ERR;
            } else {
                result = PAM_AUTH_ERR; /* never succeed on a result this module does not understand */
            }
            tp_debug(pamh, options, "result %s", outcome ? outcome : "?");
            tp_message_free(message);
            goto done;
        }
        if (strcmp(type, "error") == 0) {
            const char *code = tp_string(message, "code");
            const char *text = tp_string(message, "message");
            if (code == NULL) code = "?";
            tp_debug(pamh, options, "error %s", code);
            if (strcmp(code, "not-enrolled") == 0) {
                result = tp_unavailable(options);
            } else if (strcmp(code, "token-unavailable") == 0 || strcmp(code, "token-not-enabled") == 0) {
                result = tp_unavailable(options);
            } else if (strcmp(code, "policy") == 0) {
                tp_say(pamh, PAM_ERROR_MSG, "%s", text ? text : "PIN refused by the PIN policy");
                result = PAM_AUTHTOK_ERR;
            } else if (strcmp(code, "permission-denied") == 0) {
                result = PAM_PERM_DENIED;
            } else if (strcmp(code, "cancelled") == 0) {
                result = PAM_CONV_ERR;
            } else {
                pam_syslog(pamh, LOG_ERR, "tokenpind refused: %s", code);
                result = tp_unavailable(options);
            }
            tp_message_free(message);
            goto done;
        }
        tp_message_free(message);
        result = tp_unavailable(options);
        goto done;
    }
done:
    tp_close(conn);
    explicit_bzero(line, TP_MAX_LINE + 1);
    free(conn);
    free(line);
    free(message);
    return result;
}

static int tp_user(pam_handle_t *pamh, const char **user) {
    int status = pam_get_user(pamh, user, NULL);
    if (status != PAM_SUCCESS || *user == NULL || **user == '\0') return PAM_USER_UNKNOWN;
    size_t length = strlen(*user);
    if (length > 64 || (*user)[0] == '.' || (*user)[0] == '-') return PAM_USER_UNKNOWN;
    for (size_t i = 0; i < length; i++) {
        char c = (*user)[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
        if (!ok) return PAM_USER_UNKNOWN;
    }
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    struct tp_options options;
    if (tp_parse_options(pamh, argc, argv, &options) != 0) return PAM_SERVICE_ERR;
    const char *user = NULL;
    int status = tp_user(pamh, &user);
    if (status != PAM_SUCCESS) return status;
    return tp_run(pamh, &options, "verify", user);
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    struct tp_options options;
    if (tp_parse_options(pamh, argc, argv, &options) != 0) return PAM_SERVICE_ERR;
    const char *user = NULL;
    int status = tp_user(pamh, &user);
    if (status != PAM_SUCCESS) return status;
    if (flags & PAM_PRELIM_CHECK) {
        struct tp_conn probe;
        if (tp_connect(&probe, options.socket_path, options.timeout_ms) != 0) return PAM_TRY_AGAIN;
        close(probe.fd);
        return PAM_SUCCESS;
    }
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_SERVICE_ERR;
    return tp_run(pamh, &options, "change", user);
}
