/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI (Container Device Interface) specs: build one for a node, write it atomically, read one
 * (JSON or YAML), validate files and spec dirs the way a runtime will read them.
 *
 * Facts come from the CDI SPEC.md / specs-go / pkg/parser (docs/reference/cdi.md) and from what podman
 * 4.3.1 and the Debian CDI Go library 0.5.2 do on this machine (docs/reference/real-peers.md §D, §H).
 *
 * Typical use (the plugin):
 *
 *	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
 *	o.host = paths; o.vendor = "k8s.device-plugin.nvidia.com"; o.class = "gpu";
 *	o.names = CDI_NAMES_UUID;
 *	json_auto_t *spec = NULL;
 *	r = cdi_generate(node, &o, &spec, &err);
 *	dir = root_path(paths->root, CDI_DYNAMIC_DIR);
 *	r = cdi_write_spec(dir, "k8s.device-plugin.nvidia.com-gpu.json", spec, &err);
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "util/enumtab.h"
#include "util/err.h"
#include "util/hostpaths.h"
#include "util/warnings.h"
#include "nvml/node.h"

struct cdi_hook_options;

#define CDI_STATIC_DIR  "/etc/cdi"
#define CDI_DYNAMIC_DIR "/var/run/cdi" /* wins over /etc/cdi (later dir = higher priority) */

/* Device naming: bit set, like nvidia-ctk's repeatable --device-name-strategy. */
enum cdi_names {
	CDI_NAMES_INDEX = 1 << 0, /* GPU "0", MIG "0:1" (GPU index : MIG device index) */
	CDI_NAMES_UUID = 1 << 1,  /* "GPU-…", "MIG-…" */
	CDI_NAMES_BOTH = CDI_NAMES_INDEX | CDI_NAMES_UUID,
	CDI_NAMES_TYPE_INDEX = 1 << 2, /* GPU "gpu0", MIG "mig0:1" (nvidia-ctk's type-index, namer.go) */
};

/*
 * Upstream's CDI feature flags (nvidia-container-toolkit pkg/nvcdi/api.go, v1.20; the device plugin's
 * --cdi-feature-flags / CDI_FEATURE_FLAGS hand them on): all are off by default. What gpulet's
 * generator does with each is docs/reference/device-plugin.md §8.1; cdi_features_check() refuses the
 * ones it cannot honour.
 */
enum cdi_feature {
	CDI_FEATURE_DISABLE_IPC = 1 << 0,          /* disable-ipc-discoverer: no IPC socket mounts */
	CDI_FEATURE_NO_ADDITIONAL_GIDS = 1 << 1,   /* no-additional-gids-for-device-nodes: gpulet never adds them */
	CDI_FEATURE_NO_NVSANDBOXUTILS = 1 << 2,    /* disable-nvsandboxutils: gpulet reads NVML only */
	CDI_FEATURE_NO_MULTIPLE_CSV = 1 << 3,      /* disable-multiple-csv-devices: CSV (Tegra) mode only */
	CDI_FEATURE_COHERENT_ANNOTATIONS = 1 << 4, /* enable-coherent-annotations: not done here, refused */
	CDI_FEATURE_EXPLICIT_LIBRARIES = 1 << 5,   /* enable-explicit-driver-libraries: not done here, refused */
};
/* Their names (an option row of kind OPT_FLAGS takes them), upstream's misspelt alias after the main row. */
extern const struct enum_name cdi_feature_names[7];
/* 0, or -EOPNOTSUPP with err naming a flag of bits the generator cannot honour and why. */
int cdi_features_check(unsigned bits, struct gerr *err);

/*
 * Where things are. Paths written into the spec are host paths (driver_root / dev_root + path);
 * root is only the prefix under which gpulet reads them (a fake node root in tests, /host in a
 * container that mounts the host), and never appears in the spec.
 */
