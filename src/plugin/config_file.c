/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's `version: v1` config file (YAML, or JSON as YAML's flow style): flags.*, imex.* and
 * sharing.* onto the option table; errors name file:line:col and the key, unknown keys are warnings.
 * The text is read by the one YAML reader (parse/yaml.h), which types scalars as sigs.k8s.io/yaml
 * does for the upstream plugin. Source: docs/reference/device-plugin.md §2.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/yaml.h"
#include "plugin/config_int.h"
#include "util/opt.h"

const char *const config_gfd_keys[6] = {
    CONFIG_KEY_GFD_ONESHOT,     CONFIG_KEY_GFD_NO_TIMESTAMP,      CONFIG_KEY_GFD_SLEEP_INTERVAL,
    CONFIG_KEY_GFD_OUTPUT_FILE, CONFIG_KEY_GFD_MACHINE_TYPE_FILE, CONFIG_KEY_USE_NODE_FEATURE_API,
};

struct yctx {
	const char *text, *end;
	const char *name;
	struct yaml_where *w;
	const struct optspec_cli *cli; /* whose rows the option keys set (the plugin's, or labels') */
	void *opts;
	struct plugin_config *cfg; /* the sharing section and the warnings */
	struct gerr *err;
};

/* A value of the document and where its text starts (what libyaml calls the node's start mark). */
struct yval {
	json_t *v;
	struct yaml_pos pos;
};

static struct yaml_pos pos_of(const struct yctx *y, const char *p)
{
	struct yaml_pos pos = {1, 1};

	for (const char *q = y->text; q < p; q++)
		if (*q == '\n')
			pos.line++, pos.col = 1;
		else
			pos.col++;
	return pos;
}

static const char *at_pos(const struct yctx *y, struct yaml_pos pos)
{
	const char *p = y->text;

	for (unsigned line = 1; line < pos.line && p < y->end; p++)
		if (*p == '\n')
			line++;
	return p + pos.col - 1 <= y->end ? p + pos.col - 1 : y->end;
}

/* From p, the first character of content: past blanks, line breaks and comments. */
static const char *skip_blank(const struct yctx *y, const char *p)
{
	while (p < y->end) {
		if (*p == '#')
			while (p < y->end && *p != '\n')
				p++;
		else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		else
			break;
	}
	return p;
}

/* Where the value of a key starts: past the key (plain or quoted), its ':' and what is blank. */
static struct yaml_pos value_pos(const struct yctx *y, const json_t *obj, const char *key)
{
	struct yaml_pos kp = {0, 0};
	const char *p;

	if (yaml_where_key(y->w, obj, key, &kp) < 0)
		return kp;
	p = at_pos(y, kp);
	if (p < y->end && (*p == '"' || *p == '\'')) {
		char q = *p++;

		while (p < y->end && *p != q)
			p += *p == '\\' && q == '"' ? 2 : 1;
		p++;
	} else {
		while (p < y->end && !(*p == ':' && (p + 1 == y->end || strchr(" \t\r\n,]}", p[1]))))
			p++;
	}
	while (p < y->end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < y->end && *p == ':')
		p++;
	return pos_of(y, skip_blank(y, p));
}

static struct yval member(const struct yctx *y, const json_t *obj, const char *key)
{
	struct yval r = {json_object_get(obj, key), {0, 0}};

	if (r.v)
		r.pos = value_pos(y, obj, key);
	return r;
}

/* A top-level section; null ("sharing:" alone) is none, as upstream's JSON decoding leaves the struct zero. */
static struct yval section(const struct yctx *y, const json_t *root, const char *key)
{
	struct yval r = member(y, root, key);
	return json_is_null(r.v) ? (struct yval){0} : r;
}
static int yerr(struct yctx *y, struct yaml_pos pos, const char *key, const char *fmt, ...) _printf_(4, 5);
static int yerr(struct yctx *y, struct yaml_pos pos, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return gerr_set(y->err, EINVAL, "%s:%u:%u: %s: %s", y->name, pos.line, pos.col, key, buf);
}

