/*
 * pam_tokenpin: a PAM module that verifies and changes a tokenpin PIN through tokenpind.
 *
 * C with no Swift runtime, so that login, sshd, sudo and screen lockers load nothing heavy. It speaks
 * protocol version 3 (docs/protocol.md; it still reads version 1 and 2 replies) over the daemon's Unix socket:
 * newline-delimited JSON, of which it reads only flat objects (prompt, event, the verify/change result, error).
 * Each request says who is asking: the invoking real uid (getuid(): the user who ran su or sudo, 0 for login and
 * sshd), PAM_SERVICE, PAM_RHOST, PAM_TTY and PAM_RUSER. The daemon classes the attempt from them (own, local,
 * remote, other): the token answers only the user themselves and local logins, and remote and other attempts
 * count on a counter of their own (docs/pam.md, "Who is asking").
 *
 *   auth      asks for the PIN (and any relayed card PIN) through the conversation, shows tries left and
 *             "last try" as PAM_TEXT_INFO. Enter alone is never a try: nothing is sent and the next module asks
 *             (the password); a secret the daemon says cannot be a PIN (a password typed at the PIN prompt) is
 *             not counted and is handed on as PAM_AUTHTOK, for pam_unix try_first_pass.
 *   setcred   PAM_SUCCESS.
 *   password  only when asked (the `pin` option, or the `tokenpin` service): changes the PIN, passwd-style
 *             (current PIN, new PIN, new PIN again); Enter alone leaves it unchanged (PAM_IGNORE). Without `pin`
 *             the module ignores the password stack, so `passwd` changes the password and nothing else.
 *
 * It never fails open (docs/pam.md has the whole table):
 *   - PAM_SUCCESS only for a `verified` result that answers a secret this module sent.
 *   - Once the first byte of a secret was handed to the socket, every other answer, a closed connection, a
 *     timeout, a line it cannot read, an unknown message or error code is a failure: PAM_AUTH_ERR,
 *     PAM_MAXTRIES when locked, PAM_AUTHTOK_ERR for a new PIN the policy refused.
 *   - "Unavailable" (PAM_AUTHINFO_UNAVAIL, or PAM_IGNORE with `ignore_unavailable`) is only a daemon that
 *     cannot be reached, or `not-enrolled` before any secret was sent. A daemon that was reached and answered
 *     anything else has refused.
 *   - The socket's peer must be root (SO_PEERCRED) before the request is sent; a socket served by anyone else
 *     is refused (PAM_AUTH_ERR) without a byte sent.
 *   - A secret that is not UTF-8 (or longer than TP_MAX_SECRET) is refused before it is sent, so the daemon
 *     never answers it with a protocol error.
 *   login_keyring  (with `login-keyring = on` in tokenpin.conf) auth asks tokenpind for the sealed login password
 *             after a success and sets PAM_AUTHTOK to it when nothing set it, so that pam_gnome_keyring or
 *             pam_kwallet5 (use_authtok) open the keyring; tokenpind hands it only to the user at this machine (own
 *             and local attempts, never remote or another user's su). In the password stack (without `pin`), after
 *             pam_unix set the new password, it sends PAM_AUTHTOK to be sealed (`seal-login-password`); that never
 *             fails the stack (PAM_IGNORE, said in syslog).
 * PAM_SILENT suppresses the information and error messages (prompts still go through the conversation).
 * Buffers that held a secret are wiped with explicit_bzero. `debug` logs steps to syslog, never a secret.
 *
 * Options: mode=either|pin|token  fallback=allow|deny  socket=PATH  timeout=SECONDS  ignore_unavailable  debug
 *          pin  prompt=TEXT (`%u` the user, `%r` the tries left)  no_password_hint  login_keyring
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
#define TP_MAX_SECRET 1024  /* bytes; PINs, card PINs and the policy's longest PIN (256) fit */
#define TP_MAX_MESSAGES 64  /* daemon messages in one exchange: prompts and events of verify or change fit */
#define TP_MAX_ITEM 255     /* bytes of a PAM item sent as an invoker field; the daemon takes up to 256 */
#define TP_PROTOCOL_VERSION 3 /* the version this module writes (docs/protocol.md); tp_line_start alone writes it */

enum tp_mode { TP_MODE_EITHER, TP_MODE_PIN, TP_MODE_TOKEN };

