/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 file walker: the document, its flags.* and imex.* values handed to a reader's option rows,
 * its sharing section (sharing.timeSlicing, sharing.mps) and resources section checked as upstream's
 * api/config/v1 sharing.go, replicas.go and resources.go unmarshal them. The text is read once by
 * the one YAML reader (parse/yaml.h), which types scalars as sigs.k8s.io/yaml does for the upstream
 * programs and gives each value with where it starts (struct yaml_node); errors name file:line:col
 * and the key, unknown keys are warnings. Source: docs/reference/device-plugin.md §2, §2.1, §2.2.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvconfig/nvconfig.h"
#include "parse/yaml.h"
#include "util/fileio.h"

/* The deepest value the schema has: sharing.timeSlicing.resources[i].devices[j]. */
#define SCHEMA_DEPTH 6

/* One walk over one document. */
struct walk {
	const char *name;              /* the file, for messages */
	const struct optspec_cli *cli; /* whose rows the option keys set */
	void *opts;
	struct nvconfig_file *out; /* the sharing section and the warnings */
	struct gerr *err;
};

/* ---- values, places, messages -------------------------------------------------------------------- */

/* Member key of the mapping map, or NULL (absent, or map is none). */
static const struct yaml_node *member(const struct yaml_node *map, const char *key)
{
	for (size_t i = 0; map && i < map->n; i++)
		if (streq(map->kids[i].key, key))
			return &map->kids[i];
	return NULL;
}

/* A top-level section; null ("sharing:" alone) is none, as upstream's JSON decoding leaves the struct zero. */
static const struct yaml_node *section(const struct yaml_node *root, const char *key)
{
	const struct yaml_node *n = member(root, key);

	return n && !json_is_null(n->v) ? n : NULL;
}

/* Where item i of a sequence node starts (the sequence's place past the depth the walk reads). */
static struct yaml_pos item_at(const struct yaml_node *seq, size_t i)
{
	return i < seq->n ? seq->kids[i].at : seq->at;
}

_printf_(4, 5) static int fail(struct walk *y, struct yaml_pos pos, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return gerr_set(y->err, EINVAL, "%s:%u:%u: %s: %s", y->name, pos.line, pos.col, key, buf);
}

/* A warning "name:line:col: what" (0, or -ENOMEM with err set); every one is kept: the file is at most 1 MiB. */
_printf_(3, 4) static int warn(struct walk *y, struct yaml_pos pos, const char *fmt, ...)
{
	_cleanup_free_ char *what = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&what, fmt, ap);
	va_end(ap);
	if (n < 0 || warnings_add(&y->out->warnings, "%s:%u:%u: %s", y->name, pos.line, pos.col, what) < 0)
		return gerr_set(y->err, ENOMEM, "out of memory");
	return 0;
}

/* A warning for each key of map that known (NULL-terminated) lacks; an error when map is no mapping. */
static int warn_unknown(struct walk *y, const struct yaml_node *map, const char *prefix, const char *const *known)
{
	if (!json_is_object(map->v))
		return fail(y, map->at, prefix, "expected a mapping");
	for (size_t i = 0; i < map->n; i++) {
		bool ok = false;
		int r;

		for (size_t k = 0; known[k] && !ok; k++)
			ok = streq(known[k], map->kids[i].key);
		if (!ok &&
		    (r = warn(y, map->kids[i].key_at, "unknown key %s.%s (ignored)", prefix, map->kids[i].key)) < 0)
			return r;
	}
	return 0;
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

/* What a value is, in the words of YAML. */
static const char *type_word(const json_t *v)
{
	static const char *const words[] = {
	    [JSON_OBJECT] = "a mapping", [JSON_ARRAY] = "a list",  [JSON_STRING] = "a string",
	    [JSON_INTEGER] = "a number", [JSON_REAL] = "a number", [JSON_TRUE] = "a boolean",
	    [JSON_FALSE] = "a boolean",  [JSON_NULL] = "null",
	};

	return words[json_typeof(v)];
}

/* ---- flags.* and imex.*: the reader's option rows ------------------------------------------------ */

/* A scalar, or a sequence of scalars joined with ',' (for list-valued options). */
static int value_text(struct walk *y, const struct yaml_node *n, const char *key, bool list_ok, char *buf, size_t size)
{
	char num[64];
	const char *s = scalar(n->v, num, sizeof(num));
	size_t off = 0, i;
	json_t *e;

	if (s) {
		if (strlen(s) >= size)
			return fail(y, n->at, key, "value longer than %zu characters", size - 1);
		snprintf(buf, size, "%s", s);
		return 0;
	}
	if (!json_is_array(n->v) || !list_ok)
		return fail(y, n->at, key, "expected a single value, found a %s",
			    json_is_object(n->v) ? "mapping" : "list");
	buf[0] = '\0';
	json_array_foreach (n->v, i, e) {
		if (!(s = scalar(e, num, sizeof(num))) || json_is_null(e))
			return fail(y, item_at(n, i), key, "list items must be plain values");
		off += (size_t)snprintf(buf + off, off < size ? size - off : 0, "%s%s", off ? "," : "", s);
		if (off >= size)
			return fail(y, n->at, key, "list longer than %zu characters", size - 1);
	}
	return 0;
}

/* A key of upstream's file: another reader's, when this one has no row for it. */
static bool is_v1_key(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(nvconfig_keys); i++)
		if (streq(nvconfig_keys[i], key))
			return true;
	return false;
}

