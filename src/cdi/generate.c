/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec generation for a node: device nodes per GPU and MIG instance, the driver's common edits. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cdi/hooks.h"
#include "cdi/internal.h"
#include "host/driver.h"
#include "util/fileio.h"

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
	if (o->owner_marker && jpush(env, json_sprintf(CDI_MARKER_ENV "=%s", kind)) < 0)
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
	r = cdi_add_hooks(edits, d->version, o->hooks, err);
	if (r < 0)
		return r;
	/* Key order is the output order (jansson keeps insertion order). */
	if (jset(spec, "cdiVersion", json_string(CDI_EARLIEST_VERSION)) < 0 ||
	    jset(spec, "kind", json_string(kind)) < 0 || jset(spec, "devices", json_incref(devices)) < 0 ||
	    jset(spec, "containerEdits", json_incref(edits)) < 0 ||
	    jset(spec, "cdiVersion", json_string(cdi_min_version(spec))) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(spec);
	return 0;
}
