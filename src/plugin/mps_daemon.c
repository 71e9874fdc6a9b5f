/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpulet mps-control-daemon`: starts NVIDIA's nvidia-cuda-mps-control -d for every resource shared
 * with MPS, with the limits upstream's mps-control-daemon sets, writes the root's .ready file once
 * all run, and supervises them: their control.log lines go to our log, every few seconds each is
 * asked get_default_active_thread_percentage, and one that stops answering makes us remove .ready
 * (the plugin then lists no devices) and start them all again. A start that fails is retried every
 * 30 s, as upstream. SIGHUP restarts, SIGTERM/SIGINT/SIGQUIT stop the daemons and exit 0.
 * Facts: docs/reference/device-plugin.md §5.1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvml/node.h"
#include "nvml/nvml.h"
#include "plugin/mps.h"
#include "plugin/mps_daemon.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/sig.h"

#define RETRY_MS   30000 /* upstream: "Retrying in 30s..." */
#define CHECK_MS   5000
#define TICK_MS    1000
#define MAX_DAEMON 8

struct sdaemon {
	const struct resource *res;
	struct mps_limits lim;
	char log_file[PATH_MAX];
	off_t log_off;
	bool probe_answer; /* the next log line answers our probe */
	bool started;
	size_t n_exclusive; /* GPUs (the first of lim.gpus) switched to EXCLUSIVE_PROCESS: set back at stop */
};

struct mps_daemon {
	const struct loop_argv *args;
	const struct plugin_config *cfg; /* in use: the caller's, or the one a SIGHUP loaded */
	struct plugin_config *reloaded;  /* owned: what the last successful SIGHUP loaded */
	struct loop *loop;               /* signals (util/loop.h) */
	bool running;                    /* started: "Stopped" is said at the end */
	long long next_retry, next_check;
	char root[PATH_MAX];
	char *bin, *smi;
	struct nvml *nv;
	struct node *node;
	struct resource_set *rs;
	struct sdaemon dm[MAX_DAEMON];
	size_t n;
	bool ready;
};

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* nvidia-smi -i <uuid> -c <mode> for the first n GPUs of dm (mps_compute_mode()). */
static int compute_mode(struct mps_daemon *s, const struct sdaemon *dm, size_t n, const char *mode, size_t *done,
			struct gerr *err)
{
	const char *uuids[ELEMENTSOF(dm->lim.gpus)];

	n = MIN(n, dm->lim.n_gpus);
	for (size_t k = 0; k < n; k++)
		uuids[k] = dm->lim.gpus[k].uuid;
	return mps_compute_mode(s->smi, uuids, n, mode, done, err);
}

/*
 * nvidia-cuda-mps-control -d with the resource's pipe and log dirs (upstream Daemon.Start): the pipe dir
 * made and, where SELinux is on, labelled for containers first.
 */
static int start_control(struct mps_daemon *s, const struct sdaemon *dm, struct gerr *err)
{
	char pipe[PATH_MAX], ans[256];
	int r;

	if (mps_path(s->root, dm->res->name, MPS_PIPE, pipe, sizeof(pipe)) < 0)
		return gerr_set(err, ENAMETOOLONG, "MPS root %s: path too long", s->root);
	if ((r = mkdir_p(pipe, 0755)) < 0)
		return gerr_set(err, -r, "cannot create %s: %s", pipe, strerror(-r));
	r = mps_selinux_relabel(s->cfg->host->root, pipe, err);
	if (r < 0)
		return r;
	if (r > 0)
		log_info("SELinux enabled, setting context", "path=%s context=%s", pipe, MPS_SELINUX_LABEL);
	else
		log_info("SELinux disabled, not updating context", "path=%s", pipe);
	r = mps_start_control(s->bin, s->root, dm->res->name, NULL, NULL, err);
	if (r != -EALREADY)
		return r;
	/* one left by an earlier run of ours that was killed: ask it to quit, start ours */
	log_warn("An MPS control daemon already runs for this resource; asking it to quit", "resource=%s pipe=%s",
		 dm->res->name, pipe);
	(void)mps_control(s->bin, s->root, dm->res->name, "quit", ans, sizeof(ans), NULL);
	usleep(200 * 1000);
	return mps_start_control(s->bin, s->root, dm->res->name, NULL, NULL, err);
}

static int start_one(struct mps_daemon *s, struct sdaemon *dm, struct gerr *err)
{
	char started[PATH_MAX];
	int r;

	/* what was switched is switched back by stop_all(), also when the start fails below */
	if ((r = compute_mode(s, dm, dm->lim.n_gpus, "EXCLUSIVE_PROCESS", &dm->n_exclusive, err)) < 0)
		return r;
	log_info("Starting MPS daemon", "resource=%s gpus=%zu thread_percentage=%u", dm->res->name, dm->lim.n_gpus,
		 dm->lim.thread_percentage);
	if ((r = start_control(s, dm, err)) < 0)
		return r;
	dm->started = true;
	if ((r = mps_set_limits(s->bin, s->root, dm->res->name, &dm->lim, err)) < 0)
		return r;
	for (size_t k = 0; k < dm->lim.n_gpus; k++)
		log_info("MPS limits set", "resource=%s uuid=%s index=%s pinned_mem_limit=%lluM", dm->res->name,
			 dm->lim.gpus[k].uuid, dm->lim.gpus[k].device, (unsigned long long)dm->lim.gpus[k].pinned_mib);
	if (mps_path(s->root, dm->res->name, MPS_STARTED, started, sizeof(started)) < 0 || (r = touch(started)) < 0)
		return gerr_set(err, r < 0 ? -r : ENAMETOOLONG, "cannot create %s", started);
	(void)mps_path(s->root, dm->res->name, MPS_LOG, dm->log_file, sizeof(dm->log_file));
	strncat(dm->log_file, "/control.log", sizeof(dm->log_file) - strlen(dm->log_file) - 1);
	dm->log_off = 0;
	return 0;
}

static void remove_dir_files(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;

	if (!dp)
		return;
	while ((e = readdir(dp)))
		if (e->d_type != DT_DIR)
			(void)unlinkat(dirfd(dp), e->d_name, 0);
	closedir(dp);
	(void)rmdir(dir);
}

static void stop_all(struct mps_daemon *s)
{
	char path[PATH_MAX], out[256];

	if (s->root[0] && mps_path(s->root, NULL, MPS_READY, path, sizeof(path)) == 0 && unlink(path) < 0 &&
	    errno != ENOENT)
		log_warn("Failed to remove .ready file", "path=%s error=\"%s\"", path, strerror(errno));
	s->ready = false;
	for (size_t i = 0; i < s->n; i++) {
		struct sdaemon *dm = &s->dm[i];
		struct gerr err = {0};

		if (dm->started && mps_control(s->bin, s->root, dm->res->name, "quit", out, sizeof(out), &err) < 0)
			log_warn("Error sending quit to the MPS control daemon", "resource=%s error=\"%s\"",
				 dm->res->name, err.msg);
		else if (dm->started)
			log_info("Stopped MPS control daemon", "resource=%s", dm->res->name);
		err = (struct gerr){0};
		/* also after a start that failed once the mode was switched */
		if (dm->n_exclusive && compute_mode(s, dm, dm->n_exclusive, "DEFAULT", NULL, &err) < 0)
			log_warn("Cannot set the compute mode back to DEFAULT", "resource=%s error=\"%s\"",
				 dm->res->name, err.msg);
		dm->n_exclusive = 0;
		if (!dm->started)
			continue;
		if (mps_path(s->root, dm->res->name, MPS_STARTED, path, sizeof(path)) == 0)
			(void)unlink(path);
		if (mps_path(s->root, dm->res->name, MPS_LOG, path, sizeof(path)) == 0)
			remove_dir_files(path);
		dm->started = false;
	}
	s->n = 0;
}

/*
 * NVML and the MPS resources from s->cfg, as the plugin builds them (same config, same resource names).
 * The config file is read only on SIGHUP (reload()), never on a retry or a restart after a daemon
 * stopped answering.
 */
static int load(struct mps_daemon *s, struct gerr *err)
{
	_cleanup_free_ char *root = NULL;
	struct resource_options o;
	int r;

	if (!(root = root_path(s->cfg->host->root, s->cfg->mps_root)) || strlen(root) >= sizeof(s->root))
		return gerr_set(err, ENAMETOOLONG, "MPS root too long");
	snprintf(s->root, sizeof(s->root), "%s", root);
	free(s->bin);
	free(s->smi);
	s->bin = mps_find_tool(s->cfg->host, MPS_CONTROL_BIN);
	s->smi = mps_find_tool(s->cfg->host, "nvidia-smi");
	resource_set_free(s->rs);
	node_free(s->node);
	s->rs = NULL;
	s->node = NULL;
	if (s->cfg->sharing.strategy != SHARING_MPS)
		return 0;
	if (!s->bin)
		return gerr_set(err, ENOENT,
				"%s not found in /usr/bin, /usr/sbin, /usr/local/bin or /bin under the "
				"root or the driver root",
				MPS_CONTROL_BIN);
	if (!s->nv && (r = nvml_open_host(s->cfg->host, &s->nv, err)) < 0)
		return r;
	if ((r = node_load(s->nv, s->cfg->host->root, &s->node, err)) < 0)
		return r;
	config_resource_options(s->cfg, &o);
	return resources_build(s->node, &o, &s->rs, err);
}

/* Upstream startDaemons(): every shared resource gets a daemon; all start, then .ready. */
static int start_all(struct mps_daemon *s, struct gerr *err)
{
	char ready[PATH_MAX];
	int r;

	log_info("Loading configuration.", NULL);
	if ((r = load(s, err)) < 0)
		return r;
	for (size_t i = 0; s->rs && i < s->rs->n && s->n < MAX_DAEMON; i++) {
		const struct resource *res = &s->rs->res[i];

		if (res->replicas < 2 || !res->n_devices) {
			log_info("Resource is not shared", "resource=%s", res->name);
			continue;
		}
		s->dm[s->n] = (struct sdaemon){.res = res};
		mps_limits(s->node, res, &s->dm[s->n].lim);
		s->n++;
	}
	if (!s->n)
		log_info("No devices are configured for MPS sharing; Waiting indefinitely.", NULL);
	for (size_t i = 0; i < s->n; i++)
		if ((r = start_one(s, &s->dm[i], err)) < 0)
			return gerr_prefix(err, "starting the MPS daemon for %s: ", s->dm[i].res->name), r;
	if ((r = mkdir_p(s->root, 0755)) < 0 || mps_path(s->root, NULL, MPS_READY, ready, sizeof(ready)) < 0 ||
	    (r = touch(ready)) < 0)
		return gerr_set(err, r < 0 ? -r : ENAMETOOLONG, "failed to create the .ready file in %s", s->root);
	s->ready = true;
	s->next_check = loop_now_ms() + CHECK_MS; /* they just answered: the first probe one period later */
	log_info("MPS control daemons ready", "root=%s daemons=%zu ready_file=%s", s->root, s->n, ready);
	return 0;
}

/* The lines the control daemon added to control.log since the last look (upstream tails it). */
static void tail_logs(struct mps_daemon *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sdaemon *dm = &s->dm[i];
		char buf[8192];
		ssize_t n;
		int fd;

		if (!dm->started || (fd = open(dm->log_file, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = pread(fd, buf, sizeof(buf) - 1, dm->log_off);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
			bool ours;

			*nl = '\0';
			for (char *q = line; *q; q++)
				if (*q == '"')
					*q = '\'';
			/* our own health probe every few seconds: debug, not a flood of info lines */
			ours = dm->probe_answer || strstr(line, "Accepting connection") || strstr(line, "NEW UI") ||
			       strstr(line, "UI closed") || strstr(line, "Cmd:" MPS_QUERY);
			dm->probe_answer = strstr(line, "Cmd:" MPS_QUERY) != NULL;
			log_emit(ours ? LOG_LVL_DEBUG : LOG_LVL_INFO, "MPS control daemon", "resource=%s log=\"%s\"",
				 dm->res->name, line);
			dm->log_off += nl - line + 1;
		}
	}
}

/* false when a daemon stopped answering (logged). */
static bool check_all(struct mps_daemon *s)
{
	char out[256];

	for (size_t i = 0; i < s->n; i++) {
		struct gerr err = {0};

		if (mps_control(s->bin, s->root, s->dm[i].res->name, MPS_QUERY, out, sizeof(out), &err) < 0) {
			log_error("MPS control daemon stopped answering; restarting the MPS daemons",
				  "resource=%s error=\"%s\"", s->dm[i].res->name, err.msg);
			return false;
		}
	}
	return true;
}

static void restart(struct mps_daemon *s)
{
	struct gerr err = {0};

	stop_all(s);
	log_info("Starting Daemons.", NULL);
	s->next_retry = 0;
	if (start_all(s, &err) < 0) {
		log_error("Failed to start MPS daemon; retrying", "error=\"%s\" retry_s=%d", err.msg, RETRY_MS / 1000);
		stop_all(s);
		s->next_retry = loop_now_ms() + RETRY_MS;
	}
}

/* Whether cfg opens another NVML than the one open (library, driver root, root changed). */
static bool nvml_changed(const struct mps_daemon *s, const struct plugin_config *cfg)
{
	return s->nv && !host_paths_same_nvml(cfg->host, s->cfg->host);
}

/* The NVML cfg needs opened into *ret when it differs from the open one (else NULL: keep that one). */
static int nvml_for(const struct plugin_config *cfg, struct nvml **ret, struct gerr *err)
{
	*ret = NULL;
	if (cfg->sharing.strategy != SHARING_MPS)
		return 0;
	return nvml_open_host(cfg->host, ret, err);
}

/*
 * SIGHUP (util/loop.h): read the config again, and only when it loads (and its NVML opens) stop the
 * daemons and start them under it. A config that does not load leaves the running daemons, .ready and
 * the config in use; the loop says why.
 */
static int on_reload(void *data, struct gerr *err)
{
	struct mps_daemon *s = data;
	_cleanup_(config_freep) struct plugin_config *loaded = NULL;
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	bool changed = false;
	int r;

	log_info("Received SIGHUP, restarting.", NULL);
	if ((r = config_load(s->args, &loaded, err)) < 0 ||
	    ((changed = nvml_changed(s, loaded)) && (r = nvml_for(loaded, &nv, err)) < 0))
		return r;
	stop_all(s);
	/* nothing points into the old config past here: the daemons were stopped, the tool paths are copies */
	if (changed) {
		/* NULL when the new config does not share with MPS: load() opens it when one does */
		nvml_close(s->nv);
		s->nv = TAKE_PTR(nv);
	}
	config_free(s->reloaded);
	s->reloaded = TAKE_PTR(loaded);
	s->cfg = s->reloaded;
	restart(s);
	return 0;
}

/* Every second: the daemons' log lines, a retry that is due, the readiness probe that is due. */
static long long on_tick(void *data)
{
	struct mps_daemon *s = data;

	tail_logs(s);
	if (s->next_retry && loop_now_ms() >= s->next_retry) {
		restart(s);
	} else if (s->ready && s->n && loop_now_ms() >= s->next_check) {
		s->next_check = loop_now_ms() + CHECK_MS;
		if (!check_all(s))
			restart(s);
	}
	return TICK_MS;
}

static const struct loop_ops mps_loop_ops = {.reload = on_reload, .tick = on_tick};

int mps_daemon_start(const struct loop_argv *args, const struct plugin_config *cfg, struct mps_daemon **ret)
{
	struct mps_daemon *s = calloc(1, sizeof(*s));
	struct gerr err = {0};
	sigset_t set;
	int r;

	*ret = NULL;
	if (!s)
		return log_error("Cannot start the MPS control daemon supervisor", "error=\"out of memory\""), -ENOMEM;
	s->cfg = cfg;
	s->args = args;
	sig_daemon_set(&set);
	r = loop_new(&set, &mps_loop_ops, s, &s->loop, &err);
	if (r < 0) {
		log_error("Cannot start the MPS control daemon supervisor", "error=\"%s\"", err.msg);
		mps_daemon_stop(s);
		return r;
	}
	/* the first start uses the config cmd_ already loaded; a failed one is retried, not fatal */
	restart(s);
	s->running = true;
	*ret = s;
	return 0;
}

int mps_daemon_run(struct mps_daemon *s)
{
	return loop_run(s->loop);
}

void mps_daemon_stop(struct mps_daemon *s)
{
	bool running;

	if (!s)
		return;
	running = s->running;
	stop_all(s);
	resource_set_free(s->rs);
	node_free(s->node);
	nvml_close(s->nv);
	free(s->bin);
	free(s->smi);
	loop_free(s->loop);
	config_free(s->reloaded);
	free(s);
	if (running)
		log_info("Stopped", NULL);
}

int mps_mount_shm(const struct plugin_config *cfg, char *opts, size_t size, struct gerr *err)
{
	_cleanup_free_ char *root = root_path(cfg->host->root, cfg->mps_root);
	char dir[PATH_MAX];

	if (!root || mps_path(root, NULL, MPS_SHM, dir, sizeof(dir)) < 0)
		return gerr_set(err, ENAMETOOLONG, "MPS root too long");
	return mps_mount_tmpfs(cfg->host->root, dir, opts, size, err);
}