/*
 * A number for a duration: nanoseconds, as upstream's Duration.UnmarshalJSON takes a JSON number
 * (time.Duration(float64), truncated; docs/reference/go-parsing.md); written "<N>ns" for the setter.
 */
static int duration_number(struct walk *y, const char *key, const struct yaml_node *n, char *buf, size_t size)
{
	double d = json_number_value(n->v);

	if (!(d > -9.2e18 && d < 9.2e18))
		return fail(y, n->at, key,
			    "a bare number is nanoseconds here, as upstream, and this one is out of range");
	if (json_is_integer(n->v))
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT "ns", json_integer_value(n->v));
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

static int walk_options(struct walk *y, const struct yaml_node *map, const char *prefix);

/* One flags.* or imex.* value: to the reader's row of that key through the engine's setter, with its place. */
static int apply_option(struct walk *y, const char *key, const struct yaml_node *n)
{
	const struct optspec *o = optspec_by_key(y->cli->rows, key);
	bool bare = o && o->kind == OPT_DURATION && json_is_number(n->v);
	_cleanup_free_ char *where = NULL;
	char text[PATH_MAX];
	int r;

	if (!o) {
		if (streq(key, "flags.plugin") || streq(key, "flags.gfd"))
			return walk_options(y, n, key); /* fails on anything but a mapping */
		/* a key of upstream's schema that another reader of the file uses (the plugin's, GFD's) is no typo */
		return is_v1_key(key) ? 0 : warn(y, n->at, "unknown key %s (ignored)", key);
	}
	if (json_is_null(n->v))
		return 0; /* `key:` with no value = null: keep the default */
	if (type_wrong(o, n->v))
		return fail(y, n->at, key, "%s, got %s", type_wrong(o, n->v), type_word(n->v));
	/* a list is joined with ',' for the list-valued rows: FLAGS, and imex.channelIDs (its CALL) */
	r = bare ? duration_number(y, key, n, text, sizeof(text))
		 : value_text(y, n, key, o->kind == OPT_FLAGS || o->kind == OPT_CALL, text, sizeof(text));
	if (r < 0)
		return -EINVAL;
	if (asprintf(&where, "%s:%u:%u", y->name, n->at.line, n->at.col) < 0)
		return gerr_set(y->err, ENOMEM, "out of memory");
	r = optspec_set_key(y->cli, y->opts, key, text, where, y->err);
	if (r < 0 && bare && y->err)
		gerr_suffix(y->err, "; a bare number is nanoseconds here, as upstream; write 60s");
	return r;
}

