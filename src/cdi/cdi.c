/* SPDX-License-Identifier: Apache-2.0 */
/* CDI specs: generate, format, read, write, validate, list. See cdi.h; facts in docs/reference/cdi.md. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "cdi/cdi.h"
#include "host/driver.h"
#include "parse/yaml.h"
#include "util/fileio.h"

#define CDI_SPEC_MAX (16u << 20) /* a spec larger than this is not a CDI spec */
#define MARKER_ENV   "GPULET_CDI_SPEC"

/* ---- versions --------------------------------------------------------------------------------- */

/* specs-go/version.go: every version CDI defines; the Go library refuses below 0.3.0. */
static const char *const known_versions[] = {
    "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0",
};
#define EARLIEST_VERSION "0.3.0"

/* Runtimes and the newest cdiVersion they load; a newer spec is silently skipped by them. */
const struct cdi_runtime cdi_runtimes[] = {
    {"podman-4.3", "0.5.0", "podman 4.3.1 (Debian 12): a 0.6.0 spec is ignored (docs/reference/real-peers.md §D)"},
    {"cdi-0.5", "0.5.0", "CDI Go library 0.5.x specs-go CurrentVersion (Debian 0.5.2; real-peers.md §H)"},
    {"containerd-1.7", "0.5.0",
     "containerd 1.7.0-1.7.12 vendor CDI 0.5.x; release/1.7 moved to CDI v0.6.2 in containerd PR #9685"},
    {"containerd-1.7.13", "0.6.0", "containerd PR #9685 (Jan 2024): CDI v0.6.2 on release/1.7"},
    {"cdi-0.6", "0.6.0", "CDI library v0.6.x (annotations, dotted class)"},
    {"cdi-0.7", "0.7.0", "CDI library v0.7.x (intelRdt, additionalGids)"},
    {"cdi-0.8", "0.8.0", "CDI library v0.8.x"},
    {"cdi-1.0", "1.0.0", "CDI library v1.0.x"},
    {"cdi-1.1", "1.1.0", "CDI library v1.1.x (netDevices)"},
};
const size_t cdi_n_runtimes = ELEMENTSOF(cdi_runtimes);

const char *cdi_runtime_max_version(const char *runtime)
{
	for (size_t i = 0; runtime && i < cdi_n_runtimes; i++)
		if (streq(cdi_runtimes[i].name, runtime))
			return cdi_runtimes[i].max_version;
	return NULL;
}

/* "v1.2.3" or "1.2.3" → numbers; -EINVAL for anything else. */
static int parse_version(const char *s, unsigned v[3])
{
	char tail;

	if (*s == 'v')
		s++;
	if (!isdigit((unsigned char)*s) || sscanf(s, "%u.%u.%u%c", &v[0], &v[1], &v[2], &tail) != 3)
		return -EINVAL;
	return 0;
}

static int version_cmp(const char *a, const char *b)
{
	unsigned x[3] = {0}, y[3] = {0};

	(void)parse_version(a, x);
	(void)parse_version(b, y);
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static bool version_known(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(known_versions); i++)
		if (version_cmp(s, known_versions[i]) == 0)
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

static const struct version_rule {
	const char *version;
	bool (*needs)(const json_t *spec);
	const char *what;
} version_rules[] = {
    /* newest first: the first match is the minimum */
    {"1.1.0", uses_net_devices, "containerEdits.netDevices or intelRdt.schemata/enableMonitoring"},
    {"0.7.0", uses_rdt_gids, "containerEdits.intelRdt or containerEdits.additionalGids"},
    {"0.6.0", uses_annotations_or_dotted_class, "annotations, or a '.' in the class part of kind"},
    {"0.5.0", uses_host_path_or_digit_name, "deviceNodes[].hostPath, or a device name starting with a digit"},
    {"0.4.0", uses_mount_type, "mounts[].type"},
};

static const struct version_rule *min_version_rule(const json_t *spec)
{
	for (size_t i = 0; i < ELEMENTSOF(version_rules); i++)
		if (version_rules[i].needs(spec))
			return &version_rules[i];
	return NULL;
}

const char *cdi_min_version(const json_t *spec)
{
	const struct version_rule *r = min_version_rule(spec);

	return r ? r->version : EARLIEST_VERSION;
}

/* ---- names (pkg/parser/parser.go) -------------------------------------------------------------- */

static bool name_chars(const char *s, const char *middle_extra, bool letter_first)
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
	return name_chars(s, "_.-", true);
}

/*
 * The parser allows a 1-char class, but the CDI Go library 0.5.2 panics on one while scanning
 * a dir (real-peers.md §H), killing every consumer built on it: we require 2.
 */
bool cdi_class_valid(const char *s)
{
	return strlen(s) >= 2 && name_chars(s, "_.-", true);
}

bool cdi_device_name_valid(const char *s)
{
	return name_chars(s, "_.:-", false);
}

/* ---- small jansson helpers --------------------------------------------------------------------- */

/* json_object_set_new / json_array_append_new that report -ENOMEM (they consume v either way). */
static int jset(json_t *o, const char *k, json_t *v)
{
	return v && json_object_set_new(o, k, v) == 0 ? 0 : -ENOMEM;
}

static int jpush(json_t *a, json_t *v)
{
	return v && json_array_append_new(a, v) == 0 ? 0 : -ENOMEM;
}

static bool env_has(const json_t *env, const char *entry)
{
	const json_t *e;
	size_t i;

	json_array_foreach (env, i, e)
		if (json_is_string(e) && streq(json_string_value(e), entry))
			return true;
	return false;
}

/* ---- generation -------------------------------------------------------------------------------- */

/* Mount options per driver file kind (nvidia-ctk internal/discover: mounts.go, ipc.go). */
static const char *const lib_mount_options[] = {"ro", "nosuid", "nodev", "rbind", "rprivate", NULL};
static const char *const ipc_mount_options[] = {"nosuid", "nodev", "rbind", "rprivate", "noexec", NULL};
static const char *const *const mount_options[_DRIVER_KIND_MAX] = {
    [DRIVER_LIBRARY] = lib_mount_options,
    [DRIVER_FIRMWARE] = lib_mount_options,
    [DRIVER_BINARY] = lib_mount_options,
    [DRIVER_IPC_SOCKET] = ipc_mount_options,
};

struct gen {
	const struct cdi_gen_options *o;
	const char *dev_root;
	json_t *devices;
	json_t *all_nodes; /* union for the "all" device */
};

static char *join_host(const char *base, const char *path)
{
	if (!base || !*base || streq(base, "/"))
		return strdup(path);
	return root_path(base, path);
}

/*
 * A deviceNodes entry. No type/major/minor: the runtime stats hostPath when it injects, so a
 * node re-created with another dynamic major (nvidia-uvm, nvidia-caps) stays right.
 * hostPath only when it differs from path (it needs cdiVersion 0.5.0).
 */
