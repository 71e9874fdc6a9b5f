/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver root: what an installed NVIDIA driver puts on a host that a container needs —
 * control device nodes, user-space libraries (found through the root's ld.so.cache), GSP
 * firmware, IPC sockets and utility binaries. Used by the CDI generator and by doctor.
 *
 * Paths: every *host path* here is driver_root (or dev_root) + the path inside it; the files are
 * read at root_path(root, host path). The container path is the path inside the driver root.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/hostpaths.h"
#include "util/warnings.h"

/* ---- driver files ----------------------------------------------------------------------------- */

enum driver_file_kind {
	DRIVER_DEVICE_NODE, /* control nodes: nvidiactl, nvidia-uvm, … */
	DRIVER_LIBRARY,
	DRIVER_FIRMWARE,
	DRIVER_IPC_SOCKET,
	DRIVER_BINARY,
	DRIVER_CONFIG, /* ICD and vendor files of the OpenCL, Vulkan and EGL loaders, at their standard paths */
	_DRIVER_KIND_MAX,
};

/*
 * The driver's control device nodes, the one list: the spec-level nodes of a CDI spec (nvidia-ctk
 * common-nvml.go controlDeviceNodeDiscoverer, docs/reference/cdi.md §7.3) and the nodes
 * --pass-device-specs hands out (docs/reference/device-plugin.md §3.4). A node with a fix is one a
 * CUDA container cannot work without; nvidia-uvm-tools and nvidia-modeset stay optional (the
 * driver creates them only for profilers and display use).
 */
struct driver_control_node {
	const char *path;
	const char *fix; /* required: how to create it; NULL: optional */
};
extern const struct driver_control_node driver_control_nodes[];
extern const size_t driver_n_control_nodes;

struct driver_file {
	enum driver_file_kind kind;
	char *host_path;      /* as the runtime sees it on the host (driver_root/dev_root + path) */
	char *container_path; /* where it goes in the container (a config file: its loader's standard path) */
	bool is_dir;          /* IPC: /tmp/nvidia-mps is a directory */
};

struct driver_info {
	char version[80]; /* the driver version the libraries were matched against */
	struct driver_file *files;
	size_t n_files;
	char **lib_dirs; /* container dirs holding the versioned libraries (NVIDIA_CTK_LIBCUDA_DIR) */
	size_t n_lib_dirs;
	bool ldcache_found; /* false: libraries were searched in the default dirs only */
	/*
	 * What discovery skipped that a user should hear about, one line per item: a driver
	 * library's link whose target is missing (a stale ld.so.cache after a driver upgrade).
	 */
	struct warnings warnings;
};

struct driver_options {
	const struct host_paths *host; /* root, driver root and dev root, as the verb resolved them */
	const char *version; /* driver version from NVML ("550.54.15"); NULL = infer from libcuda/libnvidia-ml */
};

/*
 * Find what the driver installed. Missing pieces are not errors (a file absent is simply not
 * listed, a dangling link of a driver library is a line in warnings); the caller decides what it
 * needs (driver_find_library(), driver_libs[].need). Returns -errno only on out-of-memory or an
 * unreadable ld.so.cache that exists (then err names it). Files are sorted by kind, then
 * container path, without duplicates.
 */
int driver_discover(const struct driver_options *o, struct driver_info **ret, struct gerr *err);
void driver_info_free(struct driver_info *d);
DEFINE_CLEANUP_FUNC(struct driver_info, driver_info_free)

/* How much a container needs a driver library. */
enum driver_lib_need {
	DRIVER_LIB_OPTIONAL, /* a workload of its group needs it; nodes without it are normal */
	DRIVER_LIB_EXPECTED, /* every driver install has it; missing = a broken or partial install */
	DRIVER_LIB_REQUIRED, /* no CUDA container works without it */
};

/* The known driver library names (libnvidia-container nvc_info.c lists, nvidia-ctk's lists). */
struct driver_lib {
	const char *name;  /* "libcuda.so" */
	const char *group; /* "compute", "utility", "video", "graphics", … */
	enum driver_lib_need need;
	const char *what; /* what breaks without it (for messages), NULL for optional ones */
};
extern const struct driver_lib driver_libs[];
extern const size_t driver_n_libs;

const char *driver_kind_name(enum driver_file_kind k);

/* The first library file of d named name.* ("libcuda.so" finds libcuda.so.1 or libcuda.so.535…). */
const struct driver_file *driver_find_library(const struct driver_info *d, const char *name);

/*
 * The one list of directories (paths inside a driver root, in search order) where driver
 * libraries live: the NVML loader (so every verb, doctor and the plugin) and discovery without an
 * ld.so.cache use it.
 */
extern const char *const driver_lib_dirs[];
extern const size_t driver_n_lib_dirs;

/*
 * Follow the symlinks of path's last component inside the driver root, as a process chrooted
 * there would: absolute targets are taken relative to driver_root (Debian's /etc/alternatives
 * links are absolute), at most 16 hops. Files are read at root + driver_root + path (root, driver_root:
 * NULL or "/" = none). *ret is the final path inside the driver root; -errno if a hop is missing.
 */
int driver_resolve(const char *root, const char *driver_root, const char *path, char **ret);
