/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA MPS helpers shared by `gpulet plugin` (the readiness check) and `gpulet mps-control-daemon`
 * (start, limits, stop). Facts: docs/reference/device-plugin.md §5.1 (upstream's
 * cmd/mps-control-daemon/mps/{daemon,root}.go, internal/plugin/mps.go; what the real 535
 * nvidia-cuda-mps-control does without a GPU).
 *
 * Tools are never looked up through $PATH and never run through a shell: fixed dirs under --root
 * (and the driver roots), posix_spawn with a fixed argv and environment.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "plugin/mps.h"
#include "util/fileio.h"
#include "util/hostpaths.h"
#include "util/macro.h"
#include "util/spawn.h"

int mps_path(const char *root, const char *resource, enum mps_path which, char *buf, size_t size)
{
	static const char *const leaf[] = {[MPS_PIPE] = "pipe",
					   [MPS_LOG] = "log",
					   [MPS_STARTED] = ".started",
					   [MPS_READY] = MPS_READY_FILE,
					   [MPS_SHM] = "shm"};
	size_t rl = strlen(root);
	int n;

	/* joined as upstream's filepath.Join joins them: "/run/nvidia/mps/" is "/run/nvidia/mps" */
	while (rl > 0 && root[rl - 1] == '/')
		rl--;
	if (which == MPS_READY || which == MPS_SHM)
		n = snprintf(buf, size, "%.*s/%s", (int)rl, root, leaf[which]);
	else
		n = snprintf(buf, size, "%.*s/%s/%s", (int)rl, root, resource, leaf[which]);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

char *mps_find_tool(const struct host_paths *h, const char *name)
{
	/* the host's own dirs, then the driver root (host path, and where the plugin pod mounts it) */
	const char *const dirs[] = {h->root, h->driver_dir, h->mount_dir};

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		char *p = dirs[i] ? host_find_bin(dirs[i], NULL, name) : NULL;

		if (p)
			return p;
	}
	return NULL;
}

int mps_run(const char *path, char *const argv[], char *const envp[], const char *input, char *out, size_t size,
	    int timeout_ms)
{
	const struct spawn_opts o = {
	    .path = path, .argv = argv, .envp = envp, .input = input, .stderr_to_out = true, .timeout_ms = timeout_ms};

	return spawn_run(&o, out, size);
}

static void trim(char *s)
{
	size_t l = strlen(s);

	while (l && (s[l - 1] == '\n' || s[l - 1] == '\r' || s[l - 1] == ' '))
		s[--l] = '\0';
}

static int control(const char *bin, const char *root, const char *resource, const char *cmd, char *out, size_t size,
		   int timeout_ms, struct gerr *err)
{
	char pipe_env[PATH_MAX + 32], log_env[PATH_MAX + 32], pipe[PATH_MAX], log[PATH_MAX];
	char *argv[] = {(char *)bin, NULL};
	char *envp[] = {pipe_env, log_env, NULL};
	int r;

	if (mps_path(root, resource, MPS_PIPE, pipe, sizeof(pipe)) < 0 ||
	    mps_path(root, resource, MPS_LOG, log, sizeof(log)) < 0)
		return gerr_set(err, ENAMETOOLONG, "MPS root %s: path too long", root);
	/* upstream's EnvVars(): exactly these two, nothing else */
	snprintf(pipe_env, sizeof(pipe_env), "CUDA_MPS_PIPE_DIRECTORY=%s", pipe);
	snprintf(log_env, sizeof(log_env), "CUDA_MPS_LOG_DIRECTORY=%s", log);
	r = mps_run(bin, argv, envp, cmd, out, size, timeout_ms);
	trim(out);
	if (r == -ETIMEDOUT)
		return gerr_set(err, ETIMEDOUT, "%s did not answer '%s' within %d ms (pipe dir %s)", bin, cmd,
				timeout_ms, pipe);
	if (r < 0)
		return gerr_set(err, -r, "cannot run %s: %s", bin, strerror(-r));
	if (r != 0)
		return gerr_set(err, EIO, "'%s' to the MPS control daemon (pipe dir %s) failed with exit status %d: %s",
				cmd, pipe, r, out[0] ? out : "(no output)");
	/* the real binary exits 0 after an unknown command too, saying so */
	if (strncmp(out, "Unknown command", 15) == 0)
		return gerr_set(err, EINVAL, "the MPS control daemon refused '%s': %s", cmd, out);
	return 0;
}

int mps_control(const char *bin, const char *root, const char *resource, const char *cmd, char *out, size_t size,
		struct gerr *err)
{
	return control(bin, root, resource, cmd, out, size, MPS_TIMEOUT_MS, err);
}

