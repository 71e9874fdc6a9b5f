/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `gpulet plugin` hands out beside the GPUs, as upstream's plugin does
 * (docs/reference/device-plugin.md §8.1):
 *   - the IMEX channel: used only when its node exists (internal/imex), and with a CDI strategy
 *     the imex-channel spec its name refers to;
 *   - GDRCopy, GDS, MOFED: with a CDI strategy one spec each (device "all", nvidia-ctk's gated
 *     modes) holding the device nodes and files that exist; a feature enabled and absent is said;
 *   - a feature off or absent has no spec: one an earlier run wrote is removed (upstream leaves it).
 * Interface: daemon_cdi_extra.h.
 */
#include <errno.h>
#include <glob.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "cdi/internal.h"
#include "plugin/daemon_cdi.h"
#include "plugin/daemon_cdi_extra.h"
#include "plugin/dp.h"
#include "util/fileio.h"
#include "util/log.h"

#define IMEX_CHANNEL_DIR "/dev/nvidia-caps-imex-channels"

/* An IMEX channel is asked for (imex.channelIDs, "" or unset: none). */
static bool imex_configured(const struct plugin_config *cfg)
{
	const char *ids = cfg->imex_channel_ids;

	return ids && ids[0];
}

/* nvidia-container-toolkit internal/discover/{gdrcopy,gds,mofed}.go */
static const char *const gdrcopy_nodes[] = {"/dev/gdrdrv", NULL};
static const char *const gds_nodes[] = {"/dev/nvidia-fs*", NULL};
static const char *const gds_files[] = {"/run/udev", "/etc/cufile.json", NULL};
static const char *const mofed_nodes[] = {"/dev/infiniband/uverbs*", "/dev/infiniband/rdma_cm", NULL};
/* mounts of driver files, as the gpu spec's (internal/discover/mounts.go) */
static const char *const mount_options[] = {"ro", "nosuid", "nodev", "rbind", "rprivate", NULL};

static const struct gated {
	const char *cls, *what;
	unsigned bit;
	size_t enabled; /* offset of the bool in struct plugin_config */
	const char *const *nodes, *const *files;
} gated[] = {
    {"gdrcopy", "GDRCopy", DP_CDI_EXTRA_GDRCOPY, offsetof(struct plugin_config, gdrcopy_enabled), gdrcopy_nodes, NULL},
    {"gds", "GPUDirect Storage", DP_CDI_EXTRA_GDS, offsetof(struct plugin_config, gds_enabled), gds_nodes, gds_files},
    {"mofed", "MOFED", DP_CDI_EXTRA_MOFED, offsetof(struct plugin_config, mofed_enabled), mofed_nodes, NULL},
};

/* "<base><path>" as the host sees it (host_join()); base "/" leaves the path alone. */
static json_t *host_path(const char *base, const char *path)
{
	_cleanup_free_ char *p = host_join(base, path);

	return p ? json_string(p) : NULL;
}

