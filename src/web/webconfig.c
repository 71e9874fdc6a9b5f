/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter-toolkit web configuration file, read as upstream's yaml.UnmarshalStrict reads it
 * into its Config struct: unknown keys and duplicate keys are errors, null leaves a default, and
 * what gpulet cannot serve exactly is refused with what to do instead (docs/reference/dcgm-exporter.md
 * "Web configuration": the keys, upstream's checks, and each difference).
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web/webconfig.h"
#include "parse/yaml.h"
#include "util/base64.h"
#include "util/fileio.h"
#include "util/macro.h"

struct wctx {
	const char *path;
	struct yaml_where *w;
	struct web_config *c;
	struct gerr *err;
};

/* "PATH:LINE:COL: section.key: what" at key of obj (the file alone when the position is unknown) */
_printf_(5, 6) static int bad(struct wctx *x, const json_t *obj, const char *section, const char *key, const char *fmt,
			      ...)
{
	char what[GERR_MAX];
	struct yaml_pos p = {0};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (obj && yaml_where_key(x->w, obj, key, &p) == 0)
		return gerr_set(x->err, EINVAL, "%s:%u:%u: %s%s%s: %s", x->path, p.line, p.col, section,
				*section ? "." : "", key, what);
	return gerr_set(x->err, EINVAL, "%s: %s%s%s: %s", x->path, section, *section ? "." : "", key, what);
}

/* A string value: null and "" leave it unset (Go's zero value); numbers and booleans must be quoted. */
static int want_string(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v,
		       const char **ret)
{
	if (json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return bad(x, obj, sec, key, "expected a string; quote the value");
	*ret = json_string_length(v) ? json_string_value(v) : NULL;
	return 0;
}

static int set_string(struct wctx *x, const char *s, char **field)
{
	free(*field);
	*field = NULL;
	if (s && !(*field = strdup(s)))
		return gerr_set(x->err, ENOMEM, "out of memory");
	return 0;
}

/* upstream's JoinDir: a relative file name is relative to the directory of the config file */
static int set_path(struct wctx *x, const char *s, char **field)
{
	const char *slash = strrchr(x->path, '/');
	free(*field);
	*field = NULL;
	if (!s)
		return 0;
	int n = s[0] == '/' || !slash ? asprintf(field, "%s", s)
				      : asprintf(field, "%.*s/%s", (int)(slash - x->path), x->path, s);
	if (n < 0) {
		*field = NULL;
		return gerr_set(x->err, ENOMEM, "out of memory");
	}
	return 0;
}

/* one row of a name table: text in the file -> value */
struct name_val {
	const char *name;
	int val;
};

static int want_name(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v,
		     const struct name_val *tab, size_t n, int *ret)
{
	const char *s = NULL;
	int r = want_string(x, obj, sec, key, v, &s);
	if (r < 0 || !s)
		return r;
	for (size_t i = 0; i < n; i++)
		if (streq(tab[i].name, s)) {
			*ret = tab[i].val;
			return 0;
		}
	char list[256] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", tab[i].name);
	return bad(x, obj, sec, key, "unknown value \"%s\"; use one of %s", s, list);
}

/* exporter-toolkit web/tls_config.go ConfigToTLSConfig: the ClientAuth switch */
static const struct name_val client_auths[] = {
    {"NoClientCert", WEB_CLIENT_NONE},
    {"RequestClientCert", WEB_CLIENT_REQUEST},
    {"RequireAnyClientCert", WEB_CLIENT_REQUIRE_ANY},
    {"RequireClientCert", WEB_CLIENT_REQUIRE_ANY}, /* upstream keeps the old name */
    {"VerifyClientCertIfGiven", WEB_CLIENT_VERIFY_IF_GIVEN},
    {"RequireAndVerifyClientCert", WEB_CLIENT_REQUIRE_AND_VERIFY},
};
/* tls_config.go tlsVersions */
static const struct name_val tls_versions[] = {
    {"TLS10", WEB_TLS10},
    {"TLS11", WEB_TLS11},
    {"TLS12", WEB_TLS12},
    {"TLS13", WEB_TLS13},
};
/* tls_config.go curves */
static const struct name_val curve_names[] = {
    {"CurveP256", WEB_CURVE_P256},
    {"CurveP384", WEB_CURVE_P384},
    {"CurveP521", WEB_CURVE_P521},
    {"X25519", WEB_CURVE_X25519},
};

typedef int (*key_fn)(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off);

struct key_row {
	const char *key;
	key_fn fn;
	size_t off;      /* the field of struct web_config the row fills */
	const char *why; /* refuse: why gpulet cannot honour it and what to do */
};

#define FIELD(f) offsetof(struct web_config, f)
#define AT(T)    ((T *)((char *)x->c + off))

static int k_string(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	const char *s = NULL;
	int r = want_string(x, obj, sec, key, v, &s);
	return r < 0 ? r : set_string(x, s, AT(char *));
}

static int k_path(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	const char *s = NULL;
	int r = want_string(x, obj, sec, key, v, &s);
	return r < 0 ? r : set_path(x, s, AT(char *));
}

static int k_client_auth(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v,
			 size_t off)
{
	const char *s = NULL;
	int r = want_string(x, obj, sec, key, v, &s);
	if (r < 0)
		return r;
	x->c->tls |= s != NULL; /* IsEnabled(): client_auth_type alone turns TLS on */
	return want_name(x, obj, sec, key, v, client_auths, ELEMENTSOF(client_auths), (int *)AT(int));
}

static int k_version(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	return want_name(x, obj, sec, key, v, tls_versions, ELEMENTSOF(tls_versions), (int *)AT(int));
}

static int k_bool(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	if (!json_is_null(v) && !json_is_boolean(v))
		return bad(x, obj, sec, key, "expected true or false");
	return 0;
}

/* http2: gpulet serves HTTP/1.1 only; `false` is exactly that, `true` cannot be honoured */
static int k_http2(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	int r = k_bool(x, obj, sec, key, v, off);
	if (r == 0 && json_is_true(v))
		return bad(x, obj, sec, key,
			   "gpulet serves HTTP/1.1 only (libmicrohttpd has no HTTP/2); set http2: false or remove it");
	return r;
}

/* A YAML sequence of at most max items: 1, or 0 for null (none, the key is as absent); <0 with err. */
static int want_list(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t max)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return bad(x, obj, sec, key, "expected a list");
	if (json_array_size(v) > max)
		return bad(x, obj, sec, key, "more than %zu entries", max);
	return 1;
}

static int k_curves(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	int r = want_list(x, obj, sec, key, v, WEB_MAX_CURVES);
	size_t i;
	json_t *e;
	if (r <= 0)
		return r;
	x->c->n_curves = 0;
	json_array_foreach (v, i, e) {
		int cv = -1;
		if (json_is_null(e) ||
		    (r = want_name(x, obj, sec, key, e, curve_names, ELEMENTSOF(curve_names), &cv)) < 0)
			return r < 0 ? r : bad(x, obj, sec, key, "item %zu is empty", i);
		for (size_t j = 0; j < x->c->n_curves; j++)
			if (x->c->curves[j] == (enum web_curve)cv)
				return bad(x, obj, sec, key, "\"%s\" is listed twice", json_string_value(e));
		x->c->curves[x->c->n_curves++] = cv;
	}
	return 0;
}

static int k_sans(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	int r = want_list(x, obj, sec, key, v, WEB_MAX_SANS);
	size_t i;
	json_t *e;
	if (r <= 0)
		return r;
	x->c->sans_set = true;
	if (!(x->c->sans = calloc(json_array_size(v) + 1, sizeof(char *))))
		return gerr_set(x->err, ENOMEM, "out of memory");
	json_array_foreach (v, i, e) {
		if (!json_is_string(e))
			return bad(x, obj, sec, key, "item %zu: expected a string; quote it", i);
		if (!(x->c->sans[x->c->n_sans++] = strdup(json_string_value(e))))
			return gerr_set(x->err, ENOMEM, "out of memory");
	}
	return 0;
}

/* exporter-toolkit web/handler.go extraHTTPHeaders: the only headers, and for two of them the only values */
static const struct {
	const char *name;
	const char *values[3]; /* NULL-terminated; none: any value */
} allowed_headers[WEB_MAX_HEADERS] = {
    {"Strict-Transport-Security", {NULL}},
    {"X-Content-Type-Options", {"nosniff", NULL}},
    {"X-Frame-Options", {"deny", "sameorigin", NULL}},
    {"X-XSS-Protection", {NULL}},
    {"Content-Security-Policy", {NULL}},
};

static int header_row(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(allowed_headers); i++)
		if (streq(allowed_headers[i].name, name))
			return (int)i;
	return -1;
}

