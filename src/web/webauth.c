/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bcrypt basic auth as exporter-toolkit's webHandler does it (web/handler.go): an unknown user is
 * checked against a hash of the same cost so the answer takes as long as for a known one, and
 * checks run one at a time. Differences (docs/reference/dcgm-exporter.md "Web configuration"):
 * the check runs on a thread of its own with a bounded, ranked queue (web/authq.h) instead of on
 * the request, and good and wrong results are remembered in separate tables, so wrong passwords can
 * neither stall nor evict a scrape's credentials (docs/reference/alerts.md, "HTTP").
 */
#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/macro.h"
#include "web/authq.h"
#include "web/webauth.h"

#define DIGEST_LEN 32 /* SHA-256 */

struct job {
	char *cred; /* user NUL password (one allocation from web_basic_credentials) */
	size_t cred_len;
	const char *user, *pass;
	unsigned char digest[DIGEST_LEN];
	unsigned char key[AUTHQ_KEY_LEN]; /* the client's address (authq_key()) */
	web_auth_done_fn done;
	void *ctx;
};

/* Credentials remembered by digest: a ring, each entry compared in constant time. */
struct digests {
	unsigned char (*d)[DIGEST_LEN];
	size_t size, n, next;
};

struct web_auth {
	const struct web_config *c;
	char dummy[WEB_BCRYPT_LEN + 1]; /* checked for unknown users */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stopping;
	struct authq q;
	unsigned char good_d[WEB_AUTH_CACHE][DIGEST_LEN], bad_d[WEB_AUTH_BAD][DIGEST_LEN];
	struct digests good, bad;
	struct crypt_data *cd; /* the verifier thread's (about 32 KiB) */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	explicit_bzero(j->cred, j->cred_len);
	free(j->cred);
	free(j);
}

static bool ct_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

/* bcrypt of pass with hash's cost and salt, computed as $2b$ (Go reads every minor so); compares
 * the 31 hash characters in constant time, as Go's CompareHashAndPassword */
static bool bcrypt_ok(struct crypt_data *cd, const char *hash, const char *pass)
{
	char setting[WEB_BCRYPT_LEN + 1];
	memcpy(setting, hash, sizeof(setting));
	setting[2] = 'b';
	memset(cd, 0, sizeof(*cd));
	const char *out = crypt_r(pass, setting, cd);
	bool ok = out && strlen(out) == WEB_BCRYPT_LEN &&
		  ct_equal(out + WEB_BCRYPT_LEN - WEB_BCRYPT_HASH_LEN, hash + WEB_BCRYPT_LEN - WEB_BCRYPT_HASH_LEN,
			   WEB_BCRYPT_HASH_LEN);
	explicit_bzero(cd, sizeof(*cd));
	return ok;
}

static const char *user_hash(const struct web_auth *a, const char *user, bool *known)
{
	for (size_t i = 0; i < a->c->n_users; i++)
		if (streq(a->c->users[i].name, user)) {
			*known = true;
			return a->c->users[i].hash;
		}
	*known = false;
	return a->dummy;
}

static void remember(struct digests *t, const unsigned char *digest)
{
	memcpy(t->d[t->next], digest, DIGEST_LEN);
	t->next = (t->next + 1) % t->size;
	t->n = MIN(t->n + 1, t->size);
}

static bool remembered(const struct digests *t, const unsigned char *digest)
{
	bool hit = false;
	for (size_t i = 0; i < t->n; i++)
		hit |= ct_equal(t->d[i], digest, DIGEST_LEN);
	return hit;
}

