/* The PAM module's reader and writer against the shared protocol vectors (Tests/Vectors/protocol/README.md), so
   the module and the Swift codec cannot drift apart:
     client-pam   the module's reader reads the line's values and its writer (tp_send_request, tp_send_secret,
                  tp_send_cancel) writes them again: the bytes must be the vector's;
     server-pam   the module's reader reads every field; written back flat, they must be the vector's bytes;
     pam-refuses  the module's reader refuses the line.
   Usage: wire-tests VECTOR-FOLDER. Built by `make pam` (.build/pam/wire-tests), run by scripts/run-tests. */

/* The module's getuid, so a vector names the invoking uid (the module sends getuid() as `invokerUID`). */
#define getuid tp_test_getuid
#include "pam_tokenpin.c"
#undef getuid

static unsigned tp_test_uid;
uid_t tp_test_getuid(void) { return (uid_t)tp_test_uid; }

static int failures;
static int passed;

static void fail(const char *what, const char *line, const char *detail) {
    failures++;
    fprintf(stderr, "FAIL %s: %s\n  %s\n", what, detail, line);
}

/* Writes `message`'s fields back as one flat object, as the daemon's encoder would. */
static size_t write_flat(const struct tp_message *message, char *out) {
    size_t n = 0;
    out[n++] = '{';
    for (int i = 0; i < message->count; i++) {
        const struct tp_field *field = &message->fields[i];
        if (i > 0) out[n++] = ',';
        out[n++] = '"';
        n += tp_escape(out + n, field->key, strlen(field->key));
        out[n++] = '"';
        out[n++] = ':';
        switch (field->kind) {
        case TP_STRING:
            out[n++] = '"';
            n += tp_escape(out + n, field->text, field->length);
            out[n++] = '"';
            break;
        case TP_INT: n += (size_t)sprintf(out + n, "%lld", field->number); break;
        case TP_BOOL: n += (size_t)sprintf(out + n, "%s", field->number ? "true" : "false"); break;
        case TP_NULL: n += (size_t)sprintf(out + n, "null"); break;
        }
    }
    out[n++] = '}';
    out[n] = '\0';
    return n;
}

static int conv(int count, const struct pam_message **messages, struct pam_response **responses, void *data) {
    (void)count; (void)messages; (void)responses; (void)data;
    return PAM_CONV_ERR;
}

/* Writes the client line `line` again with the module's writer, from the values its reader reads. */
static void client_vector(const char *line, char *written, struct tp_conn *reader) {
    struct tp_message message;
    if (tp_parse(line, &message) != 0) { fail("client-pam", line, "the module's reader refuses it"); return; }
    const char *type = tp_string(&message, "type");
    int fds[2];
    if (type == NULL || socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        fail("client-pam", line, "no type, or no socket pair");
        tp_message_free(&message);
        return;
    }
    struct tp_conn conn = {.fd = fds[0], .used = 0};
    reader->fd = fds[1];
    reader->used = 0;
    int status = -1;
    if (strcmp(type, "request") == 0) {
        pam_handle_t *pamh = NULL;
        struct pam_conv conversation = {conv, NULL};
        const char *service = tp_string(&message, "service");
        if (pam_start(service != NULL ? service : "tokenpin-wire-tests", tp_string(&message, "user"), &conversation,
                      &pamh) == PAM_SUCCESS) {
            if (tp_string(&message, "rhost") != NULL) pam_set_item(pamh, PAM_RHOST, tp_string(&message, "rhost"));
            if (tp_string(&message, "tty") != NULL) pam_set_item(pamh, PAM_TTY, tp_string(&message, "tty"));
            if (tp_string(&message, "ruser") != NULL) pam_set_item(pamh, PAM_RUSER, tp_string(&message, "ruser"));
            tp_test_uid = (unsigned)tp_int(&message, "invokerUID", 0);
            const char *op = tp_string(&message, "op");
            const char *method = strcmp(op, "change") == 0 ? NULL : tp_string(&message, "method");
            status = tp_send_request(pamh, &conn, op, tp_string(&message, "user"), method,
                                     tp_bool(&message, "loginKeyring"));
            pam_end(pamh, PAM_SUCCESS);
        }
    } else if (strcmp(type, "secret") == 0) {
        status = tp_send_secret(&conn, tp_string(&message, "prompt"), tp_string(&message, "value"));
    } else if (strcmp(type, "cancel") == 0) {
        tp_send_cancel(&conn);
        status = 0;
    }
    tp_message_free(&message);
    if (status != 0 || tp_read_line(reader, written, 1000) != 0) fail("client-pam", line, "the module wrote nothing");
    else if (strcmp(written, line) != 0) fail("client-pam", line, written);
    else passed++;
    close(fds[0]);
    close(fds[1]);
}

static void server_vector(const char *line, char *written) {
    struct tp_message message;
    if (tp_parse(line, &message) != 0) { fail("server-pam", line, "the module's reader refuses it"); return; }
    write_flat(&message, written);
    if (strcmp(written, line) != 0) fail("server-pam", line, written);
    else passed++;
    tp_message_free(&message);
}

static void refused_vector(const char *line) {
    struct tp_message message;
    if (tp_parse(line, &message) == 0) {
        fail("pam-refuses", line, "the module's reader reads it");
        tp_message_free(&message);
    } else passed++;
}

static void run_file(const char *folder, const char *name, char *written, struct tp_conn *reader) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", folder, name);
    FILE *file = fopen(path, "r");
    if (file == NULL) { fail("open", path, strerror(errno)); return; }
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, file)) > 0) {
        if (line[length - 1] == '\n') line[--length] = '\0';
        if (strncmp(line, "client-pam ", 11) == 0) client_vector(line + 11, written, reader);
        else if (strncmp(line, "server-pam ", 11) == 0) server_vector(line + 11, written);
        else if (strncmp(line, "pam-refuses ", 12) == 0) refused_vector(line + 12);
    }
    free(line);
    fclose(file);
}

int main(int argc, char **argv) {
    const char *folder = argc > 1 ? argv[1] : "Tests/Vectors/protocol";
    char *written = malloc(TP_MAX_LINE + 1);
    struct tp_conn *reader = calloc(1, sizeof(struct tp_conn));
    if (written == NULL || reader == NULL) return 2;
    run_file(folder, "client.vectors", written, reader);
    run_file(folder, "server.vectors", written, reader);
    free(written);
    free(reader);
    if (passed < 20) fail("count", folder, "fewer than 20 vectors for the module");
    printf("pam wire vectors: %d passed, %d failed\n", passed, failures);
    return failures == 0 ? 0 : 1;
}
