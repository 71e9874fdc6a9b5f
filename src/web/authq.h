/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The order in which password checks (bcrypt, slow on purpose) are run, so that wrong passwords
 * never starve the right one (docs/reference/alerts.md, "HTTP"). A check waits in a bounded queue
 * and the verifier always takes the most deserving one:
 *   1. fewest wrong credentials sent on its own connection before (a scraper's keep-alive connection
 *      has none; a client guessing on one connection collects them);
 *   2. then fewest recent failures from its client address (an IPv6 /64 counts as one address),
 *      halved every AUTHQ_DECAY_MS;
 *   3. then first come, first served.
 * When the queue is full a newcomer that ranks strictly better pushes out the worst waiting check
 * (answered "busy", 429); otherwise the newcomer is. The rank never looks at the user name, so a
 * known user's check is not told apart from an unknown one's by its wait (upstream checks unknown
 * users against a dummy hash for the same reason).
 *
 * Pure data: no threads, no clock (the caller passes now_ms), so the unit tests drive it exactly.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define AUTHQ_SIZE     16    /* checks waiting at most */
#define AUTHQ_ADDRS    256   /* client addresses whose failures are remembered */
#define AUTHQ_DECAY_MS 60000 /* an address's failure count halves this often */
#define AUTHQ_KEY_LEN  16

struct authq_item {
	void *job; /* the caller's; NULL: free slot */
	uint64_t seq;
	unsigned strikes;
	unsigned char key[AUTHQ_KEY_LEN];
};

struct authq_addr {
	unsigned char key[AUTHQ_KEY_LEN];
	unsigned failures;
	uint64_t at_ms; /* when failures was last halved or counted; 0: free slot */
};

struct authq {
	struct authq_item items[AUTHQ_SIZE];
	size_t n;
	uint64_t seq;
	struct authq_addr addrs[AUTHQ_ADDRS];
};

/* The address key of a client: IPv4 (also IPv4-mapped IPv6) whole, IPv6 its /64; anything else zeros. */
void authq_key(const struct sockaddr *sa, unsigned char key[AUTHQ_KEY_LEN]);

/*
 * Queue job (not NULL) for a client of key that sent strikes wrong credentials on its connection.
 * 0: queued; 1: queued, and *ret_evicted is the job it pushed out (to be answered busy);
 * -EBUSY: the queue is full of checks that rank at least as well: answer busy.
 */
int authq_push(struct authq *q, const unsigned char key[AUTHQ_KEY_LEN], unsigned strikes, void *job, uint64_t now_ms,
	       void **ret_evicted);
/* The most deserving job, removed from the queue; NULL when empty. */
void *authq_pop(struct authq *q, uint64_t now_ms);
/* Count a wrong credential from key. */
void authq_failed(struct authq *q, const unsigned char key[AUTHQ_KEY_LEN], uint64_t now_ms);
/* key's failures as the ranking sees them now. */
unsigned authq_failures(struct authq *q, const unsigned char key[AUTHQ_KEY_LEN], uint64_t now_ms);