static json_t *device_node(const char *dev_root, const char *path, const char *host)
{
	_cleanup_free_ char *h = host ? NULL : join_host(dev_root, path);
	json_t *o = json_object();

	if (!host)
		host = h;
	if (!o || !host || jset(o, "path", json_string(path)) < 0 ||
	    (!streq(host, path) && jset(o, "hostPath", json_string(host)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static bool nodes_have_path(const json_t *nodes, const char *path)
{
	const json_t *n;
	size_t i;

	json_array_foreach (nodes, i, n)
		if (streq(json_string_value(json_object_get(n, "path")), path))
			return true;
	return false;
}

/* Append a device node for path to nodes (and to the "all" union). */
static int push_node(struct gen *g, json_t *nodes, const char *path)
{
	json_t *n = device_node(g->dev_root, path, NULL);

	if (!n)
		return -ENOMEM;
	if (!nodes_have_path(g->all_nodes, path) && json_array_append(g->all_nodes, n) < 0) {
		json_decref(n);
		return -ENOMEM;
	}
	return jpush(nodes, n);
}

static int add_device(struct gen *g, const char *name, const json_t *nodes)
{
	json_t *dev = json_object(), *edits = json_object();

	if (!dev || !edits || jset(dev, "name", json_string(name)) < 0 ||
	    jset(edits, "deviceNodes", json_deep_copy(nodes)) < 0) {
		json_decref(dev);
		json_decref(edits);
		return -ENOMEM;
	}
	if (jset(dev, "containerEdits", edits) < 0) {
		json_decref(dev);
		return -ENOMEM;
	}
	return jpush(g->devices, dev);
}

/* One device per selected name for these nodes. */
static int add_named(struct gen *g, const char *index_name, const char *uuid, const json_t *nodes)
{
	unsigned names = g->o->names ? g->o->names : CDI_NAMES_BOTH;
	int r = 0;

	if (names & CDI_NAMES_INDEX)
		r = add_device(g, index_name, nodes);
	if (r == 0 && (names & CDI_NAMES_UUID) && uuid[0])
		r = add_device(g, uuid, nodes);
	return r;
}

static int drm_filter(const struct dirent *de)
{
	return strncmp(de->d_name, "card", 4) == 0 || strncmp(de->d_name, "renderD", 7) == 0;
}

/*
 * DRM nodes of a full GPU: the card* and renderD* entries of its sysfs drm/ dir become
 * /dev/dri/<name> (nvidia-ctk internal/platform-support/dgpu/nvml.go; sysfs read under --root).
 */
static int push_drm_nodes(struct gen *g, json_t *nodes, const struct node_gpu *gpu)
{
	const char *rest = strchr(gpu->pci_bus_id, ':');
	_cleanup_free_ char *dir = NULL;
	struct dirent **list = NULL;
	char rel[128];
	unsigned dom;
	int n, r = 0;

	if (!rest || sscanf(gpu->pci_bus_id, "%x:", &dom) != 1)
		return 0;
	/* NVML "00000000:07:00.0" -> sysfs "0000:07:00.0" */
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%04x%s/drm", dom, rest);
	for (char *c = rel; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	dir = root_path(g->o->root, rel);
	if (!dir)
		return -ENOMEM;
	n = scandir(dir, &list, drm_filter, alphasort);
	for (int i = 0; i < n; i++) {
		char path[300];

		snprintf(path, sizeof(path), "/dev/dri/%s", list[i]->d_name);
		if (r == 0)
			r = push_node(g, nodes, path);
		free(list[i]);
	}
	free(list);
	return r;
}

static int gen_gpu(struct gen *g, const struct node_gpu *gpu)
{
	json_auto_t *nodes = json_array();
	char path[64], name[32];
	int r;

	if (!nodes)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/dev/nvidia%u", gpu->minor);
	r = push_node(g, nodes, path);
	if (r < 0)
		return r;
	/* MIG enabled: only the MIG devices are usable (nvidia-ctk skips the full GPU too). */
	if (!gpu->mig_enabled) {
		json_auto_t *full = json_deep_copy(nodes);

		snprintf(name, sizeof(name), "%u", gpu->index);
		r = full ? push_drm_nodes(g, full, gpu) : -ENOMEM;
		if (r == 0)
			r = add_named(g, name, gpu->uuid, full);
	}
	for (size_t i = 0; r == 0 && i < gpu->n_migs; i++) {
		const struct node_mig *m = &gpu->migs[i];
		json_auto_t *mig_nodes = json_deep_copy(nodes);
		const int caps[] = {m->gi_cap_minor, m->ci_cap_minor};

		if (!mig_nodes)
			return -ENOMEM;
		/* /proc/driver/nvidia-caps/mig-minors → /dev/nvidia-caps/nvidia-cap<N> (nvcaps.go) */
		for (size_t c = 0; r == 0 && c < ELEMENTSOF(caps); c++)
			if (caps[c] >= 0) {
				snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%d", caps[c]);
				r = push_node(g, mig_nodes, path);
			}
		snprintf(name, sizeof(name), "%u:%u", gpu->index, m->index);
		if (r == 0)
			r = add_named(g, name, m->uuid, mig_nodes);
	}
	return r;
}

static int gen_common_edits(const struct cdi_gen_options *o, const struct driver_info *d, const char *kind,
			    json_t **ret)
{
	json_auto_t *edits = json_object(), *env = json_array(), *nodes = json_array(), *mounts = json_array();
	_cleanup_free_ char *libdirs = NULL, *marker = NULL;
	size_t len = 0;
	FILE *f;

	if (!edits || !env || !nodes || !mounts)
		return -ENOMEM;
	/* NVIDIA_VISIBLE_DEVICES=void: the legacy nvidia hook must not inject a second time. */
	if (jpush(env, json_string("NVIDIA_VISIBLE_DEVICES=void")) < 0)
		return -ENOMEM;
	if (d->n_lib_dirs > 0) {
		f = open_memstream(&libdirs, &len);
		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < d->n_lib_dirs; i++)
			fprintf(f, "%s%s", i ? ":" : "", d->lib_dirs[i]);
		if (fclose(f) != 0)
			return -ENOMEM;
		/* nvidia-ctk's variable for the dir of libcuda.so.<version> (docs/reference/cdi.md §7.1) */
		if (jpush(env, json_sprintf("NVIDIA_CTK_LIBCUDA_DIR=%s", libdirs)) < 0)
			return -ENOMEM;
	}
	if (o->owner_marker && jpush(env, json_sprintf(MARKER_ENV "=%s", kind)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_files; i++) {
		const struct driver_file *df = &d->files[i];
		json_t *m;

		if (df->kind == DRIVER_DEVICE_NODE) {
			if (jpush(nodes, device_node(NULL, df->container_path, df->host_path)) < 0)
				return -ENOMEM;
			continue;
		}
		m = json_pack("{s:s, s:s, s:[]}", "hostPath", df->host_path, "containerPath", df->container_path,
			      "options");
		if (!m)
			return -ENOMEM;
		for (const char *const *opt = mount_options[df->kind]; opt && *opt; opt++)
			if (jpush(json_object_get(m, "options"), json_string(*opt)) < 0) {
				json_decref(m);
				return -ENOMEM;
			}
		if (jpush(mounts, m) < 0)
			return -ENOMEM;
	}
	if (jset(edits, "env", json_incref(env)) < 0 ||
	    (json_array_size(nodes) && jset(edits, "deviceNodes", json_incref(nodes)) < 0) ||
	    (json_array_size(mounts) && jset(edits, "mounts", json_incref(mounts)) < 0))
		return -ENOMEM;
	*ret = TAKE_PTR(edits);
	return 0;
}

int cdi_generate(const struct node *n, const struct cdi_gen_options *o, json_t **ret, struct gerr *err)
{
	const char *vendor = o->vendor ? o->vendor : "nvidia.com", *class = o->class ? o->class : "gpu";
	const char *driver_root = o->driver_root && *o->driver_root ? o->driver_root : "/";
	struct driver_options dopt = {
	    .root = o->root,
	    .driver_root = driver_root,
	    .dev_root = o->dev_root,
	    .version = n->driver_version[0] ? n->driver_version : NULL,
	};
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	json_auto_t *spec = json_object(), *devices = json_array(), *all = json_array(), *edits = NULL;
	_cleanup_free_ char *kind = NULL;
	struct gen g = {.o = o, .devices = devices, .all_nodes = all};
	int r = 0;

	if (!cdi_vendor_valid(vendor) || !cdi_class_valid(class))
		return gerr_set(
		    err, EINVAL,
		    "invalid CDI kind '%s/%s': vendor and class start with a letter, end with a letter or "
		    "digit, use only letters, digits, '_', '.', '-', and the class has at least 2 characters",
		    vendor, class);
	if (!spec || !devices || !all || asprintf(&kind, "%s/%s", vendor, class) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	g.dev_root = o->dev_root && *o->dev_root ? o->dev_root : driver_root;
	for (size_t i = 0; r == 0 && i < n->n_gpus; i++)
		if (n->gpus[i].uuid[0])
			r = gen_gpu(&g, &n->gpus[i]);
	if (r == 0 && !o->no_all_device && json_array_size(all) > 0)
		r = add_device(&g, "all", all);
	if (r < 0)
		return gerr_set(err, -r, "building the CDI spec: %s", strerror(-r));
	if (json_array_size(devices) == 0)
		return gerr_set(err, ENODEV,
				"no GPUs on this node, so no CDI devices; a spec without devices is invalid. Check "
				"'gpulet devices' and the driver");
	r = driver_discover(&dopt, &d, err);
	if (r < 0)
		return r;
	if (gen_common_edits(o, d, kind, &edits) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	/* Key order is the output order (jansson keeps insertion order). */
	if (jset(spec, "cdiVersion", json_string(EARLIEST_VERSION)) < 0 || jset(spec, "kind", json_string(kind)) < 0 ||
	    jset(spec, "devices", json_incref(devices)) < 0 || jset(spec, "containerEdits", json_incref(edits)) < 0 ||
	    jset(spec, "cdiVersion", json_string(cdi_min_version(spec))) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(spec);
	return 0;
}

/* ---- YAML output -------------------------------------------------------------------------------- */

/* A plain scalar a YAML 1.1 reader (go-yaml v2, PyYAML) would not read back as this string. */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = {"y",   "yes",  "n", "no",   "true", "false", "on",
					    "off", "null", "~", ".inf", ".nan", "-.inf", "+.inf"};
	size_t n = strlen(s);

	if (n == 0 || isdigit((unsigned char)s[0]) || s[0] == '.' || s[0] == '+' ||
	    (s[0] == '-' && (n == 1 || isdigit((unsigned char)s[1]) || s[1] == '.')))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return false;
}

static int emit(yaml_emitter_t *e, yaml_event_t *ev)
{
	return yaml_emitter_emit(e, ev) ? 0 : -EIO;
}

static int emit_scalar(yaml_emitter_t *e, const char *s, bool quote)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
					  quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE))
		return -ENOMEM;
	return emit(e, &ev);
}

static int emit_json(yaml_emitter_t *e, const json_t *j)
{
	yaml_event_t ev;
	const char *key;
	json_t *v;
	size_t i;
	char buf[64];
	int r = 0;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
		    emit(e, &ev) < 0)
			return -EIO;
		json_object_foreach ((json_t *)j, key, v) {
			if ((r = emit_scalar(e, key, needs_quotes(key))) < 0 || (r = emit_json(e, v)) < 0)
				return r;
		}
		return yaml_mapping_end_event_initialize(&ev) ? emit(e, &ev) : -ENOMEM;
	case JSON_ARRAY:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
		    emit(e, &ev) < 0)
			return -EIO;
		json_array_foreach (j, i, v)
			if ((r = emit_json(e, v)) < 0)
				return r;
		return yaml_sequence_end_event_initialize(&ev) ? emit(e, &ev) : -ENOMEM;
	case JSON_STRING:
		return emit_scalar(e, json_string_value(j), needs_quotes(json_string_value(j)));
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return emit_scalar(e, buf, false);
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(j));
		return emit_scalar(e, buf, false);
	case JSON_TRUE:
		return emit_scalar(e, "true", false);
	case JSON_FALSE:
		return emit_scalar(e, "false", false);
	default:
		return emit_scalar(e, "null", false);
	}
}

