/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sharing rules of the v1 file (sharing.timeSlicing, sharing.mps) and its resources section,
 * checked as upstream's api/config/v1 sharing.go, replicas.go and resources.go unmarshal them
 * (docs/reference/device-plugin.md §2, §2.2), and the names of the strategies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvconfig/internal.h"

const struct enum_name mig_strategy_names[3] = {
    {MIG_STRATEGY_NONE, "none"},
    {MIG_STRATEGY_SINGLE, "single"},
    {MIG_STRATEGY_MIXED, "mixed"},
};
const struct enum_name sharing_strategy_names[3] = {
    {SHARING_NONE, "none"},
    {SHARING_TIME_SLICING, "time-slicing"},
    {SHARING_MPS, "mps"},
};
const struct enum_name discovery_strategy_names[4] = {
    {DISCOVERY_AUTO, "auto"}, {DISCOVERY_NVML, "nvml"}, {DISCOVERY_TEGRA, "tegra"}, {DISCOVERY_VFIO, "vfio"}};

const char *mig_strategy_name(enum mig_strategy s)
{
	return enum_to_name(mig_strategy_names, s, "none");
}

int mig_strategy_from_name(const char *name, enum mig_strategy *ret)
{
	return enum_from_name(mig_strategy_names, name, ret);
}

const char *sharing_strategy_name(enum sharing_strategy s)
{
	return enum_to_name(sharing_strategy_names, s, "none");
}

int sharing_strategy_from_name(const char *name, enum sharing_strategy *ret)
{
	return enum_from_name(sharing_strategy_names, name, ret);
}