/* The text of a scalar (the reader typed it; options take text), or NULL for a collection. */
static const char *scalar(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, size, "%.17g", json_real_value(v));
		return buf;
	case JSON_TRUE:
	case JSON_FALSE:
		return json_is_true(v) ? "true" : "false";
	case JSON_NULL:
		return "";
	default:
		return NULL;
	}
}

/* A scalar, or a sequence of scalars joined with ',' (for list-valued options). */
static int value_text(struct yctx *y, struct yval n, const char *key, bool list_ok, char *buf, size_t size)
{
	char num[64];
	const char *s = scalar(n.v, num, sizeof(num));
	size_t off = 0, i;
	json_t *e;

	if (s) {
		if (strlen(s) >= size)
			return yerr(y, n.pos, key, "value longer than %zu characters", size - 1);
		snprintf(buf, size, "%s", s);
		return 0;
	}
	if (!json_is_array(n.v) || !list_ok)
		return yerr(y, n.pos, key, "expected a single value, found a %s",
			    json_is_object(n.v) ? "mapping" : "list");
	buf[0] = '\0';
	json_array_foreach (n.v, i, e) {
		struct yaml_pos ip = n.pos;

		yaml_where_item(y->w, n.v, i, &ip);
		if (!(s = scalar(e, num, sizeof(num))) || json_is_null(e))
			return yerr(y, ip, key, "list items must be plain values");
		off += (size_t)snprintf(buf + off, off < size ? size - off : 0, "%s%s", off ? "," : "", s);
		if (off >= size)
			return yerr(y, n.pos, key, "list longer than %zu characters", size - 1);
	}
	return 0;
}

/* What a value is, in the words of YAML. */
static const char *json_type_word(const json_t *v)
{
	static const char *const words[] = {
	    [JSON_OBJECT] = "a mapping", [JSON_ARRAY] = "a list",  [JSON_STRING] = "a string",
	    [JSON_INTEGER] = "a number", [JSON_REAL] = "a number", [JSON_TRUE] = "a boolean",
	    [JSON_FALSE] = "a boolean",  [JSON_NULL] = "null",
	};

	return words[json_typeof(v)];
}

/* A key GFD reads and the plugin does not. */
static bool is_gfd_key(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(config_gfd_keys); i++)
		if (streq(config_gfd_keys[i], key))
			return true;
	return false;
}

static int walk_options(struct yctx *y, struct yval map, const char *prefix);

/*
 * A number for a duration: nanoseconds, as upstream's Duration.UnmarshalJSON takes a JSON number
 * (time.Duration(float64), truncated; docs/reference/go-parsing.md); written "<N>ns" for the setter.
 */
static int duration_number(struct yctx *y, const char *key, struct yval v, char *buf, size_t size)
{
	double d = json_number_value(v.v);

	if (!(d > -9.2e18 && d < 9.2e18))
		return yerr(y, v.pos, key,
			    "a bare number is nanoseconds here, as upstream, and this one is out of range");
	if (json_is_integer(v.v))
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT "ns", json_integer_value(v.v));
	else
		snprintf(buf, size, "%lldns", (long long)d);
	return 0;
}

/*
 * The YAML/JSON type a row's kind takes, as upstream's encoding/json decodes the file into typed
 * fields (api/config/v1/flags.go, duration.go at v0.20.0; docs/reference/device-plugin.md §2): a
 * *bool takes only a boolean ("false" and 1 are refused), a *string only a string (5 is refused), a
 * Duration a number or a string, deviceListStrategy a string or a list of strings.
 */
