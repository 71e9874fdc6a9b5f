/* SPDX-License-Identifier: Apache-2.0 */
/* The password checks' queue (web/authq.h): ranked, bounded, pushing out the worst. */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "util/macro.h"
#include "web/authq.h"

void authq_key(const struct sockaddr *sa, unsigned char key[AUTHQ_KEY_LEN])
{
	static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(key, 0, AUTHQ_KEY_LEN);
	if (sa && sa->sa_family == AF_INET) {
		memcpy(key, v4mapped, sizeof(v4mapped));
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		/* an IPv4-mapped address whole; a real IPv6 client by its /64, the block a host is given */
		memcpy(key, a, memcmp(a, v4mapped, sizeof(v4mapped)) == 0 ? AUTHQ_KEY_LEN : 8);
	}
}

/* Halve a's failures for the time gone by since it last counted. */
static void decay(struct authq_addr *a, uint64_t now_ms)
{
	uint64_t halvings = now_ms > a->at_ms ? (now_ms - a->at_ms) / AUTHQ_DECAY_MS : 0;

	a->failures = halvings >= 32 ? 0 : a->failures >> halvings;
	a->at_ms += halvings * AUTHQ_DECAY_MS;
}

/* key's record, decayed; NULL when none. */
static struct authq_addr *addr_find(struct authq *q, const unsigned char *key, uint64_t now_ms)
{
	for (size_t i = 0; i < AUTHQ_ADDRS; i++) {
		struct authq_addr *a = &q->addrs[i];

		if (a->at_ms && memcmp(a->key, key, AUTHQ_KEY_LEN) == 0) {
			decay(a, now_ms);
			return a;
		}
	}
	return NULL;
}

unsigned authq_failures(struct authq *q, const unsigned char key[AUTHQ_KEY_LEN], uint64_t now_ms)
{
	const struct authq_addr *a = addr_find(q, key, now_ms);

	return a ? a->failures : 0;
}

/* A record for a new address: a free one, else the one with the fewest failures left (ties: the oldest). */
static struct authq_addr *addr_new(struct authq *q, uint64_t now_ms)
{
	struct authq_addr *pick = NULL;

	for (size_t i = 0; i < AUTHQ_ADDRS; i++) {
		struct authq_addr *a = &q->addrs[i];

		if (!a->at_ms)
			return a;
		decay(a, now_ms);
		if (!pick || a->failures < pick->failures || (a->failures == pick->failures && a->at_ms < pick->at_ms))
			pick = a;
	}
	return pick;
}

void authq_failed(struct authq *q, const unsigned char key[AUTHQ_KEY_LEN], uint64_t now_ms)
{
	struct authq_addr *a = addr_find(q, key, now_ms);

	if (!a) {
		a = addr_new(q, now_ms);
		memcpy(a->key, key, AUTHQ_KEY_LEN);
		a->failures = 0;
		a->at_ms = MAX(now_ms, 1);
	}
	if (a->failures < UINT32_MAX / 2)
		a->failures++;
}

/* <0: a runs before b. Strikes on the connection, then the address's failures, then arrival. */
static int rank_cmp(struct authq *q, const struct authq_item *a, const struct authq_item *b, uint64_t now_ms)
{
	int c = CMP(a->strikes, b->strikes);

	if (!c)
		c = CMP(authq_failures(q, a->key, now_ms), authq_failures(q, b->key, now_ms));
	return c ? c : CMP(a->seq, b->seq);
}

/* The index of the best (want_best) or worst waiting item; -1 when none waits. */
static int find(struct authq *q, int want_best, uint64_t now_ms)
{
	int pick = -1;

	for (int i = 0; i < AUTHQ_SIZE; i++) {
		if (!q->items[i].job)
			continue;
		if (pick < 0) {
			pick = i;
			continue;
		}
		int c = rank_cmp(q, &q->items[i], &q->items[pick], now_ms);

		if (want_best ? c < 0 : c > 0)
			pick = i;
	}
	return pick;
}

int authq_push(struct authq *q, const unsigned char key[AUTHQ_KEY_LEN], unsigned strikes, void *job, uint64_t now_ms,
	       void **ret_evicted)
{
	struct authq_item it = {.job = job, .seq = ++q->seq, .strikes = strikes};
	int slot = -1, r = 0;

	memcpy(it.key, key, AUTHQ_KEY_LEN);
	if (q->n == AUTHQ_SIZE) {
		slot = find(q, 0, now_ms);
		if (rank_cmp(q, &it, &q->items[slot], now_ms) >= 0)
			return -EBUSY;
		*ret_evicted = q->items[slot].job;
		r = 1;
	} else {
		for (slot = 0; q->items[slot].job; slot++)
			;
		q->n++;
	}
	q->items[slot] = it;
	return r;
}

void *authq_pop(struct authq *q, uint64_t now_ms)
{
	int i = find(q, 1, now_ms);
	void *job;

	if (i < 0)
		return NULL;
	job = q->items[i].job;
	q->items[i].job = NULL;
	q->n--;
	return job;
}