static int k_header(struct wctx *x, const json_t *obj, const char *name, const json_t *v)
{
	int i = header_row(name);
	const char *s = NULL;
	if (i < 0)
		return bad(x, obj, "http_server_config.headers", name,
			   "this header cannot be configured; allowed: Strict-Transport-Security, "
			   "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, Content-Security-Policy");
	int r = want_string(x, obj, "http_server_config.headers", name, v, &s);
	if (r < 0)
		return r;
	s = s ? s : "";
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return bad(x, obj, "http_server_config.headers", name, "control character in the value");
	const char *const *ok = allowed_headers[i].values;
	bool good = !ok[0];
	for (; *ok; ok++)
		good |= streq(*ok, s);
	if (!good)
		return bad(x, obj, "http_server_config.headers", name, "invalid value \"%s\"; use one of: %s%s%s", s,
			   allowed_headers[i].values[0], allowed_headers[i].values[1] ? ", " : "",
			   allowed_headers[i].values[1] ? allowed_headers[i].values[1] : "");
	struct web_header *h = &x->c->headers[x->c->n_headers++];
	h->name = allowed_headers[i].name;
	if (!(h->value = strdup(s)))
		return gerr_set(x->err, ENOMEM, "out of memory");
	return 0;
}

static int k_headers(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	const char *name;
	json_t *hv;
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return bad(x, obj, sec, key, "expected a mapping of header: value");
	json_object_foreach ((json_t *)v, name, hv) {
		int r = k_header(x, v, name, hv);
		if (r < 0)
			return r;
	}
	return 0;
}