struct tp_options {
    enum tp_mode mode;
    int fallback_allow;
    int ignore_unavailable;
    int debug;
    int silent; /* PAM_SILENT: no information or error messages */
    int timeout_ms;
    const char *socket_path;
    int change_pin;          /* `pin`, or the `tokenpin` service: the password stack changes the PIN */
    int password_hint;       /* say before the first prompt that Enter alone goes on to the password */
    const char *prompt;      /* the PIN prompt (`prompt=`; `%u` the user, `%r` the tries left), or NULL */
    int login_keyring;       /* `login_keyring`: auth takes the sealed login password, password seals it */
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

static int tp_parse_options(pam_handle_t *pamh, int flags, int argc, const char **argv, struct tp_options *options) {
    options->silent = (flags & PAM_SILENT) != 0;
    options->mode = TP_MODE_EITHER;
    options->fallback_allow = 1;
    options->ignore_unavailable = 0;
    options->debug = 0;
    options->timeout_ms = 120000;
    options->socket_path = TP_DEFAULT_SOCKET;
    options->change_pin = 0;
    options->password_hint = 1;
    options->prompt = NULL;
    options->login_keyring = 0;
    const void *service = NULL;
    if (pam_get_item(pamh, PAM_SERVICE, &service) == PAM_SUCCESS && service != NULL &&
        strcmp((const char *)service, "tokenpin") == 0)
        options->change_pin = 1;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "debug") == 0) options->debug = 1;
        else if (strcmp(arg, "pin") == 0) options->change_pin = 1;
        else if (strcmp(arg, "no_password_hint") == 0) options->password_hint = 0;
        else if (strcmp(arg, "login_keyring") == 0) options->login_keyring = 1;
        else if (strncmp(arg, "prompt=", 7) == 0) {
            if (arg[7] == '\0' || strlen(arg + 7) > 200) {
                pam_syslog(pamh, LOG_ERR, "bad option %s (a prompt of 1 to 200 bytes)", arg);
                return -1;
            }
            options->prompt = arg + 7;
        }
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

/* What "unavailable" returns: PAM_AUTHINFO_UNAVAIL, or PAM_IGNORE when the admin asked for it. Only for a daemon
   that cannot be reached, or `not-enrolled` before any secret was sent. */
static int tp_unavailable(const struct tp_options *options) {
    return options->ignore_unavailable ? PAM_IGNORE : PAM_AUTHINFO_UNAVAIL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Socket and lines                                                                               */

/* Connects with `timeout_ms` bounding connect and every send (a wedged daemon with a full backlog must not
   hang a login: Linux applies SO_SNDTIMEO to connect on Unix stream sockets). The descriptor, or -1 when the
   daemon cannot be reached. */
static int tp_open(const char *path, int timeout_ms) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof(address));
    address.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(address.sun_path)) return -1;
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct timeval limit = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    if (connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether the process serving the socket is root (SO_PEERCRED: the credentials of whoever called listen). A
   socket anyone else serves is not tokenpind's, whatever its path, and gets no request and no secret. */
static int tp_peer_is_root(pam_handle_t *pamh, int fd) {
    struct ucred peer;
    socklen_t size = sizeof(peer);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || size != sizeof(peer)) {
        pam_syslog(pamh, LOG_ERR, "cannot read the credentials of the tokenpind socket's peer");
        return 0;
    }
    if (peer.uid != 0) {
        pam_syslog(pamh, LOG_ERR, "the tokenpind socket is served by uid %u, not root: refused", (unsigned)peer.uid);
        return 0;
    }
    return 1;
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
        int duplicate = 0;
        for (int i = 0; i < message->count; i++) duplicate |= strcmp(message->fields[i].key, scratch) == 0;
        if (duplicate) break; /* the protocol has no duplicate keys; which one counts must never be a question */
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
    return (field != NULL && field->kind == TP_INT) ? field->number : fallback;
}

static int tp_bool(const struct tp_message *message, const char *key) {
    const struct tp_field *field = tp_get(message, key);
    return field != NULL && field->kind == TP_BOOL && field->number != 0;
}

/* Whether `text` (`length` bytes) is well-formed UTF-8: no stray continuation bytes, overlong forms, surrogates
   or code points past U+10FFFF (RFC 3629, §4), as the daemon's parser requires of every string. */
static int tp_is_utf8(const char *text, size_t length) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < length) {
        unsigned char c = s[i];
        size_t more;
        unsigned char low = 0x80, high = 0xBF; /* the range of the byte after the lead */
        if (c < 0x80) { i++; continue; }
        else if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if (c == 0xE0) { more = 2; low = 0xA0; }
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) more = 2;
        else if (c == 0xED) { more = 2; high = 0x9F; }
        else if (c == 0xF0) { more = 3; low = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) more = 3;
        else if (c == 0xF4) { more = 3; high = 0x8F; }
        else return 0;
        if (length - i <= more) return 0;
        if (s[i + 1] < low || s[i + 1] > high) return 0;
        for (size_t k = 2; k <= more; k++) {
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        }
        i += more + 1;
    }
    return 1;
}

/* Appends `text` JSON-escaped to out (which has room: 6 bytes per input byte), byte for byte as the daemon's
   encoder escapes it (JSONValue.quote). */
static size_t tp_escape(char *out, const char *text, size_t length) {
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c == '\n' || c == '\r' || c == '\t') {
            /* the short forms, as the Swift encoder writes them (Tests/Vectors/protocol) */
            out[n++] = '\\'; out[n++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c == 0x7F) {
            out[n++] = '\\'; out[n++] = 'u'; out[n++] = '0'; out[n++] = '0';
            out[n++] = hex[c >> 4]; out[n++] = hex[c & 0xF];
        } else out[n++] = (char)c;
    }
    return n;
}

/* Appends `,"key":"value"` for the PAM item `item` to `out` (at `*n`, `capacity` bytes) when it is set: at most
   TP_MAX_ITEM bytes of it, any byte that is not printable ASCII sent as `?`, so the field is always valid UTF-8
   (a PAM item is whatever bytes the application set). */