static int format_yaml(const json_t *spec, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	yaml_emitter_t e;
	yaml_event_t ev;
	FILE *f = open_memstream(&buf, &len);
	int r = -ENOMEM;

	if (!f)
		return -ENOMEM;
	if (!yaml_emitter_initialize(&e)) {
		fclose(f);
		return -ENOMEM;
	}
	yaml_emitter_set_output_file(&e, f);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	if (yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && emit(&e, &ev) == 0 &&
	    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0) && emit(&e, &ev) == 0 &&
	    emit_json(&e, spec) == 0 && yaml_document_end_event_initialize(&ev, 1) && emit(&e, &ev) == 0 &&
	    yaml_stream_end_event_initialize(&ev) && emit(&e, &ev) == 0)
		r = 0;
	yaml_emitter_delete(&e);
	if (fclose(f) != 0 || r < 0)
		return -EIO;
	*ret = TAKE_PTR(buf);
	return 0;
}

int cdi_format_spec(const json_t *spec, enum cdi_format fmt, char **ret, struct gerr *err)
{
	char *s;
	int r;

	if (fmt == CDI_FORMAT_YAML) {
		r = format_yaml(spec, ret);
		return r < 0 ? gerr_set(err, -r, "cannot format the spec as YAML") : 0;
	}
	s = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!s)
		return gerr_set(err, ENOMEM, "out of memory");
	/* json_dumps output has no trailing newline; files and terminals want one. */
	r = asprintf(ret, "%s\n", s);
	free(s);
	return r < 0 ? gerr_set(err, ENOMEM, "out of memory") : 0;
}

/* ---- reading ------------------------------------------------------------------------------------ */

/* YAML through the one reader, strict about duplicate keys as the CDI library (yaml.UnmarshalStrict) */
static int parse_yaml(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	json_t *doc = NULL;
	int r;

	r = yaml_to_json(text, len, name, YAML_STRICT, &doc, NULL, err);
	if (r < 0)
		return r;
	if (!json_is_object(doc)) {
		json_decref(doc);
		return gerr_set(err, EINVAL, "%s: a CDI spec is a mapping (object) at the top level", name);
	}
	*ret = doc;
	return 0;
}

static bool has_ext(const char *name, const char *ext)
{
	size_t a = strlen(name), b = strlen(ext);

	return a > b && streq(name + a - b, ext);
}