struct cdi_gen_options {
	/* the read prefix, the host dir the driver is installed under and the one holding dev/nvidia*, as the
	 * verb resolved them (util/hostpaths.h) */
	const struct host_paths *host;
	const char *vendor; /* NULL = "nvidia.com" */
	const char *class;  /* NULL = "gpu" */
	unsigned names;     /* enum cdi_names; 0 = CDI_NAMES_BOTH */
	bool no_all_device; /* do not emit the "all" device */
	/*
	 * Mark the spec as written by gpulet (an env entry GPULET_CDI_SPEC=<kind> in the spec-level
	 * edits), so cdi_write_spec() may later replace it. true in CDI_GEN_OPTIONS_INIT.
	 */
	bool owner_marker;
	/* A partial spec (see warnings) is an error instead: nothing is returned. */
	bool strict;
	/*
	 * What a generated spec leaves out while the rest still works, one line per item naming it: a
	 * lost GPU, a GPU or MIG device node that does not exist, a driver library's dangling link, an
	 * expected library that is missing (driver_libs[].need). Lines are added to it on success;
	 * NULL = not collected (the items are still left out).
	 */
	struct warnings *warnings;
	/* OCI hooks in the spec-level edits (cdi/hooks.h); NULL = all, run by this gpulet binary */
	const struct cdi_hook_options *hooks;
	/*
	 * Also a device for each MIG-enabled GPU as a whole (its node, DRM nodes and links, as a GPU
	 * without MIG), beside its MIG devices: the device plugin under --mig-strategy=none advertises
	 * such a GPU whole, and the names it hands out must resolve (docs/reference/device-plugin.md §8).
	 * false for `cdi generate`, which skips them as nvidia-ctk does.
	 */
	bool whole_mig_enabled;
	/* enum cdi_feature bits (upstream's feature flags); the generator honours what cdi_features_check() allows */
	unsigned features;
	/*
	 * nvidia-ctk's --device-id: only these devices (0 = every one). Taken in order, the first "all" or
	 * "none" decides for the whole list ("none": one placeholder device "none" and no "all", as
	 * upstream's lib-nvml.go); else each is a GPU index or UUID (that GPU whole, MIG enabled or not) or a
	 * MIG device "G:M" or UUID. An ID that names nothing is an error.
	 */
	const char *const *device_ids;
	size_t n_device_ids;
};
#define CDI_GEN_OPTIONS_INIT         \
	{                            \
		.owner_marker = true \
	}

/*
 * Build the spec for node n: one device per GPU without MIG (a MIG-enabled GPU gets none unless
 * whole_mig_enabled, only its instances), per MIG instance (/dev/nvidia<parent> + the GI and CI
 * nvidia-caps nodes), and
 * "all" (every node of the others). Index names are the NVML GPU index and "G:M" with M the MIG
 * device slot (nvmlDeviceGetMigDeviceHandleByIndex; gaps possible), as nvidia-ctk and the NVIDIA
 * plugin's index strategy name them. Spec-level containerEdits: the control device nodes, driver
 * libraries, firmware, IPC sockets, utility binaries and env (NVIDIA_VISIBLE_DEVICES=void,
 * NVIDIA_CTK_LIBCUDA_DIR, the owner marker). cdiVersion is the lowest that covers the fields used
 * (0.5.0 with index names or a dev/driver root other than /, else 0.3.0). *ret is a new reference.
 *
 * A spec that would fail at injection is never returned: -ENOENT when the driver root or dev root
 * does not exist, or the control nodes (nvidiactl, nvidia-uvm), libnvidia-ml or libcuda are
 * missing; -ENODEV when no GPU is left (a spec without devices is invalid); -EINVAL for a bad
 * kind; with o->strict, -EIO when anything would be left out. err says what, where and the fix.
 */
int cdi_generate(const struct node *n, const struct cdi_gen_options *o, json_t **ret, struct gerr *err);

/* Lowest cdiVersion ("0.3.0" … ) that covers the fields and names used in spec. Static string. */
const char *cdi_min_version(const json_t *spec);

/*
 * Write spec as dir/file_name atomically, mode 0644 (JSON for *.json, YAML for *.yaml).
 * dir is created when missing (mode 0755); a dir that is a symlink is refused (-ELOOP).
 * An existing file is replaced only when it is ours: it carries our marker (see
 * cdi_gen_options.owner_marker) with the same kind. A foreign file gives -EEXIST and is left alone.
 * Writing the same bytes again is a no-op (no rename, so watchers see no event).
 */
int cdi_write_spec(const char *dir, const char *file_name, json_t *spec, struct gerr *err);

