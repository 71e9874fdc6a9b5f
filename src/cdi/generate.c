/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI spec generation for a node, top to bottom as cdi_generate() runs it:
 *   1. the roots: the driver root and dev root exist (check_roots)
 *   2. the driver: discover its files, refuse a driver root without what every CUDA container
 *      needs, note what is left out (check_driver)
 *   3. the devices: one per GPU and MIG instance whose nodes exist, and "all" (gen_gpu)
 *   4. the spec-level edits: control nodes, libraries, files, env (gen_common_edits)
 *   5. the spec: kind, version, and the strict/partial verdict (cdi_generate)
 * Writing it (atomic, ours only) is cdi_write_spec() in spec.c.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi/hooks.h"
#include "cdi/internal.h"
#include "host/driver.h"
#include "util/fileio.h"

/* Mount options per driver file kind (nvidia-ctk internal/discover: mounts.go, ipc.go). */
static const char *const lib_mount_options[] = {"ro", "nosuid", "nodev", "rbind", "rprivate", NULL};
static const char *const ipc_mount_options[] = {"nosuid", "nodev", "rbind", "rprivate", "noexec", NULL};
static const char *const *const mount_options[_DRIVER_KIND_MAX] = {
    [DRIVER_LIBRARY] = lib_mount_options,    [DRIVER_FIRMWARE] = lib_mount_options, [DRIVER_BINARY] = lib_mount_options,
    [DRIVER_IPC_SOCKET] = ipc_mount_options, [DRIVER_CONFIG] = lib_mount_options, /* mounts-to-container-path.go */
};

const struct enum_name cdi_feature_names[7] = {
    {CDI_FEATURE_DISABLE_IPC, "disable-ipc-discoverer"},
    {CDI_FEATURE_NO_ADDITIONAL_GIDS, "no-additional-gids-for-device-nodes"},
    {CDI_FEATURE_NO_NVSANDBOXUTILS, "disable-nvsandboxutils"},
    {CDI_FEATURE_NO_MULTIPLE_CSV, "disable-multiple-csv-devices"},
    {CDI_FEATURE_COHERENT_ANNOTATIONS, "enable-coherent-annotations"},
    {CDI_FEATURE_EXPLICIT_LIBRARIES, "enable-explicit-driver-libraries"},
    {CDI_FEATURE_NO_NVSANDBOXUTILS, "disable-nvsandbox-utils"}, /* the first release's spelling (options.go) */
};

/* The flags gpulet's generator does not do, and why (docs/reference/device-plugin.md §8.1). */
static const struct {
	unsigned bit;
	const char *why;
} features_refused[] = {
    {CDI_FEATURE_COHERENT_ANNOTATIONS,
     "the gpu.nvidia.com/coherent annotation needs NVML's addressing mode, which gpulet does not read"},
    {CDI_FEATURE_EXPLICIT_LIBRARIES,
     "gpulet mounts the driver's versioned libraries only, not the GLVND and OpenCL front libraries"},
};

int cdi_features_check(unsigned bits, struct gerr *err)
{
	for (size_t i = 0; i < ELEMENTSOF(features_refused); i++)
		if (bits & features_refused[i].bit)
			return gerr_set(err, EOPNOTSUPP,
					"CDI feature flag %s is not supported: %s; remove it from --cdi-feature-flags "
					"(CDI_FEATURE_FLAGS, the chart's cdi.featureFlags)",
					enum_to_name(cdi_feature_names, features_refused[i].bit, "?"),
					features_refused[i].why);
	return 0;
}

struct gen {
	const struct cdi_gen_options *o;
	const char *driver_root, *dev_root; /* o->host's: the host names of the roots, for the spec and messages */
	json_t *devices;
	json_t *all_nodes;      /* union for the "all" device */
	json_t *devhooks;       /* device name -> {"links", "dirs", "gpus"}: what its own hooks are made of */
	const char *const *ids; /* --device-id after "all"/"none" are settled: the ones to select, n_ids of them */
	size_t n_ids;
	bool *id_used;            /* which of ids named a device */
	bool none;                /* --device-id none: the placeholder device only */
	struct warnings warnings; /* what is left out; handed to o->warnings */
};