static void tp_append_item(pam_handle_t *pamh, int item, const char *key, char *out, size_t *n, size_t capacity) {
    const void *value = NULL;
    if (pam_get_item(pamh, item, &value) != PAM_SUCCESS || value == NULL) return;
    const char *text = value;
    char clean[TP_MAX_ITEM + 1];
    size_t length = 0;
    for (; text[length] != '\0' && length < TP_MAX_ITEM; length++)
        clean[length] = (text[length] >= 0x20 && text[length] < 0x7F) ? text[length] : '?';
    char escaped[6 * TP_MAX_ITEM + 1];
    size_t size = tp_escape(escaped, clean, length);
    escaped[size] = '\0';
    int written = snprintf(out + *n, capacity - *n, ",\"%s\":\"%s\"", key, escaped);
    if (written > 0 && (size_t)written < capacity - *n) *n += (size_t)written;
}

/* Starts a line of message `type` in `out` (room for 40 bytes and the type): `{"v":3,"type":"<type>"`. Every
   line this module sends starts here, so the version and the framing come from one place; tp_line_end closes it. */
static size_t tp_line_start(char *out, const char *type) {
    return (size_t)sprintf(out, "{\"v\":%d,\"type\":\"%s\"", TP_PROTOCOL_VERSION, type);
}

/* Ends the object and the line (2 bytes). */
static size_t tp_line_end(char *out) {
    memcpy(out, "}\n", 2);
    return 2;
}

/* Sends a request naming `op`, `user` and, for verify, the method the options force (NULL: token first, then
 * the PIN as the daemon's fallback setting allows), with the invoker fields: who runs this PAM stack. */
static int tp_send_request(pam_handle_t *pamh, struct tp_conn *conn, const char *op, const char *user,
                           const char *method, int login_keyring) {
    char *line = malloc(8192);
    if (line == NULL) return -1;
    char escaped[6 * 64 + 1];
    size_t length = strlen(user);
    if (length > 64) { free(line); return -1; }
    size_t n = tp_escape(escaped, user, length);
    escaped[n] = '\0';
    char extra[64] = "";
    if (strcmp(op, "change") == 0) snprintf(extra, sizeof(extra), ",\"newPINAttempts\":1");
    else if (method != NULL) snprintf(extra, sizeof(extra), ",\"method\":\"%s\"", method);
    if (login_keyring && strcmp(op, "verify") == 0)
        strncat(extra, ",\"loginKeyring\":true", sizeof(extra) - strlen(extra) - 1);
    if (strlen(op) > 32) { free(line); return -1; }
    size_t used = tp_line_start(line, "request");
    int written = snprintf(line + used, 8192 - used, ",\"op\":\"%s\",\"user\":\"%s\"%s,\"invokerUID\":%u", op, escaped,
                           extra, (unsigned)getuid());
    if (written < 0 || (size_t)written >= 8192 - used) { free(line); return -1; }
    used += (size_t)written;
    tp_append_item(pamh, PAM_SERVICE, "service", line, &used, 8192 - 3);
    tp_append_item(pamh, PAM_RHOST, "rhost", line, &used, 8192 - 3);
    tp_append_item(pamh, PAM_TTY, "tty", line, &used, 8192 - 3);
    tp_append_item(pamh, PAM_RUSER, "ruser", line, &used, 8192 - 3);
    used += tp_line_end(line + used);
    int status = tp_write_all(conn->fd, line, used);
    free(line);
    return status;
}

/* Sends the answer to `prompt`; every buffer that held the secret is wiped. */
static int tp_send_secret(struct tp_conn *conn, const char *prompt, const char *secret) {
    size_t length = strlen(secret);
    size_t prompt_length = strlen(prompt);
    size_t capacity = 64 + 6 * (length + prompt_length);
    char *line = malloc(capacity);
    if (line == NULL) return -1;
    size_t n = tp_line_start(line, "secret");
    memcpy(line + n, ",\"prompt\":\"", 11);
    n += 11;
    n += tp_escape(line + n, prompt, prompt_length);
    memcpy(line + n, "\",\"value\":\"", 11);
    n += 11;
    n += tp_escape(line + n, secret, length);
    line[n++] = '"';
    n += tp_line_end(line + n);
    int status = tp_write_all(conn->fd, line, n);
    explicit_bzero(line, capacity);
    free(line);
    return status;
}

static void tp_send_cancel(struct tp_conn *conn) {
    char line[64];
    size_t n = tp_line_start(line, "cancel");
    n += tp_line_end(line + n);
    (void)tp_write_all(conn->fd, line, n);
}

/* ---------------------------------------------------------------------------------------------- */
/* Conversation                                                                                   */

/* Shows an information or error message, unless the application asked for PAM_SILENT. */
static void tp_say(pam_handle_t *pamh, const struct tp_options *options, int style, const char *format, ...) {
    if (options->silent) return;
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    (void)pam_prompt(pamh, style, NULL, "%s", text);
}

/* The tries left a prompt or a `rejected` result carries: `remaining` (protocol version 2), or `triesLeft`
   (version 1, still read for one version); -1 when absent. */
static long long tp_tries(const struct tp_message *message) {
    long long tries = tp_int(message, "remaining", -1);
    return tries >= 0 ? tries : tp_int(message, "triesLeft", -1);
}

