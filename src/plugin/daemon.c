/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lifecycle of `gpulet plugin`: build the node and resources, restart and reload, the main loop
 * (signals, kubelet restarts through inotify, health wakeups). The other concerns and the threads
 * are described in daemon_int.h.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "plugin/daemon.h"
#include "plugin/daemon_int.h"
#include "util/fileio.h"
#include "util/log.h"

#define TICK_MS       1000
#define INIT_RETRY_MS 30000 /* --fail-on-init-error=false: look for devices again this often */

long long daemon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Where NVML lives as the plugin sees it: inside the plugin container the host driver root is
 * mounted at containerDriverRoot (docs/reference/device-plugin.md §1, last paragraph). */
static char *nvml_driver_root(const struct plugin_config *cfg)
{
	_cleanup_free_ char *ctr = NULL;
	struct stat st;

	if (!streq(cfg->driver_root, "/") && cfg->container_driver_root[0]) {
		ctr = root_path(cfg->root, cfg->container_driver_root);
		if (ctr && stat(ctr, &st) == 0 && S_ISDIR(st.st_mode))
			return TAKE_PTR(ctr);
	}
	return root_path(cfg->root, cfg->driver_root);
}

/* What build() found besides the node and the resources. */
struct built {
	bool no_devices; /* NVML works and there is nothing to advertise (upstream waits) */
	bool imex;       /* the configured IMEX channel exists */
};

/* Read the node and derive the resources for cfg. */
static int build(struct daemon *d, const struct plugin_config *cfg, struct node **ret_node,
		 struct resource_set **ret_rs, struct built *ret, struct gerr *err)
{
	_cleanup_(node_freep) struct node *n = NULL;
	_cleanup_(resource_set_freep) struct resource_set *rs = NULL;
	struct resource_options o;
	int r;

	*ret = (struct built){0};
	r = daemon_imex_select(cfg, &ret->imex, err);
	if (r < 0)
		return r;

	if (!d->nv) {
		_cleanup_free_ char *droot = nvml_driver_root(cfg);

		r = nvml_open_host(&(struct nvml_host){.library = cfg->nvml_library, .driver_root = droot}, &d->nv,
				   err);
		if (r < 0)
			return r;
	}
	r = node_load(d->nv, cfg->root, &n, err);
	if (r < 0)
		return r;
	ret->no_devices = true;
	if (n->n_gpus == 0)
		return gerr_set(err, ENODEV, "no devices found: NVML reports no GPUs (driver %s)", n->driver_version);
	config_resource_options(cfg, &o);
	r = resources_build(n, &o, &rs, err);
	if (r < 0)
		return r;
	if (rs->n_left_out)
		log_warn("GPU lost before NVML named it, left out: it is not advertised until NVML answers for it",
			 "count=%u gpus=\"%s\"", rs->n_left_out, rs->left_out);
	if (rs->n == 0)
		return gerr_set(err, ENODEV,
				"no devices found: NVML reports %zu GPUs and none can be advertised "
				"with mig-strategy=%s",
				n->n_gpus, mig_strategy_name(cfg->mig_strategy));
	ret->no_devices = false;
	*ret_node = TAKE_PTR(n);
	*ret_rs = TAKE_PTR(rs);
	return 0;
}

static void log_config(const struct plugin_config *cfg)
{
	_cleanup_free_ char *json = config_to_json(cfg);

	log_info("Running with config", "config=%s", json ? json : "{}");
	if (cfg->warnings[0])
		log_warn("Config warnings", "warnings=\"%s\"", cfg->warnings);
}

void daemon_restart(struct daemon *d, const char *why, enum restart_kind kind)
{
	struct plugin_config *newcfg = calloc(1, sizeof(*newcfg));
	struct node *n = NULL;
	struct resource_set *rs = NULL;
	struct gerr err = {0};
	struct built got;
	int r = 0;

	log_info("Restarting device plugins", "reason=\"%s\"", why);
	if (!newcfg) {
		log_error("out of memory during restart", NULL);
		return;
	}
	*newcfg = d->cfg;
	if (kind == RESERVE && d->rs) {
		free(newcfg);
		daemon_stop_serving(d, d->rs);
		goto serve;
	}
	if (kind == RELOAD) {
		r = config_load(d->args, newcfg, &err);
		if (r < 0) {
			/* nothing changes: the running plugins keep serving as they are */
			log_error("Config reload failed, keeping the running config", "error=\"%s\"", err.msg);
			free(newcfg);
			return;
		}
	}
	if (!streq(newcfg->nvml_library, d->cfg.nvml_library) || !streq(newcfg->driver_root, d->cfg.driver_root)) {
		nvml_close(d->nv);
		d->nv = NULL;
	}
	r = build(d, newcfg, &n, &rs, &got, &err);
	if (r < 0) {
		free(newcfg);
		if (!d->rs) {
			/* never served: there is no previous list to fall back to */
			log_warn("Still no devices, nothing is advertised; looking again later",
				 "error=\"%s\" retry_s=%d", err.msg, INIT_RETRY_MS / 1000);
			return;
		}
		log_error("Cannot build the device list, serving the previous one", "error=\"%s\"", err.msg);
		daemon_stop_serving(d, d->rs);
	} else {
		daemon_stop_serving(d, rs);
		daemon_carry_health(d->rs, d->node, rs, n);
		d->cfg = *newcfg;
		d->imex = got.imex;
		free(newcfg);
		resource_set_free(d->rs);
		node_free(d->node);
		d->rs = rs;
		d->node = n;
		log_config(&d->cfg);
		daemon_write_cdi_spec(d);
		d->cdi_extra = daemon_write_cdi_extra(d);
		daemon_health_restart(d);
		daemon_mps_reset(d);
	}
serve:
	(void)daemon_serve_or_retry(d);
}

