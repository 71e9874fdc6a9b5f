/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kapi's configuration: kubeconfig files (what clientcmd reads, what we refuse), the in-cluster service
 * account, which one applies; and the one base64 decoder their *-data fields go through.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kapi/config.h"
#include "util/base64.h"

#define PEM_CERT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define PEM_KEY  "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n"

static char dir[64];

static char *path_in(const char *name)
{
	static char p[128];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void write_in(const char *name, const char *text)
{
	FILE *f = fopen(path_in(name), "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *b64(const char *s)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s), o = 0;
	char *out = malloc(n / 3 * 4 + 8);

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)s[i] << 16 | (i + 1 < n ? (unsigned char)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? (unsigned char)s[i + 2] : 0);
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

static int setup(void **state)
{
	strcpy(dir, "/tmp/kapi-config-XXXXXX");
	assert_non_null(mkdtemp(dir));
	write_in("ca.crt", PEM_CERT);
	write_in("client.crt", PEM_CERT);
	write_in("client.key", PEM_KEY);
	write_in("token", "  tok-from-file\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* A kubeconfig with one context "c" -> cluster "k" and user "u"; cluster and user bodies given. */
static int parse(const char *cluster, const char *user, const char *context, struct kapi_config **ret, struct gerr *err)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		 "contexts:\n- name: other\n  context: {cluster: nope, user: nope}\n"
		 "- name: c\n  context: {cluster: k, user: u, namespace: gpu-ops}\n"
		 "clusters:\n- name: k\n  cluster:\n%s\n"
		 "users:\n- name: u\n  user:\n%s\n",
		 cluster, user);
	return kapi_config_parse(text, strlen(text), path_in("kubeconfig"), context, ret, err);
}

static void test_kubeconfig_token(void **state)
{
	_cleanup_(kapi_config_freep) struct kapi_config *c = NULL;
	_cleanup_free_ char *ca = b64(PEM_CERT);
	char cluster[1024];

	snprintf(cluster, sizeof(cluster), "    server: https://10.0.0.1:6443//\n    certificate-authority-data: %s",
		 ca);
	assert_int_equal(parse(cluster, "    token: abc.def", NULL, &c, NULL), 0);
	assert_string_equal(c->server, "https://10.0.0.1:6443");
	assert_string_equal(c->ns, "gpu-ops");
	assert_string_equal(c->token, "abc.def");
	assert_null(c->token_file);
	assert_int_equal(c->ca_len, strlen(PEM_CERT));
	assert_memory_equal(c->ca_data, PEM_CERT, c->ca_len);
	assert_null(c->ca_file);
	assert_false(c->insecure);
	assert_string_equal(c->warning, "");
	assert_non_null(strstr(c->origin, "context c"));
}

/* relative file names are relative to the kubeconfig's directory (clientcmd ResolvePaths) */
static void test_kubeconfig_files(void **state)
{
	_cleanup_(kapi_config_freep) struct kapi_config *c = NULL;
	char want[128];

	assert_int_equal(parse("    server: https://[fd00::1]:443/prefix/\n    certificate-authority: ca.crt",
			       "    client-certificate: client.crt\n    client-key: client.key\n"
			       "    token: ignored\n    tokenFile: token",
			       NULL, &c, NULL),
			 0);
	assert_string_equal(c->server, "https://[fd00::1]:443/prefix");
	snprintf(want, sizeof(want), "%s/ca.crt", dir);
	assert_string_equal(c->ca_file, want);
	snprintf(want, sizeof(want), "%s/client.key", dir);
	assert_string_equal(c->key_file, want);
	/* tokenFile wins over token, read now, white space trimmed */
	assert_string_equal(c->token, "tok-from-file");
}

static void test_kubeconfig_context(void **state)
{
	struct kapi_config *c = NULL;
	struct gerr err = {0};

	assert_int_equal(parse("    server: https://h", "    token: t", "other", &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no clusters named \"nope\""));
	assert_int_equal(parse("    server: https://h", "    token: t", "missing", &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no contexts named \"missing\""));
	assert_null(c);
	assert_int_equal(kapi_config_parse("kind: Config\n", 13, "kc", NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no current-context"));
	assert_int_equal(kapi_config_parse("kind: Pod\n", 10, "kc", NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not Config"));
	assert_int_equal(kapi_config_parse("[1, 2]\n", 7, "kc", NULL, &c, &err), -EINVAL);
	assert_int_equal(kapi_config_parse("a: [\n", 5, "kc", NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "kc:"));
}

/* What we do not do is refused with the reason, never ignored; empty values are absent (omitempty). */
static void test_kubeconfig_refused(void **state)
{
	static const struct {
		const char *cluster, *user, *words;
	} cases[] = {
	    {"    server: https://h", "    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}",
	     "user \"u\".exec: exec credential plugins"},
	    {"    server: https://h", "    auth-provider: {name: gcp}", "auth-provider credential plugins"},
	    {"    server: https://h", "    username: admin\n    password: x", "basic authentication"},
	    {"    server: https://h", "    as: someone", "impersonation"},
	    {"    server: https://h", "    as-groups: [a]", "impersonation"},
	    {"    server: https://h\n    tls-server-name: other", "    token: t", "TLS server name"},
	    {"    server: https://h\n    proxy-url: http://proxy:3128", "    token: t", "proxies"},
	    {"    server: http://h:8080", "    token: t", "not https://"},
	    {"    server: https://", "    token: t", "not a URL"},
	    {"    server: https://user@h", "    token: t", "not a URL"},
	    {"    certificate-authority: ca.crt", "    token: t", "has no server"},
	    {"    server: https://h\n    certificate-authority: ca.crt\n    insecure-skip-tls-verify: true",
	     "    token: t", "contradictory"},
	    {"    server: https://h\n    certificate-authority: ca.crt\n    certificate-authority-data: eA==",
	     "    token: t", "both given"},
	    {"    server: https://h\n    certificate-authority-data: eA==", "    token: t", "no PEM certificate"},
	    {"    server: https://h\n    certificate-authority-data: '!!'", "    token: t", "not base64"},
	    {"    server: https://h\n    certificate-authority: missing.crt", "    token: t", "cannot read"},
	    {"    server: https://h", "    client-certificate: client.crt", "needs its key"},
	    {"    server: https://h", "    client-key: client.key", "needs its key"},
	    {"    server: https://h", "    tokenFile: nope", "cannot read"},
	    {"    server: https://h\n    insecure-skip-tls-verify: yes-please", "    token: t", "true or false"},
	    {"    server: [1]", "    token: t", "expected a string"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kapi_config *c = NULL;
		struct gerr err = {0};

		assert_int_not_equal(parse(cases[i].cluster, cases[i].user, NULL, &c, &err), 0);
		assert_null(c);
		if (!strstr(err.msg, cases[i].words))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, cases[i].words);
	}
}

static void test_kubeconfig_empty_is_absent(void **state)
{
	_cleanup_(kapi_config_freep) struct kapi_config *c = NULL;

	assert_int_equal(
	    parse("    server: https://h\n    proxy-url: \"\"\n    insecure-skip-tls-verify: false",
		  "    exec: null\n    username: \"\"\n    as-groups: []\n    token: t\n    future-field: 1", NULL, &c,
		  NULL),
	    0);
	assert_string_equal(c->token, "t");
}

static void test_kubeconfig_insecure_warns(void **state)
{
	_cleanup_(kapi_config_freep) struct kapi_config *c = NULL;
	_cleanup_free_ char *cert = b64(PEM_CERT), *key = b64(PEM_KEY);
	char user[1024];

	snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s", cert, key);
	assert_int_equal(parse("    server: https://h\n    insecure-skip-tls-verify: true", user, NULL, &c, NULL), 0);
	assert_true(c->insecure);
	assert_non_null(strstr(c->warning, "insecure-skip-tls-verify"));
	assert_int_equal(c->key_len, strlen(PEM_KEY));
	assert_memory_equal(c->cert_data, PEM_CERT, c->cert_len);
}

static void test_in_cluster(void **state)
{
	struct kapi_config *c = NULL;
	struct gerr err = {0};
	struct kapi_env env = {0}; /* what KAPI_ENV_ROWS() read from the environment */

	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
	env.service_host = "10.96.0.1";
	env.service_port = "443";
	/* no ca.crt: refused (client-go would fall back to the system's CAs) */
	assert_int_equal(kapi_config_in_cluster("/nonexistent", &env, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/ca.crt"));
	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), 0);
	assert_string_equal(c->server, "https://10.96.0.1:443");
	assert_string_equal(c->token, "tok-from-file");
	assert_string_equal(c->token_file, path_in("token"));
	assert_string_equal(c->ca_file, path_in("ca.crt"));
	assert_string_equal(c->ns, "default");
	kapi_config_free(c);

	write_in("namespace", "gpu-operator\n");
	env.service_host = "fd00:10:96::1";
	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), 0);
	assert_string_equal(c->server, "https://[fd00:10:96::1]:443");
	assert_string_equal(c->ns, "gpu-operator");
	kapi_config_free(c);

	env.pod_namespace = "from-env";
	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), 0);
	assert_string_equal(c->ns, "from-env");
	kapi_config_free(c);
	env.pod_namespace = NULL;

	env.service_port = "https";
	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), -EINVAL);
	env.service_port = "443";
	write_in("token", "\n\n");
	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "empty"));
	write_in("token", "a b");
	assert_int_equal(kapi_config_in_cluster(dir, &env, &c, &err), -EINVAL);
	write_in("token", "  tok-from-file\n");
}