/* "4 tries left", "1 try left", or "" when the daemon did not say. */
static void tp_tries_text(long long tries, char *text, size_t size) {
    if (tries < 0) snprintf(text, size, "%s", "");
    else snprintf(text, size, "%lld %s left", tries, tries == 1 ? "try" : "tries");
}

/* Expands a prompt format: `%u` the user, `%r` the tries left ("4 tries left"), `%%` a percent sign; anything else
   is copied as it is. The result is cut at `size`. */
static void tp_expand(char *text, size_t size, const char *format, const char *user, long long tries) {
    char tries_text[32];
    tp_tries_text(tries, tries_text, sizeof(tries_text));
    size_t n = 0;
    for (const char *f = format; *f != '\0' && n + 1 < size; f++) {
        const char *insert = NULL;
        if (f[0] == '%' && f[1] == 'u') insert = user;
        else if (f[0] == '%' && f[1] == 'r') insert = tries_text;
        else if (f[0] == '%' && f[1] == '%') insert = "%";
        if (insert == NULL) { text[n++] = *f; continue; }
        f++;
        size_t length = strlen(insert);
        if (length > size - 1 - n) length = size - 1 - n;
        memcpy(text + n, insert, length);
        n += length;
    }
    text[n] = '\0';
}

/* The prompt text for a prompt `op` may ask (verify: pin, card-pin; change: current-pin, card-pin in
   `mode = both`, new-pin, confirm-pin): what it wants and whose it is. -1 for a prompt the operation never asks:
   this module answers it with nothing. */