int cdi_parse_spec(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	json_error_t je;
	json_t *j;

	if (!has_ext(name, ".json"))
		return parse_yaml(name, text, len, ret, err);
	/* jansson for *.json: exact line:column and duplicate keys, like the strict Go decoder. */
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return gerr_set(err, EINVAL, "%s:%d:%d: %s", name, je.line, je.column, je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return gerr_set(err, EINVAL, "%s: a CDI spec is a JSON object at the top level", name);
	}
	*ret = j;
	return 0;
}

int cdi_read_spec(const char *path, json_t **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file(path, CDI_SPEC_MAX, &text, &len, err);
	if (r < 0)
		return r;
	return cdi_parse_spec(path, text, len, ret, err);
}

/* ---- writing ------------------------------------------------------------------------------------ */

static bool spec_is_ours(const json_t *spec, const char *kind)
{
	_cleanup_free_ char *marker = NULL;

	if (!kind || asprintf(&marker, MARKER_ENV "=%s", kind) < 0)
		return false;
	return env_has(json_object_get(json_object_get(spec, "containerEdits"), "env"), marker);
}

/* mkdir -p of dir (0755); refuses when dir itself is a symlink or not a directory. */
static int ensure_spec_dir(const char *dir, struct gerr *err)
{
	_cleanup_free_ char *copy = strdup(dir);
	struct stat st;

	if (!copy)
		return gerr_set(err, ENOMEM, "out of memory");
	if (lstat(dir, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX] = "?";
			ssize_t n = readlink(dir, target, sizeof(target) - 1);

			if (n >= 0)
				target[n] = 0;
			return gerr_set(err, ELOOP,
					"CDI spec dir %s is a symlink to %s; refusing to write through it (a runtime "
					"may read a different dir). Replace it with a real directory",
					dir, target);
		}
		if (!S_ISDIR(st.st_mode))
			return gerr_set(err, ENOTDIR, "CDI spec dir %s exists but is not a directory", dir);
		return 0;
	}
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return gerr_set(err, errno, "cannot create %s: %s", copy, strerror(errno));
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return gerr_set(err, errno, "cannot create CDI spec dir %s: %s", dir, strerror(errno));
	return 0;
}

int cdi_write_spec(const char *dir, const char *file_name, json_t *spec, struct gerr *err)
{
	_cleanup_free_ char *path = NULL, *data = NULL, *old = NULL;
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	bool yaml = has_ext(file_name, ".yaml");
	size_t old_len;
	struct stat st;
	int r;

	if (strchr(file_name, '/') || (!yaml && !has_ext(file_name, ".json")))
		return gerr_set(err, EINVAL,
				"CDI spec file name '%s' must be a plain name ending in .json or .yaml (runtimes read "
				"only those)",
				file_name);
	r = ensure_spec_dir(dir, err);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/%s", dir, file_name) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = cdi_format_spec(spec, yaml ? CDI_FORMAT_YAML : CDI_FORMAT_JSON, &data, err);
	if (r < 0)
		return r;
	if (lstat(path, &st) == 0) {
		json_auto_t *existing = NULL;
		struct gerr perr = {0};

		if (!S_ISREG(st.st_mode))
			return gerr_set(err, EEXIST, "%s exists and is not a regular file; not replacing it", path);
		r = read_file(path, CDI_SPEC_MAX, &old, &old_len, err);
		if (r < 0)
			return r;
		if (old_len == strlen(data) && memcmp(old, data, old_len) == 0 && (st.st_mode & 07777) == 0644)
			return 0; /* unchanged: no rename, no inotify event for the runtimes */
		if (cdi_parse_spec(path, old, old_len, &existing, &perr) < 0 || !spec_is_ours(existing, kind))
			return gerr_set(err, EEXIST,
					"%s exists and was not written by gpulet for kind %s (no %s entry); not "
					"replacing it. Move it away, or choose another file name",
					path, kind ? kind : "?", MARKER_ENV);
	}
	return write_file_atomic(path, data, strlen(data), 0644, err);
}

/* ---- validation --------------------------------------------------------------------------------- */

/* Problem codes: stable names, the doctor category, severity and the default fix. */
static const struct code_info {
	const char *code;
	const char *category;
	bool error;
	const char *fix;
} codes[] = {
    {"parse-error", "spec-invalid", true, "fix the syntax at the position given; a runtime skips the whole file"},
    {"missing-file", "spec-missing", true,
     "check the path: runtimes read specs from cdi_spec_dirs (/etc/cdi, /var/run/cdi)"},
    {"unreadable", "spec-unreadable", true,
     "make the file readable by the runtime user (chmod 0644 FILE, and a+x on its directories)"},
    {"dir-unreadable", "spec-unreadable", true,
     "make the dir listable by the runtime user (chmod 0755 DIR), or fix cdi_spec_dirs"},
    {"unknown-field", "spec-invalid", true,
     "remove the field or fix its spelling; CDI parsing is strict and rejects the whole file"},
    {"missing-field", "spec-invalid", true, "add the field; the runtime rejects the file without it"},
    {"wrong-type", "spec-invalid", true, "use the JSON type the CDI spec defines for this field"},
    {"invalid-version", "spec-invalid", true, "use a cdiVersion CDI defines (0.3.0 ... 1.1.0)"},
    {"version-too-new", "version-too-new", true,
     "regenerate with the lowest cdiVersion covering the fields used (gpulet cdi generate does), or "
     "upgrade the runtime"},
    {"version-too-low", "spec-invalid", true,
     "raise cdiVersion to the version named, or drop the field; CDI libraries from 0.6 refuse the file "
     "(0.5 loads it)"},
    {"invalid-kind", "spec-invalid", true,
     "kind is vendor/class: start with a letter, end with a letter or digit, middle letters, digits, '_', "
     "'.', '-'"},
    {"class-too-short", "spec-invalid", true,
     "use a class of 2 or more characters (e.g. gpu); a 1-character class crashes the CDI 0.5 Go library"},
    {"invalid-device-name", "spec-invalid", true,
     "device names start and end with a letter or digit; middle letters, digits, '_', '.', ':', '-'"},
    {"duplicate-name", "spec-invalid", true, "give every device in a spec a distinct name"},
    {"no-devices", "spec-invalid", true, "a spec needs at least one device"},
    {"empty-edits", "spec-invalid", true, "give the device at least one env, deviceNode, mount or hook"},
    {"invalid-env", "spec-invalid", true, "env entries are NAME=value with a non-empty NAME"},
    {"invalid-hook", "spec-invalid", true,
     "hookName is one of prestart, createRuntime, createContainer, startContainer, poststart, poststop"},
    {"invalid-path", "spec-invalid", true, "use an absolute path"},
    {"invalid-value", "spec-invalid", true, "use a value the CDI spec allows for this field"},
    {"duplicate-device", "duplicate-device", true,
     "define the device in one file per dir: at one priority the runtime drops a device defined twice"},
    {"shadowed-device", "warning", false,
     "remove the older definition; the later dir (/var/run/cdi) wins and this one is never used"},
    {"host-path-missing", "stale-devices", true,
     "regenerate the spec (gpulet cdi generate) after a driver or GPU change, or remove the entry"},
    {"not-a-device-node", "stale-devices", true, "point hostPath at a character or block device"},
    {"not-scanned", "warning", false, "rename the file to .json or .yaml; runtimes read only those"},
};

static const struct code_info *code_info(const char *code)
{
	for (size_t i = 0; i < ELEMENTSOF(codes); i++)
		if (streq(codes[i].code, code))
			return &codes[i];
	return &codes[0];
}

