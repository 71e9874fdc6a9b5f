/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /metrics and /healthz over libmicrohttpd. One internal epoll thread serves every connection with
 * non-blocking I/O and renders in turn (a render takes about a millisecond): a client that connects
 * and sends nothing, sends half a request or never reads its answer costs one idle slot and never
 * holds up anyone else. Connections are kept alive (HTTP/1.1, no Connection: close unless the
 * client asks). Connections, idle time and the memory a request may use are bounded so a
 * misbehaving client cannot grow us. There is no per-address limit: libmicrohttpd accepts and
 * closes a connection over that limit, which refuses Prometheus itself when it shares its address
 * with the stalled clients (a node, a sidecar, loopback). Past the global limit libmicrohttpd stops
 * accepting instead, and new connections wait in the kernel's listen backlog until a slot frees
 * (docs/reference/alerts.md, "HTTP").
 */
#include <errno.h>
#include <microhttpd.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "exporter/exporter.h"
#include "util/netaddr.h"

#define HTTP_CONN_MEMORY (32 * 1024) /* request line + headers; beyond that MHD answers 431/413 */
/* idle seconds before a connection is closed: longer than Prometheus' usual 15-30 s interval, so
 * its keep-alive connection is reused, short enough that stalled connections free their slot */
#define HTTP_CONN_TIMEOUT_S  65
#define HTTP_CONN_LIMIT      1024u /* default total; never more than the open-files limit allows */
#define HTTP_FDS_KEPT_FOR_US 64    /* NVML, the PodResources socket, logs, epoll */

struct exp_http {
	struct MHD_Daemon *daemon;
	/*
	 * The one readiness flag. Each request loads it once (handler()), and /healthz, /health
	 * and gpulet_exporter_ready all answer from that one load: they cannot disagree.
	 */
	_Atomic(struct exporter *) exporter;
	unsigned port;
	double started_at;    /* wall clock: gpulet_exporter_start_time_seconds */
	pthread_mutex_t lock; /* guards why_not_ready */
	char why_not_ready[GERR_MAX];
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}

/* 503 with the reason NVML did not load (what and what to do), or "starting" before the first try ended. */
static enum MHD_Result not_ready(struct exp_http *h, struct MHD_Connection *c)
{
	char *body = NULL;
	int n;

	pthread_mutex_lock(&h->lock);
	n = h->why_not_ready[0] ? asprintf(&body, "not ready: %s\n", h->why_not_ready)
				: asprintf(&body, "starting: loading NVML\n");
	pthread_mutex_unlock(&h->lock);
	if (n < 0)
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
	return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body, (size_t)n,
		     MHD_RESPMEM_MUST_FREE);
}

static void render_podres_stats(struct strbuf *b, const struct podres_cache *pc)
{
	strbuf_printf(b,
		      "# HELP gpulet_podresources_errors_total Failed kubelet PodResources List calls.\n"
		      "# TYPE gpulet_podresources_errors_total counter\n"
		      "gpulet_podresources_errors_total %llu\n"
		      "# HELP gpulet_podresources_last_success_timestamp_seconds When pod attribution was last "
		      "refreshed (0 never).\n"
		      "# TYPE gpulet_podresources_last_success_timestamp_seconds gauge\n"
		      "gpulet_podresources_last_success_timestamp_seconds %.3f\n",
		      (unsigned long long)pc->errors, pc->last_success);
}

/*
 * When this process started serving (wall clock): the alert rules tell an exporter restart (counters
 * back to nothing) from new XIDs with it (docs/reference/alerts.md, GpuXidError).
 */
static void render_start_time(struct strbuf *b, double started_at)
{
	strbuf_printf(b,
		      "# HELP gpulet_exporter_start_time_seconds When this exporter process started, in seconds "
		      "since the epoch.\n"
		      "# TYPE gpulet_exporter_start_time_seconds gauge\n"
		      "gpulet_exporter_start_time_seconds %.3f\n",
		      started_at);
}