/* 1 when the node path (inside the dev root) exists where gpulet reads the host, 0 if not. */
static int node_exists(const struct gen *g, const char *path)
{
	_cleanup_free_ char *p = root_path(g->o->host->dev_dir, path);
	struct stat st;

	if (!p)
		return -ENOMEM;
	return stat(p, &st) == 0;
}

/*
 * A deviceNodes entry. No type/major/minor: the runtime stats hostPath when it injects, so a
 * node re-created with another dynamic major (nvidia-uvm, nvidia-caps) stays right.
 * hostPath only when it differs from path (it needs cdiVersion 0.5.0).
 */
static json_t *device_node(const char *dev_root, const char *path, const char *host)
{
	_cleanup_free_ char *h = host ? NULL : host_join(dev_root, path);
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

/* Whether a node's path starts with dir ("/dev/dri/"). */
static bool nodes_have_dir(const json_t *nodes, const char *dir)
{
	const json_t *n;
	size_t i;

	json_array_foreach (nodes, i, n)
		if (strncmp(json_string_value(json_object_get(n, "path")), dir, strlen(dir)) == 0)
			return true;
	return false;
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

/* Append a device node for path to nodes. */
static int push_node(struct gen *g, json_t *nodes, const char *path)
{
	return jpush(nodes, device_node(g->dev_root, path, NULL));
}

/* The "all" device gets the nodes of every device in the spec, each once, in first-seen order. */
static int add_to_all(struct gen *g, const json_t *nodes)
{
	const json_t *n;
	size_t i;

	json_array_foreach (nodes, i, n) {
		const char *path = json_string_value(json_object_get(n, "path"));

		if (!nodes_have_path(g->all_nodes, path) && json_array_append(g->all_nodes, (json_t *)n) < 0)
			return -ENOMEM;
	}
	return 0;
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

/* Append each item of from to to that to does not hold yet. */
static int union_into(json_t *to, const json_t *from)
{
	const json_t *v;
	size_t i;

	json_array_foreach (from, i, v) {
		bool seen = false;

		for (size_t k = 0; k < json_array_size(to) && !seen; k++)
			seen = json_equal(json_array_get(to, k), v);
		if (!seen && json_array_append(to, (json_t *)v) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Remember what device name's own hooks are made of (hk: {"links", "dirs", "gpus"}, cdi/hooks.h), and
 * add it to "all"'s; the hooks are built once the spec-level ones found the binary (add_device_hooks).
 */
static int add_dev_hooks(struct gen *g, const char *name, const json_t *hk)
{
	static const char *const keys[] = {"links", "dirs", "gpus"};
	json_t *all = json_object_get(g->devhooks, "all");

	if (!hk)
		return 0;
	if (!all && jset(g->devhooks, "all", all = json_pack("{s:[], s:[], s:[]}", "links", "dirs", "gpus")) < 0)
		return -ENOMEM;
	if (jset(g->devhooks, name, json_incref((json_t *)hk)) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < ELEMENTSOF(keys); k++)
		if (union_into(json_object_get(all, keys[k]), json_object_get(hk, keys[k])) < 0)
			return -ENOMEM;
	return 0;
}

/*
 * One device per selected name for these nodes (and hk, for its hooks): GPU gpu ("0", "gpu0") or its
 * MIG device mig >= 0 ("0:1", "mig0:1"), and uuid (nvidia-ctk namer.go).
 */
static int add_named(struct gen *g, unsigned gpu, int mig, const char *uuid, const json_t *nodes, const json_t *hk)
{
	unsigned names = g->o->names ? g->o->names : CDI_NAMES_BOTH;
	char index[32], typed[40];
	const char *const named[] = {names & CDI_NAMES_INDEX ? index : NULL,
				     names & CDI_NAMES_TYPE_INDEX ? typed : NULL,
				     names & CDI_NAMES_UUID && uuid[0] ? uuid : NULL};
	int r = 0;

	if (mig < 0)
		snprintf(index, sizeof(index), "%u", gpu);
	else
		snprintf(index, sizeof(index), "%u:%d", gpu, mig);
	snprintf(typed, sizeof(typed), "%s%s", mig < 0 ? "gpu" : "mig", index);
	for (size_t i = 0; r == 0 && i < ELEMENTSOF(named); i++)
		if (named[i] && (r = add_device(g, named[i], nodes)) == 0)
			r = add_dev_hooks(g, named[i], hk);
	return r == 0 ? add_to_all(g, nodes) : r;
}

static int drm_filter(const struct dirent *de)
{
	return strncmp(de->d_name, "card", 4) == 0 || strncmp(de->d_name, "renderD", 7) == 0;
}

/*
 * The GPU's /dev/dri/by-path/pci-<busid>-card|render links whose node the device has, as
 * "TARGET::LINK" for create-symlinks (nvidia-ctk dgpu/by-path-hooks.go): udev makes them, runc does
 * not, and Vulkan/EGL pick a GPU by them.
 */
static int push_by_path_links(struct gen *g, const json_t *nodes, const char *busid, json_t *links)
{
	static const char *const kinds[] = {"card", "render"};

	for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
		char link[128], target[PATH_MAX], node[PATH_MAX + 16];
		_cleanup_free_ char *p = NULL;
		ssize_t n;

		snprintf(link, sizeof(link), "/dev/dri/by-path/pci-%s-%s", busid, kinds[i]);
		p = root_path(g->o->host->dev_dir, link);
		if (!p)
			return -ENOMEM;
		n = readlink(p, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		/* udev's "../card1"; an absolute target is taken as it is */
		if (target[0] == '/')
			snprintf(node, sizeof(node), "%s", target);
		else if (strncmp(target, "../", 3) == 0 && !strchr(target + 3, '/'))
			snprintf(node, sizeof(node), "/dev/dri/%s", target + 3);
		else
			continue;
		if (nodes_have_path(nodes, node) && jpush(links, json_sprintf("%s::%s", target, link)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * DRM nodes of a full GPU: the card* and renderD* entries of its sysfs drm/ dir become
 * /dev/dri/<name> (nvidia-ctk internal/platform-support/dgpu/nvml.go; sysfs read under --root),
 * and their by-path links go to links.
 */
static int push_drm_nodes(struct gen *g, json_t *nodes, const struct node_gpu *gpu, json_t *links)
{
	const char *rest = strchr(gpu->pci_bus_id, ':');
	_cleanup_free_ char *dir = NULL;
	struct dirent **list = NULL;
	char busid[64], rel[128];
	unsigned dom;
	int n, r = 0;

	if (!rest || sscanf(gpu->pci_bus_id, "%x:", &dom) != 1)
		return 0;
	/* NVML "00000000:07:00.0" -> sysfs "0000:07:00.0" */
	snprintf(busid, sizeof(busid), "%04x%s", dom, rest);
	for (char *c = busid; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/drm", busid);
	dir = root_path(g->o->host->root, rel);
	if (!dir)
		return -ENOMEM;
	n = scandir(dir, &list, drm_filter, alphasort);
	for (int i = 0; i < n; i++) {
		char path[300];

		snprintf(path, sizeof(path), "/dev/dri/%s", list[i]->d_name);
		if (r == 0)
			r = node_exists(g, path);
		if (r == 0)
			r = warnings_add(
			    &g->warnings,
			    "GPU %u %s: %s (sysfs lists it) does not exist under the dev root; left out of the "
			    "GPU's device",
			    gpu->index, gpu->uuid, path);
		else if (r == 1)
			r = push_node(g, nodes, path);
		free(list[i]);
	}
	free(list);
	return r == 0 && n > 0 ? push_by_path_links(g, nodes, busid, links) : r;
}

/* Whether id (a --device-id) names GPU gpu (mig < 0) or its MIG device m. */
static bool id_names(const char *id, const struct node_gpu *gpu, const struct node_mig *m)
{
	char index[32];

	if (m)
		snprintf(index, sizeof(index), "%u:%u", gpu->index, m->index);
	else
		snprintf(index, sizeof(index), "%u", gpu->index);
	return streq(id, index) || streq(id, m ? m->uuid : gpu->uuid);
}

/* With --device-id: whether it selects GPU gpu (m NULL) or its MIG device m (and which ids were used). */
static bool selected(const struct gen *g, const struct node_gpu *gpu, const struct node_mig *m)
{
	bool yes = false;

	for (size_t i = 0; i < g->n_ids; i++)
		if (id_names(g->ids[i], gpu, m))
			yes = g->id_used[i] = true;
	return yes;
}

/*
 * One MIG device: the parent's nodes + its GI and CI cap nodes, left out when a cap node is missing or
 * its minor unknown (the container would hold a MIG device it cannot open; nvidia-ctk fails the whole
 * spec there, nvcaps.go).
 */
static int gen_mig(struct gen *g, const struct node_gpu *gpu, const struct node_mig *m, const json_t *parent)
{
	json_auto_t *mig_nodes = json_deep_copy(parent);
	const int caps[] = {m->gi_cap_minor, m->ci_cap_minor};
	char path[64];
	int r = 0;

	if (!mig_nodes)
		return -ENOMEM;
	/* /proc/driver/nvidia-caps/mig-minors → /dev/nvidia-caps/nvidia-cap<N> (nvcaps.go) */
	for (size_t c = 0; c < ELEMENTSOF(caps); c++) {
		if (caps[c] < 0)
			return warnings_add(
			    &g->warnings,
			    "MIG device %s (GPU %u, MIG %u): the minor of its %s access capability is unknown "
			    "(/proc/driver/nvidia-caps/mig-minors under the root is unreadable or has no "
			    "gpu%u/gi%u%s line); left out, as the container could not open it. Mount the host's "
			    "/proc (or give --root) so it can be read",
			    m->uuid, gpu->index, m->index, c == 0 ? "GPU instance" : "compute instance", gpu->minor,
			    m->gi, c == 0 ? "/access" : "/ci<N>/access");
		snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%d", caps[c]);
		r = node_exists(g, path);
		if (r == 0)
			return warnings_add(
			    &g->warnings,
			    "MIG device %s (GPU %u, MIG %u): %s does not exist under the dev root; left out "
			    "(nvidia-modprobe -f /proc/driver/nvidia-caps/mig-minors creates the cap nodes)",
			    m->uuid, gpu->index, m->index, path);
		if (r < 0 || (r = push_node(g, mig_nodes, path)) < 0)
			return r;
	}
	return add_named(g, gpu->index, (int)m->index, m->uuid, mig_nodes, NULL);
}

static int gen_gpu(struct gen *g, const struct node_gpu *gpu)
{
	json_auto_t *nodes = json_array();
	bool whole = !gpu->mig_enabled || g->o->whole_mig_enabled, any_mig = false;
	char path[64];
	int r;

	if (!nodes)
		return -ENOMEM;
	if (g->n_ids) { /* nvidia-ctk: a GPU asked for by id is generated whole, MIG enabled or not */
		whole = selected(g, gpu, NULL);
		for (size_t i = 0; i < gpu->n_migs; i++)
			any_mig = selected(g, gpu, &gpu->migs[i]) || any_mig;
		if (!whole && !any_mig)
			return 0;
	}
	if (gpu->lost || !gpu->uuid[0])
		return warnings_add(&g->warnings,
				    "GPU %u%s%s: lost (NVML cannot read it); left out until it is reset or the node "
				    "reboots",
				    gpu->index, gpu->pci_bus_id[0] ? " at " : "", gpu->pci_bus_id);
	snprintf(path, sizeof(path), "/dev/nvidia%u", gpu->minor);
	r = node_exists(g, path);
	if (r == 0)
		return warnings_add(&g->warnings,
				    "GPU %u %s: %s does not exist under the dev root %s; left out with its MIG devices "
				    "(check --dev-root; nvidia-modprobe -c%u creates it)",
				    gpu->index, gpu->uuid, path, g->dev_root, gpu->minor);
	if (r < 0 || (r = push_node(g, nodes, path)) < 0)
		return r;
	/* MIG enabled: only the MIG devices are usable (nvidia-ctk skips the full GPU too), unless the
	 * caller hands the GPU out whole (the plugin under --mig-strategy=none) */
	if (whole) {
		json_auto_t *full = json_deep_copy(nodes);
		json_auto_t *hk = json_pack("{s:[], s:[], s:[s]}", "links", "dirs", "gpus", gpu->uuid);

		r = full && hk ? push_drm_nodes(g, full, gpu, json_object_get(hk, "links")) : -ENOMEM;
		/* the folder of nested nodes crun once left unreadable (chmod hook,
		 * workarounds-device-folder-permissions.go) */
		if (r == 0 && nodes_have_dir(full, "/dev/dri/") &&
		    jpush(json_object_get(hk, "dirs"), json_string("/dev/dri")) < 0)
			r = -ENOMEM;
		if (r == 0)
			r = add_named(g, gpu->index, -1, gpu->uuid, full, hk);
	}
	for (size_t i = 0; r == 0 && i < gpu->n_migs; i++)
		if (!g->n_ids || selected(g, gpu, &gpu->migs[i]))
			r = gen_mig(g, gpu, &gpu->migs[i], nodes);
	return r;
}

/*
 * --device-id: the first "all" or "none" decides for the list (lib-nvml.go getDeviceSpecGeneratorsForIDs);
 * else g->ids are the ids to select.
 */
static int settle_ids(struct gen *g)
{
	for (size_t i = 0; i < g->o->n_device_ids; i++) {
		if (streq(g->o->device_ids[i], "all"))
			return 0;
		if (streq(g->o->device_ids[i], "none")) {
			g->none = true;
			return 0;
		}
	}
	g->ids = g->o->device_ids;
	g->n_ids = g->o->n_device_ids;
	g->id_used = g->n_ids ? calloc(g->n_ids, sizeof(*g->id_used)) : NULL;
	return g->n_ids && !g->id_used ? -ENOMEM : 0;
}

/* 3. The devices: each GPU's, then "all"; or upstream's placeholder for --device-id none. */
static int gen_devices(struct gen *g, const struct node *n, struct gerr *err)
{
	int r = 0;

	if (g->none) { /* the CDI spec allows no device without edits: upstream's placeholder variable */
		json_t *dev =
		    json_pack("{s:s, s:{s:[s]}}", "name", "none", "containerEdits", "env", "NVCT_EMPTY_DEVICE=");

		return jpush(g->devices, dev) < 0 ? gerr_set(err, ENOMEM, "out of memory") : 0;
	}
	for (size_t i = 0; r == 0 && i < n->n_gpus; i++)
		r = gen_gpu(g, &n->gpus[i]);
	if (r == 0 && !g->o->no_all_device && json_array_size(g->all_nodes) > 0)
		r = add_device(g, "all", g->all_nodes);
	if (r < 0)
		return gerr_set(err, -r, "building the CDI spec: %s", strerror(-r));
	for (size_t i = 0; i < g->n_ids; i++)
		if (!g->id_used[i])
			return gerr_set(err, ENODEV,
					"--device-id %s names no GPU or MIG device on this node (an index as 'gpulet "
					"devices' shows it, G:M, or a GPU-/MIG- UUID); nothing written",
					g->ids[i]);
	return 0;
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
		if (df->kind == DRIVER_IPC_SOCKET && (o->features & CDI_FEATURE_DISABLE_IPC))
			continue; /* persistenced, fabricmanager, MPS sockets left out, as nvcdi's flag does */
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
	/*
	 * NVIDIA's legacy runtime hook reads the device list from mounts under
	 * /var/run/nvidia-container-devices when accept-nvidia-visible-devices-as-volume-mounts is on:
	 * "void" there, as NVIDIA_VISIBLE_DEVICES=void above, asks it for no second injection
	 * (pkg/nvcdi/wrapper.go GetCommonEdits, v1.20.2; docs/reference/cdi.md §7.1)
	 */
	if (jpush(mounts,
		  json_pack("{s:s, s:s, s:[ssss]}", "hostPath", "/dev/null", "containerPath",
			    "/var/run/nvidia-container-devices/void", "options", "ro", "nosuid", "nodev", "bind")) < 0)
		return -ENOMEM;
	if (jset(edits, "env", json_incref(env)) < 0 ||
	    (json_array_size(nodes) && jset(edits, "deviceNodes", json_incref(nodes)) < 0) ||
	    (json_array_size(mounts) && jset(edits, "mounts", json_incref(mounts)) < 0))
		return -ENOMEM;
	*ret = TAKE_PTR(edits);
	return 0;
}

/*
 * 1. A root the user names must exist: a typo would otherwise give a spec without any driver file. dir
 * is its host name, p where it is read.
 */
static int check_root(const char *dir, const char *p, const char *what, const char *flag, struct gerr *err)
{
	struct stat st;

	if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return gerr_set(err, ENOENT,
			"the %s %s does not exist%s%s%s; nothing written. Fix: give %s the host dir the driver is "
			"installed under (/ for a host install, /run/nvidia/driver with the GPU Operator)",
			what, dir, streq(p, dir) ? "" : " (read at ", streq(p, dir) ? "" : p, streq(p, dir) ? "" : ")",
			flag);
}

/* 2. What every CUDA container needs must be there; what is merely missing becomes a warning. */
static int check_driver(struct gen *g, const struct driver_info *d, struct gerr *err)
{
	int r = 0;

	for (size_t i = 0; i < driver_n_control_nodes; i++) {
		const struct driver_control_node *c = &driver_control_nodes[i];
		bool found = !c->fix; /* optional */

		for (size_t j = 0; j < d->n_files && !found; j++)
			found = d->files[j].kind == DRIVER_DEVICE_NODE && streq(d->files[j].container_path, c->path);
		if (!found)
			return gerr_set(err, ENOENT,
					"%s does not exist under the dev root %s; a spec without it fails in every "
					"container, so nothing is written. Fix: %s, or give --dev-root the dir holding "
					"dev/nvidia*",
					c->path, g->dev_root, c->fix);
	}
	for (size_t i = 0; i < driver_n_libs && r >= 0; i++) {
		const struct driver_lib *l = &driver_libs[i];

		if (l->need == DRIVER_LIB_OPTIONAL || driver_find_library(d, l->name))
			continue;
		if (l->need == DRIVER_LIB_REQUIRED)
			return gerr_set(err, ENOENT,
					"%s.%s not found under the driver root %s (ld.so.cache%s); without it %s, so "
					"nothing is written. Fix: install the driver's user-space libraries, or give "
					"--driver-root the dir the driver is installed under",
					l->name, d->version[0] ? d->version : "*", g->driver_root,
					d->ldcache_found ? " and the library dirs"
							 : " missing; searched the library dirs",
					l->what);
		r = warnings_add(&g->warnings,
				 "%s.%s not found under the driver root %s: %s (install it with the driver)", l->name,
				 d->version[0] ? d->version : "*", g->driver_root, l->what);
	}
	if (r >= 0)
		r = warnings_extend(&g->warnings, &d->warnings);
	return r < 0 ? gerr_set(err, -r, "out of memory") : 0;
}

/* 5. With --strict a partial spec is an error naming every item (as many as the message holds). */
static int strict_error(const struct gen *g, struct gerr *err)
{
	_cleanup_free_ char *all = warnings_join(&g->warnings, "; ");

	if (!all)
		return gerr_set(err, ENOMEM, "out of memory");
	return gerr_set(err, EIO,
			"the spec would leave out %zu item%s (--strict): %s. Nothing written. Fix them, or "
			"drop --strict to write the partial spec",
			g->warnings.n, g->warnings.n == 1 ? "" : "s", all);
}

/* Each device's own hooks from what gen_gpu found (after the spec hooks: the binary is good). */
static int add_device_hooks(struct gen *g, struct gerr *err)
{
	const json_t *dev;
	size_t i;

	json_array_foreach (g->devices, i, dev) {
		const json_t *hk = json_object_get(g->devhooks, json_string_value(json_object_get(dev, "name")));
		struct cdi_device_hooks d = {json_object_get(hk, "links"), json_object_get(hk, "dirs"),
					     json_object_get(hk, "gpus"), g->driver_root};
		json_t *hooks = NULL;
		int r;

		if (!hk)
			continue;
		r = cdi_device_hooks(&d, g->o->hooks, &hooks, err);
		if (r < 0)
			return r;
		if (json_array_size(hooks) == 0)
			json_decref(hooks);
		else if (jset(json_object_get(dev, "containerEdits"), "hooks", hooks) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* Whether the spec runs any hook: the spec-level edits' or a device's. */
static bool runs_hooks(const json_t *edits, const json_t *devices)
{
	const json_t *dev;
	size_t i;

	if (json_array_size(json_object_get(edits, "hooks")) > 0)
		return true;
	json_array_foreach (devices, i, dev)
		if (json_array_size(json_object_get(json_object_get(dev, "containerEdits"), "hooks")) > 0)
			return true;
	return false;
}

/* Hooks that run the dynamic gpulet (no static hook beside it) are a warning (cdi/hooks.c). */
static int warn_hook_fallback(struct gen *g, const json_t *edits, struct gerr *err)
{
	_cleanup_free_ char *w = NULL;
	int r;

	if (!runs_hooks(edits, g->devices))
		return 0;
	r = cdi_hooks_fallback_warning(g->o->hooks, &w);
	if (r >= 0 && w)
		r = warnings_add(&g->warnings, "%s", w);
	return r < 0 ? gerr_set(err, -r, "finding the hook binary: %s", strerror(-r)) : 0;
}

static int build_spec(struct gen *g, const struct node *n, const char *kind, json_t **ret, struct gerr *err)
{
	const struct cdi_gen_options *o = g->o;
	struct driver_options dopt = {
	    .host = o->host,
	    .version = n->driver_version[0] ? n->driver_version : NULL,
	};
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	json_auto_t *spec = json_object(), *edits = NULL;
	int r;

	if (!spec)
		return gerr_set(err, ENOMEM, "out of memory");
	/* 1. roots */
	r = check_root(g->driver_root, o->host->driver_dir, "driver root", "--driver-root", err);
	if (r == 0 && !streq(g->dev_root, g->driver_root))
		r = check_root(g->dev_root, o->host->dev_dir, "dev root", "--dev-root", err);
	if (r < 0)
		return r;
	/* 2. driver */
	r = driver_discover(&dopt, &d, err);
	if (r == 0)
		r = check_driver(g, d, err);
	if (r < 0)
		return r;
	/* 3. devices */
	r = gen_devices(g, n, err);
	if (r < 0)
		return r;
	if (json_array_size(g->devices) == 0)
		return gerr_set(err, ENODEV,
				"none of the %zu GPUs can be put in the spec (%s); a spec without devices is "
				"invalid, so nothing is written. Check 'gpulet devices' and the dev root",
				n->n_gpus, g->warnings.n ? g->warnings.items[0] : "no device nodes");
	/* 4. spec-level edits, then the OCI hooks (hooks.c) */
	if (gen_common_edits(o, d, kind, &edits) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = cdi_add_hooks(edits, d->version, o->hooks, err);
	if (r == 0)
		r = add_device_hooks(g, err);
	if (r == 0)
		r = warn_hook_fallback(g, edits, err);
	if (r < 0)
		return r;
	/* 5. the spec; key order is the output order (jansson keeps insertion order) */
	if (jset(spec, "cdiVersion", json_string(CDI_EARLIEST_VERSION)) < 0 ||
	    jset(spec, "kind", json_string(kind)) < 0 || jset(spec, "devices", json_incref(g->devices)) < 0 ||
	    jset(spec, "containerEdits", json_incref(edits)) < 0 ||
	    jset(spec, "cdiVersion", json_string(cdi_min_version(spec))) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (o->strict && g->warnings.n > 0)
		return strict_error(g, err);
	*ret = TAKE_PTR(spec);
	return 0;
}

int cdi_generate(const struct node *n, const struct cdi_gen_options *o, json_t **ret, struct gerr *err)
{
	const char *vendor = o->vendor ? o->vendor : "nvidia.com", *class = o->class ? o->class : "gpu";
	json_auto_t *devices = json_array(), *all = json_array();
	_cleanup_free_ char *kind = NULL;
	json_auto_t *devhooks = json_object();
	struct gen g = {.o = o, .devices = devices, .all_nodes = all, .devhooks = devhooks};
	int r;

	if (!cdi_vendor_valid(vendor) || !cdi_class_valid(class))
		return gerr_set(
		    err, EINVAL,
		    "invalid CDI kind '%s/%s': vendor and class start with a letter, end with a letter or "
		    "digit, use only letters, digits, '_', '.', '-', and the class has at least 2 characters",
		    vendor, class);
	r = cdi_features_check(o->features, err); /* never a spec without what was asked for */
	if (r < 0)
		return r;
	if (n->n_gpus == 0)
		return gerr_set(err, ENODEV,
				"no GPUs on this node, so no CDI devices; a spec without devices is invalid. Check "
				"'gpulet devices' and the driver");
	if (!devices || !all || !devhooks || asprintf(&kind, "%s/%s", vendor, class) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	g.driver_root = o->host->driver_root;
	g.dev_root = o->host->dev_root;
	if (settle_ids(&g) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = build_spec(&g, n, kind, ret, err);
	free(g.id_used);
	if (r >= 0 && o->warnings) {
		warnings_clear(o->warnings);
		*o->warnings = g.warnings;
	} else {
		warnings_clear(&g.warnings);
	}
	return r;
}