struct vctx {
	const struct cdi_validate_options *o;
	struct cdi_report *rep;
	const char *file;
	int oom;
	const char *version; /* the spec's cdiVersion when valid, else NULL */
};

static char *safe_strdup(const char *s)
{
	return strdup(s ? s : "");
}

_printf_(5, 6) static void problem(struct vctx *v, const char *code, const char *path, const char *fix, const char *fmt,
				   ...)
{
	const struct code_info *ci = code_info(code);
	struct cdi_report *rep = v->rep;
	struct cdi_problem *p, *np;
	va_list ap;
	int r;

	np = realloc(rep->problems, (rep->n_problems + 1) * sizeof(*np));
	if (!np) {
		v->oom = 1;
		return;
	}
	rep->problems = np;
	p = &np[rep->n_problems];
	*p = (struct cdi_problem){.code = ci->code, .category = ci->category, .error = ci->error};
	va_start(ap, fmt);
	r = vasprintf(&p->message, fmt, ap);
	va_end(ap);
	p->file = safe_strdup(v->file);
	p->json_path = safe_strdup(path);
	p->fix = safe_strdup(fix ? fix : ci->fix);
	if (r < 0 || !p->file || !p->json_path || !p->fix) {
		if (r >= 0)
			free(p->message);
		free(p->file);
		free(p->json_path);
		free(p->fix);
		v->oom = 1;
		return;
	}
	rep->n_problems++;
	if (ci->error)
		rep->n_errors++;
}

enum ftype { F_STRING, F_INT, F_UINT32, F_BOOL, F_OBJECT, F_ARRAY, F_STRING_ARRAY, F_STRING_MAP, F_UINT32_ARRAY };

static const char *const ftype_names[] = {
    [F_STRING] = "a string",
    [F_INT] = "an integer",
    [F_UINT32] = "an integer 0..4294967295",
    [F_BOOL] = "true or false",
    [F_OBJECT] = "an object",
    [F_ARRAY] = "a list of objects",
    [F_STRING_ARRAY] = "a list of strings",
    [F_STRING_MAP] = "an object of string values",
    [F_UINT32_ARRAY] = "a list of integers 0..4294967295",
};

struct field;
typedef void (*check_fn)(struct vctx *v, const json_t *value, const char *path);

struct field {
	const char *key;
	enum ftype type;
	bool required;
	const struct field *sub; /* F_OBJECT: its fields; F_ARRAY: each element's fields */
	check_fn check;          /* on the value; for F_ARRAY on each element */
};

/* A host path as the runtime sees it, read under --root. */
static int stat_host(const struct vctx *v, const char *path, struct stat *st)
{
	_cleanup_free_ char *p = root_path(v->o->root, path);

	if (!p)
		return -ENOMEM;
	return stat(p, st) < 0 ? -errno : 0;
}

static void check_abs_path(struct vctx *v, const json_t *s, const char *path)
{
	if (json_string_value(s)[0] != '/')
		problem(v, "invalid-path", path, NULL, "'%s' is not an absolute path", json_string_value(s));
}

static void check_env(struct vctx *v, const json_t *a, const char *path)
{
	const json_t *e;
	size_t i;

	json_array_foreach (a, i, e) {
		const char *eq = strchr(json_string_value(e), '=');

		if (!eq || eq == json_string_value(e))
			problem(v, "invalid-env", path, NULL, "env entry %zu '%s' is not NAME=value", i,
				json_string_value(e));
	}
}

static void check_node_type(struct vctx *v, const json_t *s, const char *path)
{
	const char *t = json_string_value(s);

	if (!streq(t, "") && !streq(t, "b") && !streq(t, "c") && !streq(t, "u") && !streq(t, "p"))
		problem(v, "invalid-value", path, "use \"c\" (char), \"b\" (block), \"u\" or \"p\", or leave it out",
			"device node type '%s' is not b, c, u or p", t);
}

static void check_permissions(struct vctx *v, const json_t *s, const char *path)
{
	const char *p = json_string_value(s);

	if (strspn(p, "rwm") != strlen(p) && !streq(p, "none"))
		problem(v, "invalid-value", path, "use a combination of r, w and m",
			"permissions '%s' is not a subset of rwm", p);
}

static void check_hook_name(struct vctx *v, const json_t *s, const char *path)
{
	/* pkg/cdi/container-edits.go validHookNames */
	static const char *const names[] = {"prestart",       "createRuntime", "createContainer",
					    "startContainer", "poststart",     "poststop"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(json_string_value(s), names[i]))
			return;
	problem(v, "invalid-hook", path, NULL, "unknown hookName '%s'", json_string_value(s));
}

static void check_timeout(struct vctx *v, const json_t *i, const char *path)
{
	if (json_integer_value(i) <= 0)
		problem(v, "invalid-value", path, "give a timeout in seconds greater than 0, or leave it out",
			"hook timeout %" JSON_INTEGER_FORMAT " is not positive", json_integer_value(i));
}

static void check_device_name(struct vctx *v, const json_t *s, const char *path)
{
	if (!cdi_device_name_valid(json_string_value(s)))
		problem(v, "invalid-device-name", path, NULL, "device name '%s' is not a valid CDI device name",
			json_string_value(s));
}

static void check_host_exists(struct vctx *v, const char *host, const char *path, bool want_device)
{
	struct stat st;
	int r;

	if (v->o->no_host_paths)
		return;
	r = stat_host(v, host, &st);
	if (r == -ENOENT || r == -ENOTDIR)
		problem(v, "host-path-missing", path, NULL, "host path %s does not exist", host);
	else if (r == 0 && want_device && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		problem(v, "not-a-device-node", path, NULL, "%s is not a device node; the runtime refuses to inject it",
			host);
}

static void check_device_node(struct vctx *v, const json_t *n, const char *path)
{
	const char *host = json_string_value(json_object_get(n, "hostPath"));
	const char *type = json_string_value(json_object_get(n, "type"));
	char sub[512];

	if (!host || !*host)
		host = json_string_value(json_object_get(n, "path"));
	/* With type and major given the runtime does not stat the host (container-edits_unix.go). */
	if (!host || (type && *type && json_integer_value(json_object_get(n, "major")) != 0))
		return;
	snprintf(sub, sizeof(sub), "%s.%s", path, json_object_get(n, "hostPath") ? "hostPath" : "path");
	check_host_exists(v, host, sub, true);
}

static void check_mount(struct vctx *v, const json_t *m, const char *path)
{
	const char *host = json_string_value(json_object_get(m, "hostPath"));
	char sub[512];

	snprintf(sub, sizeof(sub), "%s.hostPath", path);
	if (host && host[0] == '/')
		check_host_exists(v, host, sub, false);
}

static void check_hook(struct vctx *v, const json_t *h, const char *path)
{
	const char *p = json_string_value(json_object_get(h, "path"));
	char sub[512];

	snprintf(sub, sizeof(sub), "%s.path", path);
	if (p && p[0] == '/')
		check_host_exists(v, p, sub, false);
}

static void check_edits_nonempty(struct vctx *v, const json_t *e, const char *path)
{
	static const char *const keys[] = {"env",      "deviceNodes",    "mounts",    "hooks",
					   "intelRdt", "additionalGids", "netDevices"};

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const json_t *x = json_object_get(e, keys[i]);

		if (x && !json_is_null(x) && (!json_is_array(x) || json_array_size(x) > 0))
			return;
	}
	problem(v, "empty-edits", path, NULL, "the device's containerEdits are empty; the runtime rejects the spec");
}

