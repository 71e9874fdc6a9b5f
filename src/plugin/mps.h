/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA MPS as the upstream device plugin uses it (docs/reference/device-plugin.md §5.1): the
 * per-resource dir layout under the MPS root, the limits each control daemon gets, running
 * `nvidia-cuda-mps-control` (start, commands on its stdin) and the readiness check the plugin
 * makes before it hands out MPS replicas. Computes and runs; never logs.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvml/node.h"
#include "plugin/config.h"
#include "plugin/resources.h"
#include "util/err.h"

#define MPS_CONTAINER_ROOT "/mps"     /* where upstream's chart mounts the MPS root in its containers */
#define MPS_CONTAINER_SHM  "/dev/shm" /* where a workload gets <root>/shm (upstream Daemon.ShmDir()) */
#define MPS_CONTROL_BIN    "nvidia-cuda-mps-control"
#define MPS_READY_FILE     ".ready"
#define MPS_QUERY          "get_default_active_thread_percentage" /* upstream's health probe */
#define MPS_TIMEOUT_MS     5000

/*
 * The one layout of an MPS root (upstream mps/root.go), on the host (--mps-root) and in containers
 * (MPS_CONTAINER_ROOT): <root>/<resource>/pipe, <root>/<resource>/log, <root>/<resource>/.started,
 * <root>/.ready, <root>/shm (resource unused for the last two). -ENAMETOOLONG when buf is too small.
 */
enum mps_path { MPS_PIPE, MPS_LOG, MPS_STARTED, MPS_READY, MPS_SHM };
int mps_path(const char *root, const char *resource, enum mps_path which, char *buf, size_t size);

/* A host tool (nvidia-cuda-mps-control, nvidia-smi) in the fixed tool dirs under h's root, its driver root (where
 * the host has it, then where it is mounted here); NULL if none. */
char *mps_find_tool(const struct host_paths *h, const char *name);

/*
 * Run path with argv and envp (NULL-terminated), input written to its stdin (may be NULL), its
 * stdout and stderr into out (NUL-terminated, truncated to size; "" when it could not run). Only
 * the direct child is waited for, so a command that daemonizes (`-d`) returns when its parent
 * exits. Returns the exit status (>= 0), -ETIMEDOUT (killed after timeout_ms) or -errno.
 */
int mps_run(const char *path, char *const argv[], char *const envp[], const char *input, char *out, size_t size,
	    int timeout_ms);

/*
 * One command to the control daemon whose pipe dir is root/<resource>/pipe, as upstream's
 * EchoPipeToControl. 0 with its answer in out, or -errno with err saying what it printed.
 */
int mps_control(const char *bin, const char *root, const char *resource, const char *cmd, char *out, size_t size,
		struct gerr *err);

/*
 * Is the MPS control daemon for resource ready? root/.ready exists (written by the
 * mps-control-daemon once every daemon runs with its limits) and the daemon answers
 * get_default_active_thread_percentage with a number within timeout_ms. 0 ready, else -errno with
 * err saying why.
 */
int mps_ready(const char *bin, const char *root, const char *resource, int timeout_ms, struct gerr *err);

/* The limits of one control daemon (upstream Daemon.Start; NVIDIA's DRA driver's template). */
struct mps_limits {
	unsigned thread_percentage; /* 100 / replicas per GPU; 0 = not set */
	size_t n_gpus;
	struct {
		/* the device as set_default_device_pinned_mem_limit names it: the plugin's index, the DRA driver's UUID
		 */
		char device[NODE_UUID_MAX];
		char uuid[NODE_UUID_MAX];
		uint64_t pinned_mib; /* memory / replicas, MiB; 0 = not set (memory unknown) */
	} gpus[64];
};
void mps_limits(const struct node *n, const struct resource *r, struct mps_limits *ret);

/*
 * The steps of starting one control daemon, shared by `gpulet mps-control-daemon` (one per resource)
 * and the DRA driver (one per claim): its pipe and log dirs are root/<name>/{pipe,log}.
 *
 * mps_compute_mode: `nvidia-smi -i <uuid> -c <mode>` (upstream setComputeMode) for each uuid; needs a
 * GPU, and its output says why not; *done (may be NULL) counts the GPUs switched. smi NULL: -ENOENT.
 * mps_start_control: `nvidia-cuda-mps-control -d` with CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY
 * (and CUDA_VISIBLE_DEVICES=visible unless NULL), the dirs created; in a new mount namespace with
 * shm_dir bound on /dev/shm unless shm_dir is NULL (the DRA driver's per-claim /dev/shm, as the
 * clients get it). -EALREADY when a daemon already serves that pipe dir (err says so).
 * mps_set_limits: the limits of lim (pinned memory per device, then the thread percentage).
 */
int mps_compute_mode(const char *smi, const char *const *uuids, size_t n, const char *mode, size_t *done,
		     struct gerr *err);
int mps_start_control(const char *bin, const char *root, const char *name, const char *visible, const char *shm_dir,
		      struct gerr *err);
int mps_set_limits(const char *bin, const char *root, const char *name, const struct mps_limits *lim, struct gerr *err);

/*
 * Where SELinux is on (<host_root>/sys/fs/selinux exists), label dir and everything below it
 * MPS_SELINUX_LABEL, as upstream's mps-control-daemon labels each pipe dir before it starts the control
 * daemon, so that workload containers may open the pipes (docs/reference/device-plugin.md §5.1).
 * 1 labelled, 0 SELinux is off, -errno with err naming the file.
 */
#define MPS_SELINUX_LABEL "system_u:object_r:container_file_t:s0"
int mps_selinux_relabel(const char *host_root, const char *dir, struct gerr *err);

/*
 * A tmpfs on dir of mps_shm_size() of <root>/proc/meminfo, nosuid, nodev, noexec, relatime, for the MPS
 * clients' /dev/shm; what is mounted there already is replaced (upstream's CleanupMountPoint). opts
 * gets the size option. Needs CAP_SYS_ADMIN (err says so).
 */
int mps_mount_tmpfs(const char *root, const char *dir, char *opts, size_t size, struct gerr *err);

/* The tmpfs size upstream's mount-shm gives <root>/shm: half of MemTotal from meminfo text, else 65536k. */
void mps_shm_size(const char *meminfo, char *buf, size_t size);