static bool sockets_present(const struct daemon *d)
{
	struct stat st;

	for (size_t i = 0; i < d->n_sv; i++)
		if (lstat(d->sv[i].path, &st) < 0)
			return false;
	return true;
}

/*
 * Watch the kubelet socket's dir for kubelet restarts. A dir that does not exist yet (the kubelet
 * not installed yet, a hostPath mount not there yet) is looked for again every tick instead of
 * exiting as upstream does; true when the watch is in place.
 */
static bool watch_kubelet_dir(struct daemon *d)
{
	if (d->inofd < 0 || d->inowd >= 0)
		return true;
	d->inowd = inotify_add_watch(d->inofd, d->kubelet_dir, IN_CREATE | IN_MOVED_TO);
	if (d->inowd >= 0)
		return true;
	if (!d->watch_warned)
		log_warn("Cannot watch the kubelet socket's directory for kubelet restarts, will retry",
			 "dir=%s error=\"%s\" hint=\"mount the kubelet device-plugins dir into the plugin pod\"",
			 d->kubelet_dir, strerror(errno));
	d->watch_warned = true;
	return false;
}

static int setup_fds(struct daemon *d, struct gerr *err)
{
	const char *slash;
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGHUP);
	/* blocked before any thread starts, so every thread inherits the mask */
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return gerr_set(err, EINVAL, "cannot block signals");
	d->sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (d->sigfd < 0)
		return gerr_set(err, errno, "signalfd: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);

	d->inofd = -1;
	d->inowd = -1;
	if (!d->cfg.kubelet_socket[0])
		return 0;
	slash = strrchr(d->cfg.kubelet_socket, '/');
	snprintf(d->kubelet_name, sizeof(d->kubelet_name), "%s", slash ? slash + 1 : d->cfg.kubelet_socket);
	snprintf(d->kubelet_dir, sizeof(d->kubelet_dir), "%.*s",
		 slash && slash != d->cfg.kubelet_socket ? (int)(slash - d->cfg.kubelet_socket) : 1,
		 slash ? d->cfg.kubelet_socket : ".");
	d->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (d->inofd < 0)
		return gerr_set(err, errno, "inotify_init1: %s", strerror(errno));
	watch_kubelet_dir(d);
	return 0;
}

/* True when the kubelet socket was (re)created. */
static bool read_inotify(struct daemon *d)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool hit = false;
	ssize_t len;

	while ((len = read(d->inofd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if (ev->len && streq(ev->name, d->kubelet_name))
				hit = true;
			if (ev->mask & IN_Q_OVERFLOW)
				hit = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	return hit;
}

static void loop(struct daemon *d)
{
	for (;;) {
		/* a negative fd (no kubelet socket to watch) is skipped by poll() */
		struct pollfd pfd[3] = {{d->sigfd, POLLIN, 0}, {d->inofd, POLLIN, 0}, {d->evfd, POLLIN, 0}};
		long long due = d->next_register_ms ? d->next_register_ms - daemon_now_ms() : TICK_MS;
		int n = poll(pfd, ELEMENTSOF(pfd), (int)MAX(0, MIN(due, TICK_MS)));

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					daemon_restart(d, "SIGHUP: reloading the config", RELOAD);
					continue;
				}
				log_info("Received signal, shutting down", "signal=%s", strsignal((int)si.ssi_signo));
				return;
			}
		}
		if (n > 0 && (pfd[2].revents & POLLIN))
			daemon_drain_health(d);
		daemon_mps_check(d, false);
		if (n > 0 && d->inofd >= 0 && (pfd[1].revents & POLLIN) && read_inotify(d)) {
			char why[PATH_MAX + 64];
			struct stat st;

			if (d->g && daemon_all_registered(d) && sockets_present(d) &&
			    stat(d->cfg.kubelet_socket, &st) == 0 && st.st_dev == d->kubelet_dev &&
			    st.st_ino == d->kubelet_ino && st.st_ctim.tv_sec == d->kubelet_ctime.tv_sec &&
			    st.st_ctim.tv_nsec == d->kubelet_ctime.tv_nsec) {
				log_debug("kubelet socket event for the socket we are registered with", NULL);
				continue;
			}
			snprintf(why, sizeof(why), "inotify: %s created", d->cfg.kubelet_socket);
			daemon_restart(d, why, RESERVE);
			continue;
		}
		if (d->g && !sockets_present(d)) {
			daemon_restart(d, "a plugin socket was removed", RESERVE);
			continue;
		}
		if (d->watch_warned && d->inowd < 0 && watch_kubelet_dir(d)) {
			log_info("Watching the kubelet socket's directory", "dir=%s", d->kubelet_dir);
			if (d->rs) {
				daemon_restart(d, "the kubelet socket's directory appeared", RESERVE);
				continue;
			}
		}
		if (!d->g && d->rs) {
			if (d->next_serve_ms && daemon_now_ms() >= d->next_serve_ms)
				daemon_restart(d, "creating the plugin sockets again", RESERVE);
			continue;
		}
		if (!d->g) {
			if (daemon_now_ms() >= d->next_init_ms) {
				d->next_init_ms = daemon_now_ms() + INIT_RETRY_MS;
				daemon_restart(d, "looking for devices again", REBUILD);
			}
			continue;
		}
		if (d->next_register_ms && daemon_now_ms() >= d->next_register_ms)
			daemon_register_all(d, false);
	}
}

