/* SPDX-License-Identifier: Apache-2.0 */
/* CDI versions: the versions CDI defines, the runtimes' limits, the minimum version a spec needs, name syntax. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cdi/internal.h"

/* specs-go/version.go: every version CDI defines; the Go library refuses below 0.3.0. */
static const char *const known_versions[] = {
    "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0",
};

/*
 * Runtimes and the newest cdiVersion they load; a newer spec is silently skipped by them. v_prefix:
 * the library takes "v0.5.0" as 0.5.0 (pkg/cdi/version.go from CDI 0.5.4 on); before 0.5.4 the
 * version is looked up as written and "v0.5.0" is an invalid version (docs/reference/cdi.md §1).
 */
const struct cdi_runtime cdi_runtimes[] = {
    {"podman-4.3", "0.5.0", "podman 4.3.1 (Debian 12): a 0.6.0 spec is ignored (docs/reference/real-peers.md §D)",
     false},
    {"cdi-0.5", "0.5.0",
     "CDI Go library 0.5.x specs-go CurrentVersion (Debian 0.5.2; real-peers.md §H); 0.5.0-0.5.3 refuse a "
     "'v' prefix",
     false},
    {"containerd-1.7", "0.5.0",
     "containerd 1.7.0-1.7.12 vendor CDI 0.5.x; release/1.7 moved to CDI v0.6.2 in containerd PR #9685", false},
    {"containerd-1.7.13", "0.6.0", "containerd PR #9685 (Jan 2024): CDI v0.6.2 on release/1.7", true},
    {"cdi-0.6", "0.6.0", "CDI library v0.6.x (annotations, dotted class)", true},
    {"cdi-0.7", "0.7.0", "CDI library v0.7.x (intelRdt, additionalGids)", true},
    {"cdi-0.8", "0.8.0", "CDI library v0.8.x", true},
    {"cdi-1.0", "1.0.0", "CDI library v1.0.x", true},
    {"cdi-1.1", "1.1.0", "CDI library v1.1.x (netDevices)", true},
};
const size_t cdi_n_runtimes = ELEMENTSOF(cdi_runtimes);

static const struct cdi_runtime *runtime_row(const char *runtime)
{
	for (size_t i = 0; runtime && i < cdi_n_runtimes; i++)
		if (streq(cdi_runtimes[i].name, runtime))
			return &cdi_runtimes[i];
	return NULL;
}

const char *cdi_runtime_max_version(const char *runtime)
{
	const struct cdi_runtime *r = runtime_row(runtime);

	return r ? r->max_version : NULL;
}

/*
 * Does the consuming runtime refuse "v0.5.0"? A known runtime says; a bare --runtime-cdi-version
 * below 0.6.0 may be any 0.5.x library, so the answer is yes (the safe side for a validator).
 */
bool cdi_runtime_refuses_v_prefix(const char *runtime_name, const char *runtime_version)
{
	const struct cdi_runtime *r = runtime_row(runtime_name);

	if (r)
		return !r->v_prefix;
	return runtime_version && cdi_version_cmp(runtime_version, "0.6.0") < 0;
}

/* "v1.2.3" or "1.2.3" → numbers; -EINVAL for anything else. */
int cdi_parse_version(const char *s, unsigned v[3])
{
	char tail;

	if (*s == 'v')
		s++;
	if (!isdigit((unsigned char)*s) || sscanf(s, "%u.%u.%u%c", &v[0], &v[1], &v[2], &tail) != 3)
		return -EINVAL;
	return 0;
}

int cdi_version_cmp(const char *a, const char *b)
{
	unsigned x[3] = {0}, y[3] = {0};

	(void)cdi_parse_version(a, x);
	(void)cdi_parse_version(b, y);
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

bool cdi_version_known(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(known_versions); i++)
		if (cdi_version_cmp(s, known_versions[i]) == 0)
			return true;
	return false;
}

/* ---- minimum version: one row per feature (SPEC.md version table, docs/reference/cdi.md §1) ---------- */

typedef bool (*edits_pred)(const json_t *edits);

/* True when pred holds for the spec-level edits or any device's edits. */
static bool any_edits(const json_t *spec, edits_pred pred)
{
	const json_t *dev;
	size_t i;

	if (pred(json_object_get(spec, "containerEdits")))
		return true;
	json_array_foreach (json_object_get(spec, "devices"), i, dev)
		if (pred(json_object_get(dev, "containerEdits")))
			return true;
	return false;
}

