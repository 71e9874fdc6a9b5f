/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet's OCI hook for CDI specs: the four actions of NVIDIA's nvidia-cdi-hook that make injected
 * driver libraries usable in a container (docs/reference/cdi-hook.md). The runtime runs the hook
 * as a createContainer hook: in the container's mount namespace, before pivot_root, with the OCI
 * state JSON on stdin. Every path the actions touch is resolved inside the rootfs (inroot.h).
 *
 *	struct oci_state st = {0};
 *	r = oci_state_parse(text, len, &st, &err);         // stdin
 *	r = oci_state_rootfs(&st, &rootfs, &err);          // bundle/config.json root.path
 *	root_fd = cdihook_open_rootfs(rootfs, &err);        // refused when it is the host's "/"
 *	r = cdihook_update_ldcache(root_fd, &ldopts, &err); // ldopts.rootfs = rootfs
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

#define OCI_STATE_MAX  (1u << 20)  /* the state is a few hundred bytes; more is not a state */
#define OCI_CONFIG_MAX (16u << 20) /* config.json with many mounts and env stays far below */

/* What the hook needs from the OCI state (runtime-spec runtime.md "State"). */
struct oci_state {
	char *id;
	char *bundle; /* absolute path of the bundle dir (REQUIRED by the spec) */
	char *root;   /* crun's non-standard "root" (the rootfs path), NULL when absent */
	pid_t pid;    /* the container's init process in the runtime's pid namespace; 0 when absent */
};
void oci_state_clear(struct oci_state *s);

/* Parse the state JSON (name is for messages, e.g. "stdin"). Fields of the wrong type are errors. */
int oci_state_parse(const char *name, const char *text, size_t len, struct oci_state *ret, struct gerr *err);

/* root.path of a config.json text (runtime-spec config.md "Root"); *ret is malloc'd. */
int oci_config_root(const char *name, const char *text, size_t len, char **ret, struct gerr *err);

/*
 * The container's rootfs on the host: state "root" if given, else root.path of
 * <bundle>/config.json, relative to the bundle when not absolute. "/" is refused: the hook
 * would then edit the host.
 */
int oci_state_rootfs(const struct oci_state *s, char **ret, struct gerr *err);

/*
 * Open the rootfs (O_PATH|O_DIRECTORY) and refuse it when it is the host's "/" by identity
 * (st_dev/st_ino), whatever the text: "/.", "/tmp/..", a symlink to "/", "/proc/self/root".
 * Returns the fd or -errno with err set.
 */
int cdihook_open_rootfs(const char *rootfs, struct gerr *err);

/* ---- actions (root_fd: an O_PATH|O_DIRECTORY fd of the rootfs) ---- */

/* create-symlinks: each "target::link"; an existing link to the same target is kept. */
int cdihook_create_symlinks(int root_fd, const char *const *links, size_t n, struct gerr *err);

/* How long ldconfig may run before it is killed (a FIFO in ld.so.conf blocks it forever). */
#define CDIHOOK_LDCONFIG_TIMEOUT_S 30

struct cdihook_ldcache_options {
	const char *ldconfig_path;  /* host ldconfig, absolute; "@" prefix allowed; NULL = /sbin/ldconfig */
	const char *const *folders; /* container dirs holding injected libraries */
	size_t n_folders;
	const char *rootfs; /* the rootfs's host path, re-opened in the new mount namespace */
	unsigned timeout_s; /* 0 = CDIHOOK_LDCONFIG_TIMEOUT_S; never more than that */
};
/*
 * update-ldcache: write the folders and the container's system dirs into ld.so.conf.d drop-ins,
 * then run the host's static ldconfig isolated in the rootfs (cdihook_run_isolated).
 */
int cdihook_update_ldcache(int root_fd, const struct cdihook_ldcache_options *o, struct gerr *err);

/*
 * enable-cuda-compat: when the container's compat dir (NULL = /usr/local/cuda/compat) holds one
 * libcuda.so.X.Y whose major version is newer than the host driver's, add the dir to
 * ld.so.conf.d (00-compat-*). A NULL/empty host version is a no-op, as upstream.
 */
int cdihook_enable_cuda_compat(int root_fd, const char *host_driver_version, const char *compat_dir, struct gerr *err);

/*
 * disable-device-node-modification: when the host's params file (NULL = /proc/driver/nvidia/params)
 * says "ModifyDeviceFiles: 1", mount a read-only copy saying 0 over the container's
 * /proc/driver/nvidia/params. No params file, or already 0: nothing to do.
 */
int cdihook_disable_devnode_mod(int root_fd, const char *host_params, struct gerr *err);