/* --kubeconfig (or $KUBECONFIG through its row: one file), else in-cluster, else a message that says both */
static void test_which_config(void **state)
{
	_cleanup_free_ char *ca = b64(PEM_CERT);
	struct kapi_config *c = NULL;
	struct gerr err = {0};
	struct kapi_env env = {0};
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\"}}],"
		 "\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":\"https://from-file\","
		 "\"certificate-authority-data\":\"%s\"}}]}",
		 ca);
	write_in("kc.json", text);
	assert_int_equal(kapi_config_load(NULL, NULL, dir, NULL, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "--kubeconfig"));
	assert_false(kapi_configured(NULL, &env));
	assert_false(kapi_configured("", NULL));
	env.service_host = "10.96.0.1";
	env.service_port = "443";
	assert_true(kapi_configured(NULL, &env));
	assert_int_equal(kapi_config_load(NULL, NULL, dir, &env, &c, &err), 0);
	assert_string_equal(c->server, "https://10.96.0.1:443");
	kapi_config_free(c);
	/* "" is no kubeconfig (an empty KUBECONFIG): in-cluster */
	assert_int_equal(kapi_config_load("", NULL, dir, &env, &c, &err), 0);
	assert_string_equal(c->server, "https://10.96.0.1:443");
	kapi_config_free(c);
	/* a kubeconfig wins over the pod's account */
	assert_true(kapi_configured(path_in("kc.json"), NULL));
	assert_int_equal(kapi_config_load(path_in("kc.json"), NULL, dir, &env, &c, &err), 0);
	assert_string_equal(c->server, "https://from-file");
	assert_null(c->token); /* a context without a user: anonymous */
	kapi_config_free(c);
	/* KUBECONFIG's list form is refused, naming the way out */
	assert_int_equal(kapi_config_load("/a:/b", NULL, dir, &env, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "several files"));
	assert_int_equal(kapi_config_load(path_in("missing"), NULL, dir, &env, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "kubeconfig: "));
}

