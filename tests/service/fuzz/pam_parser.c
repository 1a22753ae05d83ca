/* Fuzz target for pam_tokenpin's flat JSON parser (tp_parse in pam/pam_tokenpin.c): no input may read or write
   out of bounds (AddressSanitizer) or leak. Built by tests/service/fuzz.sh with clang -fsanitize=fuzzer,address. */
#include "../../../pam/pam_tokenpin.c"

int LLVMFuzzerTestOneInput(const unsigned char *data, unsigned long size) {
    if (size > TP_MAX_LINE) return 0;
    char *line = malloc(size + 1);
    if (line == NULL) return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    struct tp_message *message = calloc(1, sizeof(struct tp_message));
    if (message != NULL && tp_parse(line, message) == 0) {
        (void)tp_string(message, "type");
        (void)tp_int(message, "exitCode", -1);
        tp_message_free(message);
    }
    free(message);
    free(line);
    return 0;
}
