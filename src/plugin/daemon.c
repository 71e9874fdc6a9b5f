/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpulet plugin`'s owner: start, run, stop (daemon.h). It holds the daemon's state and hands
 * each unit only what that unit needs:
 *   daemon_serve.c      the resource servers and registration with kubelet (struct daemon_servers)
 *   daemon_health.c     the health watcher's queue (struct daemon_health)
 *   daemon_mps.c        the wait for MPS control daemons (struct daemon_mps)
 *   daemon_kubelet.c    inotify on the kubelet socket's dir (struct daemon_kubelet_watch)
 *   daemon_cdi.c        the gpu CDI spec; daemon_cdi_extra.c the IMEX and gated specs
 * Threads: the main one (signals, inotify, registration, reloads, health updates), the gRPC
 * completion-queue thread of the current server group (gsrv.c) and the health watcher's threads
 * (plugin/health.h). Everything the gRPC thread reads (resource set, node, config) is replaced
 * only after the server group is freed, and changed in place (health, MPS state) only under the
 * group lock. The health watcher never touches that state: its callback queues the event and
 * wakes the main thread through an eventfd.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "nvml/node.h"
#include "nvml/nvml.h"
#include "plugin/daemon.h"
#include "plugin/daemon_cdi.h"
#include "plugin/daemon_cdi_extra.h"
#include "plugin/daemon_dra.h"
#include "plugin/daemon_health.h"
#include "plugin/daemon_kubelet.h"
#include "plugin/daemon_mps.h"
#include "plugin/daemon_serve.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/sig.h"

#define TICK_MS        1000
#define INIT_RETRY_MS  30000 /* --fail-on-init-error=false: look for devices again this often */
#define MAX_WARN_LINES 20    /* config warnings logged one by one; the rest are counted */

struct plugin_daemon {
	const struct loop_argv *args;
	const struct plugin_config *cfg; /* in use: the caller's, or the one a SIGHUP loaded */
	struct plugin_config *reloaded;  /* owned: what the last successful SIGHUP loaded */
	struct nvml *nv;
	struct node *node;
	struct resource_set *rs;
	bool imex;          /* cfg's IMEX channel exists (daemon_imex_select) */
	unsigned cdi_extra; /* DP_CDI_EXTRA_*: the gated CDI specs written */
	/* the device names of the CDI spec last written (none when it could not be): Allocate hands
	 * out no other (dp_ctx.cdi_names) */
	struct dp_cdi_names cdi;
	struct loop *loop;  /* signals, the kubelet dir's inotify, the health queue's eventfd (util/loop.h) */
	bool kubelet_event; /* the kubelet dir changed since the last tick */
	bool grpc_up, started;
	long long next_init_ms;
	struct daemon_kubelet_watch kw;
	struct daemon_servers srv;
	struct daemon_health health;
	struct daemon_mps mps;
	struct daemon_dra dra; /* a DRA driver for NVIDIA GPUs registered here: nothing is advertised */
};

enum restart_kind {
	RESERVE, /* kubelet restarted or a socket vanished: serve the same devices again, fast */
	REBUILD, /* the node changed (or the config, on SIGHUP): read NVML again */
};

/* What build() found besides the node and the resources. */
struct built {
	bool no_devices; /* NVML works and there is nothing to advertise (upstream waits) */
	bool imex;       /* the configured IMEX channel exists */
};

/* Read the node (opening NVML into *nv when it is not open) and derive the resources for cfg. */
static int build(struct nvml **nv, const struct plugin_config *cfg, struct node **ret_node,
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

	if (!*nv) {
		r = nvml_open_host(cfg->host, nv, err);
		if (r < 0)
			return r;
	}
	r = node_load(*nv, cfg->host->root, &n, err);
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

/* The config's warnings, one log line each, at most MAX_WARN_LINES. */
static void log_warnings(const struct warnings *w)
{
	for (size_t i = 0; i < w->n && i < MAX_WARN_LINES; i++)
		log_warn("Config warning", "warning=\"%s\"", w->items[i]);
	if (w->n > MAX_WARN_LINES)
		log_warn("Config warnings left out", "count=%zu", w->n - MAX_WARN_LINES);
}

static void log_config(const struct plugin_config *cfg)
{
	_cleanup_free_ char *json = config_to_json(cfg);

	log_info("Running with config", "config=%s", json ? json : "{}");
	log_warnings(&cfg->warnings);
}

static const char *mps_unready(const void *mps, const char *resource)
{
	return daemon_mps_reason(mps, resource);
}

/* Serve d->rs as it is now; a failure schedules another try (daemon_serve_or_retry). Nothing while a
 * DRA driver for NVIDIA GPUs is registered (daemon_dra.h): the tick looks again. */
static int serve(struct plugin_daemon *d)
{
	const struct daemon_serve_input in = {.cfg = d->cfg,
					      .node = d->node,
					      .rs = d->rs,
					      .imex = d->imex,
					      .cdi_extra = d->cdi_extra,
					      .cdi_names = &d->cdi,
					      .mps_unready = mps_unready,
					      .mps_data = &d->mps};

	if (daemon_dra_yield(&d->dra, d->cfg->device_plugin_path, loop_now_ms()))
		return 0;
	return daemon_serve_or_retry(&d->srv, &in);
}

/* The CDI specs for the node now in d: the gpu spec's result (the extras are only logged). */
static int write_specs(struct plugin_daemon *d)
{
	int r = daemon_cdi_write_spec(d->cfg, d->node, &d->cdi);

	d->cdi_extra = daemon_cdi_write_extra(d->cfg, d->imex);
	return r;
}

/* The health watcher and the MPS wait for the node and resources now in d, before serving them. */
static void watch(struct plugin_daemon *d)
{
	daemon_health_restart(&d->health, d->nv, d->node, d->cfg);
	daemon_mps_reset(&d->mps, d->cfg, d->rs, &d->srv);
}

/* Nothing is served: a reloaded config is the one to look for devices with next time. */
static void adopt_config(struct plugin_daemon *d, struct plugin_config *loaded)
{
	config_free(d->reloaded);
	d->reloaded = loaded;
	d->cfg = loaded;
	log_config(d->cfg);
}

/*
 * Full restart (kubelet restart, SIGHUP, layout change; the caller says why): new config (loaded:
 * what a SIGHUP read, taken over; NULL: the one in use), new node and resources, then swap. When the
 * new state cannot be built the old one is served again, so one bad reload never takes the node's
 * GPUs away: then -errno with err, and a loaded config is dropped.
 */
static int restart_with(struct plugin_daemon *d, enum restart_kind kind, struct plugin_config *loaded, struct gerr *err)
{
	_cleanup_(config_freep) struct plugin_config *new_cfg = loaded;
	struct plugin_config *old = NULL;
	const struct plugin_config *cfg = new_cfg ? new_cfg : d->cfg;
	struct nvml *nv = NULL, *old_nv = NULL;
	struct node *n = NULL;
	struct resource_set *rs = NULL;
	struct built got;
	int r;

	if (kind == RESERVE && d->rs) {
		daemon_serve_stop(&d->srv, d->rs);
		(void)serve(d);
		return 0;
	}
	/* a new NVML is opened beside the old one, which the watcher keeps using until it is replaced */
	if (d->nv && host_paths_same_nvml(cfg->host, d->cfg->host))
		nv = d->nv;
	r = build(&nv, cfg, &n, &rs, &got, err);
	if (r < 0) {
		if (nv != d->nv)
			nvml_close(nv);
		if (!d->rs) {
			/* never served: there is no previous list to fall back to, nor a config to keep */
			if (new_cfg)
				adopt_config(d, TAKE_PTR(new_cfg));
			log_warn("Still no devices, nothing is advertised; looking again later",
				 "error=\"%s\" retry_s=%d", err->msg, INIT_RETRY_MS / 1000);
			return 0;
		}
		log_error("Cannot build the device list, serving the previous one", "error=\"%s\"", err->msg);
		daemon_serve_stop(&d->srv, d->rs);
	} else {
		daemon_serve_stop(&d->srv, rs);
		daemon_carry_health(d->rs, d->node, rs, n);
		if (nv != d->nv) {
			old_nv = d->nv;
			d->nv = nv;
		}
		if (new_cfg) {
			/* the previous one is freed below, after the watcher let go of it */
			old = d->reloaded;
			d->reloaded = TAKE_PTR(new_cfg);
			d->cfg = d->reloaded;
		}
		d->imex = got.imex;
		resource_set_free(d->rs);
		node_free(d->node);
		d->rs = rs;
		d->node = n;
		log_config(d->cfg);
		(void)write_specs(d);
		watch(d); /* the old watcher, stopped here, was the last user of old_nv */
		nvml_close(old_nv);
		config_free(old);
	}
	(void)serve(d);
	return r;
}

/* A restart the daemon decides on itself: a failure is logged there and tried again later. */
static void restart(struct plugin_daemon *d, const char *why, enum restart_kind kind)
{
	struct gerr err = {0};

	log_info("Restarting device plugins", "reason=\"%s\"", why);
	(void)restart_with(d, kind, NULL, &err);
}

/*
 * SIGHUP (util/loop.h): the config again from the kept command line, then NVML and every device under
 * it. A config that does not load, or whose devices cannot be built, changes nothing: the loop says why.
 */
static int on_reload(void *data, struct gerr *err)
{
	struct plugin_daemon *d = data;
	struct plugin_config *loaded = NULL;
	int r;

	log_info("Restarting device plugins", "reason=\"SIGHUP: reloading the config\"");
	r = config_load(d->args, &loaded, err);
	return r < 0 ? r : restart_with(d, REBUILD, loaded, err);
}

/* A kubelet socket event: restart unless we are registered with exactly that socket already. */
static void on_kubelet_event(struct plugin_daemon *d)
{
	char why[PATH_MAX + 64];

	if (daemon_registered_with(&d->srv, d->cfg->kubelet_socket)) {
		log_debug("kubelet socket event for the socket we are registered with", NULL);
		return;
	}
	snprintf(why, sizeof(why), "inotify: %s created", d->cfg->kubelet_socket);
	restart(d, why, RESERVE);
}

/* What is due without an event: retries of serving, of finding devices, of registering. */
static void on_tick(struct plugin_daemon *d)
{
	/* one GPU, one advertiser: a DRA driver registered since, or gone long enough (daemon_dra.h) */
	if (d->srv.g && daemon_dra_yield(&d->dra, d->cfg->device_plugin_path, loop_now_ms())) {
		daemon_serve_stop(&d->srv, NULL); /* kubelet gets empty lists: nothing allocatable */
		return;
	}
	if (!d->srv.g && d->rs && d->dra.yielding) {
		if (!daemon_dra_yield(&d->dra, d->cfg->device_plugin_path, loop_now_ms()))
			restart(d, "the DRA driver's registration is gone", RESERVE);
		return;
	}
	if (d->srv.g && !daemon_sockets_present(&d->srv)) {
		restart(d, "a plugin socket was removed", RESERVE);
		return;
	}
	if (d->kw.warned && d->kw.wd < 0 && daemon_kubelet_watch_retry(&d->kw)) {
		log_info("Watching the kubelet socket's directory", "dir=%s", d->kw.dir);
		if (d->rs) {
			restart(d, "the kubelet socket's directory appeared", RESERVE);
			return;
		}
	}
	if (!d->srv.g && d->rs) {
		if (d->srv.next_serve_ms && loop_now_ms() >= d->srv.next_serve_ms)
			restart(d, "creating the plugin sockets again", RESERVE);
		return;
	}
	if (!d->srv.g) {
		if (loop_now_ms() >= d->next_init_ms) {
			d->next_init_ms = loop_now_ms() + INIT_RETRY_MS;
			restart(d, "looking for devices again", REBUILD);
		}
		return;
	}
	if (d->srv.next_register_ms && loop_now_ms() >= d->srv.next_register_ms)
		daemon_register_all(&d->srv, d->cfg->kubelet_socket, false);
}

/* The health watcher queued events: apply them; a changed layout is read again. */
static int on_health(void *data)
{
	struct plugin_daemon *d = data;

	if (daemon_health_drain(&d->health, d->rs, d->node, &d->srv))
		restart(d, "device layout changed (MIG re-partition, GPU added or removed)", REBUILD);
	return 0;
}

/* The kubelet socket's dir changed: the tick that follows acts on it. */
static int on_kubelet_dir(void *data)
{
	struct plugin_daemon *d = data;

	d->kubelet_event |= daemon_kubelet_watch_read(&d->kw);
	return 0;
}

/* After every wake-up: the MPS daemons' readiness, then a kubelet socket event or what is due. */
static long long on_wake(void *data)
{
	struct plugin_daemon *d = data;
	long long due;

	daemon_mps_check(&d->mps, d->cfg, &d->srv, false);
	if (d->kubelet_event) {
		d->kubelet_event = false;
		on_kubelet_event(d);
	} else {
		on_tick(d);
	}
	due = d->srv.next_register_ms ? d->srv.next_register_ms - loop_now_ms() : TICK_MS;
	return MAX(0, MIN(due, TICK_MS));
}

static const struct loop_ops daemon_loop_ops = {.reload = on_reload, .tick = on_wake};

int plugin_daemon_run(struct plugin_daemon *d)
{
	return loop_run(d->loop);
}

/* The loop: the daemon's signals (SIGHUP reloads), the health queue, the kubelet socket's dir. */
static int setup_loop(struct plugin_daemon *d, struct gerr *err)
{
	sigset_t set;
	int r;

	sig_daemon_set(&set);
	r = loop_new(&set, &daemon_loop_ops, d, &d->loop, err);
	if (r >= 0 && ((r = loop_add_fd(d->loop, d->health.evfd, on_health, d)) < 0 ||
		       (r = loop_add_fd(d->loop, d->kw.fd, on_kubelet_dir, d)) < 0))
		return gerr_set(err, -r, "%s", strerror(-r));
	return r;
}

/* The node's devices and everything derived from them, served; -errno (logged) when start must fail. */
static int start_serving(struct plugin_daemon *d)
{
	struct gerr err = {0};
	struct built got;
	int r;

	r = build(&d->nv, d->cfg, &d->node, &d->rs, &got, &err);
	d->imex = got.imex;
	if (r < 0) {
		/* NVML answers and there is no GPU: upstream waits whatever failOnInitError says (its
		 * chart runs the plugin on nodes whose GPUs may not be up yet); issue 23 §5 */
		if (d->cfg->fail_on_init_error && !got.no_devices) {
			log_error("Failed to initialize the device plugin", "error=\"%s\" hint=\"%s\"", err.msg,
				  "set --fail-on-init-error=false to keep the pod running on nodes without GPUs");
			return r;
		}
		log_warn("No devices found. Waiting indefinitely.", "error=\"%s\" retry_s=%d", err.msg,
			 INIT_RETRY_MS / 1000);
		d->next_init_ms = loop_now_ms() + INIT_RETRY_MS;
		return 0;
	}
	/* another live plugin serves these sockets: two DaemonSets on one node is a mistake to fix,
	 * not to wait out (docs/reference/device-plugin.md §3.1); checked before the CDI specs are
	 * written, which would replace that plugin's */
	r = daemon_sockets_taken(d->cfg, d->rs, &err);
	if (r == -EADDRINUSE) {
		log_error("Another plugin serves this device-plugin dir, exiting", "error=\"%s\"", err.msg);
		return r;
	}
	/* serving CDI names no spec resolves would fail every pod at start, far from the cause */
	r = write_specs(d);
	if (r < 0 && d->cfg->fail_on_init_error) {
		log_error("Failed to initialize the device plugin", "error=\"no CDI spec\" hint=\"%s\"",
			  "fix the CDI spec dir named above, or set --fail-on-init-error=false to serve anyway");
		return r;
	}
	watch(d);
	r = serve(d);
	/* one that took the sockets since the check above */
	if (r == -EADDRINUSE) {
		log_error("Another plugin serves this device-plugin dir, exiting", NULL);
		return r;
	}
	return 0;
}

int plugin_daemon_start(const struct loop_argv *args, const struct plugin_config *cfg, struct plugin_daemon **ret)
{
	struct plugin_daemon *d = calloc(1, sizeof(*d));
	struct gerr err = {0};
	int r;

	*ret = NULL;
	if (!d)
		return log_error("Cannot start the device plugin", "error=\"out of memory\""), -ENOMEM;
	*d = (struct plugin_daemon){.args = args, .cfg = cfg, .kw = {.fd = -1, .wd = -1}};
	r = daemon_health_init(&d->health, &err);
	if (r >= 0)
		r = daemon_kubelet_watch_init(&d->kw, cfg->kubelet_socket, &err);
	if (r >= 0)
		r = setup_loop(d, &err);
	if (r < 0) {
		log_error("Cannot start the device plugin", "error=\"%s\"", err.msg);
		plugin_daemon_stop(d);
		return r;
	}
	grpc_init();
	d->grpc_up = true;
	log_config(d->cfg);
	r = start_serving(d);
	if (r < 0) {
		plugin_daemon_stop(d);
		return r;
	}
	d->started = true;
	*ret = d;
	return 0;
}

void plugin_daemon_stop(struct plugin_daemon *d)
{
	if (!d)
		return;
	daemon_health_fini(&d->health); /* joins the watcher threads: nothing queues after this */
	daemon_serve_stop(&d->srv, NULL);
	resource_set_free(d->rs);
	node_free(d->node);
	daemon_cdi_names_clear(&d->cdi);
	nvml_close(d->nv);
	if (d->grpc_up)
		grpc_shutdown();
	daemon_kubelet_watch_fini(&d->kw);
	loop_free(d->loop);
	config_free(d->reloaded);
	if (d->started)
		log_info("Stopped", NULL);
	free(d);
}
