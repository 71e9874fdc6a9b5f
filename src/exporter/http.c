/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's /metrics and /healthz, served by the one HTTP server (util/httpd.h): one internal
 * epoll thread serves every connection with non-blocking I/O and renders in turn (a render takes
 * about a millisecond): a client that connects and sends nothing, sends half a request or never
 * reads its answer costs one idle slot and never holds up anyone else. Connections are kept alive
 * (HTTP/1.1, no Connection: close unless the client asks). Connections, idle time and the memory a
 * request may use are bounded so a misbehaving client cannot grow us. There is no per-address limit: libmicrohttpd
 * accepts and closes a connection over that limit, which refuses Prometheus itself when it shares its address with the
 * stalled clients (a node, a sidecar, loopback). Past the global limit libmicrohttpd stops accepting instead, and new
 * connections wait in the kernel's listen backlog until a slot frees (docs/reference/alerts.md, "HTTP").
 *
 * With --web-config-file (exporter-toolkit's format, docs/reference/dcgm-exporter.md "Web
 * configuration") it serves TLS, checks client certificates and basic auth on every path, as
 * upstream wraps its whole handler. A password check that is not already known good is handed to
 * the verifier thread (webauth.c) and the connection is suspended meanwhile, so bcrypt never runs
 * on the serving thread.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "exporter/exporter.h"
#include "exporter/webauth.h"
#include "exporter/webtls.h"
#include "util/httpd.h"

struct exp_http {
	struct httpd *srv;
	/*
	 * The one readiness flag. Each request loads it once (serve()), and /healthz, /health
	 * and gpulet_exporter_ready all answer from that one load: they cannot disagree.
	 */
	_Atomic(struct exporter *) exporter;
	double started_at;    /* wall clock: gpulet_exporter_start_time_seconds */
	pthread_mutex_t lock; /* guards why_not_ready */
	char why_not_ready[GERR_MAX];
	struct web_config *wc;                        /* NULL: no --web-config-file */
	struct web_tls *tls;                          /* NULL: plain HTTP */
	struct web_auth *auth;                        /* NULL: no basic_auth_users */
	pthread_mutex_t auth_lock;                    /* guards struct httpd_req's verdict and suspension */
	struct httpd_header headers[WEB_MAX_HEADERS]; /* http_server_config.headers */
};

/* 503 with the reason NVML did not load (what and what to do), or "starting" before the first try ended. */
static enum MHD_Result not_ready(struct exp_http *h, struct httpd_req *rq)
{
	char *body = NULL;
	int n;

	pthread_mutex_lock(&h->lock);
	n = h->why_not_ready[0] ? asprintf(&body, "not ready: %s\n", h->why_not_ready)
				: asprintf(&body, "starting: loading NVML\n");
	pthread_mutex_unlock(&h->lock);
	if (n < 0)
		return httpd_text(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
	return httpd_reply(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body, (size_t)n,
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
static enum MHD_Result serve_metrics(struct exp_http *h, struct httpd_req *rq, struct exporter *e)
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
		return httpd_text(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return httpd_reply(rq, MHD_HTTP_OK, PROM_CONTENT_TYPE, TAKE_PTR(b.s), b.len, MHD_RESPMEM_MUST_FREE);
}

/* the verifier thread's answer: resume the request if it is waiting (see check_access()) */
static void auth_done(void *ctx, bool ok)
{
	struct httpd_req *rq = ctx;
	struct exp_http *h = httpd_ctx(rq);
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
 * Basic auth (httpd_options.access) for a request whose headers are all read: *served false when it
 * may be served; otherwise the answer (401, 429) is queued or the request waits suspended for the
 * verifier.
 */
static enum MHD_Result check_access(void *ctx, struct httpd_req *rq, bool *served)
{
	struct exp_http *h = ctx;
	struct MHD_Connection *c = rq->c;

	*served = true;
	if (!rq->pending) {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		switch (web_auth_check(h->auth, a, auth_done, rq)) {
		case WEB_AUTH_OK:
			rq->checked = true;
			*served = false;
			return MHD_YES;
		case WEB_AUTH_DENIED:
			return httpd_text(rq, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
		case WEB_AUTH_BUSY:
			return httpd_text(rq, MHD_HTTP_TOO_MANY_REQUESTS, "too many password checks at once; retry\n");
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
		return httpd_text(rq, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
	rq->checked = true;
	*served = false;
	return MHD_YES;
}

/* a client certificate that client_auth_type or client_allowed_sans refuses: close */
static int check_peer(void *ctx, struct httpd_req *rq)
{
	struct exp_http *h = ctx;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->c, MHD_CONNECTION_INFO_GNUTLS_SESSION);

	return !ci || web_tls_check_peer(h->tls, ci->tls_session) < 0 ? -EPERM : 0;
}

static enum MHD_Result serve(void *ctx, struct httpd_req *rq, const char *url)
{
	struct exp_http *h = ctx;
	/* loaded once: whatever this request answers about readiness comes from this one value */
	struct exporter *e = atomic_load(&h->exporter);

	if (streq(url, "/metrics"))
		return serve_metrics(h, rq, e);
	if (streq(url, "/healthz") || streq(url, "/health")) {
		/*
		 * dcgm-exporter's probe path is /health, whose body is exactly "OK" (no newline) once it
		 * serves (docs/reference/dcgm-exporter.md); Kubernetes habit is /healthz: answer both
		 */
		return !e ? not_ready(h, rq) : httpd_text(rq, MHD_HTTP_OK, streq(url, "/health") ? "OK" : "ok\n");
	}
	if (streq(url, "/"))
		return httpd_text(rq, MHD_HTTP_OK, "gpulet exporter: metrics at /metrics, health at /healthz\n");
	return httpd_text(rq, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
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

static int http_listen(struct exp_http *h, const struct exp_http_options *o, struct gerr *err)
{
	struct httpd_options so = {
	    .address = o->address ? o->address : ":9400",
	    .flag = "--address",
	    .max_connections = o->max_connections,
	    .headers = h->headers,
	    .ctx = h,
	    .on_request = h->tls ? check_peer : NULL,
	    .access = h->auth ? check_access : NULL,
	    .serve = serve,
	};

	/* http_server_config.headers: on every answer, as upstream sets them before its auth check */
	for (size_t i = 0; h->wc && i < h->wc->n_headers; i++)
		h->headers[so.n_headers++] = (struct httpd_header){h->wc->headers[i].name, h->wc->headers[i].value};
	if (h->tls) {
		so.cert = h->tls->cert;
		so.key = h->tls->key;
		so.priorities = h->tls->priorities;
		so.client_ca = h->tls->client_ca;
	}
	return httpd_start(&so, &h->srv, err);
}

int exp_http_start(const struct exp_http_options *o, struct exp_http **ret, struct gerr *err)
{
	struct exp_http *h = calloc(1, sizeof(*h));
	struct timespec now;
	int r;

	if (!h)
		return gerr_set(err, ENOMEM, "exporter: out of memory");
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->auth_lock, NULL);
	clock_gettime(CLOCK_REALTIME, &now);
	h->started_at = (double)now.tv_sec + now.tv_nsec / 1e9;
	/* "": no web config, plain HTTP, as exporter-toolkit's Serve() (docs/reference/dcgm-exporter.md section 7) */
	r = o->web_config_file && *o->web_config_file ? load_web_config(h, o->web_config_file, err) : 0;
	if (r >= 0 && (r = http_listen(h, o, err)) == -EADDRINUSE)
		gerr_prefix(err, "exporter: ");
	if (r < 0) {
		http_free(h);
		return r;
	}
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
	return httpd_port(h->srv);
}

void exp_http_stop(struct exp_http *h)
{
	if (!h)
		return;
	web_auth_shutdown(h->auth); /* resumes every suspended request before MHD stops */
	httpd_stop(h->srv);
	http_free(h);
}
