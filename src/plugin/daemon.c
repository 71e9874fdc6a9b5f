/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Main loop of `gpulet plugin`. Threads: this one (signals, inotify, registration, reloads, health
 * updates), the gRPC completion-queue thread of the current server group (gsrv.c) and the health
 * watcher's threads (src/plugin/health.c). Everything the gRPC thread reads (resource set, node,
 * config) is replaced only after the group is freed, and changed in place (health) only under the
 * group lock. The health watcher never touches that state: its callback queues the event and wakes
 * this thread through an eventfd.
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
#include "cdi/cdi.h"
#include "plugin/dp.h"
#include "util/fileio.h"
#include "kube/grpc_client.h"
#include "plugin/gsrv.h"
#include "plugin/health.h"
#include "util/log.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "plugin/register.h"
#include "plugin/resources.h"
#include "nvml/xid.h"

/* Register retry schedule right after (re)serving: kubelet may have bound kubelet.sock but not yet
 * be listening when inotify reports it (ms since the first try). */
static const int register_backoff_ms[] = {0, 5, 10, 20, 40, 80, 160, 320, 640};
#define REGISTER_TIMEOUT_MS 5000
#define REGISTER_RETRY_MS   2000 /* then every 2 s (upstream waits 30 s) */
#define STOP_FLUSH_MS       1000 /* how long SIGTERM waits for the empty list to go out */
#define TICK_MS             1000
#define INIT_RETRY_MS       30000 /* --fail-on-init-error=false: look for devices again this often */
#define REJECT_LOG_MS       1000  /* at most one "request rejected" line per resource this often (F8) */

struct served {
	struct dp_ctx ctx;
	struct gsrv *srv;
	bool registered;
	char path[PATH_MAX];
	/* rejected requests: a misbehaving client retrying must not flood the log (gRPC thread only) */
	long long reject_log_ms;
	unsigned rejects_suppressed;
};

struct daemon {
	const struct config_args *args;
	struct plugin_config cfg;
	struct nvml *nv;
	struct node *node;
	struct resource_set *rs;
	struct gsrv_group *g;
	struct served *sv;
	size_t n_sv;
	int sigfd, inofd;
	char kubelet_name[NAME_MAX + 1]; /* basename of the kubelet socket, for inotify */
	/* identity of the kubelet.sock every resource is registered with: an inotify event about the
	 * same socket (it raced with a restart that already registered) needs no second restart */
	dev_t kubelet_dev;
	ino_t kubelet_ino;
	struct timespec kubelet_ctime;
	long long next_register_ms;
	long long next_init_ms;
	/* health: the watcher, and the queue its callback fills (under qlock) */
	struct health_watcher *hw;
	struct xid_policy policy;
	int evfd;
	pthread_mutex_t qlock;
	struct health_item *q_head, **q_tail;
	bool mig_changed;
};

struct health_item {
	struct health_item *next;
	char uuid[NODE_UUID_MAX];
	int gi, ci;
	bool healthy;
	char reason[256];
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int h_unary(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		   struct gerr *err)
{
	struct served *s = data;
	int st = dp_unary(&s->ctx, method, in, inlen, out, outlen, err);

	long long t;

	if (st == 0)
		return st;
	t = now_ms();
	if (s->reject_log_ms && t - s->reject_log_ms < REJECT_LOG_MS) {
		s->rejects_suppressed++;
		return st;
	}
	log_warn("request rejected", "resource=%s method=%s status=%d error=\"%s\" suppressed=%u", s->ctx.res->name,
		 method < DP_N_METHODS ? strrchr(dp_methods[method].path, '/') + 1 : "?", grpc_status_from_errno(st),
		 err->msg, s->rejects_suppressed);
	s->reject_log_ms = t;
	s->rejects_suppressed = 0;
	return st;
}

static int h_snapshot(void *data, unsigned method, uint8_t **out, size_t *outlen)
{
	struct served *s = data;

	return dp_snapshot(&s->ctx, out, outlen);
}

static const struct gsrv_handler handler = {h_unary, h_snapshot};

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

/* Read the node and derive the resources for cfg. */
static int build(struct daemon *d, const struct plugin_config *cfg, struct node **ret_node,
		 struct resource_set **ret_rs, struct gerr *err)
{
	_cleanup_(node_freep) struct node *n = NULL;
	_cleanup_(resource_set_freep) struct resource_set *rs = NULL;
	struct resource_options o;
	int r;

