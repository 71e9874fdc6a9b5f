/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GpuConfig sharing on the node (sharing.h). NVIDIA's driver: sharing.go (TimeSlicingManager,
 * MpsControlDaemon), nvlib.go setTimeSlice()/setComputeMode(), templates/mps-control-daemon.tmpl.yaml
 * at v25.12.0 (docs/reference/dra.md §6.3). gpulet runs the control daemon as its own child with the
 * code of `gpulet mps-control-daemon` instead of a Deployment per claim.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dra/sharing.h"
#include "plugin/mps.h"
#include "util/fileio.h"

#define MPS_PIPE_IN_CONTAINER "/tmp/nvidia-mps" /* NVIDIA's GetCDIContainerEdits() */
/* the longest pipe dir the real 535 control daemon takes: its socket control_privileged must fit
 * sun_path (108 bytes); seen with longer dirs: `-d` exits 1 without a word (docs/reference/dra.md §6.3) */
#define MPS_PIPE_DIR_MAX 88

/* A host tool: the host's own dirs, then the driver root's (never $PATH). */
static char *find_tool(const struct dra_share_env *e, const char *name)
{
	char *p = host_find_bin(e->root, "/", name);

	if (!p && e->driver_root && e->driver_root[0] && !streq(e->driver_root, "/"))
		p = host_find_bin(e->root, e->driver_root, name);
	return p;
}

static int push(json_t *arr, const char *s)
{
	return json_array_append_new(arr, json_string(s)) < 0 ? -ENOMEM : 0;
}

/* ---- TimeSlicing ---- */

static int set_timeslice(const char *smi, const char *uuid, int interval, struct gerr *err)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	char n[8], out[1024];
	char *argv[] = {(char *)smi, "compute-policy", "-i", (char *)uuid, "--set-timeslice", n, NULL};
	int r;

	snprintf(n, sizeof(n), "%d", interval);
	r = mps_run(smi, argv, envp, NULL, out, sizeof(out), MPS_TIMEOUT_MS);
	if (r != 0)
		return gerr_set(err, r < 0 ? -r : EIO,
				"nvidia-smi compute-policy -i %s --set-timeslice %d failed (%s): %s", uuid, interval,
				r < 0 ? strerror(-r) : "exit status", out);
	return 0;
}