static int k_refuse(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	return 0; /* rows with .why are refused by walk() when they hold a value */
}

static int walk(struct wctx *x, const json_t *obj, const char *sec, const struct key_row *rows, size_t n);

static const struct key_row tls_rows[] = {
    {"cert", k_string, FIELD(cert), NULL},
    {"key", k_string, FIELD(key), NULL},
    {"client_ca", k_string, FIELD(client_ca), NULL},
    {"cert_file", k_path, FIELD(cert_file), NULL},
    {"key_file", k_path, FIELD(key_file), NULL},
    {"client_ca_file", k_path, FIELD(client_ca_file), NULL},
    {"client_auth_type", k_client_auth, FIELD(client_auth), NULL},
    {"cipher_suites", k_refuse, 0,
     "GnuTLS cannot limit TLS 1.2 cipher suites without also limiting TLS 1.3's, as Go does; remove "
     "cipher_suites (gpulet serves GnuTLS's NORMAL suites; under min_version: TLS13 Go ignores the list too)"},
    {"curve_preferences", k_curves, 0, NULL},
    {"min_version", k_version, FIELD(min_version), NULL},
    {"max_version", k_version, FIELD(max_version), NULL},
    {"prefer_server_cipher_suites", k_bool, 0, NULL}, /* no effect in Go since 1.18, none here */
    {"client_allowed_sans", k_sans, 0, NULL},
};

static const struct key_row http_rows[] = {
    {"http2", k_http2, 0, NULL},
    {"headers", k_headers, 0, NULL},
};

static int k_section(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return bad(x, obj, sec, key, "expected a mapping");
	if (streq(key, "tls_server_config"))
		return walk(x, v, key, tls_rows, ELEMENTSOF(tls_rows));
	return walk(x, v, key, http_rows, ELEMENTSOF(http_rows));
}