static bool is_char_dev(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static int push_node(json_t *nodes, const struct plugin_config *cfg, const char *path)
{
	json_t *n = json_pack("{s:s}", "path", path), *h = host_path(cfg->host->dev_root, path);

	if (!n || !h || (!streq(json_string_value(h), path) && json_object_set(n, "hostPath", h) < 0) ||
	    json_array_append_new(nodes, n) < 0) {
		json_decref(h);
		return -ENOMEM;
	}
	json_decref(h);
	return 0;
}

/* The character devices under the dev root matching each pattern, as CDI deviceNodes. */
static int find_nodes(const struct plugin_config *cfg, const char *const *patterns, json_t *nodes)
{
	const char *base = cfg->host->dev_dir;
	size_t bl = strlen(base);

	while (bl > 0 && base[bl - 1] == '/')
		bl--;
	for (size_t p = 0; patterns[p]; p++) {
		_cleanup_free_ char *pat = root_path(cfg->host->dev_dir, patterns[p]);
		glob_t gl = {0};
		int r = 0;

		if (!pat)
			return -ENOMEM;
		if (glob(pat, 0, NULL, &gl) == 0)
			for (size_t i = 0; r == 0 && i < gl.gl_pathc; i++)
				if (is_char_dev(gl.gl_pathv[i]) && strncmp(gl.gl_pathv[i], base, bl) == 0)
					r = push_node(nodes, cfg, gl.gl_pathv[i] + bl);
		globfree(&gl);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The files under the driver root that exist, as CDI mounts. */
static int find_files(const struct plugin_config *cfg, const char *const *files, json_t *mounts)
{
	for (size_t i = 0; files && files[i]; i++) {
		_cleanup_free_ char *p = root_path(cfg->host->driver_dir, files[i]);
		json_t *m, *opts;

		if (!p)
			return -ENOMEM;
		if (access(p, F_OK) < 0)
			continue;
		opts = json_array();
		for (size_t o = 0; opts && mount_options[o]; o++)
			json_array_append_new(opts, json_string(mount_options[o]));
		m = json_pack("{s:o, s:s, s:o}", "hostPath", host_path(cfg->host->driver_root, files[i]),
			      "containerPath", files[i], "options", opts);
		if (!m || json_array_append_new(mounts, m) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Where class cls's spec lives: the plugin's spec dir (daemon_cdi_dir()), "<vendor>-<cls>.json", "<vendor>/<cls>". */
static int spec_names(const struct plugin_config *cfg, const char *cls, char **dir, char **file, char **kind)
{
	*dir = daemon_cdi_dir(cfg);
	if (!*dir || asprintf(file, "%s-%s.json", DP_CDI_VENDOR, cls) < 0)
		return -ENOMEM;
	if (asprintf(kind, "%s/%s", DP_CDI_VENDOR, cls) < 0)
		return -ENOMEM;
	return 0;
}

/* Write one spec of kind DP_CDI_VENDOR/cls holding devices; logs what happened. */
static int write_spec(const struct plugin_config *cfg, const char *cls, json_t *devices)
{
	_cleanup_free_ char *dir = NULL, *file = NULL, *kind = NULL;
	struct gerr err = {0};
	json_t *spec;
	int r;

	if (spec_names(cfg, cls, &dir, &file, &kind) < 0)
		return -ENOMEM;
	/* the marker env lets a later run replace the file as its own (cdi_write_spec) */
	spec = json_pack("{s:s, s:s, s:O, s:{s:[s+]}}", "cdiVersion", "0.3.0", "kind", kind, "devices", devices,
			 "containerEdits", "env", CDI_MARKER_ENV "=", kind);
	if (!spec)
		return -ENOMEM;
	json_object_set_new(spec, "cdiVersion", json_string(cdi_min_version(spec)));
	r = cdi_write_spec(dir, file, spec, &err);
	json_decref(spec);
	if (r < 0)
		log_error("Cannot write a CDI spec; its device name will not resolve in the runtime",
			  "class=%s dir=%s error=\"%s\"", cls, dir, err.msg);
	else
		log_info("Wrote CDI spec", "file=%s/%s", dir, file);
	return r;
}

/*
 * A feature that is off or absent hands nothing out, so its spec would only name what is not
 * there: remove the one an earlier run of gpulet wrote. Only our exact file name in our spec dir,
 * only a regular file carrying our marker for the class (cdi_remove_spec(): no symlink is
 * followed, another's file is left alone and said). One rule with the writing side: only a CDI
 * device-list strategy writes or removes a spec of ours; without one none is touched, as the gpu
 * spec is not (docs/reference/device-plugin.md §14 row 2b).
 */
static void remove_stale(const struct plugin_config *cfg, const char *cls, const char *why)
{
	_cleanup_free_ char *dir = NULL, *file = NULL, *kind = NULL;
	struct gerr err = {0};
	int r;

	if (!(cfg->device_list_strategy & DLS_CDI_ANY) || spec_names(cfg, cls, &dir, &file, &kind) < 0)
		return;
	r = cdi_remove_spec(dir, file, kind, &err);
	if (r > 0)
		log_info("Removed a stale CDI spec written by an earlier run", "file=%s/%s class=%s reason=\"%s\"", dir,
			 file, cls, why);
	else if (r < 0)
		log_warn("Leaving a CDI spec of a feature that is off or absent in place",
			 "file=%s/%s class=%s error=\"%s\"", dir, file, cls, err.msg);
}

bool daemon_imex_channel_present(const struct plugin_config *cfg, char **ret_path)
{
	_cleanup_free_ char *rel = NULL, *local = NULL;

	if (asprintf(&rel, IMEX_CHANNEL_DIR "/channel%s", cfg->imex_channel_ids) < 0)
		return false;
	local = root_path(cfg->host->dev_dir, rel);
	if (ret_path)
		*ret_path = TAKE_PTR(rel);
	return is_char_dev(local);
}

int daemon_imex_select(const struct plugin_config *cfg, bool *ret, struct gerr *err)
{
	_cleanup_free_ char *path = NULL;
	bool ok;

	*ret = false;
	if (!imex_configured(cfg))
		return 0;
	ok = daemon_imex_channel_present(cfg, &path);
	if (!ok && cfg->imex_required)
		return gerr_set(err, ENODEV,
				"IMEX channel %s is required (imex.required, IMEX_REQUIRED) but %s under the dev "
				"root %s is not a character device; create it (nvidia driver option "
				"NVreg_CreateImexChannel0=1, or 'nvidia-modprobe -i %s') or drop imex.required",
				cfg->imex_channel_ids, path ? path : "the channel node", cfg->host->dev_root,
				cfg->imex_channel_ids);
	if (ok)
		log_info("Selecting IMEX channel", "channel=channel%s", cfg->imex_channel_ids);
	else
		log_warn("Ignoring requested IMEX channel: its device node does not exist",
			 "channel=channel%s path=%s "
			 "dev_root=%s",
			 cfg->imex_channel_ids, path ? path : "?", cfg->host->dev_root);
	*ret = ok;
	return 0;
}

/* The imex-channel spec: one device per selected channel, named by its ID (internal/cdi/imex.go). */
static void write_imex(const struct plugin_config *cfg)
{
	_cleanup_free_ char *path = NULL;
	json_t *nodes = json_array(), *devices = NULL;

	if (asprintf(&path, IMEX_CHANNEL_DIR "/channel%s", cfg->imex_channel_ids) >= 0 && nodes &&
	    push_node(nodes, cfg, path) == 0)
		devices = json_pack("[{s:s, s:{s:O}}]", "name", cfg->imex_channel_ids, "containerEdits", "deviceNodes",
				    nodes);
	if (devices)
		(void)write_spec(cfg, "imex-channel", devices);
	else
		log_error("Cannot build the IMEX channel CDI spec", "error=\"out of memory\"");
	json_decref(devices);
	json_decref(nodes);
}

unsigned daemon_cdi_write_extra(const struct plugin_config *cfg, bool imex)
{
	bool cdi = (cfg->device_list_strategy & DLS_CDI_ANY) != 0;
	unsigned written = 0;

	if (cdi && imex)
		write_imex(cfg);
	else if (!imex)
		remove_stale(cfg, "imex-channel", imex_configured(cfg) ? "channel node absent" : "imex off");
	for (size_t i = 0; i < ELEMENTSOF(gated); i++) {
		const struct gated *g = &gated[i];
		json_t *nodes, *mounts, *devices = NULL;

		if (!*(const bool *)((const char *)cfg + g->enabled)) {
			remove_stale(cfg, g->cls, "feature off");
			continue;
		}
		nodes = json_array();
		mounts = json_array();
		if (!nodes || !mounts || find_nodes(cfg, g->nodes, nodes) < 0) {
			log_error("Cannot look for a feature's device nodes", "feature=%s error=\"out of memory\"",
				  g->cls);
		} else if (json_array_size(nodes) == 0) {
			/* upstream drops an empty spec and its name; say why the feature does nothing */
			log_warn("Feature enabled but none of its device nodes exist; containers will not get it",
				 "feature=%s what=\"%s\" looked_for=\"%s%s%s\" dev_root=%s", g->cls, g->what,
				 g->nodes[0], g->nodes[1] ? " " : "", g->nodes[1] ? g->nodes[1] : "",
				 cfg->host->dev_root);
			remove_stale(cfg, g->cls, "device nodes absent");
		} else if (cdi && find_files(cfg, g->files, mounts) == 0) {
			devices = json_pack("[{s:s, s:{s:O}}]", "name", "all", "containerEdits", "deviceNodes", nodes);
			if (devices && json_array_size(mounts))
				json_object_set(json_object_get(json_array_get(devices, 0), "containerEdits"), "mounts",
						mounts);
			if (devices && write_spec(cfg, g->cls, devices) == 0)
				written |= g->bit;
		}
		json_decref(devices);
		json_decref(nodes);
		json_decref(mounts);
	}
	return written;
}
