/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig and in-cluster configuration (docs/reference/kube-api.md §1): the fields client-go's
 * clientcmd reads (k8s.io/client-go v0.34.4 tools/clientcmd/api/v1/types.go), each one either used
 * or refused with the reason; unknown keys are ignored, as clientcmd's decoder does.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "kapi/config.h"
#include "parse/yaml.h"
#include "util/base64.h"
#include "util/fileio.h"
#include "util/macro.h"

#define KUBECONFIG_MAX (4u << 20) /* kubectl's own files are kilobytes; a CA bundle may be large */
#define TOKEN_MAX      (64u << 10)
#define NAMESPACE_MAX  256

void kapi_config_free(struct kapi_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ns);
	free(c->origin);
	free(c->ca_file);
	free(c->ca_data);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_data);
	if (c->key_data) /* secrets do not outlive us in freed memory */
		explicit_bzero(c->key_data, c->key_len);
	free(c->key_data);
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	free(c->token_file);
	free(c);
}

int kapi_read_token(const char *path, char **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0, start = 0;
	int r;

	r = read_file(path, TOKEN_MAX, &text, &len, err);
	if (r < 0)
		return gerr_prefix(err, "bearer token: ");
	while (len && isspace((unsigned char)text[len - 1]))
		text[--len] = '\0';
	while (start < len && isspace((unsigned char)text[start]))
		start++;
	if (start == len)
		return gerr_set(err, ENODATA, "bearer token file %s is empty", path);
	/* a token goes into an HTTP header: one line of printable characters */
	for (size_t i = start; i < len; i++)
		if (!isgraph((unsigned char)text[i]))
			return gerr_set(err, EINVAL, "bearer token file %s holds a character a token cannot have",
					path);
	if (start)
		memmove(text, text + start, len - start + 1);
	*ret = TAKE_PTR(text);
	return 0;
}

/* -- kubeconfig ------------------------------------------------------------------------------ */

enum field_kind {
	F_STR,    /* a string kept as is */
	F_FILE,   /* a file name, relative to the kubeconfig's dir */
	F_DATA,   /* base64 of bytes ([]byte in Go) */
	F_BOOL,   /* true/false */
	F_REFUSE, /* we do not do this: a non-empty value is an error naming why */
};

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;      /* where it goes in struct kapi_config */
	size_t len_off;  /* F_DATA: its length */
	const char *why; /* F_REFUSE: why and what to do instead */
};

#define AT(f) offsetof(struct kapi_config, f)
#define NO_EXEC                                                                                                   \
	"credential plugins are not run by gpulet: give the user a token (kubectl create token, tokenFile) or a " \
	"client certificate"

/* clusters[].cluster (types.go Cluster) */
static const struct field cluster_fields[] = {
    {"server", F_STR, AT(server), 0, NULL},
    {"certificate-authority", F_FILE, AT(ca_file), 0, NULL},
    {"certificate-authority-data", F_DATA, AT(ca_data), AT(ca_len), NULL},
    {"insecure-skip-tls-verify", F_BOOL, AT(insecure), 0, NULL},
    {"tls-server-name", F_REFUSE, 0, 0, "a TLS server name other than the server URL's host is not supported"},
    {"proxy-url", F_REFUSE, 0, 0, "proxies are not supported: reach the API server directly"},
};

/* users[].user (types.go AuthInfo) */
static const struct field user_fields[] = {
    {"client-certificate", F_FILE, AT(cert_file), 0, NULL},
    {"client-certificate-data", F_DATA, AT(cert_data), AT(cert_len), NULL},
    {"client-key", F_FILE, AT(key_file), 0, NULL},
    {"client-key-data", F_DATA, AT(key_data), AT(key_len), NULL},
    {"token", F_STR, AT(token), 0, NULL},
    {"tokenFile", F_FILE, AT(token_file), 0, NULL},
    {"exec", F_REFUSE, 0, 0, "exec " NO_EXEC},
    {"auth-provider", F_REFUSE, 0, 0, "auth-provider " NO_EXEC},
    {"username", F_REFUSE, 0, 0, "basic authentication is not supported (the API server dropped it in 1.19)"},
    {"password", F_REFUSE, 0, 0, "basic authentication is not supported (the API server dropped it in 1.19)"},
    {"as", F_REFUSE, 0, 0, "impersonation is not supported"},
    {"as-uid", F_REFUSE, 0, 0, "impersonation is not supported"},
    {"as-groups", F_REFUSE, 0, 0, "impersonation is not supported"},
    {"as-user-extra", F_REFUSE, 0, 0, "impersonation is not supported"},
};

