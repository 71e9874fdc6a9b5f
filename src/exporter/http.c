/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's /metrics and /healthz, served by the one HTTP server (web/httpd.h) with its
 * --web-config-file (web/endpoint.h: TLS, client certificates, basic auth): one internal epoll
 * thread serves every connection with non-blocking I/O and renders in turn (a render takes about a
 * millisecond). Connections are kept alive (HTTP/1.1, no Connection: close unless the client asks);
 * connections in all and per address, the time each phase of a connection may take and the memory
 * a request may use are bounded there (docs/reference/alerts.md, "HTTP").
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "exporter/exporter.h"
#include "web/endpoint.h"

struct exp_http {
	struct web_endpoint *srv;
	/*
	 * The one readiness flag. Each request loads it once (serve()), and /healthz, /health
	 * and gpulet_exporter_ready all answer from that one load: they cannot disagree.
	 */
	_Atomic(struct exporter *) exporter;
	double started_at; /* wall clock: gpulet_exporter_start_time_seconds */
	bool self_metrics; /* --enable-exporter-metrics */
	bool require_gpus; /* --health-require-gpus */
	struct exp_self_stats self;
	pthread_mutex_t lock; /* guards why_not_ready */
	char why_not_ready[GERR_MAX];
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
	if (h->self_metrics)
		exp_self_render(&b, &h->self); /* this scrape is counted once answered, as promhttp's */
	if (r < 0 || b.oom) {
		strbuf_free(&b);
		atomic_fetch_add(&h->self.failed, 1);
		return httpd_text(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	atomic_fetch_add(&h->self.ok, 1);
	return httpd_reply(rq, MHD_HTTP_OK, PROM_CONTENT_TYPE, TAKE_PTR(b.s), b.len, MHD_RESPMEM_MUST_FREE);
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
		if (e && h->require_gpus && !e->n_gpus) /* dcgm-exporter 4.8.4's --health-require-gpus */
			return httpd_text(rq, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "not ready: NVML shows no GPU (--health-require-gpus)\n");
		return !e ? not_ready(h, rq) : httpd_text(rq, MHD_HTTP_OK, streq(url, "/health") ? "OK" : "ok\n");
	}
	if (streq(url, "/"))
		return httpd_text(rq, MHD_HTTP_OK, "gpulet exporter: metrics at /metrics, health at /healthz\n");
	return httpd_text(rq, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

static void http_free(struct exp_http *h)
{
	pthread_mutex_destroy(&h->lock);
	free(h);
}

int exp_http_start(const struct exp_http_options *o, struct exp_http **ret, struct gerr *err)
{
	struct exp_http *h = calloc(1, sizeof(*h));
	struct timespec now;
	int r;

	if (!h)
		return gerr_set(err, ENOMEM, "exporter: out of memory");
	pthread_mutex_init(&h->lock, NULL);
	clock_gettime(CLOCK_REALTIME, &now);
	h->started_at = (double)now.tv_sec + now.tv_nsec / 1e9;
	h->self_metrics = o->exporter_metrics;
	h->require_gpus = o->require_gpus;
	/* "": no web config, plain HTTP, as exporter-toolkit's Serve() (docs/reference/dcgm-exporter.md section 7) */
	struct web_endpoint_options wo = {
	    .address = o->address ? o->address : ":9400",
	    .flag = "--address",
	    .max_connections = o->max_connections,
	    .web_config_file = o->web_config_file,
	    .ctx = h,
	    .serve = serve,
	};
	if ((r = web_endpoint_start(&wo, &h->srv, err)) == -EADDRINUSE)
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
	return web_endpoint_port(h->srv);
}

void exp_http_stop(struct exp_http *h)
{
	if (!h)
		return;
	web_endpoint_stop(h->srv);
	http_free(h);
}
