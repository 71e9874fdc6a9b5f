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
 *
 * With --web-config-file (exporter-toolkit's format, docs/reference/dcgm-exporter.md "Web
 * configuration") it serves TLS, checks client certificates and basic auth on every path, as
 * upstream wraps its whole handler. A password check that is not already known good is handed to
 * the verifier thread (webauth.c) and the connection is suspended meanwhile, so bcrypt never runs
 * on the serving thread.
 */
#include <errno.h>
#include <microhttpd.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "exporter/exporter.h"
#include "exporter/webauth.h"
#include "exporter/webtls.h"
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
	struct web_config *wc;     /* NULL: no --web-config-file */
	struct web_tls *tls;       /* NULL: plain HTTP */
	struct web_auth *auth;     /* NULL: no basic_auth_users */
	pthread_mutex_t auth_lock; /* guards struct req's verdict and suspension */
};

/* One request's progress through the access checks (*con_cls). */
struct req {
	struct exp_http *h;
	struct MHD_Connection *c;
	bool seen;      /* the headers were handed to us once already */
	bool checked;   /* access decided (ok) */
	bool pending;   /* a password check is queued */
	bool done, ok;  /* the verifier's verdict */
	bool suspended; /* waiting for it */
};

static enum MHD_Result reply(struct exp_http *h, struct MHD_Connection *c, unsigned status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
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
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic");
	/* http_server_config.headers: on every answer, as upstream sets them before its auth check */
	for (size_t i = 0; h->wc && i < h->wc->n_headers; i++)
		MHD_add_response_header(resp, h->wc->headers[i].name, h->wc->headers[i].value);
	enum MHD_Result r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result text(struct exp_http *h, struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply(h, c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
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
		return text(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
	return reply(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body, (size_t)n,
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
		return text(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(h, c, MHD_HTTP_OK, PROM_CONTENT_TYPE, TAKE_PTR(b.s), b.len, MHD_RESPMEM_MUST_FREE);
}

/* the verifier thread's answer: resume the request if it is waiting (see access()) */
static void auth_done(void *ctx, bool ok)
{
	struct req *rq = ctx;
	struct exp_http *h = rq->h;
	pthread_mutex_lock(&h->auth_lock);
	rq->ok = ok;
	rq->done = true;
	if (rq->suspended) {
		rq->suspended = false;
		MHD_resume_connection(rq->c); /* rq may be gone once MHD runs again: not touched after */
	}
	pthread_mutex_unlock(&h->auth_lock);
}

/*
 * Basic auth for a request whose headers are all read: MHD_YES with *served false when it may be
 * served; otherwise the answer (401, 429) is queued or the request waits suspended for the verifier.
 */
static enum MHD_Result check_access(struct exp_http *h, struct MHD_Connection *c, struct req *rq, bool *served)
{
	*served = true;
	if (!h->auth || rq->checked) {
		*served = false;
		return MHD_YES;
	}
	if (!rq->pending) {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		switch (web_auth_check(h->auth, a, auth_done, rq)) {
		case WEB_AUTH_OK:
			rq->checked = true;
			*served = false;
			return MHD_YES;
		case WEB_AUTH_DENIED:
			return text(h, c, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
		case WEB_AUTH_BUSY:
			return text(h, c, MHD_HTTP_TOO_MANY_REQUESTS, "too many password checks at once; retry\n");
		case WEB_AUTH_PENDING:
			rq->pending = true;
			break;
		}
	}
	pthread_mutex_lock(&h->auth_lock);
	bool done = rq->done;
	if (!done) {
		rq->suspended = true;
		MHD_suspend_connection(c);
	}
	pthread_mutex_unlock(&h->auth_lock);
	if (!done)
		return MHD_YES; /* called again once auth_done() resumes it */
	if (!rq->ok)
		return text(h, c, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
	rq->checked = true;
	*served = false;
	return MHD_YES;
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
	free(*con_cls);
	*con_cls = NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct exp_http *h = cls;
	struct req *rq = *con_cls;
	bool method_ok = streq(method, MHD_HTTP_METHOD_GET) || streq(method, MHD_HTTP_METHOD_HEAD);
	if (!rq) {
		if (!(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		rq->h = h;
		rq->c = c;
		*con_cls = rq;
		/* a client certificate that client_auth_type or client_allowed_sans refuses: close */
		if (h->tls) {
			const union MHD_ConnectionInfo *ci =
			    MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
			if (!ci || web_tls_check_peer(h->tls, ci->tls_session) < 0)
				return MHD_NO;
		}
	}
	/* without basic auth, at once (a body is never read); with it, after the auth check, as
	 * upstream's wrapper answers 401 before the handler sees the method */
	if (!method_ok && !h->auth)
		return text(h, c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	/*
	 * Answer on the second call, once MHD has read the whole request: libmicrohttpd 0.9.75 sends a
	 * response queued on the first call (headers only) with Connection: close, as a body might
	 * still be coming, and every scrape paid a new TCP connection (tests: exporter_http).
	 */
	if (!rq->seen) {
		rq->seen = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET with a body: ignore the body, answer at its end */
		return MHD_YES;
	}
	bool served;
	enum MHD_Result ar = check_access(h, c, rq, &served);
	if (served)
		return ar;
	if (!method_ok)
		return text(h, c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	/* loaded once: whatever this request answers about readiness comes from this one value */
	struct exporter *e = atomic_load(&h->exporter);
	if (streq(url, "/metrics"))
		return serve_metrics(h, c, e);
	if (streq(url, "/healthz") || streq(url, "/health")) {
		/*
		 * dcgm-exporter's probe path is /health, whose body is exactly "OK" (no newline) once it
		 * serves (docs/reference/dcgm-exporter.md); Kubernetes habit is /healthz: answer both
		 */
		return !e ? not_ready(h, c) : text(h, c, MHD_HTTP_OK, streq(url, "/health") ? "OK" : "ok\n");
	}
	if (streq(url, "/"))
		return text(h, c, MHD_HTTP_OK, "gpulet exporter: metrics at /metrics, health at /healthz\n");
	return text(h, c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
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

static void http_free(struct exp_http *h)
{
	web_auth_free(h->auth);
	web_tls_free(h->tls);
	webconfig_free(h->wc);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->auth_lock);
	free(h);
}

/* --web-config-file: read and checked before anything is served; an error serves nothing */
static int load_web_config(struct exp_http *h, const char *path, struct gerr *err)
{
	int r = webconfig_load(path, &h->wc, err);
	if (r >= 0 && h->wc->tls)
		r = web_tls_load(h->wc, &h->tls, err);
	if (r >= 0)
		r = web_auth_new(h->wc, &h->auth, err);
	return r < 0 ? gerr_prefix(err, "--web-config-file: ") : 0;
}

static int http_listen(struct exp_http *h, const struct exp_http_options *o, const struct sockaddr_storage *ss, bool v6)
{
	unsigned limit = http_connection_limit(o->max_connections);
	/* epoll in one internal thread: every socket non-blocking, no thread per connection */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (v6 ? MHD_USE_IPv6 : 0);
	struct MHD_OptionItem opts[16] = {
	    {MHD_OPTION_SOCK_ADDR, 0, (void *)ss},
	    {MHD_OPTION_CONNECTION_LIMIT, limit, NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, HTTP_CONN_TIMEOUT_S, NULL},
	    {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY, NULL},
	    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_done, NULL},
	};
	size_t n = 5;
	if (h->auth)
		flags |= MHD_ALLOW_SUSPEND_RESUME;
	if (h->tls) {
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls->cert};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls->key};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, h->tls->priorities};
		if (h->tls->client_ca)
			opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, h->tls->client_ca};
	}
	opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	return h->daemon ? 0 : -EADDRINUSE;
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
	pthread_mutex_init(&h->auth_lock, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	h->started_at = (double)now.tv_sec + now.tv_nsec / 1e9;
	if (o->web_config_file && (r = load_web_config(h, o->web_config_file, err)) < 0) {
		http_free(h);
		return r;
	}
	if (http_listen(h, o, &ss, v6) < 0) {
		http_free(h);
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
	web_auth_shutdown(h->auth); /* resumes every suspended request before MHD stops */
	MHD_stop_daemon(h->daemon);
	http_free(h);
}