static bool array_items_have(const json_t *edits, const char *array, const char *key)
{
	const json_t *it;
	size_t i;

	json_array_foreach (json_object_get(edits, array), i, it)
		if (json_object_get(it, key))
			return true;
	return false;
}

static bool edits_mount_type(const json_t *e)
{
	return array_items_have(e, "mounts", "type");
}
static bool edits_host_path(const json_t *e)
{
	return array_items_have(e, "deviceNodes", "hostPath");
}
static bool edits_rdt_gids(const json_t *e)
{
	return json_object_get(e, "intelRdt") || json_object_get(e, "additionalGids");
}
static bool edits_net_devices(const json_t *e)
{
	const json_t *rdt = json_object_get(e, "intelRdt");

	return json_object_get(e, "netDevices") || json_object_get(rdt, "schemata") ||
	       json_object_get(rdt, "enableMonitoring");
}

static bool uses_mount_type(const json_t *s)
{
	return any_edits(s, edits_mount_type);
}
static bool uses_rdt_gids(const json_t *s)
{
	return any_edits(s, edits_rdt_gids);
}
static bool uses_net_devices(const json_t *s)
{
	return any_edits(s, edits_net_devices);
}
static bool uses_host_path_or_digit_name(const json_t *s)
{
	const json_t *dev;
	size_t i;

	json_array_foreach (json_object_get(s, "devices"), i, dev) {
		const char *name = json_string_value(json_object_get(dev, "name"));

		if (name && isdigit((unsigned char)name[0]))
			return true;
	}
	return any_edits(s, edits_host_path);
}
static bool uses_annotations_or_dotted_class(const json_t *s)
{
	const char *kind = json_string_value(json_object_get(s, "kind"));
	const char *slash = kind ? strchr(kind, '/') : NULL;
	const json_t *dev;
	size_t i;

	if (json_object_get(s, "annotations") || (slash && strchr(slash + 1, '.')))
		return true;
	json_array_foreach (json_object_get(s, "devices"), i, dev)
		if (json_object_get(dev, "annotations"))
			return true;
	return false;
}

static const struct cdi_version_rule version_rules[] = {
    /* newest first: the first match is the minimum */
    {"1.1.0", uses_net_devices, "containerEdits.netDevices or intelRdt.schemata/enableMonitoring"},
    {"0.7.0", uses_rdt_gids, "containerEdits.intelRdt or containerEdits.additionalGids"},
    {"0.6.0", uses_annotations_or_dotted_class, "annotations, or a '.' in the class part of kind"},
    {"0.5.0", uses_host_path_or_digit_name, "deviceNodes[].hostPath, or a device name starting with a digit"},
    {"0.4.0", uses_mount_type, "mounts[].type"},
};

const struct cdi_version_rule *cdi_min_version_rule(const json_t *spec)
{
	for (size_t i = 0; i < ELEMENTSOF(version_rules); i++)
		if (version_rules[i].needs(spec))
			return &version_rules[i];
	return NULL;
}

const char *cdi_min_version(const json_t *spec)
{
	const struct cdi_version_rule *r = cdi_min_version_rule(spec);

	return r ? r->version : CDI_EARLIEST_VERSION;
}

/* ---- names (pkg/parser/parser.go) -------------------------------------------------------------- */

bool cdi_name_chars(const char *s, const char *middle_extra, bool letter_first)
{
	size_t n = strlen(s);

	if (n == 0)
		return false;
	if (letter_first ? !isalpha((unsigned char)s[0]) : !isalnum((unsigned char)s[0]))
		return false;
	if (!isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(middle_extra, s[i]))
			return false;
	return true;
}

bool cdi_vendor_valid(const char *s)
{
	return cdi_name_chars(s, "_.-", true);
}

/*
 * The parser allows a 1-char class, but the CDI Go library 0.5.2 panics on one while scanning
 * a dir (real-peers.md §H), killing every consumer built on it: we require 2.
 */
bool cdi_class_valid(const char *s)
{
	return strlen(s) >= 2 && cdi_name_chars(s, "_.-", true);
}

bool cdi_device_name_valid(const char *s)
{
	return cdi_name_chars(s, "_.:-", false);
}