int plugin_daemon_run(const struct config_args *args, const struct plugin_config *cfg)
{
	struct daemon d = {.args = args, .cfg = *cfg, .sigfd = -1, .inofd = -1, .inowd = -1, .evfd = -1};
	struct gerr err = {0};
	struct built got;
	int r, rc = 0;

	/* upstream's env-only knobs for XID health checks (docs/reference/device-plugin.md §1, §4) */
	/* as upstream, an entry that is not an XID is skipped with a message, not a failure */
	if (xid_policy_parse(getenv("DP_DISABLE_HEALTHCHECKS"), getenv("DP_ENABLE_HEALTHCHECKS"), &d.policy, &err) > 0)
		log_warn("Ignoring malformed XID values in the health check settings", "detail=\"%s\"", err.msg);
	pthread_mutex_init(&d.qlock, NULL);
	d.q_tail = &d.q_head;
	d.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d.evfd < 0) {
		log_error("Cannot start the device plugin", "error=\"eventfd: %s\"", strerror(errno));
		return 1;
	}
	r = setup_fds(&d, &err);
	if (r < 0) {
		log_error("Cannot start the device plugin", "error=\"%s\"", err.msg);
		return 1;
	}
	grpc_init();
	log_config(&d.cfg);
	r = build(&d, &d.cfg, &d.node, &d.rs, &got, &err);
	d.imex = got.imex;
	if (r < 0) {
		/* NVML answers and there is no GPU: upstream waits whatever failOnInitError says (its
		 * chart runs the plugin on nodes whose GPUs may not be up yet); issue 23 §5 */
		if (d.cfg.fail_on_init_error && !got.no_devices) {
			log_error("Failed to initialize the device plugin", "error=\"%s\" hint=\"%s\"", err.msg,
				  "set --fail-on-init-error=false to keep the pod running on nodes without GPUs");
			rc = 1;
			goto out;
		}
		log_warn("No devices found. Waiting indefinitely.", "error=\"%s\" retry_s=%d", err.msg,
			 INIT_RETRY_MS / 1000);
		d.next_init_ms = daemon_now_ms() + INIT_RETRY_MS;
	} else {
		/* serving CDI names no spec resolves would fail every pod at start, far from the cause */
		d.cdi_extra = daemon_write_cdi_extra(&d);
		if (daemon_write_cdi_spec(&d) < 0 && d.cfg.fail_on_init_error) {
			log_error(
			    "Failed to initialize the device plugin", "error=\"no CDI spec\" hint=\"%s\"",
			    "fix the CDI spec dir named above, or set --fail-on-init-error=false to serve anyway");
			rc = 1;
			goto out;
		}
		daemon_health_restart(&d);
		daemon_mps_reset(&d);
		r = daemon_serve_or_retry(&d);
		/* another live plugin serves these sockets: two DaemonSets on one node is a mistake to
		 * fix, not to wait out (docs/reference/device-plugin.md §3.1) */
		if (r == -EADDRINUSE) {
			log_error("Another plugin serves this device-plugin dir, exiting", NULL);
			rc = 1;
			goto out;
		}
	}
	loop(&d);
out:
	health_stop(d.hw); /* joins the watcher threads: nothing queues after this */
	daemon_stop_serving(&d, NULL);
	daemon_health_queue_free(&d);
	close(d.evfd);
	pthread_mutex_destroy(&d.qlock);
	resource_set_free(d.rs);
	node_free(d.node);
	daemon_cdi_names_clear(&d.cdi);
	nvml_close(d.nv);
	grpc_shutdown();
	if (d.inofd >= 0)
		close(d.inofd);
	if (d.sigfd >= 0)
		close(d.sigfd);
	if (rc == 0)
		log_info("Stopped", NULL);
	return rc;
}
