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

/* Keys of the v1 schema that gpulet plugin accepts and does not use (GFD's section). */
static const char *const known_unused_keys[] = {
    "flags.gfd.oneshot",
    "flags.gfd.noTimestamp",
    "flags.gfd.sleepInterval",
    "flags.gfd.outputFile",
    "flags.gfd.machineTypeFile",
    "flags.gfd.useNodeFeatureAPI",
    "flags.gfd.deviceDiscoveryStrategy",
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

static bool is_known_unused(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(known_unused_keys); i++)
		if (streq(known_unused_keys[i], key))
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

static int apply_option(struct yctx *y, const char *key, struct yval v)
{
	const struct optspec *o = optspec_by_key(y->cli->rows, key);
	bool bare = o && o->kind == OPT_DURATION && json_is_number(v.v);
	char text[PATH_MAX], where[PATH_MAX];
	int r;

	if (!o) {
		if (streq(key, "flags.plugin") || streq(key, "flags.gfd"))
			return walk_options(y, v, key); /* fails on anything but a mapping */
		/* a key of the schema another reader of the file uses (the plugin's, GFD's) is no typo */
		if (!is_known_unused(key) && !optspec_by_key(config_cli.rows, key))
			config_warn(y->cfg, "%s:%u:%u: unknown key %s (ignored)", y->name, v.pos.line, v.pos.col, key);
		return 0;
	}
	if (json_is_null(v.v))
		return 0; /* `key:` with no value = null: keep the default */
	/* a list is joined with ',' for the list-valued rows: FLAGS, and imex.channelIDs (its CALL) */
	r = bare ? duration_number(y, key, v, text, sizeof(text))
		 : value_text(y, v, key, o->kind == OPT_FLAGS || o->kind == OPT_CALL, text, sizeof(text));
	if (r < 0)
		return -EINVAL;
	snprintf(where, sizeof(where), "%s:%u:%u", y->name, v.pos.line, v.pos.col);
	r = optspec_set_key(y->cli, y->opts, key, text, where, y->err);
	if (r < 0 && bare && y->err)
		gerr_set(y->err, -r, "%.400s; a bare number is nanoseconds here, as upstream; write 60s", y->err->msg);
	return r;
}

static int walk_options(struct yctx *y, struct yval map, const char *prefix)
{
	const char *k;
	json_t *v;

	if (!json_is_object(map.v))
		return yerr(y, map.pos, prefix, "expected a mapping");
	json_object_foreach (map.v, k, v) {
		char key[256];
		int r;

		snprintf(key, sizeof(key), "%s.%s", prefix, k);
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

		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(known[i], k);
		if (ok)
			continue;
		yaml_where_key(y->w, map.v, k, &kp);
		config_warn(y->cfg, "%s:%u:%u: unknown key %s.%s (ignored)", y->name, kp.line, kp.col, prefix, k);
	}
	return 0;
}

static int get_bool(struct yctx *y, struct yval map, const char *name, const char *key, int *ret)
{
	struct yval v = member(y, map.v, name);
	char num[64];
	const char *s;
	bool b;

	if (!v.v)
		return 0;
	s = scalar(v.v, num, sizeof(num));
	if (!s || opt_parse_bool(s, &b) < 0)
		return yerr(y, v.pos, key, "must be true or false");
	*ret = b;
	return 0;
}

/* "gpu" -> "nvidia.com/gpu"; checks the k8s extended-resource name rules (§2: <= 63, DNS). */
static int resource_name(struct yctx *y, struct yval n, const char *key, char *out, size_t size)
{
	char num[64];
	const char *v = json_is_string(n.v) ? scalar(n.v, num, sizeof(num)) : NULL, *prefix, *last;
	size_t len;

	if (!v || !*v)
		return yerr(y, n.pos, key, "must be a resource name such as nvidia.com/gpu");
	prefix = strchr(v, '/') ? "" : "nvidia.com/";
	/* lengths first: a copy truncated before its '/' has no name part to check */
	len = strlen(prefix) + strlen(v);
	if (len > 63 || len >= size)
		return yerr(y, n.pos, key, "\"%s%.40s...\" is not a valid resource name (%zu characters, at most 63)",
			    prefix, v, len);
	last = strrchr(v, '/');
	last = last ? last + 1 : v;
	if (!*last)
		return yerr(y, n.pos, key, "\"%s\" is not a valid resource name (nothing after the '/')", v);
	for (const char *p = last; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && *p != '-' && *p != '.' && *p != '_' &&
		    !(*p >= 'A' && *p <= 'Z'))
			return yerr(y, n.pos, key, "\"%s%s\" has the invalid character '%c'", prefix, v, *p);
	snprintf(out, size, "%s%s", prefix, v);
	return 0;
}

struct sharing_cfg {
	int rename_by_default, fail_gt1;
	struct replica_rule rules[CONFIG_MAX_RULES];
	struct yaml_pos rename_at[CONFIG_MAX_RULES]; /* where each rule's `rename` is, for the warning */
	size_t n_rules;
	bool present;
};

/* One entry of sharing.*.resources: {name, rename, replicas, devices}. */
static int parse_rule(struct yctx *y, struct yval e, const char *ekey, struct replica_rule *rule,
		      struct yaml_pos *rename_at, bool mps)
{
	static const char *const rknown[] = {"name", "rename", "replicas", "devices", NULL};
	struct yval v;
	char num[64], *end;
	const char *s;
	unsigned long reps;
	int r;

	if ((r = warn_unknown(y, e, ekey, rknown)) < 0)
		return r;
	memset(rule, 0, sizeof(*rule));
	v = member(y, e.v, "name");
	if (!v.v)
		return yerr(y, e.pos, ekey, "name is required");
	if ((r = resource_name(y, v, ekey, rule->name, sizeof(rule->name))) < 0)
		return r;
	v = member(y, e.v, "replicas");
	s = v.v ? scalar(v.v, num, sizeof(num)) : NULL;
	if (!s) /* `replicas:` (null) is "", not an integer below */
		return yerr(y, v.v ? v.pos : e.pos, ekey, "replicas is required");
	errno = 0;
	reps = strtoul(s, &end, 10);
	if (errno || *end || end == s || reps < 2 || reps > (mps ? MPS_REPLICAS_MAX : REPLICAS_MAX))
		return yerr(y, v.pos, ekey, "replicas must be an integer from 2 to %d, got \"%s\"",
			    mps ? MPS_REPLICAS_MAX : REPLICAS_MAX, s);
	rule->replicas = (unsigned)reps;
	v = member(y, e.v, "rename");
	if (v.v && json_is_string(v.v) && *json_string_value(v.v) &&
	    (r = resource_name(y, v, ekey, rule->rename, sizeof(rule->rename))) < 0)
		return r;
	*rename_at = v.pos;
	v = member(y, e.v, "devices");
	if (v.v && !(json_is_string(v.v) && streq(json_string_value(v.v), "all")))
		config_warn(y->cfg, "%s:%u:%u: %s.devices: only \"all\" is supported (as upstream); using all", y->name,
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
		if ((r = parse_rule(y, item, ekey, &s->rules[s->n_rules], &s->rename_at[s->n_rules], mps)) < 0)
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
static void apply_sharing(struct yctx *y, struct sharing_cfg *s, bool mps)
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
		if (rule->rename[0] && !streq(rule->rename, def))
			config_warn(c,
				    "%s:%u:%u: sharing.%s.resources[%zu].rename: setting 'rename' is not supported "
				    "(as upstream); the resource is advertised as %s",
				    y->name, s->rename_at[i].line, s->rename_at[i].col, id, i,
				    def[0] ? def : rule->name);
		memcpy(rule->rename, def, sizeof(def));
	}
	memcpy(c->rules, s->rules, sizeof(c->rules));
	c->n_rules = s->n_rules;
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
	if ((v = member(y, root.v, "flags")).v && (r = walk_options(y, v, "flags")) < 0)
		return r;
	if ((v = member(y, root.v, "imex")).v && (r = walk_options(y, v, "imex")) < 0)
		return r;
	if ((v = member(y, root.v, "resources")).v)
		config_warn(y->cfg,
			    "%s:%u:%u: resources: customizing resource names is not supported (as upstream); ignored",
			    y->name, v.pos.line, v.pos.col);
	sh = member(y, root.v, "sharing");
	if (!sh.v)
		return 0;
	if ((r = warn_unknown(y, sh, "sharing", sharing_known)) < 0)
		return r;
	if ((v = member(y, sh.v, "timeSlicing")).v && (r = parse_sharing(y, v, "sharing.timeSlicing", &ts, false)) < 0)
		return r;
	if ((v = member(y, sh.v, "mps")).v && (r = parse_sharing(y, v, "sharing.mps", &mps, true)) < 0)
		return r;
	/* upstream's Sharing.SharingStrategy(): MPS with replicas wins over time-slicing */
	if (ts.present && mps.present)
		config_warn(y->cfg,
			    "%s:%u:%u: sharing: both timeSlicing and mps are set; using mps (as upstream), "
			    "timeSlicing is ignored",
			    y->name, sh.pos.line, sh.pos.col);
	if (ts.present || mps.present)
		apply_sharing(y, mps.present ? &mps : &ts, mps.present);
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