static int timeslice_apply(const struct dra_share_env *e, const struct dra_sharing *s, const char *const *gpus,
			   size_t n, json_t *done, struct gerr *err)
{
	_cleanup_free_ char *smi = NULL;
	json_t *list = json_array();
	int r;

	if (!list || json_object_set_new(done, "gpus", list) < 0 ||
	    json_object_set_new(done, "interval", json_integer(s->interval)) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (!n) /* MIG devices only: they are time-sliced within their instance already */
		return 0;
	if (!(smi = find_tool(e, "nvidia-smi")))
		return gerr_set(err, ENOENT,
				"nvidia-smi not found under the root or the driver root: TimeSlicing sets the "
				"GPU's time slice with it");
	for (size_t i = 0; i < n; i++) {
		/* the compute mode first, as NVIDIA's SetTimeSlice() */
		if ((r = mps_compute_mode(smi, &gpus[i], 1, "DEFAULT", NULL, err)) < 0 ||
		    (r = set_timeslice(smi, gpus[i], (int)s->interval, err)) < 0)
			return r;
		if (push(list, gpus[i]) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int timeslice_undo(const struct dra_share_env *e, const json_t *done, struct gerr *err)
{
	const json_t *gpus = json_object_get(done, "gpus");
	_cleanup_free_ char *smi = NULL;
	size_t i;
	json_t *u;
	int r;

	if (!json_array_size(gpus))
		return 0;
	if (!(smi = find_tool(e, "nvidia-smi")))
		return gerr_set(err, ENOENT, "nvidia-smi not found: cannot set the time slice back to Default");
	json_array_foreach (gpus, i, u)
		if ((r = set_timeslice(smi, json_string_value(u), DRA_TS_DEFAULT, err)) < 0)
			return r;
	return 0;
}

/* ---- MPS ---- */

/* <root><plugin dir>/mps: the MPS root of the claims' daemons, as this process reads it */
static char *mps_root(const struct dra_share_env *e)
{
	_cleanup_free_ char *dir = root_path(e->root, e->plugin_dir);
	char *p = NULL;

	return dir && asprintf(&p, "%s/mps", dir) >= 0 ? p : NULL;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* The MPS control daemon's limits for a group. */
static int limits(const struct dra_sharing *s, const char *const *devs, size_t n, struct mps_limits *lim, json_t *done,
		  struct gerr *err)
{
	_cleanup_free_ uint64_t *mib = calloc(n ? n : 1, sizeof(*mib));
	json_t *pinned = json_object();
	int r;

	if (!mib || !pinned || json_object_set_new(done, "pinnedMiB", pinned) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (n > ELEMENTSOF(lim->gpus))
		return gerr_set(err, E2BIG, "more than %zu devices share one MPS daemon", ELEMENTSOF(lim->gpus));
	if ((r = dra_mps_pinned_mib(s, devs, n, mib, err)) < 0)
		return r;
	memset(lim, 0, sizeof(*lim));
	lim->thread_percentage = s->thread_pct > 0 ? (unsigned)s->thread_pct : 0;
	for (size_t i = 0; i < n; i++) {
		/* the device's ordinal among CUDA_VISIBLE_DEVICES (devs, in that order), not its UUID as NVIDIA's
		 * template writes: the real control daemon keeps a limit set by ordinal, and without a GPU drops
		 * one set by UUID ("No default pinned memory limit set for the device!"); docs/reference/dra.md §6.3 */
		snprintf(lim->gpus[i].device, sizeof(lim->gpus[i].device), "%zu", i);
		snprintf(lim->gpus[i].uuid, sizeof(lim->gpus[i].uuid), "%s", devs[i]);
		lim->gpus[i].pinned_mib = mib[i];
		if (mib[i])
			json_object_set_new(pinned, devs[i], json_integer((json_int_t)mib[i]));
	}
	lim->n_gpus = n;
	if (s->thread_pct >= 0)
		json_object_set_new(done, "threadPercentage", json_integer(s->thread_pct));
	return 0;
}

/* "a,b,c": CUDA_VISIBLE_DEVICES of the group's devices in the order their limits name them. */
static char *visible_of(const char *const *devs, size_t n)
{
	size_t len = 1;
	char *v;

	for (size_t i = 0; i < n; i++)
		len += strlen(devs[i]) + 1;
	if (!(v = calloc(len, 1)))
		return NULL;
	for (size_t i = 0; i < n; i++)
		strcat(strcat(v, i ? "," : ""), devs[i]);
	return v;
}

/* Start the group's control daemon with its limits and wait until it answers. */
static int launch(const char *bin, const char *root, const char *id, const char *const *devs, size_t n,
		  const struct mps_limits *lim, int thread_pct, const char *shm, json_t *done, struct gerr *err)
{
	_cleanup_free_ char *visible = visible_of(devs, n);
	char out[256];
	int r;

	if (!visible)
		return gerr_set(err, ENOMEM, "out of memory");
	r = mps_start_control(bin, root, id, visible, shm, err);
	if (r == -EALREADY) { /* one of an attempt that died half-way: this claim's, so ours to stop */
		(void)mps_control(bin, root, id, "quit", out, sizeof(out), NULL);
		usleep(200 * 1000);
		r = mps_start_control(bin, root, id, visible, shm, err);
	}
	if (r < 0)
		return r;
	if (done)
		json_object_set_new(done, "started", json_true());
	if ((r = mps_set_limits(bin, root, id, lim, err)) < 0)
		return r;
	if (thread_pct == 0 && /* 0 is a valid percentage, and mps_limits' "unset" */
	    (r = mps_control(bin, root, id, "set_default_active_thread_percentage 0", out, sizeof(out), err)) < 0)
		return r;
	/* ready: it answers (NVIDIA waits for its Deployment's pod to be Ready) */
	return mps_control(bin, root, id, MPS_QUERY, out, sizeof(out), err);
}

/*
 * A new dir under the MPS root for one control daemon, named by the smallest free number: short, as
 * the daemon's sockets in <dir>/pipe must fit a unix socket's 108 bytes (the real 535 control
 * daemon refuses a pipe dir longer than 88 characters, docs/reference/dra.md §6.3), and unique
 * (mkdir is the claim on the name).
 */
static int mps_new_dir(const char *root, char *id, size_t size, struct gerr *err)
{
	char dir[PATH_MAX];
	int r;

	if ((r = mkdir_p(root, 0755)) < 0)
		return gerr_set(err, -r, "cannot create the MPS root %s: %s", root, strerror(-r));
	for (unsigned k = 0; k < 100000; k++) {
		snprintf(id, size, "%u", k);
		if (snprintf(dir, sizeof(dir), "%s/%s", root, id) >= (int)sizeof(dir))
			return gerr_set(err, ENAMETOOLONG, "MPS root %s: path too long", root);
		if (strlen(dir) + strlen("/pipe") > MPS_PIPE_DIR_MAX)
			return gerr_set(
			    err, ENAMETOOLONG,
			    "the MPS pipe dir %s/pipe would be longer than the %d characters NVIDIA's control "
			    "daemon takes: use a shorter --kubelet-plugins-directory-path",
			    dir, MPS_PIPE_DIR_MAX);
		if (mkdir(dir, 0755) == 0)
			return 0;
		if (errno != EEXIST)
			return gerr_set(err, errno, "cannot create %s: %s", dir, strerror(errno));
	}
	return gerr_set(err, ENOSPC, "no free MPS dir under %s", root);
}

static int mps_apply(const struct dra_share_env *e, const struct dra_sharing *s, const char *const *gpus, size_t n_gpus,
		     const char *const *devs, size_t n_devs, json_t *done, struct gerr *err)
{
	_cleanup_free_ char *root = mps_root(e), *bin = find_tool(e, MPS_CONTROL_BIN), *smi = NULL, *shm = NULL;
	json_t *switched = json_array();
	struct mps_limits lim;
	char opts[80], id[16];
	size_t done_n = 0;
	int r;

	if (!root || !switched || json_object_set_new(done, "gpus", switched) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (!bin)
		return gerr_set(
		    err, ENOENT,
		    "%s not found in /usr/bin, /usr/sbin, /usr/local/bin or /bin under the root or the driver "
		    "root: MPS sharing needs it",
		    MPS_CONTROL_BIN);
	if ((r = mps_new_dir(root, id, sizeof(id), err)) < 0)
		return r;
	/* recorded at once: undo removes the dir whatever fails after */
	if (json_object_set_new(done, "id", json_string(id)) < 0 || asprintf(&shm, "%s/%s/shm", root, id) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if ((r = limits(s, devs, n_devs, &lim, done, err)) < 0)
		return r;
	if ((r = mps_mount_tmpfs(e->root, shm, opts, sizeof(opts), err)) < 0)
		return r;
	json_object_set_new(done, "shm", json_true());
	if (n_gpus && !(smi = find_tool(e, "nvidia-smi")))
		return gerr_set(err, ENOENT, "nvidia-smi not found: MPS sets the GPUs' compute mode with it");
	/* NVIDIA: the whole GPUs in EXCLUSIVE_PROCESS (a MIG device's mode is its parent's) */
	r = mps_compute_mode(smi, gpus, n_gpus, "EXCLUSIVE_PROCESS", &done_n, err);
	for (size_t i = 0; i < done_n; i++)
		push(switched, gpus[i]);
	if (r < 0)
		return r;
	return launch(bin, root, id, devs, n_devs, &lim, s->thread_pct, shm, done, err);
}

int dra_share_revive(const struct dra_share_env *e, const json_t *done, const char *const *devs, size_t n,
		     struct gerr *err)
{
	const char *id = json_string_value(json_object_get(done, "id"));
	const json_t *pinned = json_object_get(done, "pinnedMiB"), *pct = json_object_get(done, "threadPercentage");
	_cleanup_free_ char *root = mps_root(e), *bin = find_tool(e, MPS_CONTROL_BIN), *shm = NULL;
	struct mps_limits lim = {0};
	char out[256];
	int r;

	if (!json_is_true(json_object_get(done, "started")) || !id)
		return 0; /* not MPS, or it never ran: nothing to keep running */
	if (!root || asprintf(&shm, "%s/%s/shm", root, id) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (!bin)
		return gerr_set(err, ENOENT, "%s not found: the MPS control daemon %s cannot be started again",
				MPS_CONTROL_BIN, id);
	if (mps_control(bin, root, id, MPS_QUERY, out, sizeof(out), NULL) == 0)
		return 0;
	if (n > ELEMENTSOF(lim.gpus))
		return gerr_set(err, E2BIG, "more than %zu devices share one MPS daemon", ELEMENTSOF(lim.gpus));
	/* the limits it had: the record's, by the same ordinals */
	lim.thread_percentage = json_integer_value(pct) > 0 ? (unsigned)json_integer_value(pct) : 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(lim.gpus[i].device, sizeof(lim.gpus[i].device), "%zu", i);
		snprintf(lim.gpus[i].uuid, sizeof(lim.gpus[i].uuid), "%s", devs[i]);
		lim.gpus[i].pinned_mib = (uint64_t)json_integer_value(json_object_get(pinned, devs[i]));
	}
	lim.n_gpus = n;
	r = launch(bin, root, id, devs, n, &lim, json_is_integer(pct) ? (int)json_integer_value(pct) : -1,
		   access(shm, F_OK) == 0 ? shm : NULL, NULL, err);
	return r < 0 ? r : 1;
}

static int mps_undo(const struct dra_share_env *e, const json_t *done, struct gerr *err)
{
	const char *id = json_string_value(json_object_get(done, "id"));
	const json_t *gpus = json_object_get(done, "gpus");
	_cleanup_free_ char *root = mps_root(e), *bin = find_tool(e, MPS_CONTROL_BIN), *dir = NULL, *smi = NULL;
	char out[256], pipe[PATH_MAX + 16];
	size_t i, n = 0;
	json_t *u;
	int r;

	if (!id || !root || asprintf(&dir, "%s/%s", root, id) < 0)
		return id ? gerr_set(err, ENOMEM, "out of memory") : 0;
	if (json_is_true(json_object_get(done, "started")) && bin &&
	    mps_control(bin, root, id, "quit", out, sizeof(out), err) < 0) {
		/* a daemon that is gone (killed, a reboot) has no control socket left: nothing to stop */
		snprintf(pipe, sizeof(pipe), "%s/pipe/control", dir);
		if (access(pipe, F_OK) == 0)
			return gerr_prefix(err, "stopping the MPS control daemon %s: ", id);
	}
	if (json_array_size(gpus)) {
		const char *uuids[64];

		if (!(smi = find_tool(e, "nvidia-smi")))
			return gerr_set(err, ENOENT,
					"nvidia-smi not found: cannot set the compute mode back to DEFAULT");
		json_array_foreach (gpus, i, u)
			if (n < ELEMENTSOF(uuids) && json_string_value(u))
				uuids[n++] = json_string_value(u);
		if ((r = mps_compute_mode(smi, uuids, n, "DEFAULT", NULL, err)) < 0)
			return r;
	}
	if (json_is_true(json_object_get(done, "shm"))) {
		char shm[PATH_MAX + 16];

		snprintf(shm, sizeof(shm), "%s/shm", dir);
		if (umount2(shm, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
			return gerr_set(err, errno, "cannot unmount %s: %s", shm, strerror(errno));
	}
	/* FTW_MOUNT: never into a mount that is still there */
	if (nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return gerr_set(err, errno, "cannot remove %s: %s", dir, strerror(errno));
	return 0;
}

/* ---- the record ---- */

int dra_share_apply(const struct dra_share_env *e, const char *uid, size_t g, const struct dra_sharing *s,
		    const char *const *gpus, size_t n_gpus, const char *const *devs, size_t n_devs, json_t **ret_done,
		    struct gerr *err)
{
	/* the claim and group it was done for: for whoever reads the checkpoint */
	json_t *done = json_pack("{s:s, s:s, s:I}", "strategy", dra_strategy_name(s->strategy), "claim", uid, "group",
				 (json_int_t)g);
	int r = 0;

	*ret_done = done;
	if (!done)
		return gerr_set(err, ENOMEM, "out of memory");
	if (s->strategy == DRA_SHARE_TIME_SLICING && s->kind == DRA_CFG_GPU)
		r = timeslice_apply(e, s, gpus, n_gpus, done, err);
	else if (s->strategy == DRA_SHARE_MPS)
		r = mps_apply(e, s, gpus, n_gpus, devs, n_devs, done, err);
	return r;
}

int dra_share_undo(const struct dra_share_env *e, const json_t *done, struct gerr *err)
{
	const char *strategy = json_string_value(json_object_get(done, "strategy"));

	if (!strategy)
		return 0;
	if (streq(strategy, dra_strategy_name(DRA_SHARE_TIME_SLICING)))
		return timeslice_undo(e, done, err);
	if (streq(strategy, dra_strategy_name(DRA_SHARE_MPS)))
		return mps_undo(e, done, err);
	return 0;
}

json_t *dra_share_edits(const struct dra_share_env *e, const json_t *done)
{
	const char *id = json_string_value(json_object_get(done, "id"));
	const char *strategy = json_string_value(json_object_get(done, "strategy"));
	_cleanup_free_ char *shm = NULL, *pipe = NULL;

	if (!strategy || !streq(strategy, dra_strategy_name(DRA_SHARE_MPS)) || !id)
		return NULL;
	/* host paths: the plugin dir is the same inside and outside the driver's container */
	if (asprintf(&shm, "%s/mps/%s/shm", e->plugin_dir, id) < 0 ||
	    asprintf(&pipe, "%s/mps/%s/pipe", e->plugin_dir, id) < 0)
		return NULL;
	return json_pack("{s:[s], s:[{s:s, s:s, s:[s,s,s,s]}, {s:s, s:s, s:[s,s,s,s]}]}", "env",
			 "CUDA_MPS_PIPE_DIRECTORY=" MPS_PIPE_IN_CONTAINER, "mounts", "hostPath", shm, "containerPath",
			 "/dev/shm", "options", "rw", "nosuid", "nodev", "bind", "hostPath", pipe, "containerPath",
			 MPS_PIPE_IN_CONTAINER, "options", "rw", "nosuid", "nodev", "bind");
}