/* Go's base64.StdEncoding: padding required, \r and \n skipped */
static void test_base64(void **state)
{
	static const struct {
		const char *in, *out;
	} good[] = {{"", ""}, {"YQ==", "a"}, {"YWI=", "ab"}, {"YWJj", "abc"}, {"YW\nJj\r\nZA==\n", "abcd"}};
	static const char *const bad[] = {"YQ", "YQ=", "Y===", "=YQ=", "YQ==YQ==", "YW!j", "YQ=a", "YWJj="};
	uint8_t *out;
	size_t len;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(base64_decode(good[i].in, strlen(good[i].in), &out, &len), 0);
		assert_int_equal(len, strlen(good[i].out));
		assert_string_equal((char *)out, good[i].out);
		free(out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (base64_decode(bad[i], strlen(bad[i]), &out, &len) != -EINVAL)
			fail_msg("\"%s\" was accepted", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kubeconfig_token),
	    cmocka_unit_test(test_kubeconfig_files),
	    cmocka_unit_test(test_kubeconfig_context),
	    cmocka_unit_test(test_kubeconfig_refused),
	    cmocka_unit_test(test_kubeconfig_empty_is_absent),
	    cmocka_unit_test(test_kubeconfig_insecure_warns),
	    cmocka_unit_test(test_in_cluster),
	    cmocka_unit_test(test_which_config),
	    cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
