/* socket-ping: tokenpind's per-connection and per-request cost without any client process start, PAM stack or
 * module: a bench helper for scripts/bench-pam (built there with cc), not installed.
 *
 *   socket-ping SOCKET RUNS [REQUEST]
 *
 * Sends REQUEST (one protocol line; default a `ping`) RUNS times on a fresh connection each (connect, write,
 * read the reply line, close) and RUNS times on one kept connection, timing each with CLOCK_MONOTONIC, and
 * prints the two medians in microseconds: "connection MEDIAN" and "request MEDIAN". The daemon's
 * per-connection work (accept, thread, peer lookup) is the difference. Exits 1 when a reply is not a
 * `result` or `error` line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int open_socket(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(address.sun_path)) return -1;
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Writes the request and reads up to the reply's newline; 0 when it is a final message. */
static int exchange(int fd, const char *request) {
    size_t length = strlen(request);
    if (write(fd, request, length) != (ssize_t)length) return -1;
    char line[65537];
    size_t used = 0;
    while (used < sizeof(line) - 1) {
        ssize_t n = read(fd, line + used, sizeof(line) - 1 - used);
        if (n <= 0) return -1;
        used += (size_t)n;
        if (memchr(line, '\n', used) != NULL) break;
    }
    line[used] = '\0';
    return strstr(line, "\"type\":\"result\"") != NULL || strstr(line, "\"type\":\"error\"") != NULL ? 0 : -1;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count) {
    qsort(values, (size_t)count, sizeof(double), compare);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: socket-ping SOCKET RUNS [REQUEST]\n");
        return 2;
    }
    int runs = atoi(argv[2]);
    if (runs < 1 || runs > 100000) {
        fprintf(stderr, "socket-ping: RUNS must be 1 to 100000\n");
        return 2;
    }
    char request[8192];
    snprintf(request, sizeof(request), "%s\n", argc == 4 ? argv[3] : "{\"v\":3,\"type\":\"request\",\"op\":\"ping\"}");
    double *times = malloc(sizeof(double) * (size_t)runs);
    if (times == NULL) return 1;
    for (int i = 0; i < runs; i++) {
        double start = now_us();
        int fd = open_socket(argv[1]);
        if (fd < 0 || exchange(fd, request) != 0) {
            fprintf(stderr, "socket-ping: no answer from %s\n", argv[1]);
            return 1;
        }
        close(fd);
        times[i] = now_us() - start;
    }
    printf("connection %.1f\n", median(times, runs));
    /* The daemon's rate limit (requests per connection per minute) bounds how many go on one connection. */
    int kept = runs < 50 ? runs : 50;
    int fd = open_socket(argv[1]);
    for (int i = 0; i < kept; i++) {
        double start = now_us();
        if (fd < 0 || exchange(fd, request) != 0) {
            fprintf(stderr, "socket-ping: no answer from %s on a kept connection\n", argv[1]);
            return 1;
        }
        times[i] = now_us() - start;
    }
    close(fd);
    printf("request %.1f\n", median(times, kept));
    free(times);
    return 0;
}