static const char *type_wrong(const struct optspec *o, const json_t *v)
{
	size_t i;
	json_t *e;

	if ((json_is_array(v) && o->kind != OPT_FLAGS) || json_is_object(v))
		return NULL; /* value_text() says a single value is expected */
	switch (o->kind) {
	case OPT_SET:
	case OPT_BOOL:
		return json_is_boolean(v) ? NULL : "must be true or false, unquoted";
	case OPT_STR:
	case OPT_PATH:
	case OPT_FILE:
	case OPT_ENUM:
		return json_is_string(v) ? NULL : "must be a string (quote it)";
	case OPT_DURATION:
		return json_is_string(v) || json_is_number(v) ? NULL : "must be a duration: a string (60s) or a number";
	case OPT_FLAGS:
		if (json_is_string(v))
			return NULL;
		json_array_foreach (v, i, e)
			if (!json_is_string(e))
				return "list items must be strings";
		return json_is_array(v) ? NULL : "must be a string or a list of strings";
	default:
		return NULL; /* UINT, CALL: their setter checks the text */
	}
}

static int apply_option(struct yctx *y, const char *key, struct yval v)
{
	const struct optspec *o = optspec_by_key(y->cli->rows, key);
	bool bare = o && o->kind == OPT_DURATION && json_is_number(v.v);
	_cleanup_free_ char *where = NULL;
	char text[PATH_MAX];
	int r;

	if (!o) {
		if (streq(key, "flags.plugin") || streq(key, "flags.gfd"))
			return walk_options(y, v, key); /* fails on anything but a mapping */
		/* a key of the schema another reader of the file uses (the plugin's, GFD's) is no typo */
		if (!is_gfd_key(key) && !optspec_by_key(config_cli.rows, key))
			return config_warn(y->cfg, y->err, "%s:%u:%u: unknown key %s (ignored)", y->name, v.pos.line,
					   v.pos.col, key);
		return 0;
	}
	if (json_is_null(v.v))
		return 0; /* `key:` with no value = null: keep the default */
	if (type_wrong(o, v.v))
		return yerr(y, v.pos, key, "%s, got %s", type_wrong(o, v.v), json_type_word(v.v));
	/* a list is joined with ',' for the list-valued rows: FLAGS, and imex.channelIDs (its CALL) */
	r = bare ? duration_number(y, key, v, text, sizeof(text))
		 : value_text(y, v, key, o->kind == OPT_FLAGS || o->kind == OPT_CALL, text, sizeof(text));
	if (r < 0)
		return -EINVAL;
	if (asprintf(&where, "%s:%u:%u", y->name, v.pos.line, v.pos.col) < 0)
		return gerr_set(y->err, ENOMEM, "out of memory");
	r = optspec_set_key(y->cli, y->opts, key, text, where, y->err);
	if (r < 0 && bare && y->err)
		gerr_set(y->err, -r, "%.400s; a bare number is nanoseconds here, as upstream; write 60s", y->err->msg);
	return r;
}

static int walk_options(struct yctx *y, struct yval map, const char *prefix)
{
	const char *k;
	json_t *v;

	if (json_is_null(map.v)) /* "plugin:" alone: upstream's nil pointer, no flags */
		return 0;
	if (!json_is_object(map.v))
		return yerr(y, map.pos, prefix, "expected a mapping");
	json_object_foreach (map.v, k, v) {
		_cleanup_free_ char *key = NULL; /* a key of the file, as long as it is */
		int r;

		if (asprintf(&key, "%s.%s", prefix, k) < 0)
			return gerr_set(y->err, ENOMEM, "out of memory");
		r = apply_option(y, key, member(y, map.v, k));
		if (r < 0)
			return r;
	}
	return 0;
}