/* A bool of a sharing section: YAML's true/false (yes/no typed by the reader); null keeps it unset. */
static int get_bool(struct walk *y, struct yval map, const char *name, const char *key, int *ret)
{
	struct yval v = nv_member(y, map.v, name);

	if (!v.v || json_is_null(v.v))
		return 0;
	/* upstream unmarshals into a Go bool: a quoted "true" is a string and refused */
	if (!json_is_boolean(v.v))
		return nv_err(y, v.pos, key, "must be true or false%s", json_is_string(v.v) ? " (unquoted)" : "");
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
static int resource_name(struct walk *y, struct yval n, const char *key, char *out, size_t size)
{
	static const char prefix[] = "nvidia.com/";
	const char *v = json_is_string(n.v) ? json_string_value(n.v) : NULL;
	const char *pre, *last;
	size_t len;
	char bad;

	if (!v || !*v)
		return nv_err(y, n.pos, key, "must be a resource name such as nvidia.com/gpu, found %s",
			      v                   ? "an empty string"
			      : json_is_null(n.v) ? "nothing"
						  : "a non-string");
	pre = strncmp(v, prefix, strlen(prefix)) == 0 ? "" : prefix;
	/* lengths first: a copy truncated before its '/' has no name part to check */
	len = strlen(pre) + strlen(v);
	if (len > 63 || len >= size)
		return nv_err(y, n.pos, key, "\"%s%.40s...\" is not a valid resource name (%zu characters, at most 63)",
			      pre, v, len);
	last = *pre ? v : v + strlen(prefix);
	if (!*last)
		return nv_err(y, n.pos, key, "\"%s%s\" is not a valid resource name (nothing after the '/')", pre, v);
	bad = dns_subdomain_bad(last);
	if (bad == '/')
		return nv_err(y, n.pos, key,
			      "\"%s\" is not a valid resource name: only nvidia.com/ names are allowed (as "
			      "upstream)",
			      v);
	if (bad)
		return nv_err(y, n.pos, key,
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
static int check_devices(struct walk *y, struct yval v, const char *ekey)
{
	char key[192];
	size_t i;
	json_t *e;

	snprintf(key, sizeof(key), "%s.devices", ekey);
	if (json_is_string(v.v)) {
		if (!streq(json_string_value(v.v), "all"))
			return nv_err(y, v.pos, key,
				      "\"%s\" is not valid: the only word is \"all\" (or give a count or a list)",
				      json_string_value(v.v));
		return 0;
	}
	if (json_is_integer(v.v)) {
		if (json_integer_value(v.v) <= 0)
			return nv_err(y, v.pos, key, "a count of devices must be > 0, got %" JSON_INTEGER_FORMAT,
				      json_integer_value(v.v));
		return 1;
	}
	if (!json_is_array(v.v))
		return nv_err(y, v.pos, key, "must be \"all\", a count or a list of GPU indexes or UUIDs, found %s",
			      json_is_null(v.v) ? "nothing" : "another type");
	json_array_foreach (v.v, i, e) {
		struct yaml_pos ip = v.pos;

		yaml_where_item(y->w, v.v, i, &ip);
		if ((json_is_integer(e) && json_integer_value(e) >= 0) ||
		    (json_is_string(e) && is_device_ref(json_string_value(e))))
			continue;
		return nv_err(y, ip, key, "item %zu is not a GPU index (0), a MIG index (0:1) or a GPU/MIG UUID", i);
	}
	return 1;
}

/* `replicas`: an integer as Go's json gives one to an int field (a quoted "4" is a string, refused). */
static int get_replicas(struct walk *y, struct yval e, const char *ekey, bool mps, unsigned *ret)
{
	struct yval v = nv_member(y, e.v, "replicas");
	long max = mps ? NVCONFIG_MPS_REPLICAS_MAX : NVCONFIG_REPLICAS_MAX;
	char num[64];
	const char *s;
	double d;

	if (!v.v)
		return nv_err(y, e.pos, ekey, "replicas is required");
	s = json_is_null(v.v) ? "nothing" : nv_scalar(v.v, num, sizeof(num)); /* null: upstream's 0, < 2 */
	if (json_is_string(v.v))
		return nv_err(y, v.pos, ekey, "replicas must be an integer, not the string \"%s\" (write it unquoted)",
			      s);
	if (!json_is_number(v.v)) /* null, a bool, a collection */
		return nv_err(y, v.pos, ekey, "replicas must be an integer from 2 to %ld, got %s", max,
			      s                     ? s
			      : json_is_object(v.v) ? "a mapping"
						    : "a list");
	d = json_number_value(v.v);
	if (d < 2 || d > (double)max || d != (double)(unsigned)d)
		return nv_err(y, v.pos, ekey, "replicas must be an integer from 2 to %ld, got \"%s\"", max, s);
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
static int parse_rule(struct walk *y, struct yval e, const char *ekey, struct section *s, bool mps)
{
	static const char *const rknown[] = {"name", "rename", "replicas", "devices", NULL};
	struct replica_rule *rule = &s->rules[s->n_rules];
	char key[192];
	struct yval v;
	int r;

	if ((r = nv_warn_unknown(y, e, ekey, rknown)) < 0)
		return r;
	memset(rule, 0, sizeof(*rule));
	v = nv_member(y, e.v, "name");
	if (!v.v)
		return nv_err(y, e.pos, ekey, "name is required");
	snprintf(key, sizeof(key), "%s.name", ekey);
	if ((r = resource_name(y, v, key, rule->name, sizeof(rule->name))) < 0)
		return r;
	s->name_at[s->n_rules] = v.pos;
	/* the same resource twice: upstream merges the two silently (the larger count of IDs, each
	 * claiming the later rule's count); gpulet refuses it, naming both places (§2) */
	for (size_t i = 0; i < s->n_rules; i++)
		if (streq(s->rules[i].name, rule->name))
			return nv_err(y, v.pos, key, "%s is already listed at %s:%u:%u; list each resource once",
				      rule->name, y->name, s->name_at[i].line, s->name_at[i].col);
	if ((r = get_replicas(y, e, ekey, mps, &rule->replicas)) < 0)
		return r;
	v = nv_member(y, e.v, "rename");
	snprintf(key, sizeof(key), "%s.rename", ekey);
	/* present means checked, even empty or null (upstream's NewResourceName("") fails) */
	if (v.v && (r = resource_name(y, v, key, rule->rename, sizeof(rule->rename))) < 0)
		return r;
	s->rename_at[s->n_rules] = v.pos;
	v = nv_member(y, e.v, "devices");
	r = v.v ? check_devices(y, v, ekey) : 0;
	if (r < 0)
		return r;
	if (r > 0)
		return nv_warn(y, v.pos, "%s.devices: only \"all\" is supported (as upstream); using all", ekey);
	return 0;
}

static int parse_section(struct walk *y, struct yval m, const char *prefix, struct section *s, bool mps)
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
	r = nv_warn_unknown(y, m, prefix, known);
	if (r < 0)
		return r;
	snprintf(key, sizeof(key), "%s.renameByDefault", prefix);
	if ((r = get_bool(y, m, "renameByDefault", key, &s->rename_by_default)) < 0)
		return r;
	snprintf(key, sizeof(key), "%s.failRequestsGreaterThanOne", prefix);
	if ((r = get_bool(y, m, "failRequestsGreaterThanOne", key, &s->fail_gt1)) < 0)
		return r;
	res = nv_member(y, m.v, "resources");
	snprintf(key, sizeof(key), "%s.resources", prefix);
	if (!json_is_array(res.v) || json_array_size(res.v) == 0)
		return nv_err(y, res.v ? res.pos : m.pos, key, "a non-empty list of {name, replicas} is required");
	json_array_foreach (res.v, i, e) {
		struct yval item = {e, res.pos};
		char ekey[160];

		yaml_where_item(y->w, res.v, i, &item.pos);
		snprintf(ekey, sizeof(ekey), "%s[%zu]", key, i);
		if (!json_is_object(e))
			return nv_err(y, item.pos, ekey, "expected a mapping {name, replicas}");
		if (s->n_rules >= NVCONFIG_MAX_RULES)
			return nv_err(y, item.pos, ekey, "at most %d sharing resources", NVCONFIG_MAX_RULES);
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
		    nv_warn(y, s->rename_at[i],
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

int nv_sharing(struct walk *y, struct yval sh)
{
	static const char *const known[] = {"timeSlicing", "mps", NULL};
	struct section ts = {.rename_by_default = -1, .fail_gt1 = -1};
	struct section mps = {.rename_by_default = -1, .fail_gt1 = -1};
	struct yval v;
	int r;

	if ((r = nv_warn_unknown(y, sh, "sharing", known)) < 0)
		return r;
	if ((v = nv_member(y, sh.v, "timeSlicing")).v &&
	    (r = parse_section(y, v, "sharing.timeSlicing", &ts, false)) < 0)
		return r;
	if ((v = nv_member(y, sh.v, "mps")).v && (r = parse_section(y, v, "sharing.mps", &mps, true)) < 0)
		return r;
	/* upstream's Sharing.SharingStrategy(): MPS with replicas wins over time-slicing */
	if (ts.present && mps.present &&
	    (r = nv_warn(y, sh.pos,
			 "sharing: both timeSlicing and mps are set; using mps (as upstream), timeSlicing is "
			 "ignored")) < 0)
		return r;
	if (ts.present || mps.present)
		return choose(y, mps.present ? &mps : &ts, mps.present);
	return 0;
}

int nv_resources(struct walk *y, struct yval m)
{
	static const char *const known[] = {"gpus", "mig", NULL};
	static const char *const fields[] = {"pattern", "name", NULL};
	size_t n = 0;
	int r;

	if ((r = nv_warn_unknown(y, m, "resources", known)) < 0)
		return r;
	for (size_t k = 0; known[k]; k++) {
		struct yval l = nv_member(y, m.v, known[k]);
		char key[64], ekey[96], out[128];
		json_t *e;
		size_t i;

		snprintf(key, sizeof(key), "resources.%s", known[k]);
		if (!l.v || json_is_null(l.v))
			continue;
		if (!json_is_array(l.v))
			return nv_err(y, l.pos, key, "expected a list of {pattern, name}");
		json_array_foreach (l.v, i, e) {
			struct yval item = {e, l.pos}, f;

			yaml_where_item(y->w, l.v, i, &item.pos);
			snprintf(ekey, sizeof(ekey), "%s[%zu]", key, i);
			if (!json_is_object(e))
				return nv_err(y, item.pos, ekey, "expected a mapping {pattern, name}");
			if ((r = nv_warn_unknown(y, item, ekey, fields)) < 0)
				return r;
			for (size_t j = 0; fields[j]; j++)
				if (!json_object_get(e, fields[j]))
					return nv_err(y, item.pos, ekey, "'%s' is required (as upstream)", fields[j]);
			f = nv_member(y, e, "pattern");
			if (!json_is_string(f.v) && !json_is_null(f.v))
				return nv_err(y, f.pos, ekey, "pattern must be a string such as \"*\"");
			snprintf(ekey, sizeof(ekey), "%s[%zu].name", key, i);
			if ((r = resource_name(y, nv_member(y, e, "name"), ekey, out, sizeof(out))) < 0)
				return r;
			n++;
		}
	}
	if (n)
		return nv_warn(y, m.pos,
			       "resources: customizing resource names is not supported (as upstream); ignored");
	return 0;
}
