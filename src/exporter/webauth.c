/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bcrypt basic auth as exporter-toolkit's webHandler does it (web/handler.go): an unknown user is
 * checked against a hash of the same cost so the answer takes as long as for a known one, and
 * checks run one at a time. Differences (docs/reference/dcgm-exporter.md "Web configuration"):
 * the check runs on a thread of its own with a bounded queue instead of on the request, and only
 * good results are cached, so wrong passwords can neither stall nor evict a scrape's credentials.
 */
#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/webauth.h"
#include "util/macro.h"

#define DIGEST_LEN 32 /* SHA-256 */

struct job {
	char *cred; /* user NUL password (one allocation from web_basic_credentials) */
	const char *user, *pass;
	unsigned char digest[DIGEST_LEN];
	void (*done)(void *ctx, bool ok);
	void *ctx;
};

struct web_auth {
	const struct web_config *c;
	char dummy[WEB_BCRYPT_LEN + 1]; /* checked for unknown users */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stopping;
	struct job queue[WEB_AUTH_QUEUE];
	size_t head, count;
	unsigned char good[WEB_AUTH_CACHE][DIGEST_LEN];
	size_t n_good, next_good;
	struct crypt_data *cd; /* the verifier thread's (about 32 KiB) */
};

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

static void remember(struct web_auth *a, const unsigned char *digest)
{
	memcpy(a->good[a->next_good], digest, DIGEST_LEN);
	a->next_good = (a->next_good + 1) % WEB_AUTH_CACHE;
	a->n_good = MIN(a->n_good + 1, (size_t)WEB_AUTH_CACHE);
}

static bool remembered(const struct web_auth *a, const unsigned char *digest)
{
	bool hit = false;
	for (size_t i = 0; i < a->n_good; i++)
		hit |= ct_equal(a->good[i], digest, DIGEST_LEN);
	return hit;
}

static void *verifier(void *arg)
{
	struct web_auth *a = arg;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->count && !a->stopping)
			pthread_cond_wait(&a->cond, &a->lock);
		if (!a->count)
			break;
		struct job j = a->queue[a->head];
		bool ok = false;
		if (!a->stopping) {
			pthread_mutex_unlock(&a->lock);
			bool known;
			const char *hash = user_hash(a, j.user, &known);
			ok = bcrypt_ok(a->cd, hash, j.pass) && known;
			pthread_mutex_lock(&a->lock);
			if (ok)
				remember(a, j.digest);
		}
		a->head = (a->head + 1) % WEB_AUTH_QUEUE;
		a->count--;
		pthread_mutex_unlock(&a->lock);
		explicit_bzero(j.cred, strlen(j.user) + 1 + strlen(j.pass));
		free(j.cred);
		j.done(j.ctx, ok);
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

enum web_auth_result web_auth_check(struct web_auth *a, const char *authorization, void (*done)(void *ctx, bool ok),
				    void *ctx)
{
	struct job j = {.done = done, .ctx = ctx};
	size_t plen;
	char *pass;
	if (web_basic_credentials(authorization, &j.cred, &pass, &plen) < 0)
		return WEB_AUTH_DENIED;
	j.user = j.cred;
	j.pass = pass;
	/* the cache key: SHA-256 over user NUL password (both NUL-free) */
	size_t keylen = strlen(j.user) + 1 + plen;
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, j.cred, keylen, j.digest) < 0) {
		free(j.cred);
		return WEB_AUTH_DENIED;
	}
	enum web_auth_result res = WEB_AUTH_PENDING;
	pthread_mutex_lock(&a->lock);
	if (a->stopping)
		res = WEB_AUTH_DENIED;
	else if (remembered(a, j.digest))
		res = WEB_AUTH_OK;
	else if (a->count == WEB_AUTH_QUEUE)
		res = WEB_AUTH_BUSY;
	else {
		a->queue[(a->head + a->count++) % WEB_AUTH_QUEUE] = j;
		pthread_cond_signal(&a->cond);
	}
	pthread_mutex_unlock(&a->lock);
	if (res != WEB_AUTH_PENDING) {
		explicit_bzero(j.cred, keylen);
		free(j.cred);
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
	explicit_bzero(a->good, sizeof(a->good));
	free(a->cd);
	free(a);
}