/* The verifier: the best waiting check, one at a time; the queue is drained as wrong on shutdown. */
static void *verifier(void *arg)
{
	struct web_auth *a = arg;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct job *j;
		while (!(j = authq_pop(&a->q, now_ms())) && !a->stopping)
			pthread_cond_wait(&a->cond, &a->lock);
		if (!j)
			break;
		bool ok = false;
		if (!a->stopping) {
			pthread_mutex_unlock(&a->lock);
			bool known;
			const char *hash = user_hash(a, j->user, &known);
			ok = bcrypt_ok(a->cd, hash, j->pass) && known;
			pthread_mutex_lock(&a->lock);
			remember(ok ? &a->good : &a->bad, j->digest);
			if (!ok)
				authq_failed(&a->q, j->key, now_ms());
		}
		pthread_mutex_unlock(&a->lock);
		j->done(j->ctx, ok ? WEB_AUTH_OK : WEB_AUTH_WRONG);
		job_free(j);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int web_auth_new(const struct web_config *c, struct web_auth **ret, struct gerr *err)
{
	unsigned cost = WEB_BCRYPT_MIN_COST, k;
	if (!c->n_users) {
		*ret = NULL;
		return 0;
	}
	for (size_t i = 0; i < c->n_users; i++)
		if (webconfig_check_bcrypt(c->users[i].hash, &k) == 0)
			cost = MAX(cost, k);
	struct web_auth *a = calloc(1, sizeof(*a));
	if (!a || !(a->cd = calloc(1, sizeof(*a->cd)))) {
		free(a);
		return gerr_set(err, ENOMEM, "out of memory");
	}
	a->c = c;
	a->good = (struct digests){.d = a->good_d, .size = WEB_AUTH_CACHE};
	a->bad = (struct digests){.d = a->bad_d, .size = WEB_AUTH_BAD};
	/* the hash for unknown users: a random password at the highest cost in the file */
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	unsigned char pw[16];
	const char *out = NULL;
	char pwtext[sizeof(pw) * 2 + 1];
	if (crypt_gensalt_rn("$2b$", cost, NULL, 0, salt, sizeof(salt)) &&
	    gnutls_rnd(GNUTLS_RND_NONCE, pw, sizeof(pw)) == 0) {
		for (size_t i = 0; i < sizeof(pw); i++)
			snprintf(pwtext + 2 * i, 3, "%02x", pw[i]);
		out = crypt_r(pwtext, salt, a->cd);
	}
	if (!out || strlen(out) != WEB_BCRYPT_LEN) {
		free(a->cd);
		free(a);
		return gerr_set(err, ENOTSUP,
				"%s: basic_auth_users: the system's crypt(3) cannot make bcrypt hashes; install "
				"libxcrypt (libcrypt1) with bcrypt",
				c->path);
	}
	memcpy(a->dummy, out, sizeof(a->dummy));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	int r = pthread_create(&a->thread, NULL, verifier, a);
	if (r) {
		pthread_mutex_destroy(&a->lock);
		pthread_cond_destroy(&a->cond);
		free(a->cd);
		free(a);
		return gerr_set(err, r, "cannot start the password checker: %s", strerror(r));
	}
	*ret = a;
	return 0;
}

enum web_auth_result web_auth_check(struct web_auth *a, const char *authorization, const struct web_auth_client *who,
				    web_auth_done_fn done, void *ctx)
{
	struct job *j = calloc(1, sizeof(*j)), *evicted = NULL;
	size_t plen;
	char *pass;
	if (!j)
		return WEB_AUTH_BUSY;
	if (web_basic_credentials(authorization, &j->cred, &pass, &plen) < 0) {
		free(j);
		return WEB_AUTH_DENIED;
	}
	j->user = j->cred;
	j->pass = pass;
	j->done = done;
	j->ctx = ctx;
	/* the cache key: SHA-256 over user NUL password (both NUL-free) */
	j->cred_len = strlen(j->user) + 1 + plen;
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, j->cred, j->cred_len, j->digest) < 0) {
		job_free(j);
		return WEB_AUTH_DENIED;
	}
	authq_key(who ? who->addr : NULL, j->key);
	enum web_auth_result res = WEB_AUTH_PENDING;
	uint64_t now = now_ms();
	pthread_mutex_lock(&a->lock);
	if (a->stopping)
		res = WEB_AUTH_DENIED;
	else if (remembered(&a->good, j->digest))
		res = WEB_AUTH_OK;
	else if (remembered(&a->bad, j->digest)) {
		res = WEB_AUTH_WRONG; /* the same credentials failed before: they fail again, without bcrypt */
		authq_failed(&a->q, j->key, now);
	} else if (authq_push(&a->q, j->key, who ? who->strikes : 0, j, now, (void **)&evicted) < 0)
		res = WEB_AUTH_BUSY;
	else
		pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	if (res != WEB_AUTH_PENDING)
		job_free(j);
	if (evicted) {
		evicted->done(evicted->ctx, WEB_AUTH_BUSY);
		job_free(evicted);
	}
	return res;
}

void web_auth_shutdown(struct web_auth *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	bool joined = a->stopping;
	a->stopping = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	if (!joined)
		pthread_join(a->thread, NULL);
}

void web_auth_free(struct web_auth *a)
{
	if (!a)
		return;
	web_auth_shutdown(a);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
	explicit_bzero(a->good_d, sizeof(a->good_d));
	explicit_bzero(a->bad_d, sizeof(a->bad_d));
	free(a->cd);
	free(a);
}