static int k_users(struct wctx *x, const json_t *obj, const char *sec, const char *key, const json_t *v, size_t off)
{
	const char *name;
	json_t *hv;
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return bad(x, obj, sec, key, "expected a mapping of user: bcrypt hash");
	if (json_object_size(v) > WEB_MAX_USERS)
		return bad(x, obj, sec, key, "more than %d users", WEB_MAX_USERS);
	if (!(x->c->users = calloc(json_object_size(v), sizeof(*x->c->users))))
		return gerr_set(x->err, ENOMEM, "out of memory");
	json_object_foreach ((json_t *)v, name, hv) {
		if (!json_is_string(hv) || webconfig_check_bcrypt(json_string_value(hv), NULL) < 0)
			return bad(x, v, key, name,
				   "not a bcrypt hash gpulet can check ($2a$, $2b$, $2x$ or $2y$, cost %d..%d, %d "
				   "characters); make one with `htpasswd -nBC 10 USER`",
				   WEB_BCRYPT_MIN_COST, WEB_BCRYPT_MAX_COST, WEB_BCRYPT_LEN);
		struct web_user *u = &x->c->users[x->c->n_users++];
		if (!(u->name = strdup(name)) || !(u->hash = strdup(json_string_value(hv))))
			return gerr_set(x->err, ENOMEM, "out of memory");
	}
	return 0;
}

/* exporter-toolkit web/tls_config.go type Config */
static const struct key_row top_rows[] = {
    {"tls_server_config", k_section, 0, NULL},
    {"http_server_config", k_section, 0, NULL},
    {"rate_limit", k_refuse, 0,
     "gpulet has no request rate limiter; remove rate_limit (limit the scrape rate in Prometheus)"},
    {"basic_auth_users", k_users, 0, NULL},
};