	if (!d->nv) {
		_cleanup_free_ char *droot = nvml_driver_root(cfg);

		r = nvml_open(cfg->nvml_library[0] ? cfg->nvml_library : NULL, droot, &d->nv, err);
		if (r < 0)
			return r;
	}
	r = node_load(d->nv, cfg->root, &n, err);
	if (r < 0)
		return r;
	if (n->n_gpus == 0)
		return gerr_set(err, ENODEV, "no devices found: NVML reports no GPUs (driver %s)", n->driver_version);
	config_resource_options(cfg, &o);
	r = resources_build(n, &o, &rs, err);
	if (r < 0)
		return r;
	if (rs->n == 0)
		return gerr_set(err, ENODEV,
				"no devices found: NVML reports %zu GPUs and none can be advertised "
				"with mig-strategy=%s",
				n->n_gpus, cfg->mig_strategy);
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

static bool all_registered(const struct daemon *d)
{
	for (size_t i = 0; i < d->n_sv; i++)
		if (!d->sv[i].registered)
			return false;
	return true;
}

static void register_all(struct daemon *d, bool quick_retries)
{
	const struct plugin_config *cfg = &d->cfg;
	_cleanup_free_ struct plugin_registration *regs = NULL;
	_cleanup_free_ struct served **who = NULL;
	long long t0 = now_ms();
	size_t n = 0;

	if (!cfg->kubelet_socket[0])
		return; /* upstream: empty --kubelet-socket serves without registering */
	regs = calloc(d->n_sv + 1, sizeof(*regs));
	who = calloc(d->n_sv + 1, sizeof(*who));
	if (!regs || !who) {
		d->next_register_ms = now_ms() + REGISTER_RETRY_MS;
		return;
	}
	for (size_t k = 0; k < (quick_retries ? ELEMENTSOF(register_backoff_ms) : 1); k++) {
		long long wait = t0 + register_backoff_ms[k] - now_ms();
		bool refused = false;

		n = 0;
		for (size_t i = 0; i < d->n_sv; i++)
			if (!d->sv[i].registered) {
				/* the endpoint is the socket's name inside kubelet's device-plugin dir */
				regs[n] = (struct plugin_registration){.endpoint = d->sv[i].ctx.res->socket,
								       .resource_name = d->sv[i].ctx.res->name,
								       .preferred_allocation = true};
				who[n++] = &d->sv[i];
			}
		if (n == 0)
			return;
		if (wait > 0)
			sleep_ms((int)wait);
		plugin_register(cfg->kubelet_socket, regs, n, REGISTER_TIMEOUT_MS);
		for (size_t i = 0; i < n; i++) {
			if (regs[i].result == 0) {
				who[i]->registered = true;
				log_info("Registered device plugin", "resource=%s socket=%s kubelet=%s latency_ms=%lld",
					 regs[i].resource_name, gsrv_socket(who[i]->srv), cfg->kubelet_socket,
					 now_ms() - t0);
			}
			refused |= regs[i].result == -ECONNREFUSED;
		}
		if (!refused)
			break;
	}
	if (all_registered(d)) {
		struct stat st;

		if (stat(cfg->kubelet_socket, &st) == 0) {
			d->kubelet_dev = st.st_dev;
			d->kubelet_ino = st.st_ino;
			d->kubelet_ctime = st.st_ctim;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (regs[i].result < 0) {
			log_warn("Could not register device plugin, will retry", "resource=%s kubelet=%s error=\"%s\"",
				 regs[i].resource_name, cfg->kubelet_socket, regs[i].err.msg);
			d->next_register_ms = now_ms() + REGISTER_RETRY_MS;
		}
}

static void log_unhealthy(const struct resource_set *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		for (size_t k = 0; k < rs->res[i].n_devices; k++) {
			const struct rdevice *dv = &rs->res[i].devices[k];

			if (!dv->healthy)
				log_warn("unhealthy device", "resource=%s id=%s uuid=%s index=%s reason=\"%s\"",
					 rs->res[i].name, dv->id, dv->uuid, dv->index, dv->reason);
		}
}

static void stop_serving(struct daemon *d, const struct resource_set *keep)
{
	bool any_empty = false;

	if (!d->g)
		return;
	/* Resources that go away get an empty list first, so kubelet drops their capacity (upstream #240). */
	gsrv_lock(d->g);
	for (size_t i = 0; i < d->n_sv; i++) {
		if (keep && resources_find(keep, d->sv[i].ctx.res->name))
			continue;
		d->sv[i].ctx.empty = true;
		any_empty |= gsrv_streams(d->sv[i].srv) > 0;
		gsrv_notify(d->sv[i].srv);
	}
	gsrv_unlock(d->g);
	if (any_empty && gsrv_flush(d->g, STOP_FLUSH_MS) < 0)
		log_warn("kubelet did not take the empty device list in time", "timeout_ms=%d", STOP_FLUSH_MS);
	gsrv_group_free(d->g, 200);
	d->g = NULL;
	free(d->sv);
	d->sv = NULL;
	d->n_sv = 0;
}

static int start_serving(struct daemon *d, struct gerr *err)
{
	struct plugin_config *cfg = &d->cfg;
	int r;

	r = gsrv_group_new(&d->g, err);
	if (r < 0)
		return r;
	d->sv = calloc(d->rs->n, sizeof(*d->sv));
	if (!d->sv)
		return gerr_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < d->rs->n; i++) {
		struct served *s = &d->sv[d->n_sv];

		s->ctx = (struct dp_ctx){.cfg = cfg, .node = d->node, .res = &d->rs->res[i]};
		snprintf(s->path, sizeof(s->path), "%s/%s", cfg->device_plugin_path, d->rs->res[i].socket);
		r = gsrv_add(d->g, s->path, dp_methods, DP_N_METHODS, &handler, s, &s->srv, err);
		if (r < 0)
			return r;
		d->n_sv++;
		log_info("Serving device plugin", "resource=%s socket=%s devices=%zu", s->ctx.res->name, s->path,
			 s->ctx.res->n_devices);
	}
	r = gsrv_group_run(d->g, err);
	if (r < 0)
		return r;
	log_unhealthy(d->rs);
	register_all(d, true);
	return 0;
}

/*
 * Full restart (kubelet restart, SIGHUP, layout change): new config (optional), new node and
 * resources, then swap. When the new state cannot be built the old one is served again, so one
 * bad reload never takes the node's GPUs away.
 */
/* Watcher thread: queue the transition for the main thread; log what only informs. */
static void on_health(struct health_event *ev, void *userdata)
{
	struct daemon *d = userdata;
	struct health_item *it = NULL;
	uint64_t one = 1;

	if (ev->kind == HEALTH_SOURCE_ERROR || ev->kind == HEALTH_UNSUPPORTED || ev->kind == HEALTH_ECC_SBE ||
	    (!ev->transition && ev->kind != HEALTH_MIG_CHANGED)) {
		log_emit(ev->kind == HEALTH_ECC_SBE || ev->kind == HEALTH_UNSUPPORTED ? LOG_LVL_INFO : LOG_LVL_WARN,
			 "health event", "kind=%s uuid=%s index=%d xid=%u source=%s reason=\"%s\"",
			 health_kind_name(ev->kind), ev->uuid, ev->index, ev->xid, ev->source, ev->reason);
		return;
	}
	if (ev->kind != HEALTH_MIG_CHANGED) {
		it = calloc(1, sizeof(*it));
		if (!it)
			return;
		snprintf(it->uuid, sizeof(it->uuid), "%s", ev->uuid);
		snprintf(it->reason, sizeof(it->reason), "%s", ev->reason);
		it->gi = ev->gi;
		it->ci = ev->ci;
		it->healthy = ev->healthy;
	}
	pthread_mutex_lock(&d->qlock);
	if (it) {
		*d->q_tail = it;
		d->q_tail = &it->next;
	} else {
		d->mig_changed = true;
	}
	pthread_mutex_unlock(&d->qlock);
	if (write(d->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the main thread has a wakeup pending anyway */
	}
}

/*
 * With a CDI device-list strategy the names Allocate returns must resolve: write the node's spec
 * for vendor k8s.device-plugin.nvidia.com, class gpu, named like --device-id-strategy, to
 * /var/run/cdi at every (re)build (docs/reference/device-plugin.md §8).
 */
/* Returns 0 when written or not needed, -errno (logged) when a CDI strategy has no spec. */
static int write_cdi_spec(const struct daemon *d)
{
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
	_cleanup_free_ char *dir = NULL;
	json_t *spec = NULL;
	struct gerr err = {0};
	int r;

	if (!(d->cfg.device_list_strategy & DLS_CDI_ANY) || !d->node)
		return 0;
	o.root = d->cfg.root;
	o.driver_root = d->cfg.driver_root;
	o.dev_root = d->cfg.dev_root[0] ? d->cfg.dev_root : NULL;
	o.vendor = DP_CDI_VENDOR;
	o.class = DP_CDI_CLASS;
	o.names = streq(d->cfg.device_id_strategy, "index") ? CDI_NAMES_INDEX : CDI_NAMES_UUID;
	dir = root_path(d->cfg.root, CDI_DYNAMIC_DIR);
	r = dir ? cdi_generate(d->node, &o, &spec, &err) : gerr_set(&err, ENOMEM, "out of memory");
	if (r >= 0)
		r = cdi_write_spec(dir, DP_CDI_VENDOR "-" DP_CDI_CLASS ".json", spec, &err);
	json_decref(spec);
	if (r < 0)
		log_error("Cannot write the CDI spec; CDI device names will not resolve in the runtime",
			  "dir=%s error=\"%s\"", dir ? dir : CDI_DYNAMIC_DIR, err.msg);
	else
		log_info("Wrote CDI spec", "file=%s/%s", dir, DP_CDI_VENDOR "-" DP_CDI_CLASS ".json");
	return r < 0 ? r : 0;
}

static void health_restart(struct daemon *d)
{
	struct health_options o;
	struct gerr err = {0};

	health_stop(d->hw);
	d->hw = NULL;
	if (!d->node || !d->nv)
		return;
	health_options_default(&o);
	o.root = d->cfg.root;
	o.policy = d->policy;
	o.mig_poll_ms = d->cfg.rescan_interval * 1000;
	o.quiet_ms = d->cfg.health_recovery * 1000;
	if (d->cfg.kernel_log[0])
		o.kernel_log = d->cfg.kernel_log;
	o.cb = on_health;
	o.userdata = d;
	if (health_start(d->nv, d->node, &o, &d->hw, &err) < 0)
		log_error("Cannot start health checks; devices stay advertised as they are", "error=\"%s\"", err.msg);
}

/*
 * A rebuilt resource set starts healthy: carry over what the old one knew (an XID does not repeat
 * itself), by physical GPU and MIG instance, since replica counts and names may have changed.
 */
static void carry_health(const struct resource_set *old, const struct node *on, struct resource_set *rs,
			 const struct node *n)
{
	if (!old || !on)
		return;
	for (size_t i = 0; i < old->n; i++)
		for (size_t k = 0; k < old->res[i].n_devices; k++) {
			const struct rdevice *dv = &old->res[i].devices[k];
			const struct node_gpu *g = dv->gpu < on->n_gpus ? &on->gpus[dv->gpu] : NULL;
			const struct node_mig *m =
			    g && dv->mig >= 0 && (size_t)dv->mig < g->n_migs ? &g->migs[dv->mig] : NULL;

			if (dv->healthy || !g || !g->uuid[0])
				continue;
			resources_set_health(rs, n, g->uuid, m ? (int)m->gi : -1, m ? (int)m->ci : -1, false,
					     dv->reason);
		}
}

enum restart_kind {
	RESERVE, /* kubelet restarted or a socket vanished: serve the same devices again, fast */
	REBUILD, /* the node changed: read NVML again */
	RELOAD,  /* SIGHUP: read the config file and NVML again */
};

static void restart(struct daemon *d, const char *why, enum restart_kind kind)
{
	struct plugin_config *newcfg = calloc(1, sizeof(*newcfg));
	struct node *n = NULL;
	struct resource_set *rs = NULL;
	struct gerr err = {0};
	int r = 0;

	log_info("Restarting device plugins", "reason=\"%s\"", why);
	if (!newcfg) {
		log_error("out of memory during restart", NULL);
		return;
	}
	*newcfg = d->cfg;
	if (kind == RESERVE && d->rs) {
		free(newcfg);
		stop_serving(d, d->rs);
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
	r = build(d, newcfg, &n, &rs, &err);
	if (r < 0) {
		log_error("Cannot build the device list, serving the previous one", "error=\"%s\"", err.msg);
		free(newcfg);
		if (!d->rs)
			return;
		stop_serving(d, d->rs);
	} else {
		stop_serving(d, rs);
		carry_health(d->rs, d->node, rs, n);
		d->cfg = *newcfg;
		free(newcfg);
		resource_set_free(d->rs);
		node_free(d->node);
		d->rs = rs;
		d->node = n;
		log_config(&d->cfg);
		write_cdi_spec(d);
		health_restart(d);
	}
serve:
	err = (struct gerr){0};
	if (start_serving(d, &err) < 0)
		log_error("Cannot serve the device plugins, will retry", "error=\"%s\"", err.msg);
}

/* Apply one transition to the resources, log each device that changed; true if any did. */
static bool apply_health(struct daemon *d, const struct health_item *it)
{
	size_t total = 0, k = 0;
	_cleanup_free_ bool *was = NULL;
	bool changed = false;

	for (size_t i = 0; i < d->rs->n; i++)
		total += d->rs->res[i].n_devices;
	was = calloc(total + 1, sizeof(*was));
	if (!was)
		return false;
	for (size_t i = 0; i < d->rs->n; i++)
		for (size_t j = 0; j < d->rs->res[i].n_devices; j++)
			was[k++] = d->rs->res[i].devices[j].healthy;
	if (resources_set_health(d->rs, d->node, it->uuid, it->gi, it->ci, it->healthy, it->reason) <= 0)
		return false;
	k = 0;
	for (size_t i = 0; i < d->rs->n; i++)
		for (size_t j = 0; j < d->rs->res[i].n_devices; j++) {
			const struct rdevice *dv = &d->rs->res[i].devices[j];

			if (was[k++] == dv->healthy)
				continue;
			changed = true;
			if (dv->healthy)
				log_info("device is healthy again", "resource=%s id=%s uuid=%s index=%s",
					 d->rs->res[i].name, dv->id, dv->uuid, dv->index);
			else
				log_warn("unhealthy device", "resource=%s id=%s uuid=%s index=%s reason=\"%s\"",
					 d->rs->res[i].name, dv->id, dv->uuid, dv->index, it->reason);
		}
	return changed;
}

static void drain_health(struct daemon *d)
{
	struct health_item *list;
	uint64_t cnt;
	bool mig, changed = false;

	if (read(d->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&d->qlock);
	list = d->q_head;
	d->q_head = NULL;
	d->q_tail = &d->q_head;
	mig = d->mig_changed;
	d->mig_changed = false;
	pthread_mutex_unlock(&d->qlock);

	if (d->g)
		gsrv_lock(d->g);
	while (list) {
		struct health_item *it = list;

		list = it->next;
		if (d->rs)
			changed |= apply_health(d, it);
		free(it);
	}
	if (d->g) {
		for (size_t i = 0; changed && i < d->n_sv; i++)
			gsrv_notify(d->sv[i].srv);
		gsrv_unlock(d->g);
	}
	if (mig)
		restart(d, "device layout changed (MIG re-partition, GPU added or removed)", REBUILD);
}

static bool sockets_present(const struct daemon *d)
{
	struct stat st;

	for (size_t i = 0; i < d->n_sv; i++)
		if (lstat(d->sv[i].path, &st) < 0)
			return false;
	return true;
}

static int setup_fds(struct daemon *d, struct gerr *err)
{
	_cleanup_free_ char *dir = NULL;
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
	if (!d->cfg.kubelet_socket[0])
		return 0;
	slash = strrchr(d->cfg.kubelet_socket, '/');
	snprintf(d->kubelet_name, sizeof(d->kubelet_name), "%s", slash ? slash + 1 : d->cfg.kubelet_socket);
	dir = slash ? strndup(d->cfg.kubelet_socket, (size_t)(slash - d->cfg.kubelet_socket)) : strdup(".");
	if (!dir)
		return gerr_set(err, ENOMEM, "out of memory");
	if (!*dir) {
		free(dir);
		dir = strdup("/");
	}
	d->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (d->inofd < 0)
		return gerr_set(err, errno, "inotify_init1: %s", strerror(errno));
	if (inotify_add_watch(d->inofd, dir, IN_CREATE | IN_MOVED_TO) < 0)
		return gerr_set(err, errno,
				"cannot watch %s for kubelet restarts: %s; the directory must exist (mount the "
				"kubelet device-plugins dir into the plugin pod)",
				dir, strerror(errno));
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
		int n = poll(pfd, ELEMENTSOF(pfd), TICK_MS);

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					restart(d, "SIGHUP: reloading the config", RELOAD);
					continue;
				}
				log_info("Received signal, shutting down", "signal=%s", strsignal((int)si.ssi_signo));
				return;
			}
		}
		if (n > 0 && (pfd[2].revents & POLLIN))
			drain_health(d);
		if (n > 0 && d->inofd >= 0 && (pfd[1].revents & POLLIN) && read_inotify(d)) {
			char why[PATH_MAX + 64];
			struct stat st;

			if (d->g && all_registered(d) && sockets_present(d) && stat(d->cfg.kubelet_socket, &st) == 0 &&
			    st.st_dev == d->kubelet_dev && st.st_ino == d->kubelet_ino &&
			    st.st_ctim.tv_sec == d->kubelet_ctime.tv_sec &&
			    st.st_ctim.tv_nsec == d->kubelet_ctime.tv_nsec) {
				log_debug("kubelet socket event for the socket we are registered with", NULL);
				continue;
			}
			snprintf(why, sizeof(why), "inotify: %s created", d->cfg.kubelet_socket);
			restart(d, why, RESERVE);
			continue;
		}
		if (d->g && !sockets_present(d)) {
			restart(d, "a plugin socket was removed", RESERVE);
			continue;
		}
		if (!d->g) {
			if (now_ms() >= d->next_init_ms) {
				d->next_init_ms = now_ms() + INIT_RETRY_MS;
				restart(d, "looking for devices again", REBUILD);
			}
			continue;
		}
		if (d->next_register_ms && now_ms() >= d->next_register_ms) {
			d->next_register_ms = 0;
			register_all(d, false);
		}
	}
}

int plugin_daemon_run(const struct config_args *args, const struct plugin_config *cfg)
{
	struct daemon d = {.args = args, .cfg = *cfg, .sigfd = -1, .inofd = -1, .evfd = -1};
	struct gerr err = {0};
	int r, rc = 0;

	/* upstream's env-only knobs for XID health checks (docs/reference/device-plugin.md §1, §4) */
	r = xid_policy_parse(getenv("DP_DISABLE_HEALTHCHECKS"), getenv("DP_ENABLE_HEALTHCHECKS"), &d.policy, &err);
	if (r < 0) {
		log_error("Invalid health check settings", "error=\"%s\"", err.msg);
		return 1;
	}
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
	r = build(&d, &d.cfg, &d.node, &d.rs, &err);
	if (r < 0) {
		if (d.cfg.fail_on_init_error) {
			log_error("Failed to initialize the device plugin", "error=\"%s\" hint=\"%s\"", err.msg,
				  "set --fail-on-init-error=false to keep the pod running on nodes without GPUs");
			rc = 1;
			goto out;
		}
		log_warn("No devices found. Waiting indefinitely.", "error=\"%s\"", err.msg);
		d.next_init_ms = now_ms() + INIT_RETRY_MS;
	} else {
		/* serving CDI names no spec resolves would fail every pod at start, far from the cause */
		if (write_cdi_spec(&d) < 0 && d.cfg.fail_on_init_error) {
			log_error(
			    "Failed to initialize the device plugin", "error=\"no CDI spec\" hint=\"%s\"",
			    "fix the CDI spec dir named above, or set --fail-on-init-error=false to serve anyway");
			rc = 1;
			goto out;
		}
		health_restart(&d);
		err = (struct gerr){0};
		r = start_serving(&d, &err);
		if (r < 0) {
			log_error("Cannot serve the device plugins", "error=\"%s\"", err.msg);
			/* another plugin serves these sockets: waiting would only fight it for them */
			if (d.cfg.fail_on_init_error || r == -EADDRINUSE) {
				rc = 1;
				goto out;
			}
		}
	}
	loop(&d);
out:
	health_stop(d.hw); /* joins the watcher threads: nothing queues after this */
	stop_serving(&d, NULL);
	while (d.q_head) {
		struct health_item *it = d.q_head;

		d.q_head = it->next;
		free(it);
	}
	close(d.evfd);
	pthread_mutex_destroy(&d.qlock);
	resource_set_free(d.rs);
	node_free(d.node);
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