/*
 * <root>/dev/char/<major>:<minor> links for the NVIDIA character devices in the dev root's dev/ and
 * dev/nvidia-caps/ (nvidia-fs*, nvidia-nvswitch*, nvidia-nvlink* left out), as `nvidia-ctk system
 * create-dev-char-symlinks`: char/ is made when missing, an existing entry is kept; the target is
 * "../<name>" for the dev root "/", else the node's host path. *ret_made: the links made
 * (docs/reference/cdi.md §7.3.1).
 */
int cdi_dev_char_links(const struct host_paths *h, unsigned *ret_made, struct gerr *err);
/*
 * Remove dir/file_name only when it is a spec cdi_write_spec() wrote for kind: a regular file
 * carrying our marker with that kind, checked through one fd (a FIFO is refused, not waited on) that
 * must still be what the name points to when it is unlinked. Neither the last component of dir nor the
 * file is followed when it is a symlink (components above it are: dir under --root is a string join).
 * Returns 1 removed, 0 nothing there; -errno with err when it is left alone (-EEXIST: not ours or
 * not a regular file; -ELOOP: dir is a symlink).
 */
int cdi_remove_spec(const char *dir, const char *file_name, const char *kind, struct gerr *err);
/* A plain name ending in .json or .yaml (what runtimes read); -EINVAL with err otherwise. */
int cdi_spec_file_name_ok(const char *file_name, struct gerr *err);

/* Serialise: JSON (indented, stable key order) or YAML. *ret is malloc'd, NUL-terminated. */
enum cdi_format { CDI_FORMAT_JSON, CDI_FORMAT_YAML };
int cdi_format_spec(const json_t *spec, enum cdi_format f, char **ret, struct gerr *err);

/*
 * Read a spec file into a json_t: *.json with jansson, anything else with the one YAML reader
 * (parse/yaml.h: scalars typed as the CDI Go library's sigs.k8s.io/yaml types them; a duplicate
 * key is an error, as its yaml.UnmarshalStrict). err says file:line:col of a syntax error.
 */
int cdi_read_spec(const char *path, json_t **ret, struct gerr *err);
/* Same from memory; name is used in messages. */
int cdi_parse_spec(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err);

/* ---- validation ------------------------------------------------------------------------------ */

/*
 * One problem. code is stable (a row of the table in validate.c); category is what doctor reports it as:
 *   "spec-invalid"     the file does not load in a runtime (syntax, version, kind, name, fields)
 *   "spec-unreadable"  the runtime cannot read the file/dir (permissions, not a regular file)
 *   "version-too-new"  cdiVersion newer than the runtime knows: silently ignored by it
 *   "duplicate-device" two files at one priority define a device: it disappears
 *   "stale-devices"    a host path in the spec does not exist (driver changed, GPU gone)
 *   "warning"          works, but probably not what was meant (shadowed device, *.yml)
 */
struct cdi_problem {
	const char *code;     /* e.g. "version-too-new", "invalid-device-name"; static string */
	const char *category; /* see above; static string */
	bool error;           /* false for warnings */
	char *file;
	char *json_path; /* "$.devices[2].name", "" for the whole file */
	char *message;
	char *fix;
};

struct cdi_report {
	struct cdi_problem *problems;
	size_t n_problems;
	size_t n_errors;
	size_t n_files;
};
/* Free the problems and zero *r; usable as _cleanup_(cdi_report_clear) struct cdi_report rep = {0}; */
void cdi_report_clear(struct cdi_report *r);
/* {"files": N, "errors": N, "problems": [{code, category, severity, file, path, message, fix}]} */
json_t *cdi_report_to_json(const struct cdi_report *r);

struct cdi_validate_options {
	const char *root; /* read prefix for spec files and host paths, NULL = "/" */
	/*
	 * Highest cdiVersion the consuming runtime understands ("0.5.0"); NULL = no limit beyond
	 * the versions CDI defines. cdi_runtime_max_version() maps a runtime name to it.
	 */
	const char *runtime_version;
	const char *runtime_name; /* for messages, e.g. "podman-4.3"; may be NULL */
	uid_t runtime_uid;        /* the runtime reads spec files as this user (0 = root) */
	gid_t runtime_gid;
	bool no_host_paths; /* skip the host-path existence checks */
};