static int walk_options(struct walk *y, const struct yaml_node *map, const char *prefix)
{
	if (json_is_null(map->v)) /* "plugin:" alone: upstream's nil pointer, no flags */
		return 0;
	if (!json_is_object(map->v))
		return fail(y, map->at, prefix, "expected a mapping");
	for (size_t i = 0; i < map->n; i++) {
		_cleanup_free_ char *key = NULL; /* a key of the file, as long as it is */
		int r;

		if (asprintf(&key, "%s.%s", prefix, map->kids[i].key) < 0)
			return gerr_set(y->err, ENOMEM, "out of memory");
		r = apply_option(y, key, &map->kids[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- sharing.* and resources.* ------------------------------------------------------------------- */

/* A bool of a sharing section: YAML's true/false (yes/no typed by the reader); null keeps it unset. */
static int get_bool(struct walk *y, const struct yaml_node *map, const char *name, const char *key, int *ret)
{
	const struct yaml_node *v = member(map, name);

	if (!v || json_is_null(v->v))
		return 0;
	/* upstream unmarshals into a Go bool: a quoted "true" is a string and refused */
	if (!json_is_boolean(v->v))
		return fail(y, v->at, key, "must be true or false%s", json_is_string(v->v) ? " (unquoted)" : "");
	*ret = json_is_true(v->v);
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
static int resource_name(struct walk *y, const struct yaml_node *n, const char *key, char *out, size_t size)
{
	static const char prefix[] = "nvidia.com/";
	const char *v = json_is_string(n->v) ? json_string_value(n->v) : NULL;
	const char *pre, *last;
	size_t len;
	char bad;

	if (!v || !*v)
		return fail(y, n->at, key, "must be a resource name such as nvidia.com/gpu, found %s",
			    v                    ? "an empty string"
			    : json_is_null(n->v) ? "nothing"
						 : "a non-string");
	pre = strncmp(v, prefix, strlen(prefix)) == 0 ? "" : prefix;
	/* lengths first: a copy truncated before its '/' has no name part to check */
	len = strlen(pre) + strlen(v);
	if (len > 63 || len >= size)
		return fail(y, n->at, key, "\"%s%.40s...\" is not a valid resource name (%zu characters, at most 63)",
			    pre, v, len);
	last = *pre ? v : v + strlen(prefix);
	if (!*last)
		return fail(y, n->at, key, "\"%s%s\" is not a valid resource name (nothing after the '/')", pre, v);
	bad = dns_subdomain_bad(last);
	if (bad == '/')
		return fail(y, n->at, key,
			    "\"%s\" is not a valid resource name: only nvidia.com/ names are allowed (as upstream)", v);
	if (bad)
		return fail(y, n->at, key,
			    "\"%s%s\" has the invalid character '%c' (lowercase letters, digits, '-' and '.' inside)",
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
static int check_devices(struct walk *y, const struct yaml_node *v, const char *ekey)
{
	char key[192];
	size_t i;
	json_t *e;

	snprintf(key, sizeof(key), "%s.devices", ekey);
	if (json_is_string(v->v)) {
		if (!streq(json_string_value(v->v), "all"))
			return fail(y, v->at, key,
				    "\"%s\" is not valid: the only word is \"all\" (or give a count or a list)",
				    json_string_value(v->v));
		return 0;
	}
	if (json_is_integer(v->v)) {
		if (json_integer_value(v->v) <= 0)
			return fail(y, v->at, key, "a count of devices must be > 0, got %" JSON_INTEGER_FORMAT,
				    json_integer_value(v->v));
		return 1;
	}
	if (!json_is_array(v->v))
		return fail(y, v->at, key, "must be \"all\", a count or a list of GPU indexes or UUIDs, found %s",
			    json_is_null(v->v) ? "nothing" : "another type");
	json_array_foreach (v->v, i, e) {
		if ((json_is_integer(e) && json_integer_value(e) >= 0) ||
		    (json_is_string(e) && is_device_ref(json_string_value(e))))
			continue;
		return fail(y, item_at(v, i), key,
			    "item %zu is not a GPU index (0), a MIG index (0:1) or a GPU/MIG UUID", i);
	}
	return 1;
}

/* `replicas`: an integer as Go's json gives one to an int field (a quoted "4" is a string, refused). */
static int get_replicas(struct walk *y, const struct yaml_node *e, const char *ekey, bool mps, unsigned *ret)
{
	const struct yaml_node *v = member(e, "replicas");
	long max = mps ? NVCONFIG_MPS_REPLICAS_MAX : NVCONFIG_REPLICAS_MAX;
	char num[64];
	const char *s;
	double d;

	if (!v)
		return fail(y, e->at, ekey, "replicas is required");
	s = json_is_null(v->v) ? "nothing" : scalar(v->v, num, sizeof(num)); /* null: upstream's 0, < 2 */
	if (json_is_string(v->v))
		return fail(y, v->at, ekey, "replicas must be an integer, not the string \"%s\" (write it unquoted)",
			    s);
	if (!json_is_number(v->v)) /* null, a bool, a collection */
		return fail(y, v->at, ekey, "replicas must be an integer from 2 to %ld, got %s", max,
			    s                      ? s
			    : json_is_object(v->v) ? "a mapping"
						   : "a list");
	d = json_number_value(v->v);
	if (d < 2 || d > (double)max || d != (double)(unsigned)d)
		return fail(y, v->at, ekey, "replicas must be an integer from 2 to %ld, got \"%s\"", max, s);
	*ret = (unsigned)d;
	return 0;
}

/* One of the two sections as read, before upstream's choice between them. */
struct section {
	int rename_by_default, fail_gt1; /* -1 unset */
	struct replica_rule rules[NVCONFIG_MAX_RULES];
	struct yaml_pos rename_at[NVCONFIG_MAX_RULES]; /* where each rule's `rename` is, for the warning */
	struct yaml_pos name_at[NVCONFIG_MAX_RULES];   /* where each rule's `name` is, for a duplicate */
	size_t n_rules;
	bool present;
};

/* One entry of sharing.*.resources: {name, rename, replicas, devices}, checked as upstream does. */
static int parse_rule(struct walk *y, const struct yaml_node *e, const char *ekey, struct section *s, bool mps)
{
	static const char *const rknown[] = {"name", "rename", "replicas", "devices", NULL};
	struct replica_rule *rule = &s->rules[s->n_rules];
	const struct yaml_node *v;
	char key[192];
	int r;

	if ((r = warn_unknown(y, e, ekey, rknown)) < 0)
		return r;
	memset(rule, 0, sizeof(*rule));
	v = member(e, "name");
	if (!v)
		return fail(y, e->at, ekey, "name is required");
	snprintf(key, sizeof(key), "%s.name", ekey);
	if ((r = resource_name(y, v, key, rule->name, sizeof(rule->name))) < 0)
		return r;
	s->name_at[s->n_rules] = v->at;
	/* the same resource twice: upstream merges the two silently (the larger count of IDs, each
	 * claiming the later rule's count); gpulet refuses it, naming both places (§2) */
	for (size_t i = 0; i < s->n_rules; i++)
		if (streq(s->rules[i].name, rule->name))
			return fail(y, v->at, key, "%s is already listed at %s:%u:%u; list each resource once",
				    rule->name, y->name, s->name_at[i].line, s->name_at[i].col);
	if ((r = get_replicas(y, e, ekey, mps, &rule->replicas)) < 0)
		return r;
	v = member(e, "rename");
	snprintf(key, sizeof(key), "%s.rename", ekey);
	/* present means checked, even empty or null (upstream's NewResourceName("") fails) */
	if (v && (r = resource_name(y, v, key, rule->rename, sizeof(rule->rename))) < 0)
		return r;
	s->rename_at[s->n_rules] = v ? v->at : (struct yaml_pos){0, 0};
	v = member(e, "devices");
	r = v ? check_devices(y, v, ekey) : 0;
	if (r < 0)
		return r;
	if (r > 0)
		return warn(y, v->at, "%s.devices: only \"all\" is supported (as upstream); using all", ekey);
	return 0;
}

static int parse_section(struct walk *y, const struct yaml_node *m, const char *prefix, struct section *s, bool mps)
{
	static const char *const known[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources", NULL};
	const struct yaml_node *res;
	char key[128];
	int r;

	if (mps && json_is_null(m->v))
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
	res = member(m, "resources");
	snprintf(key, sizeof(key), "%s.resources", prefix);
	if (!res || !json_is_array(res->v) || json_array_size(res->v) == 0)
		return fail(y, res ? res->at : m->at, key, "a non-empty list of {name, replicas} is required");
	for (size_t i = 0; i < res->n; i++) {
		const struct yaml_node *item = &res->kids[i];
		char ekey[160];

		snprintf(ekey, sizeof(ekey), "%s[%zu]", key, i);
		if (!json_is_object(item->v))
			return fail(y, item->at, ekey, "expected a mapping {name, replicas}");
		if (s->n_rules >= NVCONFIG_MAX_RULES)
			return fail(y, item->at, ekey, "at most %d sharing resources", NVCONFIG_MAX_RULES);
		if ((r = parse_rule(y, item, ekey, s, mps)) < 0)
			return r;
		s->n_rules++;
	}
	return 0;
}

/*
 * The section chosen (time-slicing or MPS) as the one in use. Renaming is upstream's
 * DisableResourceNamingInConfig(): a rule's own `rename` is dropped with a warning, the only name a
 * shared resource gets is <name>.shared with renameByDefault (docs/reference/device-plugin.md §2.2).
 */
static int choose(struct walk *y, struct section *s, bool mps)
{
	struct nvconfig_sharing *c = &y->out->sharing;
	const char *id = mps ? "mps" : "timeSlicing";

	c->strategy = mps ? SHARING_MPS : SHARING_TIME_SLICING;
	c->rename_by_default = s->rename_by_default == 1;
	/* nil failRequestsGreaterThanOne: false for time-slicing, true for MPS (NewConfig) */
	c->fail_requests_greater_than_one = s->fail_gt1 >= 0 ? s->fail_gt1 == 1 : mps;
	for (size_t i = 0; i < s->n_rules; i++) {
		struct replica_rule *rule = &s->rules[i];
		char def[sizeof(rule->rename)] = "";

		if (c->rename_by_default) /* name <= 63: checked by resource_name() */
			snprintf(def, sizeof(def), "%s.shared", rule->name);
		if (rule->rename[0] && !streq(rule->rename, def) &&
		    warn(y, s->rename_at[i],
			 "sharing.%s.resources[%zu].rename: setting 'rename' is not supported (as upstream); the "
			 "resource is advertised as %s",
			 id, i, def[0] ? def : rule->name) < 0)
			return -ENOMEM;
		memcpy(rule->rename, def, sizeof(def));
	}
	memcpy(c->rules, s->rules, sizeof(c->rules));
	c->n_rules = s->n_rules;
	return 0;
}

static int walk_sharing(struct walk *y, const struct yaml_node *sh)
{
	static const char *const known[] = {"timeSlicing", "mps", NULL};
	struct section ts = {.rename_by_default = -1, .fail_gt1 = -1};
	struct section mps = {.rename_by_default = -1, .fail_gt1 = -1};
	const struct yaml_node *v;
	int r;

	if ((r = warn_unknown(y, sh, "sharing", known)) < 0)
		return r;
	if ((v = member(sh, "timeSlicing")) && (r = parse_section(y, v, "sharing.timeSlicing", &ts, false)) < 0)
		return r;
	if ((v = member(sh, "mps")) && (r = parse_section(y, v, "sharing.mps", &mps, true)) < 0)
		return r;
	/* upstream's Sharing.SharingStrategy(): MPS with replicas wins over time-slicing */
	if (ts.present && mps.present &&
	    (r = warn(y, sh->at,
		      "sharing: both timeSlicing and mps are set; using mps (as upstream), timeSlicing is "
		      "ignored")) < 0)
		return r;
	if (ts.present || mps.present)
		return choose(y, mps.present ? &mps : &ts, mps.present);
	return 0;
}

/*
 * Top-level `resources` ({gpus, mig}: lists of {pattern, name}), checked as upstream's Resources
 * unmarshals them (both fields required, the name a valid resource name) and then dropped with
 * upstream's warning (DisableResourceNamingInConfig, docs/reference/device-plugin.md §2).
 */
static int walk_resources(struct walk *y, const struct yaml_node *m)
{
	static const char *const known[] = {"gpus", "mig", NULL};
	static const char *const fields[] = {"pattern", "name", NULL};
	size_t n = 0;
	int r;

	if ((r = warn_unknown(y, m, "resources", known)) < 0)
		return r;
	for (size_t k = 0; known[k]; k++) {
		const struct yaml_node *l = member(m, known[k]);
		char key[64], ekey[96], out[128];

		snprintf(key, sizeof(key), "resources.%s", known[k]);
		if (!l || json_is_null(l->v))
			continue;
		if (!json_is_array(l->v))
			return fail(y, l->at, key, "expected a list of {pattern, name}");
		for (size_t i = 0; i < l->n; i++) {
			const struct yaml_node *item = &l->kids[i], *f;

			snprintf(ekey, sizeof(ekey), "%s[%zu]", key, i);
			if (!json_is_object(item->v))
				return fail(y, item->at, ekey, "expected a mapping {pattern, name}");
			if ((r = warn_unknown(y, item, ekey, fields)) < 0)
				return r;
			for (size_t j = 0; fields[j]; j++)
				if (!member(item, fields[j]))
					return fail(y, item->at, ekey, "'%s' is required (as upstream)", fields[j]);
			f = member(item, "pattern");
			if (!json_is_string(f->v) && !json_is_null(f->v))
				return fail(y, f->at, ekey, "pattern must be a string such as \"*\"");
			snprintf(ekey, sizeof(ekey), "%s[%zu].name", key, i);
			if ((r = resource_name(y, member(item, "name"), ekey, out, sizeof(out))) < 0)
				return r;
			n++;
		}
	}
	if (n)
		return warn(y, m->at, "resources: customizing resource names is not supported (as upstream); ignored");
	return 0;
}

/* ---- the document -------------------------------------------------------------------------------- */

static int walk_document(struct walk *y, const struct yaml_node *root)
{
	static const char *const top_known[] = {"version", "flags", "resources", "sharing", "imex", NULL};
	const struct yaml_node *v;
	char num[64];
	int r;

	if (json_is_null(root->v))
		return 0; /* empty file */
	if (!json_is_object(root->v))
		return fail(y, root->at, "(top)", "expected a mapping with version: v1");
	if ((r = warn_unknown(y, root, "(top)", top_known)) < 0)
		return r;
	v = member(root, "version");
	if (v && (!json_is_string(v->v) || !streq(json_string_value(v->v), "v1"))) {
		const char *s = scalar(v->v, num, sizeof(num));

		return fail(y, v->at, "version", "unknown version \"%s\"; only v1 is supported", s ? s : "");
	}
	if ((v = section(root, "flags")) && (r = walk_options(y, v, "flags")) < 0)
		return r;
	if ((v = section(root, "imex")) && (r = walk_options(y, v, "imex")) < 0)
		return r;
	if ((v = section(root, "resources")) && (r = walk_resources(y, v)) < 0)
		return r;
	if ((v = section(root, "sharing")) && (r = walk_sharing(y, v)) < 0)
		return r;
	return 0;
}

void nvconfig_file_clear(struct nvconfig_file *f)
{
	warnings_clear(&f->warnings);
	*f = (struct nvconfig_file){0};
}

int nvconfig_read(const char *text, size_t len, const char *name, const struct optspec_cli *cli, void *opts,
		  struct nvconfig_file *ret, struct gerr *err)
{
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	_cleanup_(yaml_node_freep) struct yaml_node *root = NULL;
	_cleanup_(json_decrefp) json_t *doc = NULL;
	struct walk y = {name, cli, opts, ret, err};
	int r;

	nvconfig_file_clear(ret);
	r = yaml_to_json(text, len, name, 0, &doc, &w, err);
	if (r < 0)
		return r;
	r = yaml_where_tree(w, doc, SCHEMA_DEPTH, &root);
	if (r < 0)
		return gerr_set(err, -r, "%s: %s", name,
				r == -E2BIG ? "too many values for a v1 config (aliases repeating a value?)"
					    : "out of memory");
	r = walk_document(&y, root);
	if (r < 0)
		nvconfig_file_clear(ret);
	return r;
}

int nvconfig_load(const char *path, const struct optspec_cli *cli, void *opts, struct nvconfig_file *ret,
		  struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file(path, NVCONFIG_FILE_MAX, &text, &len, err);
	if (r < 0)
		return gerr_prefix(err, "reading the config file %s: ", path), r;
	return nvconfig_read(text, len, path, cli, opts, ret, err);
}