/* e: the readiness flag as this request loaded it (NULL: not ready, gpulet_exporter_ready 0). */
static enum MHD_Result serve_metrics(struct exp_http *h, struct MHD_Connection *c, struct exporter *e)
{
	struct strbuf b = {0};
	int r;
	if (e && e->podres) {
		/* the refresher only takes this lock to swap maps; we hold it while rendering */
		pthread_mutex_lock(&e->podres->lock);
		r = exporter_render(e, e->podres->map, exp_now_monotonic(), &b);
		render_podres_stats(&b, e->podres);
		pthread_mutex_unlock(&e->podres->lock);
	} else
		r = exporter_render(e, NULL, exp_now_monotonic(), &b);
	exp_health_render(&b, e);
	render_start_time(&b, h->started_at);
	if (r < 0 || b.oom) {
		strbuf_free(&b);
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, PROM_CONTENT_TYPE, TAKE_PTR(b.s), b.len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	static int seen; /* the marker of a request whose headers were already handed to us */
	struct exp_http *h = cls;
	if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	/*
	 * Answer on the second call, once MHD has read the whole request: libmicrohttpd 0.9.75 sends a
	 * response queued on the first call (headers only) with Connection: close, as a body might
	 * still be coming, and every scrape paid a new TCP connection (tests: exporter_http).
	 */
	if (*con_cls != &seen) {
		*con_cls = &seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET with a body: ignore the body, answer at its end */
		return MHD_YES;
	}
	/* loaded once: whatever this request answers about readiness comes from this one value */
	struct exporter *e = atomic_load(&h->exporter);
	if (streq(url, "/metrics"))
		return serve_metrics(h, c, e);
	if (streq(url, "/healthz") || streq(url, "/health")) {
		/* dcgm-exporter's probe path is /health; Kubernetes habit is /healthz: answer both */
		return e ? text(c, MHD_HTTP_OK, "ok\n") : not_ready(h, c);
	}
	if (streq(url, "/"))
		return text(c, MHD_HTTP_OK, "gpulet exporter: metrics at /metrics, health at /healthz\n");
	return text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

/*
 * The connection limit: asked for (0: HTTP_CONN_LIMIT), but leaving HTTP_FDS_KEPT_FOR_US descriptors
 * of the open-files limit to the rest of the process, so accept() never starves NVML or kubelet.
 */
static unsigned http_connection_limit(unsigned asked)
{
	unsigned limit = asked ? asked : HTTP_CONN_LIMIT;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rlim_t room =
		    rl.rlim_cur > 2 * HTTP_FDS_KEPT_FOR_US ? rl.rlim_cur - HTTP_FDS_KEPT_FOR_US : rl.rlim_cur / 2;
		if ((rlim_t)limit > room)
			limit = (unsigned)room;
	}
	return MAX(limit, 1u);
}

int exp_http_start(const struct exp_http_options *o, struct exp_http **ret, struct gerr *err)
{
	struct sockaddr_storage ss;
	socklen_t slen = 0;
	bool v6 = false;
	int r = net_parse_address("--address", o->address ? o->address : ":9400", &ss, &slen, &v6, err);
	if (r < 0)
		return r;
	struct exp_http *h = calloc(1, sizeof(*h));
	if (!h)
		return gerr_set(err, ENOMEM, "exporter: out of memory");
	pthread_mutex_init(&h->lock, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	h->started_at = (double)now.tv_sec + now.tv_nsec / 1e9;
	unsigned limit = http_connection_limit(o->max_connections);
	/* epoll in one internal thread: every socket non-blocking, no thread per connection */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (v6 ? MHD_USE_IPv6 : 0);
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				     MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned)HTTP_CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				     (size_t)HTTP_CONN_MEMORY, MHD_OPTION_END);
	if (!h->daemon) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return gerr_set(err, EADDRINUSE,
				"exporter: cannot listen on %s (port in use or address not on this host); pick "
				"another with --address",
				o->address ? o->address : ":9400");
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	*ret = h;
	return 0;
}

void exp_http_set_exporter(struct exp_http *h, struct exporter *e)
{
	atomic_store(&h->exporter, e);
}

void exp_http_set_not_ready(struct exp_http *h, const char *why)
{
	pthread_mutex_lock(&h->lock);
	snprintf(h->why_not_ready, sizeof(h->why_not_ready), "%s", why);
	pthread_mutex_unlock(&h->lock);
}

unsigned exp_http_port(const struct exp_http *h)
{
	return h->port;
}

void exp_http_stop(struct exp_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->daemon);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