int mps_ready(const char *bin, const char *root, const char *resource, int timeout_ms, struct gerr *err)
{
	char ready[PATH_MAX], out[256], *end;
	struct stat st;
	int r;

	if (mps_path(root, resource, MPS_READY, ready, sizeof(ready)) < 0)
		return gerr_set(err, ENAMETOOLONG, "MPS root %s: path too long", root);
	if (stat(ready, &st) < 0)
		return gerr_set(err, errno,
				"%s: %s; the MPS control daemon (gpulet mps-control-daemon or NVIDIA's) has not "
				"started every daemon with its limits yet",
				ready, strerror(errno));
	if (!bin)
		return gerr_set(err, ENOENT,
				"%s not found in /usr/bin, /usr/sbin, /usr/local/bin or /bin under the root or the "
				"driver root; it is needed to ask the MPS control daemon whether it runs",
				MPS_CONTROL_BIN);
	r = control(bin, root, resource, MPS_QUERY, out, sizeof(out), timeout_ms, err);
	if (r < 0)
		return r;
	/* the answer is the percentage, e.g. "100.0" */
	if (strtod(out, &end) <= 0 || end == out)
		return gerr_set(err, EPROTO, "the MPS control daemon answered '%s' with '%s', not a percentage",
				MPS_QUERY, out);
	return 0;
}

void mps_limits(const struct node *n, const struct resource *r, struct mps_limits *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < r->n_devices; i++) {
		const struct rdevice *d = &r->devices[i];
		size_t k;

		if (d->gpu >= n->n_gpus)
			continue;
		for (k = 0; k < ret->n_gpus; k++)
			if (streq(ret->gpus[k].uuid, d->uuid))
				break;
		if (k == ret->n_gpus) {
			if (k == ELEMENTSOF(ret->gpus))
				continue;
			snprintf(ret->gpus[k].device, sizeof(ret->gpus[k].device), "%s", d->index);
			snprintf(ret->gpus[k].uuid, sizeof(ret->gpus[k].uuid), "%s", d->uuid);
			/* the total first; divided by the replicas below */
			ret->gpus[k].pinned_mib = n->gpus[d->gpu].memory_total;
			ret->n_gpus++;
		}
	}
	if (!ret->n_gpus)
		return;
	/* upstream: 100 / (devices / GPUs), and memory / replicas of that GPU, in MiB */
	ret->thread_percentage = (unsigned)(100 / (r->n_devices / ret->n_gpus ? r->n_devices / ret->n_gpus : 1));
	for (size_t k = 0; k < ret->n_gpus; k++) {
		size_t reps = 0;

		for (size_t i = 0; i < r->n_devices; i++)
			reps += streq(r->devices[i].uuid, ret->gpus[k].uuid);
		ret->gpus[k].pinned_mib = reps ? ret->gpus[k].pinned_mib / reps / 1024 / 1024 : 0;
	}
}

int mps_compute_mode(const char *smi, const char *const *uuids, size_t n, const char *mode, size_t *done,
		     struct gerr *err)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	char out[1024];

	if (!smi)
		return gerr_set(err, ENOENT,
				"nvidia-smi not found under the root or the driver root: it sets the "
				"compute mode of the GPUs shared with MPS");
	for (size_t k = 0; k < n; k++) {
		char *argv[] = {(char *)smi, "-i", (char *)uuids[k], "-c", (char *)mode, NULL};
		int r = mps_run(smi, argv, envp, NULL, out, sizeof(out), MPS_TIMEOUT_MS);

		if (r != 0)
			return gerr_set(err, r < 0 ? -r : EIO, "nvidia-smi -i %s -c %s failed (%s): %s", uuids[k], mode,
					r < 0 ? strerror(-r) : "exit status", out);
		if (done)
			(*done)++;
	}
	return 0;
}

int mps_start_control(const char *bin, const char *root, const char *name, const char *visible, const char *shm_dir,
		      struct gerr *err)
{
	char pipe[PATH_MAX], log[PATH_MAX], pe[PATH_MAX + 32], le[PATH_MAX + 32], out[1024];
	_cleanup_free_ char *ve = NULL;
	char *argv[] = {(char *)bin, "-d", NULL}, *envp[] = {pe, le, NULL, NULL};
	struct spawn_opts o = {.path = bin,
			       .argv = argv,
			       .envp = envp,
			       .stderr_to_out = true,
			       .timeout_ms = MPS_TIMEOUT_MS,
			       .bind_src = shm_dir,
			       .bind_dst = shm_dir ? "/dev/shm" : NULL};
	int r;