static int tp_prompt_text(const struct tp_message *message, const char *name, int changing, const char *user,
                          const struct tp_options *options, char *text, size_t size) {
    const char *card = tp_string(message, "card");
    long long tries = tp_tries(message);
    char tries_text[32];
    tp_tries_text(tries, tries_text, sizeof(tries_text));
    if (strcmp(name, "card-pin") == 0)
        snprintf(text, size, "Card PIN for %s (%s): ", card ? card : "the card", tries >= 0 ? tries_text : "tries unknown");
    else if (!changing && strcmp(name, "pin") == 0) {
        /* The default says the tries only when the daemon gave them; a custom prompt says what it says. */
        const char *format = options->prompt != NULL ? options->prompt
                             : tries < 0 ? "tokenpin PIN for %u: " : "tokenpin PIN for %u (%r): ";
        tp_expand(text, size, format, user, tries);
    } else if (changing && strcmp(name, "current-pin") == 0)
        tp_expand(text, size, tries < 0 ? "Current tokenpin PIN for %u: " : "Current tokenpin PIN for %u (%r): ", user, tries);
    else if (changing && strcmp(name, "new-pin") == 0) tp_expand(text, size, "New tokenpin PIN for %u: ", user, tries);
    else if (changing && strcmp(name, "confirm-pin") == 0) snprintf(text, size, "Retype new tokenpin PIN: ");
    else return -1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* The exchange                                                                                   */

/* One exchange with the daemon. What a failure may map to depends on whether a secret left this process. */
struct tp_exchange {
    pam_handle_t *pamh;
    const struct tp_options *options;
    const char *op;
    const char *user;
    int changing;
    struct tp_conn *conn;
    int secret_sent; /* the first byte of a secret went to the socket: from here on only `verified` succeeds */
    int verified;    /* the final answer was a `verified` result */
    int refusal_said; /* a `policyViolation` event told the person why the new PIN was refused */
    int hinted;       /* the "Enter alone" line was shown (once, before the first prompt) */
    int skipped;      /* nothing was tried: Enter alone, or a secret the daemon says cannot be a PIN */
    char *kept;       /* auth: the secret typed at the PIN prompt, until the daemon's answer (for PAM_AUTHTOK) */
    size_t kept_length;
    const char *authtok; /* seal-login-password: the new password (PAM_AUTHTOK), the answer to the `password` prompt */
};

/* The one place a result leaves the exchange: PAM_SUCCESS only for `verified` after a secret was sent; after a
   secret, nothing but a failure (PAM_AUTH_ERR, PAM_MAXTRIES, PAM_AUTHTOK_ERR for a refused new PIN), or, for a PIN
   change the person skipped, PAM_IGNORE (the PIN stays as it was). */
static int tp_settle(const struct tp_exchange *x, int result) {
    if (result == PAM_SUCCESS && !(x->verified && x->secret_sent)) result = PAM_AUTH_ERR;
    if (x->secret_sent && result != PAM_SUCCESS && result != PAM_AUTH_ERR && result != PAM_MAXTRIES &&
        !(x->changing && result == PAM_AUTHTOK_ERR) && !(x->changing && x->skipped && result == PAM_IGNORE))
        result = PAM_AUTH_ERR;
    return result;
}

/* Wipes and frees the kept secret. */
static void tp_forget(struct tp_exchange *x) {
    if (x->kept == NULL) return;
    explicit_bzero(x->kept, x->kept_length);
    free(x->kept);
    x->kept = NULL;
    x->kept_length = 0;
}

/* What a skip returns: the PIN change did not happen (PAM_IGNORE: the rest of the password stack goes on), or the
   authentication did not (PAM_AUTH_ERR: never a success, and `default=ignore` moves on to the password). */
static int tp_skip_result(struct tp_exchange *x) {
    x->skipped = 1;
    if (x->changing) {
        tp_say(x->pamh, x->options, PAM_TEXT_INFO, "PIN unchanged.");
        return PAM_IGNORE;
    }
    return PAM_AUTH_ERR;
}

/* A prompt: asks the person and sends the answer. 0 to go on, or the PAM code that ends the exchange. */
static int tp_on_prompt(struct tp_exchange *x, const struct tp_message *message) {
    const char *name = tp_string(message, "prompt");
    char text[512];
    if (x->authtok != NULL) {
        /* Sealing: the one prompt is the password, answered with PAM_AUTHTOK, once, without asking anyone. */
        if (name == NULL || strcmp(name, "password") != 0 || x->secret_sent) {
            pam_syslog(x->pamh, LOG_ERR, "tokenpind asked for a secret %s never asks; refused", x->op);
            tp_send_cancel(x->conn);
            return PAM_AUTH_ERR;
        }
        x->secret_sent = 1;
        return tp_send_secret(x->conn, name, x->authtok) == 0 ? 0 : PAM_AUTH_ERR;
    }
    if (name == NULL || tp_prompt_text(message, name, x->changing, x->user, x->options, text, sizeof(text)) != 0) {
        pam_syslog(x->pamh, LOG_ERR, "tokenpind asked for a secret %s never asks; refused", x->op);
        tp_send_cancel(x->conn);
        return PAM_AUTH_ERR;
    }
    if (!x->hinted) {
        /* Before the first prompt: what Enter alone does, so that nobody spends a try to get to the password. */
        x->hinted = 1;
        if (x->changing)
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Press Enter to leave your tokenpin PIN unchanged.");
        else if (x->options->password_hint)
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Press Enter to use your password.");
    }
    long long tries = tp_tries(message);
    if ((strcmp(name, "pin") == 0 || strcmp(name, "current-pin") == 0) && tries == 1)
        tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Last try: one wrong entry more locks the PIN.");
    tp_debug(x->pamh, x->options, "asking for the %s", name);
    char *answer = NULL;
    int status = pam_prompt(x->pamh, PAM_PROMPT_ECHO_OFF, &answer, "%s", text);
    if (status != PAM_SUCCESS || answer == NULL) {
        tp_send_cancel(x->conn);
        if (answer != NULL) { explicit_bzero(answer, strlen(answer)); free(answer); }
        return PAM_CONV_ERR;
    }
    size_t length = strlen(answer);
    if (length == 0) {
        /* Enter alone is never a try: nothing is sent, the daemon is told to cancel, the next module asks. */
        free(answer);
        tp_send_cancel(x->conn);
        tp_debug(x->pamh, x->options, "nothing entered for the %s: skipped", name);
        return tp_skip_result(x);
    }
    if (length > TP_MAX_SECRET || !tp_is_utf8(answer, length)) {
        /* The daemon would refuse the line as malformed; refuse it here, before a byte of it is sent. */
        explicit_bzero(answer, length);
        free(answer);
        tp_send_cancel(x->conn);
        pam_syslog(x->pamh, LOG_NOTICE, "the %s typed is not UTF-8 text (or too long); not sent", name);
        tp_say(x->pamh, x->options, PAM_ERROR_MSG, "Not accepted: a PIN is text of at most %d bytes.", TP_MAX_SECRET);
        return PAM_AUTH_ERR;
    }
    x->secret_sent = 1;
    if (!x->changing && strcmp(name, "pin") == 0) {
        /* Kept until the daemon answers: a secret that cannot be a PIN is handed on to the password module. */
        tp_forget(x);
        x->kept = malloc(length + 1);
        if (x->kept != NULL) {
            memcpy(x->kept, answer, length + 1);
            x->kept_length = length;
        }
    }
    status = tp_send_secret(x->conn, name, answer);
    explicit_bzero(answer, length);
    free(answer);
    return status == 0 ? 0 : PAM_AUTH_ERR;
}

static void tp_on_event(struct tp_exchange *x, const struct tp_message *message) {
    const char *event = tp_string(message, "event");
    if (event != NULL && strcmp(event, "tokenFailed") == 0) {
        const char *reason = tp_string(message, "reason");
        tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Token not used: %s", reason ? reason : "unavailable");
    } else if (event != NULL && strcmp(event, "otherAttempts") == 0) {
        /* Told at the user's own or local success: what su and remote logins tried meanwhile (then cleared). */
        long long failures = tp_int(message, "failures", 0);
        const char *service = tp_string(message, "service");
        const char *invoker = tp_string(message, "invoker");
        const char *rhost = tp_string(message, "rhost");
        const char *kind = tp_string(message, "class");
        int remote = kind != NULL && strcmp(kind, "remote") == 0;
        char by[160] = "";
        if (!remote && invoker != NULL) snprintf(by, sizeof(by), " by %s", invoker);
        else if (remote && rhost != NULL) snprintf(by, sizeof(by), " from %s", rhost);
        tp_say(x->pamh, x->options, PAM_TEXT_INFO, "%lld failed %s from %s%s since you last verified here; "
               "the PIN and token still work here.", failures, failures == 1 ? "attempt" : "attempts",
               service != NULL ? service : (remote ? "a remote login" : "another user"), by);
    } else if (event != NULL && strcmp(event, "keypadEntry") == 0) {
        /* The card PIN goes in on the reader's own keys: an information message, never a secret prompt. The person
           enters a secret there (the reader sends it to the card), so from here on, as after a typed one, only
           `verified` succeeds and nothing maps to "unavailable". */
        x->secret_sent = 1;
        const char *reader = tp_string(message, "reader");
        /* `pin`: which PIN (left out for the card PIN; a verification only ever asks for that one). */
        const char *pin = tp_string(message, "pin");
        const char *what = pin != NULL && strcmp(pin, "admin-pin") == 0 ? "admin PIN"
                           : pin != NULL && strcmp(pin, "puk") == 0     ? "PUK"
                                                                         : "card PIN";
        long long tries = tp_int(message, "cardTriesLeft", -1);
        if (tries >= 0) /* null: a card that does not tell its tries (a PKCS#11 token) */
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Enter the %s on the keypad of %s (%lld %s left).", what,
                   reader ? reader : "the reader", tries, tries == 1 ? "try" : "tries");
        else
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Enter the %s on the keypad of %s.", what,
                   reader ? reader : "the reader");
    } else if (event != NULL && strcmp(event, "keypadNotUsed") == 0) {
        const char *reason = tp_string(message, "reason");
        tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Keypad not used: %s.", reason ? reason : "unavailable");
    } else if (event != NULL && strcmp(event, "policyViolation") == 0) {
        const char *rule = tp_string(message, "rule");
        const char *reason = tp_string(message, "reason");
        /* The site's pin-check program gives its own reason (the daemon keeps a PIN out of it); say that. */
        if (rule != NULL && strcmp(rule, "site-check") == 0 && reason != NULL && reason[0] != '\0')
            tp_say(x->pamh, x->options, PAM_ERROR_MSG, "New PIN refused: %s", reason);
        else
            tp_say(x->pamh, x->options, PAM_ERROR_MSG, "New PIN refused by the PIN policy (rule %s).", rule ? rule : "?");
        x->refusal_said = 1;
    }
    tp_debug(x->pamh, x->options, "event %s", event ? event : "?");
}

