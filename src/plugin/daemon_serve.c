/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's resource servers: one Device Plugin API server per resource in the device-plugin
 * dir, and registration of each with kubelet (docs/reference/device-plugin.md §3.1-3.2); the
 * interface and its threads are in daemon_serve.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kube/grpc_client.h"
#include "plugin/daemon_serve.h"
#include "kube/gsrv.h"
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

struct served {
	struct dp_ctx ctx;
	struct gsrv *srv;
	bool registered;
	char path[PATH_MAX];
	/* rejected requests: a misbehaving client retrying must not flood the log (gRPC thread only) */
	long long reject_log_ms;
	unsigned rejects_suppressed;
};

static int h_unary(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		   struct gerr *err)
{
	struct served *s = data;
	int st = dp_unary(&s->ctx, method, in, inlen, out, outlen, err);

	long long t;

	if (st == 0)
		return st;
	t = loop_now_ms();
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

static bool all_registered(const struct daemon_servers *s)
{
	for (size_t i = 0; i < s->n_sv; i++)
		if (!s->sv[i].registered)
			return false;
	return true;
}

bool daemon_sockets_present(const struct daemon_servers *s)
{
	struct stat st;

	for (size_t i = 0; i < s->n_sv; i++)
		if (lstat(s->sv[i].path, &st) < 0)
			return false;
	return true;
}

bool daemon_registered_with(const struct daemon_servers *s, const char *kubelet_socket)
{
	struct stat st;

	return s->g && all_registered(s) && daemon_sockets_present(s) && stat(kubelet_socket, &st) == 0 &&
	       st.st_dev == s->kubelet_dev && st.st_ino == s->kubelet_ino &&
	       st.st_ctim.tv_sec == s->kubelet_ctime.tv_sec && st.st_ctim.tv_nsec == s->kubelet_ctime.tv_nsec;
}

void daemon_servers_lock(struct daemon_servers *s)
{
	if (s->g)
		gsrv_lock(s->g);
}

void daemon_servers_unlock(struct daemon_servers *s)
{
	if (s->g)
		gsrv_unlock(s->g);
}

void daemon_servers_notify(struct daemon_servers *s, const char *resource)
{
	for (size_t i = 0; i < s->n_sv; i++)
		if (!resource || streq(s->sv[i].ctx.res->name, resource))
			gsrv_notify(s->sv[i].srv);
}

void daemon_register_all(struct daemon_servers *s, const char *kubelet_socket, bool first)
{
	_cleanup_free_ struct plugin_registration *regs = NULL;
	_cleanup_free_ struct served **who = NULL;
	long long t = loop_now_ms();
	bool refused = false;
	size_t n = 0;

	if (!kubelet_socket || !kubelet_socket[0])
		return; /* upstream: empty --kubelet-socket serves without registering */
	if (first) {
		s->register_t0 = t;
		s->register_step = 0;
	}
	s->next_register_ms = 0;
	regs = calloc(s->n_sv + 1, sizeof(*regs));
	who = calloc(s->n_sv + 1, sizeof(*who));
	if (!regs || !who) {
		s->next_register_ms = t + REGISTER_RETRY_MS;
		return;
	}
	for (size_t i = 0; i < s->n_sv; i++)
		if (!s->sv[i].registered) {
			/* the endpoint is the socket's name inside kubelet's device-plugin dir */
			regs[n] = (struct plugin_registration){.endpoint = s->sv[i].ctx.res->socket,
							       .resource_name = s->sv[i].ctx.res->name,
							       .preferred_allocation = true};
			who[n++] = &s->sv[i];
		}
	if (n == 0)
		return;
	plugin_register(kubelet_socket, regs, n, REGISTER_TIMEOUT_MS);
	for (size_t i = 0; i < n; i++) {
		if (regs[i].result == 0) {
			who[i]->registered = true;
			log_info("Registered device plugin", "resource=%s socket=%s kubelet=%s latency_ms=%lld",
				 regs[i].resource_name, gsrv_socket(who[i]->srv), kubelet_socket,
				 loop_now_ms() - s->register_t0);
		}
		refused |= regs[i].result == -ECONNREFUSED || regs[i].result == -ENOENT;
	}
	if (all_registered(s)) {
		struct stat st;

		if (stat(kubelet_socket, &st) == 0) {
			s->kubelet_dev = st.st_dev;
			s->kubelet_ino = st.st_ino;
			s->kubelet_ctime = st.st_ctim;
		}
		return;
	}
	/*
	 * Right after (re)serving, kubelet may have bound kubelet.sock but not be listening yet: try
	 * again soon, from the main loop, so that a kubelet restart seen meanwhile (inotify) is acted
	 * on at once instead of after a sleep.
	 */
	if (refused && ++s->register_step < ELEMENTSOF(register_backoff_ms)) {
		s->next_register_ms = s->register_t0 + register_backoff_ms[s->register_step];
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (regs[i].result < 0)
			log_warn("Could not register device plugin, will retry", "resource=%s kubelet=%s error=\"%s\"",
				 regs[i].resource_name, kubelet_socket, regs[i].err.msg);
	s->next_register_ms = loop_now_ms() + REGISTER_RETRY_MS;
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

void daemon_serve_stop(struct daemon_servers *s, const struct resource_set *keep)
{
	bool any_empty = false;

	if (!s->g)
		return;
	/* Resources that go away get an empty list first, so kubelet drops their capacity (upstream #240). */
	gsrv_lock(s->g);
	for (size_t i = 0; i < s->n_sv; i++) {
		if (keep && resources_find(keep, s->sv[i].ctx.res->name))
			continue;
		s->sv[i].ctx.empty = true;
		any_empty |= gsrv_streams(s->sv[i].srv) > 0;
		gsrv_notify(s->sv[i].srv);
	}
	gsrv_unlock(s->g);
	if (any_empty && gsrv_flush(s->g, STOP_FLUSH_MS) < 0)
		log_warn("kubelet did not take the empty device list in time", "timeout_ms=%d", STOP_FLUSH_MS);
	gsrv_group_free(s->g, 200);
	s->g = NULL;
	free(s->sv);
	s->sv = NULL;
	s->n_sv = 0;
}

static int start_serving(struct daemon_servers *s, const struct daemon_serve_input *in, struct gerr *err)
{
	const struct resource_set *rs = in->rs;
	int r;

	r = gsrv_group_new(&s->g, err);
	if (r < 0)
		return r;
	s->sv = calloc(rs->n, sizeof(*s->sv));
	if (!s->sv)
		return gerr_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < rs->n; i++) {
		struct served *sv = &s->sv[s->n_sv];

		sv->ctx = (struct dp_ctx){.cfg = in->cfg,
					  .node = in->node,
					  .res = &rs->res[i],
					  .imex = in->imex,
					  .cdi_extra = in->cdi_extra,
					  .mps_unready = in->mps_unready(in->mps_data, rs->res[i].name),
					  .cdi_names = in->cdi_names};
		if (snprintf(sv->path, sizeof(sv->path), "%s/%s", in->cfg->device_plugin_path, rs->res[i].socket) >=
		    (int)sizeof(sv->path))
			return gerr_set(err, ENAMETOOLONG, "--device-plugin-path %s/%s: longer than %zu characters",
					in->cfg->device_plugin_path, rs->res[i].socket, sizeof(sv->path) - 1);
		r = gsrv_add(s->g, sv->path, dp_methods, DP_N_METHODS, &handler, sv, &sv->srv, err);
		if (r < 0)
			return r;
		s->n_sv++;
		/*
		 * While the MPS daemon is not ready the list kubelet gets is empty: say so, not the replicas.
		 * The words after devices=0 are written outside any value (logfmt reads them as keys without
		 * values) so that the line keeps reading "devices=0 (empty until ...", as users grep it.
		 */
		if (sv->ctx.mps_unready)
			log_info("Serving device plugin",
				 "resource=%s socket=%s devices=0 (empty until the MPS control daemon is ready)",
				 sv->ctx.res->name, sv->path);
		else
			log_info("Serving device plugin", "resource=%s socket=%s devices=%zu", sv->ctx.res->name,
				 sv->path, sv->ctx.res->n_devices);
	}
	return gsrv_group_run(s->g, err);
}

int daemon_sockets_taken(const struct plugin_config *cfg, const struct resource_set *rs, struct gerr *err)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < rs->n; i++) {
		int r;

		if (snprintf(path, sizeof(path), "%s/%s", cfg->device_plugin_path, rs->res[i].socket) >=
		    (int)sizeof(path))
			continue; /* start_serving() says why it cannot serve there */
		r = gsrv_socket_live(path, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int daemon_serve_or_retry(struct daemon_servers *s, const struct daemon_serve_input *in)
{
	struct gerr err = {0};
	int r = start_serving(s, in, &err), retry_ms;

	if (r >= 0) {
		log_unhealthy(in->rs);
		daemon_register_all(s, in->cfg->kubelet_socket, true);
		s->serve_failures = 0;
		s->next_serve_ms = 0;
		return r;
	}
	/* half a set of sockets would register some resources and not others: none instead */
	daemon_serve_stop(s, NULL);
	/* upstream retries every 30 s; starting at 1 s picks up a dir that appears a moment later */
	retry_ms = s->serve_failures < 5 ? 1000 << s->serve_failures : SERVE_RETRY_MAX_MS;
	s->serve_failures++;
	s->next_serve_ms = loop_now_ms() + retry_ms;
	log_error("Cannot serve the device plugins, will retry", "error=\"%s\" attempt=%u retry_s=%d", err.msg,
		  s->serve_failures, retry_ms / 1000);
	return r;
}
