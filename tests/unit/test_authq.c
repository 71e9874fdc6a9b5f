/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The password checks' queue (src/web/authq.c): which check runs next and which one a full queue
 * turns away, with the clock given by the test. The same rules black-box, with real bcrypt and real
 * clients: tests/security/test_http_attacks.py (credential lock-out).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "web/authq.h"

static void key4(const char *ip, unsigned char key[AUTHQ_KEY_LEN])
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	assert_int_equal(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
	authq_key((struct sockaddr *)&sa, key);
}

static void key6(const char *ip, unsigned char key[AUTHQ_KEY_LEN])
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6};

	assert_int_equal(inet_pton(AF_INET6, ip, &sa.sin6_addr), 1);
	authq_key((struct sockaddr *)&sa, key);
}

static void test_keys(void **state)
{
	unsigned char a[AUTHQ_KEY_LEN], b[AUTHQ_KEY_LEN];

	key4("10.0.0.1", a);
	key6("::ffff:10.0.0.1", b); /* a dual-stack socket's view of the same IPv4 client */
	assert_memory_equal(a, b, AUTHQ_KEY_LEN);
	key4("10.0.0.2", b);
	assert_memory_not_equal(a, b, AUTHQ_KEY_LEN);
	key6("2001:db8:1:2::1", a); /* one /64: one client */
	key6("2001:db8:1:2:ffff::9", b);
	assert_memory_equal(a, b, AUTHQ_KEY_LEN);
	key6("2001:db8:1:3::1", b);
	assert_memory_not_equal(a, b, AUTHQ_KEY_LEN);
}

/* The case: a full queue of checks from connections that already sent wrong passwords
 * (24 keep-alive clients on the scraper's own address); the scraper's first check goes first. */
static void test_clean_connection_first(void **state)
{
	static struct authq q;
	static int jobs[AUTHQ_SIZE + 2];
	unsigned char lo[AUTHQ_KEY_LEN];
	void *evicted = NULL;

	memset(&q, 0, sizeof(q));
	key4("127.0.0.1", lo);
	for (int i = 0; i < 40; i++)
		authq_failed(&q, lo, 1000);
	for (int i = 0; i < AUTHQ_SIZE; i++)
		assert_int_equal(authq_push(&q, lo, 1 + (unsigned)i % 3, &jobs[i], 1000, &evicted), 0);
	/* full: a check that ranks no better than the worst waiting one is turned away */
	assert_int_equal(authq_push(&q, lo, 3, &jobs[AUTHQ_SIZE], 1000, &evicted), -EBUSY);
	/* the scraper (no strikes) pushes out the worst: most strikes, newest */
	assert_int_equal(authq_push(&q, lo, 0, &jobs[AUTHQ_SIZE + 1], 1000, &evicted), 1);
	assert_ptr_equal(evicted, &jobs[14]); /* 14 % 3 == 2: three strikes, the newest of those */
	assert_ptr_equal(authq_pop(&q, 1000), &jobs[AUTHQ_SIZE + 1]);
	/* then by strikes, first come first served among equals */
	assert_ptr_equal(authq_pop(&q, 1000), &jobs[0]);
	assert_ptr_equal(authq_pop(&q, 1000), &jobs[3]);
}

/* A flood from one address; a client from another, quiet address goes first even when the queue
 * is full and every flood check is from a fresh connection (no strikes). */
static void test_quiet_address_first(void **state)
{
	static struct authq q;
	static int jobs[AUTHQ_SIZE + 2];
	unsigned char bad[AUTHQ_KEY_LEN], good[AUTHQ_KEY_LEN];
	void *evicted = NULL;

	memset(&q, 0, sizeof(q));
	key4("10.1.1.1", bad);
	key4("10.2.2.2", good);
	authq_failed(&q, bad, 5);
	for (int i = 0; i < AUTHQ_SIZE; i++)
		assert_int_equal(authq_push(&q, bad, 0, &jobs[i], 10, &evicted), 0);
	assert_int_equal(authq_push(&q, good, 0, &jobs[AUTHQ_SIZE], 10, &evicted), 1);
	assert_ptr_equal(evicted, &jobs[AUTHQ_SIZE - 1]);
	assert_ptr_equal(authq_pop(&q, 10), &jobs[AUTHQ_SIZE]);
	/* same rank (same address, no strikes): strictly first come, first served; no pushing out */
	memset(&q, 0, sizeof(q));
	for (int i = 0; i < AUTHQ_SIZE; i++)
		assert_int_equal(authq_push(&q, good, 0, &jobs[i], 10, &evicted), 0);
	assert_int_equal(authq_push(&q, good, 0, &jobs[AUTHQ_SIZE], 10, &evicted), -EBUSY);
	for (int i = 0; i < AUTHQ_SIZE; i++)
		assert_ptr_equal(authq_pop(&q, 10), &jobs[i]);
	assert_null(authq_pop(&q, 10));
}

/* An address's failures halve every AUTHQ_DECAY_MS; a full table forgets the least failing one. */
static void test_decay_and_table(void **state)
{
	static struct authq q;
	unsigned char k[AUTHQ_KEY_LEN];

	memset(&q, 0, sizeof(q));
	key4("10.3.3.3", k);
	for (int i = 0; i < 8; i++)
		authq_failed(&q, k, 100);
	assert_int_equal(authq_failures(&q, k, 100), 8);
	assert_int_equal(authq_failures(&q, k, 100 + AUTHQ_DECAY_MS), 4);
	assert_int_equal(authq_failures(&q, k, 100 + 3 * AUTHQ_DECAY_MS), 1);
	assert_int_equal(authq_failures(&q, k, 100 + 40 * (uint64_t)AUTHQ_DECAY_MS), 0);
	/* a flood from many addresses cannot make the table forget the worst one */
	memset(&q, 0, sizeof(q));
	for (int i = 0; i < 50; i++)
		authq_failed(&q, k, 1);
	for (unsigned i = 0; i < 3 * AUTHQ_ADDRS; i++) {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0b000000u + i)};
		unsigned char o[AUTHQ_KEY_LEN];

		authq_key((struct sockaddr *)&sa, o);
		authq_failed(&q, o, 2);
	}
	assert_int_equal(authq_failures(&q, k, 2), 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_clean_connection_first),
	    cmocka_unit_test(test_quiet_address_first),
	    cmocka_unit_test(test_decay_and_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