/* After a verification with `login_keyring`: the login password tokenpind sealed, when it handed it back, becomes
   PAM_AUTHTOK for the modules after this one (pam_gnome_keyring, pam_kwallet5), but only when nothing set
   PAM_AUTHTOK before; the copy in the message is wiped when the message is freed, PAM wipes its own at pam_end. */
static void tp_take_login_password(struct tp_exchange *x, const struct tp_message *message) {
    if (!x->options->login_keyring || x->changing) return;
    const struct tp_field *field = tp_get(message, "loginPassword");
    if (field == NULL || field->kind != TP_STRING || field->length == 0) {
        tp_debug(x->pamh, x->options, "no login password from tokenpind (not sealed, not at the seat, or off)");
        return;
    }
    const void *item = NULL;
    if (pam_get_item(x->pamh, PAM_AUTHTOK, &item) == PAM_SUCCESS && item != NULL) {
        pam_syslog(x->pamh, LOG_NOTICE, "PAM_AUTHTOK is already set; the login password from tokenpind is not used");
        return;
    }
    if (pam_set_item(x->pamh, PAM_AUTHTOK, field->text) != PAM_SUCCESS)
        pam_syslog(x->pamh, LOG_ERR, "cannot set PAM_AUTHTOK to the login password");
    else
        tp_debug(x->pamh, x->options, "the login password is PAM_AUTHTOK for the keyring");
}

/* The final `result`: only `verified` with exit code 0 succeeds; `locked` is PAM_MAXTRIES; anything else fails. */
static int tp_on_result(struct tp_exchange *x, const struct tp_message *message) {
    const char *outcome = tp_string(message, "outcome");
    long long code = tp_int(message, "exitCode", -1);
    tp_debug(x->pamh, x->options, "result %s", outcome ? outcome : "?");
    if (x->authtok != NULL) {
        /* seal-login-password answers exit 0 and nothing else once the password is sealed. */
        x->verified = code == 0 && outcome == NULL;
        return x->verified ? PAM_SUCCESS : PAM_AUTH_ERR;
    }
    if (outcome == NULL) return PAM_AUTH_ERR;
    if (code == 0 && strcmp(outcome, "verified") == 0) {
        x->verified = 1;
        if (x->changing && x->secret_sent) tp_say(x->pamh, x->options, PAM_TEXT_INFO, "PIN changed.");
        tp_take_login_password(x, message);
        return PAM_SUCCESS;
    }
    /* A remote or other attempt (su, sshd) spends a counter of its own; a lock there leaves the PIN working at the
       machine, and the messages say so. */
    const char *counter = tp_string(message, "counter");
    int apart = counter != NULL && strcmp(counter, "others") == 0;
    if (apart && strcmp(outcome, "locked") == 0) {
        tp_say(x->pamh, x->options, PAM_ERROR_MSG,
               "PIN locked for su and remote logins after too many wrong entries; the user unlocks it by "
               "verifying at this machine or as themselves.");
        return PAM_MAXTRIES;
    }
    if (apart && strcmp(outcome, "rejected") == 0) {
        long long tries = tp_tries(message);
        if (tries >= 0)
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Wrong PIN. %lld %s left for su and remote logins.", tries,
                   tries == 1 ? "try" : "tries");
        return PAM_AUTH_ERR;
    }
    if (strcmp(outcome, "rejected") == 0) {
        long long tries = tp_tries(message);
        if (tp_bool(message, "lastTry"))
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Wrong PIN. Last try: one wrong entry more locks the PIN.");
        else if (tries >= 0)
            tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Wrong PIN. %lld %s left.", tries, tries == 1 ? "try" : "tries");
    } else if (strcmp(outcome, "locked") == 0) {
        tp_say(x->pamh, x->options, PAM_ERROR_MSG,
               "PIN locked: no tries left. Unlock it with `tokenpin reset` and the recovery key.");
        return PAM_MAXTRIES;
    } else if (strcmp(outcome, "tokenRejected") == 0) {
        const char *reason = tp_string(message, "reason");
        tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Token not verified: %s", reason ? reason : "the card refused");
    } else if (strcmp(outcome, "delayed") == 0) {
        long long wait = tp_int(message, "retryAfter", -1);
        if (wait >= 0) tp_say(x->pamh, x->options, PAM_TEXT_INFO, "Too many wrong entries: try again in %lld s.", wait);
    }
    return PAM_AUTH_ERR; /* rejected, delayed, a token refusal, or an outcome this module does not know */
}

