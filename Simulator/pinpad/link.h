/*
 * The virtual pinpad's link to its card: vpcd's protocol over loopback TCP, with tokenpin-sim connecting to the
 * reader. Every message both ways is a 2-byte big-endian length and that many bytes; from the reader a 1-byte
 * message is a control code (enum link_control), a longer one a command APDU, answered by the response APDU.
 * Every wait is bounded (`timeout_ms` for an answer); a card that breaks the protocol or misses the deadline is
 * dropped, as if pulled.
 */
#ifndef TOKENPIN_LINK_H
#define TOKENPIN_LINK_H

#include <stddef.h>
#include <stdint.h>

#define LINK_MAX_MESSAGE 0xFFFF

enum link_control { LINK_POWER_OFF = 0, LINK_POWER_ON = 1, LINK_RESET = 2, LINK_ATR = 4 };

struct link {
    int listener;         /* the loopback port tokenpin-sim connects to */
    int card;             /* the connected card, or -1 */
    unsigned timeout_ms;  /* how long the card may take to answer */
    uint8_t *buffer;      /* a message with its length: LINK_MAX_MESSAGE + 2 bytes */
    const char *gone;     /* why the card was last dropped */
};

/* Listens on 127.0.0.1:`port`; 0, or -1 with errno. */
int link_open(struct link *link, unsigned port, unsigned timeout_ms);
void link_close(struct link *link);

/* Takes a waiting connection when no card is connected, without blocking; 1 when a card is connected. */
int link_accept(struct link *link);
void link_drop(struct link *link, const char *why);

/* Sends one message; with `answer`, waits for the card's answer and sets its length (the bytes are at
 * link_answer). 0, or -1 with the card dropped. The sent bytes are wiped from the buffer. */
int link_exchange(struct link *link, const uint8_t *message, size_t length, size_t *answer);
const uint8_t *link_answer(const struct link *link);
/* Wipes the answer's `length` bytes. */
void link_wipe_answer(struct link *link, size_t length);

/* Waits `ms` milliseconds while watching the card; 0, or -1 when it closed the connection (pulled) or sent
 * something unasked (then it is dropped). */
int link_idle(struct link *link, unsigned ms);

#endif