static int warn_unknown(struct yctx *y, struct yval map, const char *prefix, const char *const *known)
{
	const char *k;
	json_t *v;

	if (!json_is_object(map.v))
		return yerr(y, map.pos, prefix, "expected a mapping");
	json_object_foreach (map.v, k, v) {
		struct yaml_pos kp = map.pos;
		bool ok = false;
		int r;

		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(known[i], k);
		if (ok)
			continue;
		yaml_where_key(y->w, map.v, k, &kp);
		r = config_warn(y->cfg, y->err, "%s:%u:%u: unknown key %s.%s (ignored)", y->name, kp.line, kp.col,
				prefix, k);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A bool of a sharing section: YAML's true/false (yes/no typed by the reader); null keeps it unset. */
static int get_bool(struct yctx *y, struct yval map, const char *name, const char *key, int *ret)
{
	struct yval v = member(y, map.v, name);

	if (!v.v || json_is_null(v.v))
		return 0;
	/* upstream unmarshals into a Go bool: a quoted "true" is a string and refused */
	if (!json_is_boolean(v.v))
		return yerr(y, v.pos, key, "must be true or false%s", json_is_string(v.v) ? " (unquoted)" : "");
	*ret = json_is_true(v.v);
	return 0;
}

/* k8s NameIsDNSSubdomain: <= 253, dot-separated labels of [a-z0-9-] that start and end alphanumeric. */
static char dns_subdomain_bad(const char *s)
{
	size_t len = strlen(s);

	if (!len || len > 253)
		return '?';
	for (const char *p = s; *p; p++) {
		bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
		bool edge = p == s || p[-1] == '.' || !p[1] || p[1] == '.';

		if (!alnum && ((*p != '-' && *p != '.') || edge))
			return *p;
	}
	return 0;
}

/*
 * upstream's NewResourceName (docs/reference/device-plugin.md §2): "nvidia.com/" is put in front of
 * any name that does not start with it, the whole is at most 63 characters, and the part after the
 * first '/' must be a DNS subdomain. So "gpu" is "nvidia.com/gpu", and "example.com/gpu" is refused.
 */
static int resource_name(struct yctx *y, struct yval n, const char *key, char *out, size_t size)
{
	static const char prefix[] = "nvidia.com/";
	const char *v = json_is_string(n.v) ? json_string_value(n.v) : NULL;
	const char *pre, *last;
	size_t len;
	char bad;

	if (!v || !*v)
		return yerr(y, n.pos, key, "must be a resource name such as nvidia.com/gpu, found %s",
			    v                   ? "an empty string"
			    : json_is_null(n.v) ? "nothing"
						: "a non-string");
	pre = strncmp(v, prefix, strlen(prefix)) == 0 ? "" : prefix;
	/* lengths first: a copy truncated before its '/' has no name part to check */
	len = strlen(pre) + strlen(v);
	if (len > 63 || len >= size)
		return yerr(y, n.pos, key, "\"%s%.40s...\" is not a valid resource name (%zu characters, at most 63)",
			    pre, v, len);
	last = *pre ? v : v + strlen(prefix);
	if (!*last)
		return yerr(y, n.pos, key, "\"%s%s\" is not a valid resource name (nothing after the '/')", pre, v);
	bad = dns_subdomain_bad(last);
	if (bad == '/')
		return yerr(y, n.pos, key,
			    "\"%s\" is not a valid resource name: only nvidia.com/ names are allowed (as "
			    "upstream)",
			    v);
	if (bad)
		return yerr(y, n.pos, key,
			    "\"%s%s\" has the invalid character '%c' (lowercase letters, digits, '-' "
			    "and '.' inside)",
			    pre, v, bad);
	snprintf(out, size, "%s%s", pre, v);
	return 0;
}

/* Go's uuid.Parse forms: 8-4-4-4-12 hex, the same in {} or after urn:uuid:, or 32 hex digits. */
static bool is_uuid(const char *s)
{
	size_t len = strlen(s);

	if (len == 45 && strncmp(s, "urn:uuid:", 9) == 0)
		s += 9, len = 36;
	else if (len == 38 && s[0] == '{' && s[37] == '}')
		s++, len = 36;
	if (len != 36 && len != 32)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool dash = len == 36 && (i == 8 || i == 13 || i == 18 || i == 23);

		if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
			return false;
	}
	return true;
}

/* strconv.ParseUint(s, 10, 64) succeeds; *end gets where the digits stop */
static bool is_uint(const char *s, const char **end)
{
	char *e;

	if (!(*s >= '0' && *s <= '9'))
		return false;
	errno = 0;
	(void)strtoull(s, &e, 10);
	*end = e;
	return errno == 0;
}

/* upstream's ReplicatedDeviceRef: a GPU index "0", a MIG index "0:1", a GPU UUID or a MIG UUID. */
static bool is_device_ref(const char *s)
{
	const char *e;

	if (is_uint(s, &e) && (!*e || (*e == ':' && is_uint(e + 1, &e) && !*e)))
		return true;
	if (strncmp(s, "GPU-", 4) == 0)
		return is_uuid(s + 4);
	if (strncmp(s, "MIG-", 4) != 0)
		return false;
	s += 4;
	if (is_uuid(s))
		return true;
	/* MIG-GPU-<uuid>/<gi>/<ci> */
	e = strchr(s, '/');
	if (!e || e - s != 40 || strncmp(s, "GPU-", 4) != 0)
		return false;
	{
		char gpu[41];

		memcpy(gpu, s + 4, 36);
		gpu[36] = '\0';
		return is_uuid(gpu) && is_uint(e + 1, &e) && *e == '/' && is_uint(e + 1, &e) && !*e;
	}
}

/*
 * `devices` of a sharing rule, checked as upstream's ReplicatedDevices unmarshals it: "all", a count
 * > 0, or a list of device references; anything else (null included) is an error. Upstream then
 * replaces whatever was given by all, with a warning: 1 = warn, 0 = it was "all".
 */
static int check_devices(struct yctx *y, struct yval v, const char *ekey)
{
	char key[192];
	size_t i;
	json_t *e;

	snprintf(key, sizeof(key), "%s.devices", ekey);
	if (json_is_string(v.v)) {
		if (!streq(json_string_value(v.v), "all"))
			return yerr(y, v.pos, key,
				    "\"%s\" is not valid: the only word is \"all\" (or give a count or a list)",
				    json_string_value(v.v));
		return 0;
	}
	if (json_is_integer(v.v)) {
		if (json_integer_value(v.v) <= 0)
			return yerr(y, v.pos, key, "a count of devices must be > 0, got %" JSON_INTEGER_FORMAT,
				    json_integer_value(v.v));
		return 1;
	}
	if (!json_is_array(v.v))
		return yerr(y, v.pos, key, "must be \"all\", a count or a list of GPU indexes or UUIDs, found %s",
			    json_is_null(v.v) ? "nothing" : "another type");
	json_array_foreach (v.v, i, e) {
		struct yaml_pos ip = v.pos;

		yaml_where_item(y->w, v.v, i, &ip);
		if ((json_is_integer(e) && json_integer_value(e) >= 0) ||
		    (json_is_string(e) && is_device_ref(json_string_value(e))))
			continue;
		return yerr(y, ip, key, "item %zu is not a GPU index (0), a MIG index (0:1) or a GPU/MIG UUID", i);
	}
	return 1;
}

/* `replicas`: an integer as Go's json gives one to an int field (a quoted "4" is a string, refused). */
static int get_replicas(struct yctx *y, struct yval e, const char *ekey, bool mps, unsigned *ret)
{
	struct yval v = member(y, e.v, "replicas");
	long max = mps ? MPS_REPLICAS_MAX : REPLICAS_MAX;
	char num[64];
	const char *s;
	double d;

	if (!v.v)
		return yerr(y, e.pos, ekey, "replicas is required");
	s = json_is_null(v.v) ? "nothing" : scalar(v.v, num, sizeof(num)); /* null: upstream's 0, < 2 */
	if (json_is_string(v.v))
		return yerr(y, v.pos, ekey, "replicas must be an integer, not the string \"%s\" (write it unquoted)",
			    s);
	if (!json_is_number(v.v)) /* null, a bool, a collection */
		return yerr(y, v.pos, ekey, "replicas must be an integer from 2 to %ld, got %s", max,
			    s                     ? s
			    : json_is_object(v.v) ? "a mapping"
						  : "a list");
	d = json_number_value(v.v);
	if (d < 2 || d > (double)max || d != (double)(unsigned)d)
		return yerr(y, v.pos, ekey, "replicas must be an integer from 2 to %ld, got \"%s\"", max, s);
	*ret = (unsigned)d;
	return 0;
}

struct sharing_cfg {
	int rename_by_default, fail_gt1;
	struct replica_rule rules[CONFIG_MAX_RULES];
	struct yaml_pos rename_at[CONFIG_MAX_RULES]; /* where each rule's `rename` is, for the warning */
	struct yaml_pos name_at[CONFIG_MAX_RULES];   /* where each rule's `name` is, for a duplicate */
	size_t n_rules;
	bool present;
};

/* One entry of sharing.*.resources: {name, rename, replicas, devices}, checked as upstream does. */
static int parse_rule(struct yctx *y, struct yval e, const char *ekey, struct sharing_cfg *s, bool mps)
{
	static const char *const rknown[] = {"name", "rename", "replicas", "devices", NULL};
	struct replica_rule *rule = &s->rules[s->n_rules];
	char key[192];
	struct yval v;
	int r;

	if ((r = warn_unknown(y, e, ekey, rknown)) < 0)
		return r;
	memset(rule, 0, sizeof(*rule));
	v = member(y, e.v, "name");
	if (!v.v)
		return yerr(y, e.pos, ekey, "name is required");
	snprintf(key, sizeof(key), "%s.name", ekey);
	if ((r = resource_name(y, v, key, rule->name, sizeof(rule->name))) < 0)
		return r;
	s->name_at[s->n_rules] = v.pos;
	/* the same resource twice: upstream merges the two silently (the larger count of IDs, each
	 * claiming the later rule's count); gpulet refuses it, naming both places (§2) */
	for (size_t i = 0; i < s->n_rules; i++)
		if (streq(s->rules[i].name, rule->name))
			return yerr(y, v.pos, key, "%s is already listed at %s:%u:%u; list each resource once",
				    rule->name, y->name, s->name_at[i].line, s->name_at[i].col);
	if ((r = get_replicas(y, e, ekey, mps, &rule->replicas)) < 0)
		return r;
	v = member(y, e.v, "rename");
	snprintf(key, sizeof(key), "%s.rename", ekey);
	/* present means checked, even empty or null (upstream's NewResourceName("") fails) */
	if (v.v && (r = resource_name(y, v, key, rule->rename, sizeof(rule->rename))) < 0)
		return r;
	s->rename_at[s->n_rules] = v.pos;
	v = member(y, e.v, "devices");
	r = v.v ? check_devices(y, v, ekey) : 0;
	if (r < 0)
		return r;
	if (r > 0)
		return config_warn(y->cfg, y->err,
				   "%s:%u:%u: %s.devices: only \"all\" is supported (as upstream); using all", y->name,
				   v.pos.line, v.pos.col, ekey);
	return 0;
}

static int parse_sharing(struct yctx *y, struct yval m, const char *prefix, struct sharing_cfg *s, bool mps)
{
	static const char *const known[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources", NULL};
	struct yval res;
	char key[128];
	json_t *e;
	size_t i;
	int r;

	if (mps && json_is_null(m.v))
		return 0; /* upstream's MPS section is a pointer: `mps:` (null) is no MPS */
	s->present = true;
	r = warn_unknown(y, m, prefix, known);
	if (r < 0)
		return r;
	snprintf(key, sizeof(key), "%s.renameByDefault", prefix);
	if ((r = get_bool(y, m, "renameByDefault", key, &s->rename_by_default)) < 0)
		return r;
	snprintf(key, sizeof(key), "%s.failRequestsGreaterThanOne", prefix);
	if ((r = get_bool(y, m, "failRequestsGreaterThanOne", key, &s->fail_gt1)) < 0)
		return r;
	res = member(y, m.v, "resources");
	snprintf(key, sizeof(key), "%s.resources", prefix);
	if (!json_is_array(res.v) || json_array_size(res.v) == 0)
		return yerr(y, res.v ? res.pos : m.pos, key, "a non-empty list of {name, replicas} is required");
	json_array_foreach (res.v, i, e) {
		struct yval item = {e, res.pos};
		char ekey[160];

		yaml_where_item(y->w, res.v, i, &item.pos);
		snprintf(ekey, sizeof(ekey), "%s[%zu]", key, i);
		if (!json_is_object(e))
			return yerr(y, item.pos, ekey, "expected a mapping {name, replicas}");
		if (s->n_rules >= CONFIG_MAX_RULES)
			return yerr(y, item.pos, ekey, "at most %d sharing resources", CONFIG_MAX_RULES);
		if ((r = parse_rule(y, item, ekey, s, mps)) < 0)
			return r;
		s->n_rules++;
	}
	return 0;
}

/*
 * The sharing section chosen (time-slicing or MPS) into the config. Renaming is upstream's
 * DisableResourceNamingInConfig(): a rule's own `rename` is dropped with a warning, the only name a
 * shared resource gets is <name>.shared with renameByDefault (docs/reference/device-plugin.md §2.2).
 */
static int apply_sharing(struct yctx *y, struct sharing_cfg *s, bool mps)
{
	struct plugin_config *c = y->cfg;
	const char *id = mps ? "mps" : "timeSlicing";

	c->sharing = mps ? SHARING_MPS : SHARING_TIME_SLICING;
	c->rename_by_default = s->rename_by_default == 1;
	/* nil failRequestsGreaterThanOne: false for time-slicing, true for MPS (NewConfig) */
	c->fail_requests_greater_than_one = s->fail_gt1 >= 0 ? s->fail_gt1 == 1 : mps;
	for (size_t i = 0; i < s->n_rules; i++) {
		struct replica_rule *rule = &s->rules[i];
		char def[sizeof(rule->rename)] = "";

		if (c->rename_by_default) /* name <= 63: checked by resource_name() */
			snprintf(def, sizeof(def), "%s.shared", rule->name);
		if (rule->rename[0] && !streq(rule->rename, def) &&
		    config_warn(c, y->err,
				"%s:%u:%u: sharing.%s.resources[%zu].rename: setting 'rename' is not supported "
				"(as upstream); the resource is advertised as %s",
				y->name, s->rename_at[i].line, s->rename_at[i].col, id, i,
				def[0] ? def : rule->name) < 0)
			return -ENOMEM;
		memcpy(rule->rename, def, sizeof(def));
	}
	memcpy(c->rules, s->rules, sizeof(c->rules));
	c->n_rules = s->n_rules;
	return 0;
}

/*
 * Top-level `resources` ({gpus, mig}: lists of {pattern, name}), checked as upstream's Resources
 * unmarshals them (both fields required, the name a valid resource name) and then dropped with
 * upstream's warning (DisableResourceNamingInConfig, docs/reference/device-plugin.md §2).
 */
static int check_resources(struct yctx *y, struct yval m)
{
	static const char *const known[] = {"gpus", "mig", NULL};
	static const char *const fields[] = {"pattern", "name", NULL};
	size_t n = 0;
	int r;

	if (json_is_null(m.v))
		return 0;
	if ((r = warn_unknown(y, m, "resources", known)) < 0)
		return r;
	for (size_t k = 0; known[k]; k++) {
		struct yval l = member(y, m.v, known[k]);
		char key[64], ekey[96], out[128];
		json_t *e;
		size_t i;

		snprintf(key, sizeof(key), "resources.%s", known[k]);
		if (!l.v || json_is_null(l.v))
			continue;
		if (!json_is_array(l.v))
			return yerr(y, l.pos, key, "expected a list of {pattern, name}");
		json_array_foreach (l.v, i, e) {
			struct yval item = {e, l.pos}, f;

			yaml_where_item(y->w, l.v, i, &item.pos);
			snprintf(ekey, sizeof(ekey), "%s[%zu]", key, i);
			if (!json_is_object(e))
				return yerr(y, item.pos, ekey, "expected a mapping {pattern, name}");
			if ((r = warn_unknown(y, item, ekey, fields)) < 0)
				return r;
			for (size_t j = 0; fields[j]; j++)
				if (!json_object_get(e, fields[j]))
					return yerr(y, item.pos, ekey, "'%s' is required (as upstream)", fields[j]);
			f = member(y, e, "pattern");
			if (!json_is_string(f.v) && !json_is_null(f.v))
				return yerr(y, f.pos, ekey, "pattern must be a string such as \"*\"");
			snprintf(ekey, sizeof(ekey), "%s[%zu].name", key, i);
			if ((r = resource_name(y, member(y, e, "name"), ekey, out, sizeof(out))) < 0)
				return r;
			n++;
		}
	}
	if (n)
		return config_warn(y->cfg, y->err,
				   "%s:%u:%u: resources: customizing resource names is not supported (as upstream); "
				   "ignored",
				   y->name, m.pos.line, m.pos.col);
	return 0;
}

static int apply_document(struct yctx *y, struct yval root)
{
	static const char *const top_known[] = {"version", "flags", "resources", "sharing", "imex", NULL};
	static const char *const sharing_known[] = {"timeSlicing", "mps", NULL};
	struct sharing_cfg ts = {.rename_by_default = -1, .fail_gt1 = -1};
	struct sharing_cfg mps = {.rename_by_default = -1, .fail_gt1 = -1};
	struct yval v, sh;
	char num[64];
	int r;

	if (json_is_null(root.v))
		return 0; /* empty file */
	if (!json_is_object(root.v))
		return yerr(y, root.pos, "(top)", "expected a mapping with version: v1");
	if ((r = warn_unknown(y, root, "(top)", top_known)) < 0)
		return r;
	v = member(y, root.v, "version");
	if (v.v && (!json_is_string(v.v) || !streq(json_string_value(v.v), "v1"))) {
		const char *s = scalar(v.v, num, sizeof(num));

		return yerr(y, v.pos, "version", "unknown version \"%s\"; only v1 is supported", s ? s : "");
	}
	if ((v = section(y, root.v, "flags")).v && (r = walk_options(y, v, "flags")) < 0)
		return r;
	if ((v = section(y, root.v, "imex")).v && (r = walk_options(y, v, "imex")) < 0)
		return r;
	if ((v = section(y, root.v, "resources")).v && (r = check_resources(y, v)) < 0)
		return r;
	sh = section(y, root.v, "sharing");
	if (!sh.v)
		return 0;
	if ((r = warn_unknown(y, sh, "sharing", sharing_known)) < 0)
		return r;
	if ((v = member(y, sh.v, "timeSlicing")).v && (r = parse_sharing(y, v, "sharing.timeSlicing", &ts, false)) < 0)
		return r;
	if ((v = member(y, sh.v, "mps")).v && (r = parse_sharing(y, v, "sharing.mps", &mps, true)) < 0)
		return r;
	/* upstream's Sharing.SharingStrategy(): MPS with replicas wins over time-slicing */
	if (ts.present && mps.present &&
	    (r = config_warn(y->cfg, y->err,
			     "%s:%u:%u: sharing: both timeSlicing and mps are set; using mps (as upstream), "
			     "timeSlicing is ignored",
			     y->name, sh.pos.line, sh.pos.col)) < 0)
		return r;
	if (ts.present || mps.present)
		return apply_sharing(y, mps.present ? &mps : &ts, mps.present);
	return 0;
}

int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err)
{
	return config_apply_file_to(&config_cli, cfg, cfg, text, len, name, err);
}

int config_apply_file_to(const struct optspec_cli *cli, void *opts, struct plugin_config *cfg, const char *text,
			 size_t len, const char *name, struct gerr *err)
{
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	struct yctx y = {text, text + len, name, NULL, cli, opts, cfg, err};
	json_t *doc = NULL;
	const char *start;
	int r;

	r = yaml_to_json(text, len, name, 0, &doc, &w, err);
	if (r < 0)
		return r;
	y.w = w;
	/* the document's own node starts at its first content, past a "---" marker */
	start = skip_blank(&y, text);
	if (y.end - start >= 3 && strncmp(start, "---", 3) == 0)
		start = skip_blank(&y, start + 3);
	r = apply_document(&y, (struct yval){doc, pos_of(&y, start)});
	json_decref(doc);
	return r;
}
