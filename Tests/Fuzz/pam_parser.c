/* Fuzz target for pam_tokenpin's input handling (pam/pam_tokenpin.c): the flat JSON parser (tp_parse) on a line
   from the socket, the UTF-8 check on a typed secret (tp_is_utf8) and the escaping of a secret into a line
   (tp_escape). No input may read or write out of bounds (AddressSanitizer), overflow (UBSan) or leak; the parser
   turns valid UTF-8 into valid UTF-8 strings; and any text escaped then parsed back is the same text.
   Built by Tests/Fuzz/fuzz.sh with clang -fsanitize=fuzzer,address,undefined. */
#include "../../pam/pam_tokenpin.c"

int LLVMFuzzerTestOneInput(const unsigned char *data, unsigned long size) {
    if (size > TP_MAX_LINE) return 0;
    char *line = malloc(size + 1);
    if (line == NULL) return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    size_t length = strlen(line); /* a C string, as the conversation hands it over */
    int valid = tp_is_utf8(line, length);
    struct tp_message *message = calloc(1, sizeof(struct tp_message));
    if (message != NULL && tp_parse(line, message) == 0) {
        (void)tp_string(message, "type");
        (void)tp_int(message, "exitCode", -1);
        (void)tp_bool(message, "lastTry");
        for (int i = 0; i < message->count; i++) {
            const struct tp_field *field = &message->fields[i];
            if (valid && field->kind == TP_STRING && !tp_is_utf8(field->text, field->length)) __builtin_trap();
        }
        tp_message_free(message);
    }
    free(message);
    /* Escape the text as a secret would be, then parse it back as a JSON string. */
    if (length < TP_MAX_STRING / 6) {
        char *quoted = malloc(6 * length + 3);
        char *back = malloc(TP_MAX_STRING);
        if (quoted != NULL && back != NULL) {
            size_t n = 0;
            quoted[n++] = '"';
            n += tp_escape(quoted + n, line, length);
            quoted[n++] = '"';
            quoted[n] = '\0';
            const char *p = quoted;
            size_t parsed = 0;
            if (tp_parse_string(&p, back, TP_MAX_STRING, &parsed) != 0) __builtin_trap();
            if (parsed != length || memcmp(back, line, length) != 0 || *p != '\0') __builtin_trap();
        }
        free(quoted);
        free(back);
    }
    free(line);
    return 0;
}
