/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's `version: v1` config file (YAML, or JSON as YAML's flow style): flags.*, imex.* and
 * sharing.* onto the option table; errors name file:line:col and the key, unknown keys are warnings.
 * Source: docs/reference/device-plugin.md §2.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "plugin/config_int.h"

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
	yaml_document_t *doc;
	const char *name;
	struct plugin_config *cfg;
	struct gerr *err;
};

static int yerr(struct yctx *y, yaml_node_t *n, const char *key, const char *fmt, ...) _printf_(4, 5);
static int yerr(struct yctx *y, yaml_node_t *n, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return gerr_set(y->err, EINVAL, "%s:%zu:%zu: %s: %s", y->name, n->start_mark.line + 1, n->start_mark.column + 1,
			key, buf);
}

static const char *scalar(yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A scalar, or a sequence of scalars joined with ',' (for list-valued options). */
static int value_text(struct yctx *y, yaml_node_t *n, const char *key, bool list_ok, char *buf, size_t size)
{
	size_t off = 0;

	if (n->type == YAML_SCALAR_NODE) {
		if (strlen(scalar(n)) >= size)
			return yerr(y, n, key, "value longer than %zu characters", size - 1);
		snprintf(buf, size, "%s", scalar(n));
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE || !list_ok)
		return yerr(y, n, key, "expected a single value, found a %s",
			    n->type == YAML_MAPPING_NODE ? "mapping" : "list");
	buf[0] = '\0';
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(y->doc, *it);

		if (!e || !scalar(e))
			return yerr(y, e ? e : n, key, "list items must be plain values");
		off += (size_t)snprintf(buf + off, off < size ? size - off : 0, "%s%s", off ? "," : "", scalar(e));
		if (off >= size)
			return yerr(y, n, key, "list longer than %zu characters", size - 1);
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

static int walk_options(struct yctx *y, yaml_node_t *map, const char *prefix);

static int apply_option(struct yctx *y, const char *key, yaml_node_t *v)
{
	const struct opt *o = config_opt_by_key(key);
	char text[PATH_MAX], src[PATH_MAX + 64];

	if (!o) {
		if (streq(key, "flags.plugin") || streq(key, "flags.gfd"))
			return walk_options(y, v, key); /* fails on anything but a mapping */
		if (!is_known_unused(key))
			config_warn(y->cfg, "%s:%zu:%zu: unknown key %s (ignored)", y->name, v->start_mark.line + 1,
			     v->start_mark.column + 1, key);
		return 0;
	}
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0 &&
	    v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		return 0; /* `key:` with no value = null: keep the default */
	if (value_text(y, v, key, o->type == T_DLS || o->type == T_IMEX, text, sizeof(text)) < 0)
		return -EINVAL;
	snprintf(src, sizeof(src), "%s:%zu:%zu: %s", y->name, v->start_mark.line + 1, v->start_mark.column + 1, key);
	return config_opt_set(y->cfg, o, text, src, y->err);
}

static int walk_options(struct yctx *y, yaml_node_t *map, const char *prefix)
{
	if (map->type != YAML_MAPPING_NODE)
		return yerr(y, map, prefix, "expected a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		char key[256];
		int r;

		if (!k || !v || !scalar(k))
			return yerr(y, k ? k : map, prefix, "keys must be plain strings");
		snprintf(key, sizeof(key), "%s.%s", prefix, scalar(k));
		r = apply_option(y, key, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static yaml_node_t *map_get(struct yctx *y, yaml_node_t *map, const char *name)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);

		if (k && scalar(k) && streq(scalar(k), name))
			return yaml_document_get_node(y->doc, p->value);
	}
	return NULL;
}

static int warn_unknown(struct yctx *y, yaml_node_t *map, const char *prefix, const char *const *known)
{
	if (map->type != YAML_MAPPING_NODE)
		return yerr(y, map, prefix, "expected a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		bool ok = false;

		if (!k || !scalar(k))
			return yerr(y, k ? k : map, prefix, "keys must be plain strings");
		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(known[i], scalar(k));
		if (!ok)
			config_warn(y->cfg, "%s:%zu:%zu: unknown key %s.%s (ignored)", y->name, k->start_mark.line + 1,
			     k->start_mark.column + 1, prefix, scalar(k));
	}
	return 0;
}

static int get_bool(struct yctx *y, yaml_node_t *map, const char *name, const char *key, int *ret)
{
	yaml_node_t *v = map_get(y, map, name);
	bool b;

	if (!v)
		return 0;
	if (!scalar(v) || config_parse_bool(scalar(v), &b) < 0)
		return yerr(y, v, key, "must be true or false");
	*ret = b;
	return 0;
}

/* "gpu" -> "nvidia.com/gpu"; checks the k8s extended-resource name rules (§2: <= 63, DNS). */
static int resource_name(struct yctx *y, yaml_node_t *n, const char *key, char *out, size_t size)
{
	const char *v = scalar(n), *prefix, *last;
	size_t len;

	if (!v || !*v)
		return yerr(y, n, key, "must be a resource name such as nvidia.com/gpu");
	prefix = strchr(v, '/') ? "" : "nvidia.com/";
	/* lengths first: a copy truncated before its '/' has no name part to check */
	len = strlen(prefix) + strlen(v);
	if (len > 63 || len >= size)
		return yerr(y, n, key, "\"%s%.40s...\" is not a valid resource name (%zu characters, at most 63)",
			    prefix, v, len);
	last = strrchr(v, '/');
	last = last ? last + 1 : v;
	if (!*last)
		return yerr(y, n, key, "\"%s\" is not a valid resource name (nothing after the '/')", v);
	for (const char *p = last; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && *p != '-' && *p != '.' && *p != '_' &&
		    !(*p >= 'A' && *p <= 'Z'))
			return yerr(y, n, key, "\"%s%s\" has the invalid character '%c'", prefix, v, *p);
	snprintf(out, size, "%s%s", prefix, v);
	return 0;
}

struct sharing_cfg {
	int rename_by_default, fail_gt1;
	struct replica_rule rules[CONFIG_MAX_RULES];
	size_t n_rules;
	bool present;
};

static int parse_sharing(struct yctx *y, yaml_node_t *m, const char *prefix, struct sharing_cfg *s, bool mps)
{
	static const char *const known[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources", NULL};
	static const char *const rknown[] = {"name", "rename", "replicas", "devices", NULL};
	yaml_node_t *res;
	char key[128];
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
	res = map_get(y, m, "resources");
	snprintf(key, sizeof(key), "%s.resources", prefix);
	if (!res || res->type != YAML_SEQUENCE_NODE || res->data.sequence.items.start == res->data.sequence.items.top)
		return yerr(y, res ? res : m, key, "a non-empty list of {name, replicas} is required");
	for (yaml_node_item_t *it = res->data.sequence.items.start; it < res->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(y->doc, *it), *v;
		struct replica_rule *rule = &s->rules[s->n_rules];
		char ekey[160], *end;
		unsigned long reps;

		snprintf(ekey, sizeof(ekey), "%s[%zu]", key, (size_t)(it - res->data.sequence.items.start));
		if (!e || e->type != YAML_MAPPING_NODE)
			return yerr(y, e ? e : res, ekey, "expected a mapping {name, replicas}");
		if (s->n_rules >= CONFIG_MAX_RULES)
			return yerr(y, e, ekey, "at most %d sharing resources", CONFIG_MAX_RULES);
		if ((r = warn_unknown(y, e, ekey, rknown)) < 0)
			return r;
		memset(rule, 0, sizeof(*rule));
		v = map_get(y, e, "name");
		if (!v)
			return yerr(y, e, ekey, "name is required");
		if ((r = resource_name(y, v, ekey, rule->name, sizeof(rule->name))) < 0)
			return r;
		v = map_get(y, e, "replicas");
		if (!v || !scalar(v))
			return yerr(y, v ? v : e, ekey, "replicas is required");
		errno = 0;
		reps = strtoul(scalar(v), &end, 10);
		if (errno || *end || end == scalar(v) || reps < 2 || reps > (mps ? MPS_REPLICAS_MAX : REPLICAS_MAX))
			return yerr(y, v, ekey, "replicas must be an integer from 2 to %d, got \"%s\"",
				    mps ? MPS_REPLICAS_MAX : REPLICAS_MAX, scalar(v));
		rule->replicas = (unsigned)reps;
		v = map_get(y, e, "rename");
		if (v && scalar(v) && *scalar(v) &&
		    (r = resource_name(y, v, ekey, rule->rename, sizeof(rule->rename))) < 0)
			return r;
		v = map_get(y, e, "devices");
		if (v && !(scalar(v) && streq(scalar(v), "all")))
			config_warn(y->cfg, "%s:%zu:%zu: %s.devices: only \"all\" is supported (as upstream); using all",
			     y->name, v->start_mark.line + 1, v->start_mark.column + 1, ekey);
		s->n_rules++;
	}
	return 0;
}

static int apply_document(struct yctx *y, yaml_node_t *root)
{
	static const char *const top_known[] = {"version", "flags", "resources", "sharing", "imex", NULL};
	static const char *const sharing_known[] = {"timeSlicing", "mps", NULL};
	struct sharing_cfg ts = {.rename_by_default = -1, .fail_gt1 = -1};
	struct sharing_cfg mps = {.rename_by_default = -1, .fail_gt1 = -1};
	struct plugin_config *c = y->cfg;
	yaml_node_t *v, *sh;
	int r;

	if (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)
		return 0; /* empty file */
	if (root->type != YAML_MAPPING_NODE)
		return yerr(y, root, "(top)", "expected a mapping with version: v1");
	if ((r = warn_unknown(y, root, "(top)", top_known)) < 0)
		return r;
	v = map_get(y, root, "version");
	if (v && (!scalar(v) || !streq(scalar(v), "v1")))
		return yerr(y, v, "version", "unknown version \"%s\"; only v1 is supported",
			    scalar(v) ? scalar(v) : "");
	if ((v = map_get(y, root, "flags")) && (r = walk_options(y, v, "flags")) < 0)
		return r;
	if ((v = map_get(y, root, "imex")) && (r = walk_options(y, v, "imex")) < 0)
		return r;
	if ((v = map_get(y, root, "resources")))
		config_warn(c, "%s:%zu:%zu: resources: customizing resource names is not supported (as upstream); ignored",
		     y->name, v->start_mark.line + 1, v->start_mark.column + 1);
	sh = map_get(y, root, "sharing");
	if (!sh)
		return 0;
	if ((r = warn_unknown(y, sh, "sharing", sharing_known)) < 0)
		return r;
	if ((v = map_get(y, sh, "timeSlicing")) && (r = parse_sharing(y, v, "sharing.timeSlicing", &ts, false)) < 0)
		return r;
	if ((v = map_get(y, sh, "mps")) && (r = parse_sharing(y, v, "sharing.mps", &mps, true)) < 0)
		return r;
	if (ts.present && mps.present)
		return yerr(y, sh, "sharing", "timeSlicing and mps are mutually exclusive");
	{
		struct sharing_cfg *s = mps.present ? &mps : &ts;

		if (!s->present)
			return 0;
		c->sharing = mps.present ? SHARING_MPS : SHARING_TIME_SLICING;
		c->rename_by_default = s->rename_by_default == 1;
		/* nil failRequestsGreaterThanOne: false for time-slicing, true for MPS (NewConfig) */
		c->fail_requests_greater_than_one = s->fail_gt1 >= 0 ? s->fail_gt1 == 1 : mps.present;
		memcpy(c->rules, s->rules, sizeof(c->rules));
		c->n_rules = s->n_rules;
		for (size_t i = 0; i < c->n_rules; i++) {
			struct replica_rule *rule = &c->rules[i];
			size_t l = strlen(rule->name); /* <= 63: checked by resource_name() */

			if (!rule->rename[0] && c->rename_by_default && l + sizeof(".shared") <= sizeof(rule->rename)) {
				memcpy(rule->rename, rule->name, l);
				memcpy(rule->rename + l, ".shared", sizeof(".shared"));
			}
		}
	}
	return 0;
}

int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct yctx y = {&doc, name, cfg, err};
	int r;

	if (!yaml_parser_initialize(&parser))
		return gerr_set(err, ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		r = gerr_set(err, EINVAL, "%s:%zu:%zu: %s%s%s", name, parser.problem_mark.line + 1,
			     parser.problem_mark.column + 1, parser.problem ? parser.problem : "syntax error",
			     parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		return r;
	}
	root = yaml_document_get_root_node(&doc);
	r = root ? apply_document(&y, root) : 0;
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}