/*
 * chmod: each path inside the root (links followed inside it; missing ones skipped, as upstream) gets
 * mode unless it has it; a permission error is ignored as upstream does (a read-only /dev).
 */
int cdihook_chmod(int root_fd, const char *const *paths, size_t n, mode_t mode, struct gerr *err);
/* --mode: octal permission bits, at most 0777 (upstream drops higher bits silently; refused here). */
int cdihook_parse_mode(const char *s, mode_t *ret, struct gerr *err);

/*
 * update-application-profile: the minors of the container's /dev/nvidia<N> character devices become
 * the EGLVisibleDGPUDevices mask of /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf
 * (no GPU node: nothing written; a read-only rootfs: nothing written, no error, as upstream).
 */
int cdihook_update_app_profile(int root_fd, struct gerr *err);

/*
 * --ldconfig-path must name a host file by an absolute path ("@" prefix allowed): the runtime runs
 * hooks with the rootfs as working directory, so a relative one would run the image's binary as
 * root. err says why, without the option's name.
 */
int cdihook_check_ldconfig_path(const char *path, struct gerr *err);

/*
 * In a process that a dynamic loader started (not the static gpulet-cdi-hook): -EPERM with err
 * naming the first loader variable (LD_*, GCONV_PATH, GLIBC_TUNABLES, ...) in the environment; the
 * hook then runs no action (loaderenv.c says why refusing is all that is left). 0 otherwise.
 */
int cdihook_check_loader_env(struct gerr *err);

/* Whether no dynamic loader started this process (the static gpulet-cdi-hook). */
bool cdihook_is_static(void);

/* ---- apply-cuda-memory-limits (memlimits.c), a createRuntime hook ---- */

#define CDIHOOK_MEM_REQUEST_ENV "NVIDIA_GPU_MEMORY_REQUEST" /* MiB, the soft limit */
#define CDIHOOK_MEM_LIMIT_ENV   "NVIDIA_GPU_MEMORY_LIMIT"   /* MiB, the hard limit */
#define CDIHOOK_CGROUP_ROOT     "/sys/fs/cgroup"

struct cdihook_memlimits {
	bool wanted;                       /* either variable is in the container's env */
	unsigned long long request, limit; /* bytes; limit ULLONG_MAX: none (NVML_DEVICE_MEMORY_LIMIT_MAX) */
	char *cgroup;                      /* CDIHOOK_CGROUP_ROOT + the container's unified cgroup */
};
void cdihook_memlimits_clear(struct cdihook_memlimits *m);

/* The two variables of a config.json text (name for messages): values, checked as upstream; no cgroup. */
int cdihook_memlimits_from_config(const char *name, const char *text, size_t len, struct cdihook_memlimits *ret,
				  struct gerr *err);
/* CDIHOOK_CGROUP_ROOT joined with the "0::" line of a /proc/<pid>/cgroup text; ".." is refused. */
int cdihook_cgroup_path(const char *name, const char *text, char **ret, struct gerr *err);
/*
 * What the container asks for: <bundle>/config.json's variables; when either is set, also the cgroup v2
 * check and the container's cgroup from <proc>/<pid>/cgroup (proc NULL = /proc). ret->wanted false:
 * nothing to do. An unreadable config.json is an error (a limit asked for must not pass unapplied).
 */
int cdihook_memlimits_read(const struct oci_state *s, const char *proc, struct cdihook_memlimits *ret,
			   struct gerr *err);

/*
 * The static hook's hand-over for an action that needs NVML: exec the dynamically linked gpulet beside
 * this executable as `gpulet cdi-hook ARGS...` (args: the action and its options) with an empty
 * environment and state[0..len) on stdin. Returns only on failure, -errno with err set.
 */
int cdihook_exec_dynamic(const char *const *args, size_t n_args, const char *state, size_t len, struct gerr *err);

/* A host executable run over a rootfs in new namespaces (isolate.c). */
struct cdihook_jail {
	const char *rootfs; /* host path; re-opened after the unshare and compared with dev/ino */
	dev_t dev;
	ino_t ino;
	int exe_fd;         /* the executable, opened on the host */
	const char *name;   /* for messages */
	char *const *argv;  /* run with an empty environment */
	unsigned timeout_s; /* 0 = CDIHOOK_LDCONFIG_TIMEOUT_S */
};
/* Run it (docs/reference/cdi-hook.md §6); 0 when it exits 0, else -errno with err set. */
int cdihook_run_isolated(const struct cdihook_jail *j, struct gerr *err);

/* Write text as path inside the root (parents created), atomically, mode 0644. */
int cdihook_write_in_root(int root_fd, const char *path, const char *text, struct gerr *err);