	if (mps_path(root, name, MPS_PIPE, pipe, sizeof(pipe)) < 0 ||
	    mps_path(root, name, MPS_LOG, log, sizeof(log)) < 0)
		return gerr_set(err, ENAMETOOLONG, "MPS root %s: path too long", root);
	if ((r = mkdir_p(pipe, 0755)) < 0 || (r = mkdir_p(log, 0755)) < 0)
		return gerr_set(err, -r, "cannot create %s or %s: %s", pipe, log, strerror(-r));
	snprintf(pe, sizeof(pe), "CUDA_MPS_PIPE_DIRECTORY=%s", pipe);
	snprintf(le, sizeof(le), "CUDA_MPS_LOG_DIRECTORY=%s", log);
	if (visible && (asprintf(&ve, "CUDA_VISIBLE_DEVICES=%s", visible) < 0 || !(envp[2] = ve)))
		return gerr_set(err, ENOMEM, "out of memory");
	r = spawn_run(&o, out, sizeof(out));
	if (r == 0)
		return 0;
	return gerr_set(err,
			r > 0 && strstr(out, "already running") ? EALREADY
			: r < 0                                 ? -r
								: EIO,
			"%s -d (pipe dir %s) failed (%s %d): %s", bin, pipe, r < 0 ? strerror(-r) : "exit status", r,
			out[0] ? out : "(no output)");
}

int mps_set_limits(const char *bin, const char *root, const char *name, const struct mps_limits *lim, struct gerr *err)
{
	char cmd[64 + NODE_UUID_MAX], out[256];
	int r;

	for (size_t k = 0; k < lim->n_gpus; k++) {
		if (!lim->gpus[k].pinned_mib)
			continue;
		snprintf(cmd, sizeof(cmd), "set_default_device_pinned_mem_limit %s %lluM", lim->gpus[k].device,
			 (unsigned long long)lim->gpus[k].pinned_mib);
		if ((r = mps_control(bin, root, name, cmd, out, sizeof(out), err)) < 0)
			return r;
	}
	if (lim->thread_percentage) {
		snprintf(cmd, sizeof(cmd), "set_default_active_thread_percentage %u", lim->thread_percentage);
		if ((r = mps_control(bin, root, name, cmd, out, sizeof(out), err)) < 0)
			return r;
	}
	return 0;
}

/* upstream's selinux.Chcon(dir, label, true): the link itself, never what it points to; what vanished is skipped */
static int relabel_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	if (lsetxattr(path, "security.selinux", MPS_SELINUX_LABEL, strlen(MPS_SELINUX_LABEL), 0) < 0 && errno != ENOENT)
		return errno;
	return 0;
}

int mps_selinux_relabel(const char *host_root, const char *dir, struct gerr *err)
{
	_cleanup_free_ char *fs = root_path(host_root, "/sys/fs/selinux");
	struct stat st;
	int r;

	if (!fs)
		return gerr_set(err, ENOMEM, "out of memory");
	if (stat(fs, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return gerr_set(err, errno, "cannot tell whether SELinux is on (%s): %s", fs, strerror(errno));
	}
	/* depth first: dir itself last, as upstream */
	r = nftw(dir, relabel_one, 16, FTW_PHYS | FTW_DEPTH);
	if (r != 0)
		return gerr_set(err, r > 0 ? r : errno, "cannot set the SELinux label %s on %s or below: %s",
				MPS_SELINUX_LABEL, dir, strerror(r > 0 ? r : errno));
	return 1;
}

int mps_mount_tmpfs(const char *root, const char *dir, char *opts, size_t size, struct gerr *err)
{
	_cleanup_free_ char *meminfo_path = root_path(root, "/proc/meminfo"), *meminfo = NULL;
	char sz[64];
	int r;

	if (!meminfo_path || read_file(meminfo_path, 1 << 20, &meminfo, NULL, NULL) < 0)
		meminfo = NULL; /* upstream falls back to 65536k */
	mps_shm_size(meminfo, sz, sizeof(sz));
	/* upstream's CleanupMountPoint: unmount what is there (a restart of the init container) */
	if (umount2(dir, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		return gerr_set(err, errno, "cannot unmount %s: %s", dir, strerror(errno));
	if ((r = mkdir_p(dir, 0755)) < 0)
		return gerr_set(err, -r, "cannot create %s: %s", dir, strerror(-r));
	snprintf(opts, size, "size=%s", sz);
	if (mount("shm", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME, opts) < 0)
		return gerr_set(err, errno,
				"cannot mount a tmpfs on %s (%s): %s; this needs privileges (CAP_SYS_ADMIN), as "
				"upstream's MPS init container and NVIDIA's MPS daemon have",
				dir, opts, strerror(errno));
	return 0;
}

void mps_shm_size(const char *meminfo, char *buf, size_t size)
{
	const char *p = meminfo ? strstr(meminfo, "MemTotal:") : NULL;
	unsigned long long kb;
	char *end;

	/* "MemTotal:       131072000 kB": half of it, with the unit's first letter, as upstream; a
	 * number that does not parse (upstream: Atoi fails) gives the fallback */
	if (p && (p == meminfo || p[-1] == '\n')) {
		p += strlen("MemTotal:");
		p += strspn(p, " \t");
		errno = 0;
		kb = strtoull(p, &end, 10);
		if (!errno && end != p && *p != '-' && *p != '+') {
			end += *end == ' ';
			snprintf(buf, size, "%llu%.*s", kb / 2,
				 (*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z'), end);
			return;
		}
	}
	snprintf(buf, size, "65536k");
}
