/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's web configuration (exporter-toolkit format): parsing, relative paths, the Basic
 * credentials reader and the bcrypt checker (every minor read as Go reads it; only good results
 * remembered). Black-box with real TLS clients: tests/integration/test_exporter_webconfig.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <crypt.h>
#include <errno.h>
#include <pthread.h>

#include "web/webauth.h"
#include "web/webconfig.h"

static struct web_config *parse_ok(const char *text)
{
	struct gerr err = {0};
	struct web_config *c = NULL;
	int r = webconfig_parse(text, strlen(text), "/etc/dcgm/web.yml", &c, &err);
	if (r < 0)
		fail_msg("%s", err.msg);
	return c;
}

static void parse_err(const char *text, const char *needle)
{
	struct gerr err = {0};
	struct web_config *c = NULL;
	assert_true(webconfig_parse(text, strlen(text), "/etc/dcgm/web.yml", &c, &err) < 0);
	assert_null(c);
	if (!strstr(err.msg, needle))
		fail_msg("'%s' not in '%s'", needle, err.msg);
}

static void test_parse(void **state)
{
	struct web_config *c =
	    parse_ok("tls_server_config:\n"
		     "  cert_file: tls/server.crt\n  key_file: /abs/server.key\n"
		     "  client_ca_file: ca.crt\n  client_auth_type: RequireClientCert\n"
		     "  curve_preferences: [CurveP384, X25519]\n  min_version: TLS13\n"
		     "  client_allowed_sans: [a, b]\n  prefer_server_cipher_suites: false\n"
		     "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: sameorigin\n"
		     "basic_auth_users:\n"
		     "  prom: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSX\n");
	assert_true(c->tls);
	assert_string_equal(c->cert_file, "/etc/dcgm/tls/server.crt"); /* relative to the file */
	assert_string_equal(c->key_file, "/abs/server.key");
	assert_string_equal(c->client_ca_file, "/etc/dcgm/ca.crt");
	assert_int_equal(c->client_auth, WEB_CLIENT_REQUIRE_ANY); /* the old name */
	assert_int_equal(c->n_curves, 2);
	assert_int_equal(c->curves[0], WEB_CURVE_P384);
	assert_int_equal(c->min_version, WEB_TLS13);
	assert_int_equal(c->max_version, WEB_TLS13); /* default */
	assert_int_equal(c->n_sans, 2);
	assert_int_equal(c->n_headers, 1);
	assert_string_equal(c->headers[0].value, "sameorigin");
	assert_int_equal(c->n_users, 1);
	webconfig_free(c);
	/* empty file: plain HTTP, nothing else (upstream's web_config_empty.yml) */
	c = parse_ok("");
	assert_false(c->tls);
	assert_int_equal(c->n_users, 0);
	webconfig_free(c);
	/* client_auth_type alone turns TLS on, and then a certificate is missing */
	parse_err("tls_server_config:\n  client_auth_type: NoClientCert\n", "missing one of cert or cert_file");
	parse_err("tls_server_config:\n  cert: cc\n  key: kk\n  client_ca: z\n", "without a Client Auth Policy");
	parse_err("tls_server_config:\n  cert: cc\n  key: kk\n  client_allowed_sans: [a]\n", "client_auth_type");
	parse_err("tls_server_config:\n  cert: cc\n  cert_file: ff\n  key: kk\n", "keep one");
	parse_err("tls_server_config:\n  cert_file: 5\n",
		  "/etc/dcgm/web.yml:2:3: tls_server_config.cert_file: expected a string");
	parse_err("tls_server_config:\n  curve_preferences: [X448]\n", "unknown value \"X448\"");
	parse_err("http_server_config:\n  headers:\n    Server: x\n", "cannot be configured");
	parse_err("basic_auth_users: [a]\n", "expected a mapping");
}

static void test_bcrypt_format(void **state)
{
	unsigned cost = 0;
	const char *h = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSX";
	assert_int_equal(webconfig_check_bcrypt(h, &cost), 0);
	assert_int_equal(cost, 10);
	assert_int_equal(webconfig_check_bcrypt("$2y$03$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSX", NULL),
			 -EINVAL);
	assert_int_equal(webconfig_check_bcrypt("$2y$16$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSX", NULL),
			 -EINVAL);
	assert_int_equal(webconfig_check_bcrypt("$2c$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSX", NULL),
			 -EINVAL);
	assert_int_equal(webconfig_check_bcrypt("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeS", NULL),
			 -EINVAL);
	assert_int_equal(webconfig_check_bcrypt("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDe!X", NULL),
			 -EINVAL);
}