/* Go's omitempty: null, "", false, [] and {} are absent. */
static bool is_empty(const json_t *v)
{
	return !v || json_is_null(v) || json_is_false(v) || (json_is_string(v) && !json_string_length(v)) ||
	       (json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v));
}

/* dir of the kubeconfig + name, unless name is absolute (clientcmd ResolvePaths) */
static char *resolve(const char *dir, const char *name)
{
	char *p = NULL;

	if (name[0] == '/')
		return strdup(name);
	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

static int set_field(struct kapi_config *c, const struct field *f, const json_t *v, const char *dir, const char *where,
		     struct gerr *err)
{
	char **s = (char **)((char *)c + f->off);
	uint8_t *data = NULL;
	size_t len = 0;
	int r;

	if (is_empty(v))
		return 0;
	switch (f->kind) {
	case F_REFUSE:
		return gerr_set(err, EINVAL, "%s.%s: %s", where, f->key, f->why);
	case F_BOOL:
		if (!json_is_boolean(v))
			return gerr_set(err, EINVAL, "%s.%s: expected true or false", where, f->key);
		*(bool *)((char *)c + f->off) = json_is_true(v);
		return 0;
	default:
		break;
	}
	if (!json_is_string(v))
		return gerr_set(err, EINVAL, "%s.%s: expected a string", where, f->key);
	if (f->kind == F_DATA) {
		r = base64_decode(json_string_value(v), json_string_length(v), &data, &len);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return gerr_set(err, EINVAL, "%s.%s: not base64", where, f->key);
		*(uint8_t **)s = data;
		*(size_t *)((char *)c + f->len_off) = len;
		return 0;
	}
	if (strlen(json_string_value(v)) != json_string_length(v))
		return gerr_set(err, EINVAL, "%s.%s: holds a NUL character", where, f->key);
	*s = f->kind == F_FILE ? resolve(dir, json_string_value(v)) : strdup(json_string_value(v));
	return *s ? 0 : -ENOMEM;
}

static int set_fields(struct kapi_config *c, const struct field *fields, size_t n, const json_t *obj, const char *dir,
		      const char *where, struct gerr *err)
{
	if (!json_is_object(obj))
		return gerr_set(err, EINVAL, "%s: expected a mapping", where);
	for (size_t i = 0; i < n; i++) {
		int r = set_field(c, &fields[i], json_object_get(obj, fields[i].key), dir, where, err);

		if (r < 0)
			return r;
	}
	return 0;
}

/* The entry `name` of a named list (contexts, clusters, users): its `field` mapping. */
static int find_named(const json_t *cfg, const char *list, const char *name, const char *field, const char *path,
		      const json_t **ret, struct gerr *err)
{
	const json_t *arr = json_object_get(cfg, list), *e;
	size_t i;

	if (arr && !json_is_array(arr) && !json_is_null(arr))
		return gerr_set(err, EINVAL, "%s: %s: expected a list", path, list);
	json_array_foreach (arr, i, e) {
		const json_t *n = json_object_get(e, "name");

		if (json_is_string(n) && streq(json_string_value(n), name)) {
			const json_t *v = json_object_get(e, field);

			if (!json_is_object(v))
				return gerr_set(err, EINVAL, "%s: %s[%zu] (%s): no %s mapping", path, list, i, name,
						field);
			*ret = v;
			return 0;
		}
	}
	return gerr_set(err, ENOENT, "%s: no %s named \"%s\"", path, list, name);
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : dflt;
}

static bool has_pem(const uint8_t *data, size_t len, const char *label)
{
	return data && memmem(data, len, label, strlen(label));
}

/* What client-go's clientcmd validation and transport refuse, and what we refuse on top. */
static int check_config(const struct kapi_config *c, const char *where, struct gerr *err)
{
	const char *s = c->server;

	if (!s || !*s)
		return gerr_set(err, EINVAL, "%s: the cluster has no server", where);
	if (strncmp(s, "https://", 8))
		return gerr_set(err, EINVAL,
				"%s: server %s is not https://: gpulet talks to the API server over verified TLS only",
				where, s);
	if (!s[8] || s[8] == '/' || strpbrk(s, " \t\r\n?#@"))
		return gerr_set(err, EINVAL, "%s: server %s is not a URL https://HOST[:PORT][/PATH]", where, s);
	if (c->ca_file && c->ca_data)
		return gerr_set(err, EINVAL, "%s: certificate-authority and certificate-authority-data are both given",
				where);
	if (c->insecure && (c->ca_file || c->ca_data))
		return gerr_set(err, EINVAL,
				"%s: a certificate authority with insecure-skip-tls-verify is contradictory", where);
	if (c->cert_file && c->cert_data)
		return gerr_set(err, EINVAL, "%s: client-certificate and client-certificate-data are both given",
				where);
	if (c->key_file && c->key_data)
		return gerr_set(err, EINVAL, "%s: client-key and client-key-data are both given", where);
	if (!(c->cert_file || c->cert_data) != !(c->key_file || c->key_data))
		return gerr_set(err, EINVAL, "%s: a client certificate needs its key and a key its certificate", where);
	if (c->ca_data && !has_pem(c->ca_data, c->ca_len, "-----BEGIN CERTIFICATE-----"))
		return gerr_set(err, EINVAL, "%s: certificate-authority-data holds no PEM certificate", where);
	if (c->cert_data && !has_pem(c->cert_data, c->cert_len, "-----BEGIN CERTIFICATE-----"))
		return gerr_set(err, EINVAL, "%s: client-certificate-data holds no PEM certificate", where);
	if (c->key_data && !has_pem(c->key_data, c->key_len, "PRIVATE KEY-----"))
		return gerr_set(err, EINVAL, "%s: client-key-data holds no PEM private key", where);
	/* files are read by TLS at each connection; unreadable ones are named now rather than later */
	const char *files[] = {c->ca_file, c->cert_file, c->key_file, c->token_file};
	for (size_t i = 0; i < ELEMENTSOF(files); i++)
		if (files[i] && access(files[i], R_OK) < 0)
			return gerr_set(err, errno, "%s: cannot read %s: %m", where, files[i]);
	return 0;
}

/* The `field` mapping of the entry `name` of `list` (clusters, users), read into c by fields[]. */
static int read_part(const json_t *cfg, const char *list, const char *field, const char *name,
		     const struct field *fields, size_t n, const char *path, const char *dir, struct kapi_config *c,
		     struct gerr *err)
{
	const json_t *obj;
	char where[512];
	int r = find_named(cfg, list, name, field, path, &obj, err);

	if (r < 0)
		return r;
	snprintf(where, sizeof(where), "%s: %s \"%s\"", path, field, name);
	return set_fields(c, fields, n, obj, dir, where, err);
}

/* The context's cluster and user into c, then the checks. where: the message prefix, rewritten per part. */
static int from_kubeconfig(const json_t *cfg, const char *path, const char *dir, const char *context,
			   struct kapi_config *c, struct gerr *err)
{
	const json_t *ctx;
	const char *cname, *uname;
	char where[512];
	int r;

	if (!streq(str_or(cfg, "kind", "Config"), "Config"))
		return gerr_set(err, EINVAL, "%s: kind is %s, not Config", path, str_or(cfg, "kind", ""));
	if (!context)
		context = str_or(cfg, "current-context", NULL);
	if (!context)
		return gerr_set(err, EINVAL, "%s: no current-context: set one (kubectl config use-context)", path);
	r = find_named(cfg, "contexts", context, "context", path, &ctx, err);
	if (r < 0)
		return r;
	cname = str_or(ctx, "cluster", NULL);
	uname = str_or(ctx, "user", NULL);
	if (!cname)
		return gerr_set(err, EINVAL, "%s: context \"%s\" names no cluster", path, context);
	r = read_part(cfg, "clusters", "cluster", cname, cluster_fields, ELEMENTSOF(cluster_fields), path, dir, c, err);
	/* a context without a user talks anonymously */
	if (r >= 0 && uname)
		r = read_part(cfg, "users", "user", uname, user_fields, ELEMENTSOF(user_fields), path, dir, c, err);
	if (r < 0)
		return r;
	snprintf(where, sizeof(where), "%s: context \"%s\"", path, context);
	r = check_config(c, where, err);
	if (r < 0)
		return r;
	/* tokenFile wins over token once read (types.go AuthInfo.TokenFile); read it now to fail early */
	if (c->token_file) {
		free(c->token);
		c->token = NULL;
		r = kapi_read_token(c->token_file, &c->token, err);
		if (r < 0)
			return r;
	}
	for (size_t n = strlen(c->server); n > 8 && c->server[n - 1] == '/'; n--)
		c->server[n - 1] = '\0';
	c->ns = strdup(str_or(ctx, "namespace", "default"));
	if (!c->ns || asprintf(&c->origin, "kubeconfig %s, context %s", path, context) < 0) {
		c->origin = NULL;
		return -ENOMEM;
	}
	if (c->insecure)
		snprintf(c->warning, sizeof(c->warning),
			 "%s: insecure-skip-tls-verify is set: the API server's certificate is not checked, so anyone "
			 "on the path can read and change what gpulet sends and receives, its token included",
			 where);
	return 0;
}

int kapi_config_parse(const char *text, size_t len, const char *path, const char *context, struct kapi_config **ret,
		      struct gerr *err)
{
	_cleanup_(kapi_config_freep) struct kapi_config *c = calloc(1, sizeof(*c));
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	json_t *cfg = NULL;
	int r;

	if (!c || !dir)
		return -ENOMEM;
	r = yaml_to_json(text, len, path, 0, &cfg, NULL, err);
	if (r < 0)
		return r;
	r = json_is_object(cfg) ? from_kubeconfig(cfg, path, dir, context, c, err)
				: gerr_set(err, EINVAL, "%s: not a kubeconfig (expected a mapping)", path);
	json_decref(cfg);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

/* -- in-cluster ------------------------------------------------------------------------------ */

/* "https://" + host + ":" + port, an IPv6 address in brackets (Go's net.JoinHostPort) */
static int join_host_port(const char *host, const char *port, char **ret)
{
	bool v6 = strchr(host, ':') != NULL;

	return asprintf(ret, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port) < 0 ? -ENOMEM : 0;
}

static bool valid_port(const char *p)
{
	char *end;
	unsigned long v;

	if (!*p || strspn(p, "0123456789") != strlen(p))
		return false;
	v = strtoul(p, &end, 10);
	return v > 0 && v < 65536;
}

int kapi_config_in_cluster(const char *sa_dir, const struct kapi_env *env, struct kapi_config **ret, struct gerr *err)
{
	_cleanup_(kapi_config_freep) struct kapi_config *c = calloc(1, sizeof(*c));
	const char *host = env ? env->service_host : NULL, *port = env ? env->service_port : NULL;
	const char *pod_ns = env ? env->pod_namespace : NULL;
	_cleanup_free_ char *ns_file = NULL, *ns = NULL;
	int r;

	if (!c)
		return -ENOMEM;
	if (!sa_dir)
		sa_dir = KAPI_SA_DIR;
	if (!host || !*host || !port || !*port)
		return gerr_set(err, ENOENT,
				"not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset");
	if (strpbrk(host, "/[]@?# \t\r\n") || !valid_port(port))
		return gerr_set(err, EINVAL,
				"KUBERNETES_SERVICE_HOST=%s KUBERNETES_SERVICE_PORT=%s is not a host and port", host,
				port);
	if (join_host_port(host, port, &c->server) < 0)
		return -ENOMEM;
	if (asprintf(&c->token_file, "%s/token", sa_dir) < 0 || asprintf(&c->ca_file, "%s/ca.crt", sa_dir) < 0 ||
	    asprintf(&ns_file, "%s/namespace", sa_dir) < 0 || asprintf(&c->origin, "in-cluster (%s)", sa_dir) < 0) {
		c->token_file = c->ca_file = c->origin = ns_file = NULL; /* asprintf leaves them undefined */
		return -ENOMEM;
	}
	/* client-go logs a CA it cannot read and goes on with the system's CAs: we refuse instead */
	if (access(c->ca_file, R_OK) < 0)
		return gerr_set(err, errno,
				"in-cluster: cannot read the cluster CA %s: %m (is the service account token mounted? "
				"automountServiceAccountToken must not be false)",
				c->ca_file);
	r = kapi_read_token(c->token_file, &c->token, err);
	if (r < 0)
		return gerr_prefix(err, "in-cluster: ");
	/* clientcmd's in-cluster namespace: POD_NAMESPACE, else the namespace file, else "default" */
	if (pod_ns && *pod_ns)
		ns = strdup(pod_ns);
	else if (read_file(ns_file, NAMESPACE_MAX, &ns, NULL, NULL) == 0)
		ns[strcspn(ns, " \t\r\n")] = '\0';
	c->ns = strdup(ns && *ns ? ns : "default");
	if (!c->ns)
		return -ENOMEM;
	*ret = TAKE_PTR(c);
	return 0;
}

/* -- which one ------------------------------------------------------------------------------- */

int kapi_env_copy(struct kapi_env *dst, const struct kapi_env *src)
{
	const char **d[] = {&dst->service_host, &dst->service_port, &dst->pod_namespace};
	const char *const s[] = {src ? src->service_host : NULL, src ? src->service_port : NULL,
				 src ? src->pod_namespace : NULL};

	*dst = (struct kapi_env){0};
	for (size_t i = 0; i < ELEMENTSOF(d); i++)
		if (s[i] && !(*d[i] = strdup(s[i]))) {
			kapi_env_clear(dst);
			return -ENOMEM;
		}
	return 0;
}

void kapi_env_clear(struct kapi_env *e)
{
	free((char *)e->service_host); /* a copy's: kapi_env_copy() made them */
	free((char *)e->service_port);
	free((char *)e->pod_namespace);
	*e = (struct kapi_env){0};
}

bool kapi_configured(const char *kubeconfig, const struct kapi_env *env)
{
	return (kubeconfig && *kubeconfig) || (env && env->service_host && *env->service_host);
}

int kapi_config_load(const char *kubeconfig, const char *context, const char *sa_dir, const struct kapi_env *env,
		     struct kapi_config **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (kubeconfig && !*kubeconfig)
		kubeconfig = NULL;
	/* KUBECONFIG's list form (a:b), which kubectl merges: one file is read here */
	if (kubeconfig && strchr(kubeconfig, ':') && access(kubeconfig, F_OK) < 0)
		return gerr_set(err, EINVAL,
				"kubeconfig %s lists several files; gpulet reads one: pass --kubeconfig FILE "
				"(kubectl config view --flatten merges them into one)",
				kubeconfig);
	if (!kubeconfig) {
		r = kapi_config_in_cluster(sa_dir, env, ret, err);
		if (r == -ENOENT)
			return gerr_set(err, ENOENT,
					"no Kubernetes API server to talk to: not in a pod (KUBERNETES_SERVICE_HOST is "
					"unset) and neither --kubeconfig nor KUBECONFIG is given");
		return r;
	}
	r = read_file(kubeconfig, KUBECONFIG_MAX, &text, &len, err);
	if (r < 0)
		return gerr_prefix(err, "kubeconfig: ");
	return kapi_config_parse(text, len, kubeconfig, context, ret, err);
}
