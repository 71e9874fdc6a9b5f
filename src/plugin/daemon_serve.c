/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's resource servers: one Device Plugin API server per resource in the device-plugin
 * dir, and registration of each with kubelet (docs/reference/device-plugin.md §3.1-3.2).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kube/grpc_client.h"
#include "plugin/daemon_int.h"
#include "plugin/register.h"
#include "util/log.h"

/* Register retry schedule right after (re)serving: kubelet may have bound kubelet.sock but not yet
 * be listening when inotify reports it (ms since the first try; kept by the main loop, no sleep). */
static const int register_backoff_ms[] = {0, 2, 5, 10, 20, 40, 80, 160, 320, 640};
#define REGISTER_TIMEOUT_MS 5000
#define REGISTER_RETRY_MS   2000  /* then every 2 s (upstream waits 30 s) */
#define STOP_FLUSH_MS       1000  /* how long SIGTERM waits for the empty list to go out */
#define REJECT_LOG_MS       1000  /* at most one "request rejected" line per resource this often (F8) */
#define SERVE_RETRY_MAX_MS  30000 /* sockets that cannot be created: upstream's restart timeout */

static int h_unary(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		   struct gerr *err)
{
	struct served *s = data;
	int st = dp_unary(&s->ctx, method, in, inlen, out, outlen, err);

	long long t;

	if (st == 0)
		return st;
	t = daemon_now_ms();
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

bool daemon_all_registered(const struct daemon *d)
{
	for (size_t i = 0; i < d->n_sv; i++)
		if (!d->sv[i].registered)
			return false;
	return true;
}

void daemon_register_all(struct daemon *d, bool first)
{
	const struct plugin_config *cfg = &d->cfg;
	_cleanup_free_ struct plugin_registration *regs = NULL;
	_cleanup_free_ struct served **who = NULL;
	long long t = daemon_now_ms();
	bool refused = false;
	size_t n = 0;

	if (!cfg->kubelet_socket[0])
		return; /* upstream: empty --kubelet-socket serves without registering */
	if (first) {
		d->register_t0 = t;
		d->register_step = 0;
	}
	d->next_register_ms = 0;
	regs = calloc(d->n_sv + 1, sizeof(*regs));
	who = calloc(d->n_sv + 1, sizeof(*who));
	if (!regs || !who) {
		d->next_register_ms = t + REGISTER_RETRY_MS;
		return;
	}
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
	plugin_register(cfg->kubelet_socket, regs, n, REGISTER_TIMEOUT_MS);
	for (size_t i = 0; i < n; i++) {
		if (regs[i].result == 0) {
			who[i]->registered = true;
			log_info("Registered device plugin", "resource=%s socket=%s kubelet=%s latency_ms=%lld",
				 regs[i].resource_name, gsrv_socket(who[i]->srv), cfg->kubelet_socket,
				 daemon_now_ms() - d->register_t0);
		}
		refused |= regs[i].result == -ECONNREFUSED || regs[i].result == -ENOENT;
	}
	if (daemon_all_registered(d)) {
		struct stat st;

		if (stat(cfg->kubelet_socket, &st) == 0) {
			d->kubelet_dev = st.st_dev;
			d->kubelet_ino = st.st_ino;
			d->kubelet_ctime = st.st_ctim;
		}
		return;
	}
	/*
	 * Right after (re)serving, kubelet may have bound kubelet.sock but not be listening yet: try
	 * again soon, from the main loop, so that a kubelet restart seen meanwhile (inotify) is acted
	 * on at once instead of after a sleep.
	 */
	if (refused && ++d->register_step < ELEMENTSOF(register_backoff_ms)) {
		d->next_register_ms = d->register_t0 + register_backoff_ms[d->register_step];
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (regs[i].result < 0)
			log_warn("Could not register device plugin, will retry", "resource=%s kubelet=%s error=\"%s\"",
				 regs[i].resource_name, cfg->kubelet_socket, regs[i].err.msg);
	d->next_register_ms = daemon_now_ms() + REGISTER_RETRY_MS;
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

void daemon_stop_serving(struct daemon *d, const struct resource_set *keep)
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

		s->ctx = (struct dp_ctx){.cfg = cfg,
					 .node = d->node,
					 .res = &d->rs->res[i],
					 .imex = d->imex,
					 .cdi_extra = d->cdi_extra,
					 .mps_unready = daemon_mps_reason(d, d->rs->res[i].name),
					 .cdi_names = &d->cdi};
		snprintf(s->path, sizeof(s->path), "%s/%s", cfg->device_plugin_path, d->rs->res[i].socket);
		r = gsrv_add(d->g, s->path, dp_methods, DP_N_METHODS, &handler, s, &s->srv, err);
		if (r < 0)
			return r;
		d->n_sv++;
		/*
		 * While the MPS daemon is not ready the list kubelet gets is empty: say so, not the replicas.
		 * The words after devices=0 are written outside any value (logfmt reads them as keys without
		 * values) so that the line keeps reading "devices=0 (empty until ...", as users grep it.
		 */
		if (s->ctx.mps_unready)
			log_info("Serving device plugin",
				 "resource=%s socket=%s devices=0 (empty until the MPS control daemon is ready)",
				 s->ctx.res->name, s->path);
		else
			log_info("Serving device plugin", "resource=%s socket=%s devices=%zu", s->ctx.res->name,
				 s->path, s->ctx.res->n_devices);
	}
	return gsrv_group_run(d->g, err);
}

int daemon_start_serving(struct daemon *d, struct gerr *err)
{
	int r = start_serving(d, err);

	if (r < 0) {
		/* half a set of sockets would register some resources and not others: none instead */
		daemon_stop_serving(d, NULL);
		return r;
	}
	log_unhealthy(d->rs);
	daemon_register_all(d, true);
	return 0;
}

int daemon_serve_or_retry(struct daemon *d)
{
	struct gerr err = {0};
	int r = daemon_start_serving(d, &err), retry_ms;

	if (r >= 0) {
		d->serve_failures = 0;
		d->next_serve_ms = 0;
		return r;
	}
	/* upstream retries every 30 s; starting at 1 s picks up a dir that appears a moment later */
	retry_ms = d->serve_failures < 5 ? 1000 << d->serve_failures : SERVE_RETRY_MAX_MS;
	d->serve_failures++;
	d->next_serve_ms = daemon_now_ms() + retry_ms;
	log_error("Cannot serve the device plugins, will retry", "error=\"%s\" attempt=%u retry_s=%d", err.msg,
		  d->serve_failures, retry_ms / 1000);
	return r;
}