static void test_basic_credentials(void **state)
{
	char *u, *p;
	size_t n;
	/* "prom:pa:ss" -- the password keeps every colon after the first */
	assert_int_equal(web_basic_credentials("Basic cHJvbTpwYTpzcw==", &u, &p, &n), 0);
	assert_string_equal(u, "prom");
	assert_string_equal(p, "pa:ss");
	assert_int_equal(n, 5);
	free(u);
	assert_int_equal(web_basic_credentials("bAsIc OnB3", &u, &p, &n), 0); /* ":pw": empty user */
	assert_string_equal(u, "");
	free(u);
	const char *bad[] = {"Basic cHJvbTpwYTpzcw", /* no padding: Go's StdEncoding refuses */
			     "Basic cHJvbQ==",       /* no colon */
			     "Basic cHJvbQB4OnB3",   /* NUL in the user */
			     "Bearer cHJvbTpwYQ==",  "Basic", "Basic ====", "Basic cH=vbTpwYQ==", NULL};
	for (const char **b = bad; *b; b++)
		if (web_basic_credentials(*b, &u, &p, &n) != -EINVAL)
			fail_msg("accepted %s", *b);
	assert_int_equal(web_basic_credentials(NULL, &u, &p, &n), -EINVAL);
}

struct verdict {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, ok;
};

static void on_done(void *ctx, enum web_auth_result r)
{
	struct verdict *v = ctx;
	pthread_mutex_lock(&v->lock);
	v->done++;
	v->ok += r == WEB_AUTH_OK;
	pthread_cond_signal(&v->cond);
	pthread_mutex_unlock(&v->lock);
}

/* OK at once, or PENDING and then the verifier's answer */
static bool check(struct web_auth *a, const char *header)
{
	struct verdict v = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	enum web_auth_result r = web_auth_check(a, header, NULL, on_done, &v);
	if (r != WEB_AUTH_PENDING)
		return r == WEB_AUTH_OK;
	pthread_mutex_lock(&v.lock);
	while (!v.done)
		pthread_cond_wait(&v.cond, &v.lock);
	pthread_mutex_unlock(&v.lock);
	return v.ok;
}

static void test_bcrypt_minors(void **state)
{
	struct crypt_data cd = {0};
	char salt[CRYPT_GENSALT_OUTPUT_SIZE], hash[WEB_BCRYPT_LEN + 1];
	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	snprintf(hash, sizeof(hash), "%s", crypt_r("s3cret", salt, &cd));
	/* Go reads every minor the same way: the same hash under $2a$, $2x$, $2y$ checks the same */
	for (const char *m = "abxy"; *m; m++) {
		char yaml[256];
		hash[2] = *m;
		snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  prom: '%s'\n", hash);
		struct web_config *c = parse_ok(yaml);
		struct web_auth *a = NULL;
		struct gerr err = {0};
		assert_int_equal(web_auth_new(c, &a, &err), 0);
		assert_true(check(a, "Basic cHJvbTpzM2NyZXQ="));  /* prom:s3cret */
		assert_true(check(a, "Basic cHJvbTpzM2NyZXQ="));  /* remembered: OK at once */
		assert_false(check(a, "Basic cHJvbTpzM2NyZXU=")); /* prom:s3creu */
		assert_false(check(a, "Basic b3RoZXI6czNjcmV0")); /* other:s3cret: unknown user */
		assert_false(check(a, NULL));
		web_auth_free(a);
		webconfig_free(c);
	}
}

/* Wrong credentials are remembered apart from good ones: a replay fails at once, and however many
 * wrong ones come, the good ones stay known (no bcrypt for either). */
static void test_remembered(void **state)
{
	struct crypt_data cd = {0};
	char salt[CRYPT_GENSALT_OUTPUT_SIZE], yaml[256];
	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  prom: '%s'\n", crypt_r("s3cret", salt, &cd));
	struct web_config *c = parse_ok(yaml);
	struct web_auth *a = NULL;
	struct gerr err = {0};
	assert_int_equal(web_auth_new(c, &a, &err), 0);
	assert_true(check(a, "Basic cHJvbTpzM2NyZXQ="));  /* prom:s3cret: bcrypt, then remembered */
	assert_false(check(a, "Basic cHJvbTpzM2NyZXU=")); /* prom:s3creu: bcrypt, then remembered */
	assert_int_equal(web_auth_check(a, "Basic cHJvbTpzM2NyZXU=", NULL, on_done, NULL), WEB_AUTH_WRONG);
	for (int i = 0; i < 2 * WEB_AUTH_BAD; i++) {
		char cred[64], header[128];
		size_t n = (size_t)snprintf(cred, sizeof(cred), "prom:wrong-%d", i), k = 0;
		static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		k = (size_t)snprintf(header, sizeof(header), "Basic ");
		for (size_t j = 0; j < n; j += 3) {
			unsigned v = (unsigned char)cred[j] << 16 | (j + 1 < n ? (unsigned char)cred[j + 1] << 8 : 0) |
				     (j + 2 < n ? (unsigned char)cred[j + 2] : 0);
			header[k++] = b64[v >> 18 & 63];
			header[k++] = b64[v >> 12 & 63];
			header[k++] = j + 1 < n ? b64[v >> 6 & 63] : '=';
			header[k++] = j + 2 < n ? b64[v & 63] : '=';
		}
		header[k] = 0;
		assert_false(check(a, header));
	}
	assert_int_equal(web_auth_check(a, "Basic cHJvbTpzM2NyZXQ=", NULL, on_done, NULL), WEB_AUTH_OK);
	web_auth_free(a);
	webconfig_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_bcrypt_format),
	    cmocka_unit_test(test_basic_credentials),
	    cmocka_unit_test(test_bcrypt_minors),
	    cmocka_unit_test(test_remembered),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