/* The final `error`: `not-enrolled` before any secret is "unavailable"; every other code, known or not, fails. */
static int tp_on_error(struct tp_exchange *x, const struct tp_message *message) {
    const char *code = tp_string(message, "code");
    const char *text = tp_string(message, "message");
    if (code == NULL) code = "?";
    tp_debug(x->pamh, x->options, "error %s", code);
    if (strcmp(code, "not-enrolled") == 0 && !x->secret_sent) return tp_unavailable(x->options);
    if (strcmp(code, "not-a-pin") == 0 && x->secret_sent) {
        /* Not counted: what was typed cannot be a PIN (a password, most likely). For auth it goes on as
           PAM_AUTHTOK, so that `pam_unix try_first_pass` takes it without asking again. */
        const void *item = NULL;
        if (!x->changing && x->kept != NULL &&
            (pam_get_item(x->pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL))
            (void)pam_set_item(x->pamh, PAM_AUTHTOK, x->kept);
        tp_debug(x->pamh, x->options, "not a PIN: nothing counted, handed on");
        return tp_skip_result(x);
    }
    /* The daemon does not answer this kind of attempt (a remote login with pam-remote = ignore): nothing was
       asked, so the module steps aside as pam_fprintd does for remote sessions. */
    if (strcmp(code, "ignored") == 0 && !x->secret_sent) return tp_unavailable(x->options);
    if (strcmp(code, "policy") == 0 && x->changing && x->secret_sent) {
        /* One message per refusal: the event already said why. */
        if (!x->refusal_said)
            tp_say(x->pamh, x->options, PAM_ERROR_MSG, "%s", text ? text : "New PIN refused by the PIN policy.");
        return PAM_AUTHTOK_ERR;
    }
    if (strcmp(code, "permission-denied") == 0 && !x->secret_sent) return PAM_PERM_DENIED;
    pam_syslog(x->pamh, LOG_NOTICE, "tokenpind refused: %s", code);
    return PAM_AUTH_ERR;
}

/* Reads daemon messages until the final one; 0 never comes back, only a PAM code. */
static int tp_converse(struct tp_exchange *x, char *line, struct tp_message *message) {
    for (int count = 0; count < TP_MAX_MESSAGES; count++) {
        if (tp_read_line(x->conn, line, x->options->timeout_ms) != 0) {
            pam_syslog(x->pamh, LOG_NOTICE, "tokenpind closed the connection or did not answer in time");
            return PAM_AUTH_ERR;
        }
        int parsed = tp_parse(line, message);
        explicit_bzero(line, strlen(line));
        const char *type = parsed == 0 ? tp_string(message, "type") : NULL;
        long long version = tp_int(message, "v", 0);
        if (type == NULL || version < 1 || version > TP_PROTOCOL_VERSION) {
            pam_syslog(x->pamh, LOG_ERR, "tokenpind sent a message this module cannot read");
            tp_message_free(message);
            tp_send_cancel(x->conn);
            return PAM_AUTH_ERR;
        }
        int result = 0;
        if (strcmp(type, "prompt") == 0) result = tp_on_prompt(x, message);
        else if (strcmp(type, "event") == 0) tp_on_event(x, message);
        else if (strcmp(type, "result") == 0) result = tp_on_result(x, message);
        else if (strcmp(type, "error") == 0) result = tp_on_error(x, message);
        else {
            /* `question` and unknown types: verify and change ask no yes/no question. */
            pam_syslog(x->pamh, LOG_ERR, "tokenpind sent an unexpected %s message", type);
            tp_send_cancel(x->conn);
            result = PAM_AUTH_ERR;
        }
        int final = strcmp(type, "result") == 0 || strcmp(type, "error") == 0;
        tp_message_free(message);
        if (final || result != 0) return result;
    }
    pam_syslog(x->pamh, LOG_ERR, "tokenpind sent more than %d messages in one exchange", TP_MAX_MESSAGES);
    tp_send_cancel(x->conn);
    return PAM_AUTH_ERR;
}

/* Runs `op` for `user`: answers prompts through the conversation, shows events, maps the final message. */
static int tp_run(pam_handle_t *pamh, const struct tp_options *options, const char *op, const char *user,
                  const char *authtok) {
    struct tp_conn *conn = calloc(1, sizeof(struct tp_conn));
    char *line = malloc(TP_MAX_LINE + 1);
    struct tp_message *message = calloc(1, sizeof(struct tp_message));
    if (conn == NULL || line == NULL || message == NULL) {
        free(conn);
        free(line);
        free(message);
        return PAM_BUF_ERR;
    }
    struct tp_exchange x = {.pamh = pamh, .options = options, .op = op, .user = user,
                            .changing = strcmp(op, "change") == 0, .conn = conn, .secret_sent = 0, .verified = 0,
                            .authtok = authtok};
    int result;
    conn->fd = tp_open(options->socket_path, options->timeout_ms);
    if (conn->fd < 0) {
        pam_syslog(pamh, LOG_NOTICE, "tokenpind is not reachable on %s", options->socket_path);
        result = tp_unavailable(options);
        goto done;
    }
    if (!tp_peer_is_root(pamh, conn->fd)) {
        result = PAM_AUTH_ERR;
        goto done;
    }
    tp_debug(pamh, options, "connected to %s, op %s for %s", options->socket_path, op, user);
    /* mode=pin forces the PIN; mode=token, or fallback=deny, forces the token (no PIN after a token failure). */
    const char *method = NULL;
    if (options->mode == TP_MODE_PIN) method = "pin";
    else if (options->mode == TP_MODE_TOKEN || !options->fallback_allow) method = "token";
    if (tp_send_request(pamh, conn, op, user, x.changing || authtok != NULL ? NULL : method,
                        options->login_keyring) != 0) {
        /* The daemon accepted the connection: it was reached, so this is a failure, not "unavailable". */
        pam_syslog(pamh, LOG_NOTICE, "cannot send the request to tokenpind");
        result = PAM_AUTH_ERR;
        goto done;
    }
    result = tp_converse(&x, line, message);
done:
    result = tp_settle(&x, result);
    tp_forget(&x);
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
    struct tp_options options;
    if (tp_parse_options(pamh, flags, argc, argv, &options) != 0) return PAM_SERVICE_ERR;
    const char *user = NULL;
    int status = tp_user(pamh, &user);
    if (status != PAM_SUCCESS) return status;
    return tp_run(pamh, &options, "verify", user, NULL);
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}

/* The password stack with `login_keyring`: after pam_unix (earlier in the stack) set the new password, the new
   PAM_AUTHTOK is sent to tokenpind to be sealed for the login keyring. The password has already changed, so this
   never fails the stack: anything but "sealed" is PAM_IGNORE, said in syslog (tokenpind's journal says why). */
static int tp_seal_login_password(pam_handle_t *pamh, const struct tp_options *options, int flags, const char *user) {
    if (flags & PAM_PRELIM_CHECK) return PAM_IGNORE;
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE;
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL || *(const char *)item == '\0') {
        pam_syslog(pamh, LOG_NOTICE, "no new password (PAM_AUTHTOK) to seal: put pam_tokenpin after pam_unix");
        return PAM_IGNORE;
    }
    const char *password = item;
    size_t length = strlen(password);
    if (length > TP_MAX_SECRET || !tp_is_utf8(password, length)) {
        pam_syslog(pamh, LOG_NOTICE, "the new password is not UTF-8 text of at most %d bytes; not sealed", TP_MAX_SECRET);
        return PAM_IGNORE;
    }
    int result = tp_run(pamh, options, "seal-login-password", user, password);
    if (result != PAM_SUCCESS) {
        pam_syslog(pamh, LOG_NOTICE, "tokenpind did not seal the new login password for %s (see its journal)", user);
        return PAM_IGNORE;
    }
    tp_debug(pamh, options, "the new login password is sealed for the login keyring");
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    struct tp_options options;
    if (tp_parse_options(pamh, flags, argc, argv, &options) != 0) return PAM_SERVICE_ERR;
    /* `passwd` changes the password; the PIN only where the admin asked for it. */
    if (!options.change_pin && !options.login_keyring) return PAM_IGNORE;
    const char *user = NULL;
    int status = tp_user(pamh, &user);
    if (status != PAM_SUCCESS) return status;
    if (!options.change_pin) return tp_seal_login_password(pamh, &options, flags, user);
    if (flags & PAM_PRELIM_CHECK) {
        /* Only whether the daemon is there and is root's; nothing is sent. */
        int fd = tp_open(options.socket_path, options.timeout_ms);
        if (fd < 0) return options.ignore_unavailable ? PAM_IGNORE : PAM_TRY_AGAIN;
        int root = tp_peer_is_root(pamh, fd);
        close(fd);
        return root ? PAM_SUCCESS : PAM_AUTHTOK_ERR;
    }
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_SERVICE_ERR;
    return tp_run(pamh, &options, "change", user, NULL);
}