static void check_kind(struct vctx *v, const json_t *s, const char *path)
{
	const char *kind = json_string_value(s), *slash = strchr(kind, '/');
	_cleanup_free_ char *vendor = slash ? strndup(kind, (size_t)(slash - kind)) : NULL;
	const char *class = slash ? slash + 1 : "";

	if (!slash || !vendor || !cdi_vendor_valid(vendor) || !name_chars(class, "_.-", true))
		problem(v, "invalid-kind", path, NULL, "kind '%s' is not vendor/class", kind);
	else if (strlen(class) < 2)
		problem(v, "class-too-short", path, NULL, "class '%s' of kind '%s' has 1 character", class, kind);
}

static void check_version(struct vctx *v, const json_t *s, const char *path)
{
	const char *ver = json_string_value(s);
	unsigned n[3];

	if (parse_version(ver, n) < 0 || !version_known(ver)) {
		problem(v, "invalid-version", path, NULL, "cdiVersion '%s' is not a version CDI defines", ver);
		return;
	}
	if (version_cmp(ver, EARLIEST_VERSION) < 0) {
		problem(v, "invalid-version", path, "use cdiVersion 0.3.0 or later",
			"cdiVersion %s is older than any runtime loads (earliest " EARLIEST_VERSION ")", ver);
		return;
	}
	v->version = ver;
	if (v->o->runtime_version && version_cmp(ver, v->o->runtime_version) > 0)
		problem(v, "version-too-new", path, NULL,
			"cdiVersion %s is newer than the runtime%s%s understands (at most %s): it ignores the whole "
			"file and its devices are unresolvable",
			ver, v->o->runtime_name ? " " : "", v->o->runtime_name ? v->o->runtime_name : "",
			v->o->runtime_version);
}

static const struct field node_fields[] = {
    {"path", F_STRING, true, NULL, check_abs_path},
    {"hostPath", F_STRING, false, NULL, check_abs_path},
    {"type", F_STRING, false, NULL, check_node_type},
    {"major", F_INT, false, NULL, NULL},
    {"minor", F_INT, false, NULL, NULL},
    {"fileMode", F_INT, false, NULL, NULL},
    {"permissions", F_STRING, false, NULL, check_permissions},
    {"uid", F_UINT32, false, NULL, NULL},
    {"gid", F_UINT32, false, NULL, NULL},
    {0},
};
static const struct field mount_fields[] = {
    {"hostPath", F_STRING, true, NULL, NULL},
    {"containerPath", F_STRING, true, NULL, NULL},
    {"options", F_STRING_ARRAY, false, NULL, NULL},
    {"type", F_STRING, false, NULL, NULL},
    {0},
};
static const struct field hook_fields[] = {
    {"hookName", F_STRING, true, NULL, check_hook_name}, {"path", F_STRING, true, NULL, check_abs_path},
    {"args", F_STRING_ARRAY, false, NULL, NULL},         {"env", F_STRING_ARRAY, false, NULL, check_env},
    {"timeout", F_INT, false, NULL, check_timeout},      {0},
};
static const struct field rdt_fields[] = {
    {"closID", F_STRING, false, NULL, NULL},         {"l3CacheSchema", F_STRING, false, NULL, NULL},
    {"memBwSchema", F_STRING, false, NULL, NULL},    {"schemata", F_STRING_ARRAY, false, NULL, NULL},
    {"enableMonitoring", F_BOOL, false, NULL, NULL}, {"enableCMT", F_BOOL, false, NULL, NULL},
    {"enableMBM", F_BOOL, false, NULL, NULL},        {0},
};
static const struct field net_fields[] = {
    {"hostInterfaceName", F_STRING, true, NULL, NULL},
    {"name", F_STRING, true, NULL, NULL},
    {0},
};
static const struct field edits_fields[] = {
    {"env", F_STRING_ARRAY, false, NULL, check_env},
    {"deviceNodes", F_ARRAY, false, node_fields, check_device_node},
    {"mounts", F_ARRAY, false, mount_fields, check_mount},
    {"hooks", F_ARRAY, false, hook_fields, check_hook},
    {"intelRdt", F_OBJECT, false, rdt_fields, NULL},
    {"additionalGids", F_UINT32_ARRAY, false, NULL, NULL},
    {"netDevices", F_ARRAY, false, net_fields, NULL},
    {0},
};
static const struct field device_fields[] = {
    {"name", F_STRING, true, NULL, check_device_name},
    {"annotations", F_STRING_MAP, false, NULL, NULL},
    {"containerEdits", F_OBJECT, true, edits_fields, check_edits_nonempty},
    {0},
};
static const struct field spec_fields[] = {
    {"cdiVersion", F_STRING, true, NULL, check_version},     {"kind", F_STRING, true, NULL, check_kind},
    {"annotations", F_STRING_MAP, false, NULL, NULL},        {"devices", F_ARRAY, true, device_fields, NULL},
    {"containerEdits", F_OBJECT, false, edits_fields, NULL}, {0},
};

static bool is_uint32(const json_t *j)
{
	return json_is_integer(j) && json_integer_value(j) >= 0 && json_integer_value(j) <= 4294967295LL;
}

static bool array_all(const json_t *a, bool (*pred)(const json_t *))
{
	const json_t *e;
	size_t i;

	json_array_foreach (a, i, e)
		if (!pred(e))
			return false;
	return true;
}

static bool is_string(const json_t *j)
{
	return json_is_string(j);
}

static bool type_ok(enum ftype t, const json_t *j)
{
	const json_t *val;
	const char *key;

	switch (t) {
	case F_STRING:
		return json_is_string(j);
	case F_INT:
		return json_is_integer(j);
	case F_UINT32:
		return is_uint32(j);
	case F_BOOL:
		return json_is_boolean(j);
	case F_OBJECT:
		return json_is_object(j);
	case F_ARRAY:
		return json_is_array(j);
	case F_STRING_ARRAY:
		return json_is_array(j) && array_all(j, is_string);
	case F_UINT32_ARRAY:
		return json_is_array(j) && array_all(j, is_uint32);
	case F_STRING_MAP:
		if (!json_is_object(j))
			return false;
		json_object_foreach ((json_t *)j, key, val)
			if (!json_is_string(val))
				return false;
		return true;
	}
	return false;
}

static void walk(struct vctx *v, const json_t *obj, const struct field *fields, const char *path);

static void walk_field(struct vctx *v, const struct field *f, const json_t *val, const char *path)
{
	char sub[512];
	const json_t *e;
	size_t i;

	if (!type_ok(f->type, val)) {
		problem(v, "wrong-type", path, NULL, "%s must be %s", f->key, ftype_names[f->type]);
		return;
	}
	if (f->type == F_OBJECT) {
		walk(v, val, f->sub, path);
		if (f->check)
			f->check(v, val, path);
		return;
	}
	if (f->type != F_ARRAY) {
		if (f->check)
			f->check(v, val, path);
		return;
	}
	json_array_foreach (val, i, e) {
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if (!json_is_object(e)) {
			problem(v, "wrong-type", sub, NULL, "each entry of %s must be an object", f->key);
			continue;
		}
		walk(v, e, f->sub, sub);
		if (f->check)
			f->check(v, e, sub);
	}
}