/* Known runtimes → highest cdiVersion they load. NULL for an unknown name. */
const char *cdi_runtime_max_version(const char *runtime);
/* The table, for --help and doctor. */
struct cdi_runtime {
	const char *name;
	const char *max_version;
	const char *source;
	bool v_prefix; /* loads cdiVersion "v0.5.0" (CDI library >= 0.5.4) */
};
extern const struct cdi_runtime cdi_runtimes[];
extern const size_t cdi_n_runtimes;

/*
 * Validate files. Each is checked alone (syntax, version, names, fields, host paths), then the
 * set is checked for device names defined twice. Problems are appended to *rep (zeroed by the
 * caller). Returns -errno only for out-of-memory; problems are not errors of this call.
 */
int cdi_validate_files(const char *const *files, size_t n, const struct cdi_validate_options *o,
		       struct cdi_report *rep);

/*
 * Validate the spec dirs a runtime reads, in priority order (lowest first; default
 * /etc/cdi then /var/run/cdi, each under o->root). A device defined in two files of the same dir
 * is a "duplicate-device" error; in two dirs, a "shadowed-device" warning (the later dir wins).
 * A missing dir is fine; an unreadable one is "spec-unreadable".
 */
int cdi_validate_dirs(const char *const *dirs, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep);

/* Validate one parsed spec (file is for messages; host paths checked under o->root). */
int cdi_validate_spec(const char *file, const json_t *spec, const struct cdi_validate_options *o,
		      struct cdi_report *rep);

/*
 * Before writing spec as dir/file_name: the files a runtime would read beside it that define the
 * same devices, found by the scan validate and list use. dir's priority comes from its name: a
 * dir ending in /etc/cdi has the matching .../var/run/cdi above it, one ending in /var/run/cdi or
 * /run/cdi has .../etc/cdi below it (docs/reference/cdi.md §4). One problem per other file, its
 * message the shared device names (comma-separated), its file the other file:
 *   "conflict-same-dir"  error   same dir: the runtime drops the devices defined twice
 *   "conflict-shadowed"  error   the higher dir: the runtime uses that file, not ours
 *   "conflict-shadows"   warning the lower dir: ours wins
 * dir/file_name itself (the file being replaced) does not count. -ENOMEM only.
 */
int cdi_spec_conflicts(const char *dir, const char *file_name, const json_t *spec, struct cdi_report *rep);

/*
 * 0 when path does not exist or was written by gpulet for kind (our marker); -EEXIST with err
 * saying whose it is otherwise (a foreign file, another kind's marker, not a regular file).
 */
int cdi_spec_replaceable(const char *path, const char *kind, struct gerr *err);
/*
 * The same for name under the dir fd dfd (AT_FDCWD: a path), read through one fd opened with O_NOFOLLOW |
 * O_NONBLOCK (a symlink or FIFO is refused, never followed or waited on). 0 when absent, 1 when ours with
 * *ret_st (optional) the checked file's stat, to compare before acting on the name. shown names it in
 * messages.
 */
struct stat;
int cdi_spec_replaceable_at(int dfd, const char *name, const char *shown, const char *kind, struct stat *ret_st,
			    struct gerr *err);

/* Rename path to path + ".gpulet-replaced" (runtimes read only *.json, *.yaml); *ret the new name. */
#define CDI_REPLACED_SUFFIX ".gpulet-replaced"
int cdi_move_aside(const char *path, char **ret, struct gerr *err);

/*
 * The path a spec dir is read at: an absolute dir under root, a relative one as given (relative
 * to the working dir, never under root). NULL on ENOMEM.
 */
char *cdi_dir_path(const char *root, const char *dir);

/* Name syntax (pkg/parser): vendor, class (>= 2 chars, see spec_version.c), device name. */
bool cdi_vendor_valid(const char *s);
bool cdi_class_valid(const char *s);
bool cdi_device_name_valid(const char *s);

/*
 * Devices the dirs define, as a runtime resolves them (later dir wins; names defined twice at one
 * priority are dropped, like the CDI cache does): JSON array of
 * {"name": "vendor/class=dev", "kind", "device", "file", "shadows": [files], "conflict": bool}.
 * Files that fail to load are skipped (validate says why).
 */
int cdi_list_dirs(const char *root, const char *const *dirs, size_t n, json_t **ret, struct gerr *err);
