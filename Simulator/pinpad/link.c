/* The virtual pinpad's link to tokenpin-sim (link.h). */
#define _GNU_SOURCE
#include "link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long monotonic_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int link_open(struct link *link, unsigned port, unsigned timeout_ms)
{
    link->card = -1;
    link->timeout_ms = timeout_ms;
    link->gone = NULL;
    link->buffer = malloc(LINK_MAX_MESSAGE + 2);
    link->listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!link->buffer || link->listener < 0 || port == 0 || port > 65535
        || setsockopt(link->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0
        || bind(link->listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(link->listener, 1) != 0) {
        int saved = errno;
        link_close(link);
        errno = saved;
        return -1;
    }
    return 0;
}

void link_close(struct link *link)
{
    link_drop(link, "the reader closed");
    if (link->listener >= 0)
        close(link->listener);
    link->listener = -1;
    free(link->buffer);
    link->buffer = NULL;
}

void link_drop(struct link *link, const char *why)
{
    if (link->card < 0)
        return;
    close(link->card);
    link->card = -1;
    link->gone = why;
}

int link_accept(struct link *link)
{
    if (link->card >= 0)
        return 1;
    int card = accept4(link->listener, NULL, NULL, SOCK_CLOEXEC);
    if (card < 0)
        return 0;
    int one = 1;
    setsockopt(card, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    link->card = card;
    return 1;
}

/* Waits until the card's socket is ready for `events`, at most until `deadline`; 0, or -1. */
static int wait_socket(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - monotonic_ms();
        if (left <= 0)
            return -1;
        struct pollfd poll_fd = { .fd = fd, .events = events };
        int ready = poll(&poll_fd, 1, (int)(left > 60000 ? 60000 : left));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            return -1;
        if (ready > 0)
            return (poll_fd.revents & (events | POLLHUP | POLLERR)) ? 0 : -1;
    }
}

static int send_all(int fd, const uint8_t *bytes, size_t length, long long deadline)
{
    size_t sent = 0;
    while (sent < length) {
        if (wait_socket(fd, POLLOUT, deadline) != 0)
            return -1;
        ssize_t put = send(fd, bytes + sent, length - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (put < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (put <= 0)
            return -1;
        sent += (size_t)put;
    }
    return 0;
}

static int receive_all(int fd, uint8_t *bytes, size_t length, long long deadline)
{
    size_t got = 0;
    while (got < length) {
        if (wait_socket(fd, POLLIN, deadline) != 0)
            return -1;
        ssize_t read = recv(fd, bytes + got, length - got, MSG_DONTWAIT);
        if (read < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (read <= 0)
            return -1;
        got += (size_t)read;
    }
    return 0;
}

int link_exchange(struct link *link, const uint8_t *message, size_t length, size_t *answer)
{
    if (link->card < 0 || length == 0 || length > LINK_MAX_MESSAGE)
        return -1;
    long long deadline = monotonic_ms() + link->timeout_ms;
    link->buffer[0] = (uint8_t)(length >> 8);
    link->buffer[1] = (uint8_t)length;
    memmove(link->buffer + 2, message, length);
    int failed = send_all(link->card, link->buffer, length + 2, deadline);
    explicit_bzero(link->buffer, length + 2);
    if (failed) {
        link_drop(link, "it did not take a message");
        return -1;
    }
    if (!answer)
        return 0;
    uint8_t size[2];
    if (receive_all(link->card, size, 2, deadline) != 0) {
        link_drop(link, "it did not answer in time or closed the connection");
        return -1;
    }
    *answer = (size_t)size[0] << 8 | size[1];
    if (*answer > 0 && receive_all(link->card, link->buffer + 2, *answer, deadline) != 0) {
        link_drop(link, "its answer was cut short");
        return -1;
    }
    return 0;
}

const uint8_t *link_answer(const struct link *link)
{
    return link->buffer + 2;
}

void link_wipe_answer(struct link *link, size_t length)
{
    if (length > LINK_MAX_MESSAGE)
        length = LINK_MAX_MESSAGE;
    explicit_bzero(link->buffer + 2, length);
}

int link_idle(struct link *link, unsigned ms)
{
    long long deadline = monotonic_ms() + ms;
    for (;;) {
        if (link->card < 0)
            return -1;
        long long left = deadline - monotonic_ms();
        if (left <= 0)
            return 0;
        struct pollfd poll_fd = { .fd = link->card, .events = POLLIN | POLLRDHUP };
        int ready = poll(&poll_fd, 1, (int)(left > 60000 ? 60000 : left));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            if (ready < 0)
                return -1;
            continue;
        }
        uint8_t byte;
        ssize_t peeked = recv(link->card, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (peeked < 0 && (errno == EAGAIN || errno == EINTR) && !(poll_fd.revents & (POLLHUP | POLLERR)))
            continue;
        link_drop(link, peeked > 0 ? "it sent a message nobody asked for" : "it was pulled");
        return -1;
    }
}