static void walk(struct vctx *v, const json_t *obj, const struct field *fields, const char *path)
{
	char sub[512];
	const char *key;
	json_t *val;

	json_object_foreach ((json_t *)obj, key, val) {
		const struct field *f = fields;

		while (f->key && !streq(f->key, key))
			f++;
		if (!f->key) {
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
			problem(v, "unknown-field", sub, NULL, "unknown field '%s'", key);
		}
	}
	for (const struct field *f = fields; f->key; f++) {
		const json_t *x = json_object_get(obj, f->key);

		snprintf(sub, sizeof(sub), "%s.%s", path, f->key);
		if (!x || json_is_null(x)) {
			if (f->required)
				problem(v, "missing-field", sub, NULL, "required field '%s' is missing", f->key);
			continue;
		}
		walk_field(v, f, x, sub);
	}
}

/* Checks across the whole spec: at least one device, unique names, the minimum version. */
static void check_spec(struct vctx *v, const json_t *spec)
{
	const json_t *devs = json_object_get(spec, "devices"), *d;
	const struct version_rule *rule;
	size_t i;

	if (json_is_array(devs) && json_array_size(devs) == 0)
		problem(v, "no-devices", "$.devices", NULL, "the spec defines no devices");
	json_array_foreach (devs, i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *other;
		size_t j;
		char path[64];

		json_array_foreach (devs, j, other)
			if (j < i && name && json_is_string(json_object_get(other, "name")) &&
			    streq(name, json_string_value(json_object_get(other, "name")))) {
				snprintf(path, sizeof(path), "$.devices[%zu].name", i);
				problem(v, "duplicate-name", path, NULL,
					"device '%s' is defined again (first at $.devices[%zu])", name, j);
				break;
			}
	}
	rule = min_version_rule(spec);
	if (v->version && rule && version_cmp(v->version, rule->version) < 0)
		problem(v, "version-too-low", "$.cdiVersion", NULL,
			"cdiVersion %s is too old for the fields used: %s needs %s", v->version, rule->what,
			rule->version);
}

int cdi_validate_spec(const char *file, const json_t *spec, const struct cdi_validate_options *o,
		      struct cdi_report *rep)
{
	struct vctx v = {.o = o, .rep = rep, .file = file};

	walk(&v, spec, spec_fields, "$");
	check_spec(&v, spec);
	return v.oom ? -ENOMEM : 0;
}

/*
 * Can uid/gid read path (and search every dir above it, below root)? Mode bits only: enough for
 * the usual mistake (0600 spec, 0700 dir) without being that user.
 */
static bool user_can(const struct stat *st, uid_t uid, gid_t gid, mode_t want)
{
	if (uid == 0)
		return true;
	if (st->st_uid == uid)
		return (st->st_mode & (want << 6)) == (want << 6);
	if (st->st_gid == gid)
		return (st->st_mode & (want << 3)) == (want << 3);
	return (st->st_mode & want) == want;
}

static bool runtime_can_read(const struct cdi_validate_options *o, const char *path, bool dir)
{
	_cleanup_free_ char *copy = strdup(path);
	size_t skip = o->root && *o->root ? strlen(o->root) : 0;
	struct stat st;

	if (!copy || o->runtime_uid == 0)
		return true;
	/* every ancestor below the root prefix needs x */
	for (char *p = copy + skip + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		if (stat(copy, &st) == 0 && !user_can(&st, o->runtime_uid, o->runtime_gid, 01))
			return false;
		*p = '/';
	}
	return stat(path, &st) == 0 && user_can(&st, o->runtime_uid, o->runtime_gid, dir ? 05 : 04);
}

/* Devices of loadable files, for duplicate detection and listing. */
struct devref {
	char *qname; /* vendor/class=name */
	const char *file;
	size_t prio;
};

struct scan {
	char **files; /* owned copies, referenced by devs */
	size_t n_files;
	struct devref *devs;
	size_t n_devs;
};

static void scan_done(struct scan *s)
{
	for (size_t i = 0; i < s->n_devs; i++)
		free(s->devs[i].qname);
	for (size_t i = 0; i < s->n_files; i++)
		free(s->files[i]);
	free(s->devs);
	free(s->files);
}

static bool blocks_loading(const struct cdi_problem *p)
{
	return p->error && (streq(p->category, "spec-invalid") || streq(p->category, "spec-unreadable") ||
			    streq(p->category, "version-too-new"));
}