/* Every key of obj through its row; a key without a row is an error, as upstream's UnmarshalStrict. */
static int walk(struct wctx *x, const json_t *obj, const char *sec, const struct key_row *rows, size_t n)
{
	const char *key;
	json_t *v;
	json_object_foreach ((json_t *)obj, key, v) {
		const struct key_row *row = NULL;
		for (size_t i = 0; i < n && !row; i++)
			if (streq(rows[i].key, key))
				row = &rows[i];
		if (!row)
			return bad(x, obj, sec, key,
				   "unknown key (exporter-toolkit refuses it too); check its spelling");
		if (row->why && !json_is_null(v))
			return bad(x, obj, sec, key, "not supported: %s", row->why);
		int r = row->fn(x, obj, sec, key, v, row->off);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The checks upstream makes after reading (validateTLSPaths, ConfigToTLSConfig) and the ones gpulet
 * adds where it cannot do what Go's TLS would. */
static int check_tls(struct wctx *x)
{
	struct web_config *c = x->c;
	const char *sec = "tls_server_config";
	c->tls |= c->cert || c->cert_file || c->key || c->key_file || c->client_ca || c->client_ca_file;
	if (!c->tls)
		return c->sans_set ? bad(x, NULL, sec, "client_allowed_sans", "needs TLS; add cert_file and key_file")
				   : 0;
	if (!c->cert && !c->cert_file)
		return bad(x, NULL, sec, "cert_file", "missing one of cert or cert_file");
	if (!c->key && !c->key_file)
		return bad(x, NULL, sec, "key_file", "missing one of key or key_file");
	if ((c->cert && c->cert_file) || (c->key && c->key_file) || (c->client_ca && c->client_ca_file))
		return bad(x, NULL, sec, "cert_file", "both the inline PEM and the file are given; keep one");
	bool ca = c->client_ca || c->client_ca_file;
	if (ca && c->client_auth == WEB_CLIENT_NONE)
		return bad(x, NULL, sec, "client_ca_file",
			   "client CA's have been configured without a Client Auth Policy; set client_auth_type");
	if (!ca && c->client_auth != WEB_CLIENT_NONE)
		return bad(x, NULL, sec, "client_auth_type",
			   "gpulet asks for client certificates only with a client CA; set client_ca_file");
	if (c->sans_set && c->client_auth == WEB_CLIENT_NONE)
		return bad(x, NULL, sec, "client_allowed_sans", "needs a client_auth_type that asks for certificates");
	if (c->min_version > c->max_version)
		return bad(x, NULL, sec, "min_version", "is above max_version; no TLS version would be left");
	return 0;
}

int webconfig_parse(const char *text, size_t len, const char *path, struct web_config **ret, struct gerr *err)
{
	_cleanup_(json_decrefp) json_t *doc = NULL;
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	_cleanup_(webconfig_freep) struct web_config *c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path)))
		return gerr_set(err, ENOMEM, "out of memory");
	c->min_version = WEB_TLS12; /* upstream's getConfig defaults */
	c->max_version = WEB_TLS13;
	int r = yaml_to_json(text, len, path, YAML_STRICT, &doc, &w, err);
	if (r < 0)
		return r;
	struct wctx x = {.path = path, .w = w, .c = c, .err = err};
	if (!json_is_null(doc) && !json_is_object(doc))
		return gerr_set(err, EINVAL,
				"%s: expected a mapping with tls_server_config, http_server_config, "
				"basic_auth_users",
				path);
	if (json_is_object(doc) && (r = walk(&x, doc, "", top_rows, ELEMENTSOF(top_rows))) < 0)
		return r;
	if ((r = check_tls(&x)) < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int webconfig_load(const char *path, struct web_config **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_file(path, WEB_CONFIG_MAX_BYTES, &text, &len, err);
	if (r < 0)
		return r;
	return webconfig_parse(text, len, path, ret, err);
}

void webconfig_free(struct web_config *c)
{
	if (!c)
		return;
	char **strs[] = {&c->path, &c->cert_file, &c->key_file, &c->client_ca_file, &c->cert, &c->key, &c->client_ca};
	for (size_t i = 0; i < ELEMENTSOF(strs); i++)
		free(*strs[i]);
	for (size_t i = 0; i < c->n_sans; i++)
		free(c->sans[i]);
	free(c->sans);
	for (size_t i = 0; i < c->n_headers; i++)
		free(c->headers[i].value);
	for (size_t i = 0; i < c->n_users; i++) {
		if (c->users[i].hash)
			explicit_bzero(c->users[i].hash, strlen(c->users[i].hash));
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	free(c);
}

static bool bcrypt_char(char ch)
{
	return ch == '.' || ch == '/' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	       (ch >= '0' && ch <= '9');
}

/*
 * "$2" minor "$" cost "$" 53 characters. Go's bcrypt reads every minor the same way, which is
 * libxcrypt's $2b$ (webauth.c computes with $2b$); $2$ without a minor and longer hashes (which
 * Go would read but never match) are refused.
 */
int webconfig_check_bcrypt(const char *hash, unsigned *ret_cost)
{
	if (strlen(hash) != WEB_BCRYPT_LEN || strncmp(hash, "$2", 2) || !strchr("abxy", hash[2]) || !hash[2] ||
	    hash[3] != '$' || hash[6] != '$' || hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9')
		return -EINVAL;
	unsigned cost = (unsigned)(hash[4] - '0') * 10 + (unsigned)(hash[5] - '0');
	if (cost < WEB_BCRYPT_MIN_COST || cost > WEB_BCRYPT_MAX_COST)
		return -EINVAL;
	for (const char *p = hash + 7; *p; p++)
		if (!bcrypt_char(*p))
			return -EINVAL;
	if (ret_cost)
		*ret_cost = cost;
	return 0;
}

int web_basic_credentials(const char *header, char **ret_user, char **ret_pass, size_t *ret_pass_len)
{
	if (!header || strncasecmp(header, "Basic ", 6))
		return -EINVAL;
	const char *b = header + 6;
	size_t n = 0;
	_cleanup_free_ uint8_t *buf = NULL;
	int r = base64_decode(b, strlen(b), &buf, &n); /* Go's StdEncoding, as net/http's BasicAuth */
	if (r < 0)
		return r == -ENOMEM ? -ENOMEM : -EINVAL;
	/* C strings end at a NUL: "user\0x" must not pass as "user" (Go would compare every byte) */
	if (memchr(buf, '\0', n))
		return -EINVAL;
	uint8_t *colon = memchr(buf, ':', n);
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	*ret_pass_len = n - (size_t)(colon + 1 - buf);
	*ret_pass = (char *)colon + 1;
	*ret_user = (char *)TAKE_PTR(buf);
	return 0;
}