static int scan_add_devices(struct scan *s, const char *file, size_t prio, const json_t *spec)
{
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	const json_t *d;
	char **nf;
	size_t i;

	nf = realloc(s->files, (s->n_files + 1) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	s->files = nf;
	if (!(nf[s->n_files] = strdup(file)))
		return -ENOMEM;
	file = nf[s->n_files++];
	json_array_foreach (json_object_get(spec, "devices"), i, d) {
		struct devref *nd = realloc(s->devs, (s->n_devs + 1) * sizeof(*nd));

		if (!nd)
			return -ENOMEM;
		s->devs = nd;
		if (asprintf(&nd[s->n_devs].qname, "%s=%s", kind, json_string_value(json_object_get(d, "name"))) < 0)
			return -ENOMEM;
		nd[s->n_devs].file = file;
		nd[s->n_devs++].prio = prio;
	}
	return 0;
}

/* Validate one file (path as read); add its devices to s when a runtime would load it. */
static int scan_file(const char *path, size_t prio, const struct cdi_validate_options *o, struct cdi_report *rep,
		     struct scan *s)
{
	struct vctx v = {.o = o, .rep = rep, .file = path};
	json_auto_t *spec = NULL;
	struct gerr err = {0};
	size_t first = rep->n_problems;
	bool loads = true;
	int r;

	rep->n_files++;
	if (!has_ext(path, ".json") && !has_ext(path, ".yaml"))
		problem(&v, "not-scanned", "", NULL, "runtimes read only *.json and *.yaml spec files");
	if (!runtime_can_read(o, path, false)) {
		problem(&v, "unreadable", "", NULL, "the runtime user %u cannot read %s", (unsigned)o->runtime_uid,
			path);
		return v.oom ? -ENOMEM : 0;
	}
	r = cdi_read_spec(path, &spec, &err);
	if (r == -ENOMEM)
		return r;
	if (r == -EACCES || r == -EPERM || r == -EISDIR)
		problem(&v, "unreadable", "", NULL, "%s", err.msg);
	else if (r == -ENOENT)
		problem(&v, "missing-file", "", NULL, "%s", err.msg);
	else if (r < 0)
		problem(&v, "parse-error", "", NULL, "%s", err.msg);
	else if (cdi_validate_spec(path, spec, o, rep) < 0)
		return -ENOMEM;
	if (v.oom)
		return -ENOMEM;
	for (size_t i = first; i < rep->n_problems; i++)
		if (blocks_loading(&rep->problems[i]))
			loads = false;
	if (!loads || !s || (!has_ext(path, ".json") && !has_ext(path, ".yaml")))
		return 0;
	return scan_add_devices(s, path, prio, spec);
}

static int devref_cmp(const void *a, const void *b)
{
	const struct devref *x = a, *y = b;
	int c = strcmp(x->qname, y->qname);

	if (c)
		return c;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return strcmp(x->file, y->file);
}

/* Duplicates: same name at one priority = error on each file; at a lower priority = shadowed warning. */
static int report_duplicates(struct scan *s, const struct cdi_validate_options *o, struct cdi_report *rep)
{
	struct vctx v = {.o = o, .rep = rep};

	if (s->n_devs > 1)
		qsort(s->devs, s->n_devs, sizeof(*s->devs), devref_cmp);
	for (size_t i = 0; i < s->n_devs; i++) {
		size_t j = i + 1;

		while (j < s->n_devs && streq(s->devs[j].qname, s->devs[i].qname))
			j++;
		const struct devref *top = &s->devs[j - 1];
		size_t at_top = 0;

		for (size_t k = i; k < j; k++)
			at_top += s->devs[k].prio == top->prio;
		for (size_t k = i; k < j; k++) {
			const struct devref *d = &s->devs[k];

			v.file = d->file;
			if (d->prio < top->prio) {
				problem(&v, "shadowed-device", "", NULL, "device %s is also defined in %s, which wins",
					d->qname, top->file);
				continue;
			}
			if (at_top < 2)
				continue;
			/* name the other file at this priority */
			const struct devref *other = k + 1 < j ? &s->devs[k + 1] : &s->devs[k - 1];

			problem(&v, "duplicate-device", "", NULL,
				"device %s is also defined in %s at the same priority: the runtime drops it", d->qname,
				other->file);
		}
		i = j - 1;
	}
	return v.oom ? -ENOMEM : 0;
}

int cdi_validate_files(const char *const *files, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep)
{
	struct scan s = {0};
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++)
		r = scan_file(files[i], 0, o, rep, &s);
	if (r >= 0)
		r = report_duplicates(&s, o, rep);
	scan_done(&s);
	return r;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Spec files of one dir in name order (the CDI cache is not recursive). */
static int scan_dir(const char *dir, size_t prio, const struct cdi_validate_options *o, struct cdi_report *rep,
		    struct scan *s)
{
	_cleanup_free_ char *p = root_path(o->root, dir);
	struct vctx v = {.o = o, .rep = rep};
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	struct stat st;
	DIR *dh;
	int r = 0;

	if (!p)
		return -ENOMEM;
	v.file = p;
	if (stat(p, &st) < 0)
		return 0; /* a missing dir is normal */
	if (!S_ISDIR(st.st_mode) || !runtime_can_read(o, p, true) || !(dh = opendir(p))) {
		problem(&v, "dir-unreadable", "", NULL, "the runtime cannot list spec dir %s", p);
		return v.oom ? -ENOMEM : 0;
	}
	while ((de = readdir(dh))) {
		char **nn;

		if (de->d_name[0] == '.' ||
		    (!has_ext(de->d_name, ".json") && !has_ext(de->d_name, ".yaml") && !has_ext(de->d_name, ".yml")))
			continue;
		nn = realloc(names, (n + 1) * sizeof(*nn));
		if (!nn || !(nn[n] = strdup(de->d_name))) {
			free(nn ? nn : names);
			names = NULL;
			n = 0;
			r = -ENOMEM;
			break;
		}
		names = nn;
		n++;
	}
	closedir(dh);
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *fp = NULL;

		if (r >= 0 && asprintf(&fp, "%s/%s", p, names[i]) < 0)
			r = -ENOMEM;
		if (r >= 0 && stat(fp, &st) == 0 && S_ISREG(st.st_mode))
			r = scan_file(fp, prio, o, rep, s);
		free(names[i]);
	}
	free(names);
	return r;
}

static const char *const default_dirs[] = {CDI_STATIC_DIR, CDI_DYNAMIC_DIR};

static int scan_dirs(const char *const *dirs, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep,
		     struct scan *s)
{
	int r = 0;

	if (!dirs || n == 0) {
		dirs = default_dirs;
		n = ELEMENTSOF(default_dirs);
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = scan_dir(dirs[i], i, o, rep, s);
	return r;
}

int cdi_validate_dirs(const char *const *dirs, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep)
{
	struct scan s = {0};
	int r = scan_dirs(dirs, n, o, rep, &s);

	if (r >= 0)
		r = report_duplicates(&s, o, rep);
	scan_done(&s);
	return r;
}

int cdi_list_dirs(const char *root, const char *const *dirs, size_t n, json_t **ret, struct gerr *err)
{
	struct cdi_validate_options o = {.root = root, .no_host_paths = true};
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	struct scan s = {0};
	json_auto_t *out = json_array();
	int r;

	if (!out)
		return gerr_set(err, ENOMEM, "out of memory");
	r = scan_dirs(dirs, n, &o, &rep, &s);
	if (r >= 0 && s.n_devs > 1)
		qsort(s.devs, s.n_devs, sizeof(*s.devs), devref_cmp);
	for (size_t i = 0; r >= 0 && i < s.n_devs; i++) {
		size_t j = i + 1;
		const struct devref *top;
		json_t *e, *shadows;

		while (j < s.n_devs && streq(s.devs[j].qname, s.devs[i].qname))
			j++;
		top = &s.devs[j - 1];
		e = json_pack("{s:s, s:s%, s:s, s:s, s:[], s:b}", "name", top->qname, "kind", top->qname,
			      (size_t)(strchr(top->qname, '=') - top->qname), "device", strchr(top->qname, '=') + 1,
			      "file", top->file, "shadows", "conflict", j - i > 1 && s.devs[j - 2].prio == top->prio);
		shadows = json_object_get(e, "shadows");
		for (size_t k = i; e && k + 1 < j; k++)
			if (jpush(shadows, json_string(s.devs[k].file)) < 0)
				r = -ENOMEM;
		if (jpush(out, e) < 0)
			r = -ENOMEM;
		i = j - 1;
	}
	scan_done(&s);
	if (r < 0)
		return gerr_set(err, -r, "listing CDI devices: %s", strerror(-r));
	*ret = TAKE_PTR(out);
	return 0;
}

void cdi_report_clear(struct cdi_report *r)
{
	for (size_t i = 0; i < r->n_problems; i++) {
		free(r->problems[i].file);
		free(r->problems[i].json_path);
		free(r->problems[i].message);
		free(r->problems[i].fix);
	}
	free(r->problems);
	*r = (struct cdi_report){0};
}

json_t *cdi_report_to_json(const struct cdi_report *r)
{
	json_t *doc =
	    json_pack("{s:I, s:I, s:I, s:[]}", "files", (json_int_t)r->n_files, "errors", (json_int_t)r->n_errors,
		      "warnings", (json_int_t)(r->n_problems - r->n_errors), "problems");

	for (size_t i = 0; doc && i < r->n_problems; i++) {
		const struct cdi_problem *p = &r->problems[i];

		if (jpush(json_object_get(doc, "problems"),
			  json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "code", p->code, "category", p->category,
				    "severity", p->error ? "error" : "warning", "file", p->file, "path", p->json_path,
				    "message", p->message, "fix", p->fix)) < 0) {
			json_decref(doc);
			return NULL;
		}
	}
	return doc;
}
