/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor as a daemon (doctor/daemon.h). One thread walks the chain and publishes the rendered
 * metrics; the HTTP server's thread (web/httpd.h) only copies the last published text, so a slow walk (a hung
 * runtime tool, a kubelet socket that does not answer) never blocks a scrape.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "doctor/daemon.h"
#include "doctor/html.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/macro.h"
#include "util/prom.h"
#include "util/sig.h"
#include "web/endpoint.h"

/* Node paths whose change is worth a re-check, below --root (docs/reference/monitoring-doctor.md). */
static const char *const watched[] = {
    "/dev",
    "/etc/cdi",
    "/var/run/cdi",
    "/run/cdi",
    "/etc/containerd",
    "/etc/containerd/conf.d",
    "/var/lib/rancher/k3s/agent/etc/containerd", /* k3s/RKE2 render config.toml here
						    (docs/reference/container-runtimes.md §1) */
    "/var/lib/rancher/rke2/agent/etc/containerd",
    "/etc/crio",
    "/etc/crio/crio.conf.d",
    "/etc/nvidia-container-runtime",
    "/var/lib/kubelet/device-plugins",
};

struct published {
	pthread_mutex_t lock;
	char *text; /* the last walk's metrics; NULL until one walk ended */
	size_t len;
	char *html; /* the same walk as a page (doctor/html.h), served at / */
	size_t html_len;
};

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum MHD_Result serve(void *ctx, struct httpd_req *rq, const char *url)
{
	struct published *p = ctx;
	enum MHD_Result r;

	if (!streq(url, "/metrics") && !streq(url, "/healthz") && !streq(url, "/"))
		return httpd_text(rq, MHD_HTTP_NOT_FOUND,
				  "gpulet doctor: the verdict at /, findings at /metrics, health at /healthz\n");
	pthread_mutex_lock(&p->lock);
	if (!p->text)
		r = httpd_text(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "starting: the first walk of the chain is running\n");
	else if (streq(url, "/healthz"))
		r = httpd_text(rq, MHD_HTTP_OK, "ok\n");
	else if (streq(url, "/"))
		r = httpd_reply(rq, MHD_HTTP_OK, "text/html; charset=utf-8", p->html, p->html_len,
				MHD_RESPMEM_MUST_COPY);
	else
		r = httpd_reply(rq, MHD_HTTP_OK, PROM_CONTENT_TYPE, p->text, p->len, MHD_RESPMEM_MUST_COPY);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/*
 * --serve-metrics with --web-config-file (TLS, basic auth: the exporter's code, web/endpoint.h); few
 * connections: Prometheus, kubelet's probes and a curl or two (4 per client address).
 */
static struct web_endpoint *listen_on(const struct doctor_serve_options *so, struct published *p, struct gerr *err)
{
	const struct web_endpoint_options o = {.address = so->address,
					       .flag = "--serve-metrics",
					       .max_connections = 64,
					       .web_config_file = so->web_config_file,
					       .ctx = p,
					       .serve = serve};
	struct web_endpoint *s = NULL;

	if (web_endpoint_start(&o, &s, err) < 0)
		return NULL;
	log_info("Serving doctor metrics", "address=%s port=%u scheme=%s web_config=\"%s\"", so->address,
		 web_endpoint_port(s), web_endpoint_scheme(s), so->web_config_file ? so->web_config_file : "");
	return s;
}

/* Watch what exists of the watched paths; a path created later is watched after the next walk. */
static void add_watches(int fd, const char *root)
{
	for (size_t k = 0; k < ELEMENTSOF(watched); k++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s%s", streq(root, "/") ? "" : root, watched[k]);
		(void)inotify_add_watch(fd, path,
					IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
					    IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR);
	}
}

/* The page of a walk: the node's name and when the walk ended (UTC). */
static void render_page(const struct doctor_ctx *c, const struct doctor_run_info *ri, FILE *f)
{
	time_t at = (time_t)ri->finished_at;
	char when[64] = "";
	struct tm tm;

	if (gmtime_r(&at, &tm))
		strftime(when, sizeof(when), "walked %Y-%m-%d %H:%M:%S UTC", &tm);
	doctor_render_html(c, &(struct doctor_html_page){.node = ri->node, .when = when}, NULL, 0, f);
}

/* Render one walk with fn into *ret (0, or -ENOMEM with *ret untouched). */
static int render(const struct doctor_ctx *c, const struct doctor_run_info *ri,
		  void (*fn)(const struct doctor_ctx *, const struct doctor_run_info *, FILE *), char **ret,
		  size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fn(c, ri, f);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* One walk: run the checks, render, publish. The previous texts stay when this walk runs out of memory. */
static void walk(const struct doctor_options *o, struct doctor_run_info *ri, enum doctor_trigger t, struct published *p)
{
	struct doctor_ctx c = {0};
	double t0 = now_s(CLOCK_MONOTONIC);
	char *text = NULL, *html = NULL;
	size_t len = 0, html_len = 0;
	int r = doctor_run(&c, o);

	ri->runs[t]++;
	ri->duration_s = now_s(CLOCK_MONOTONIC) - t0;
	ri->finished_at = now_s(CLOCK_REALTIME);
	if (r >= 0)
		r = render(&c, ri, doctor_render_metrics, &text, &len);
	if (r >= 0 && (r = render(&c, ri, render_page, &html, &html_len)) < 0)
		free(text);
	if (r < 0) {
		log_error("Doctor walk failed, serving the previous findings", "error=\"%s\"", strerror(-r));
		doctor_ctx_done(&c);
		return;
	}
	pthread_mutex_lock(&p->lock);
	free(p->text);
	free(p->html);
	p->text = text;
	p->len = len;
	p->html = html;
	p->html_len = html_len;
	pthread_mutex_unlock(&p->lock);
	log_info("Walked the chain", "trigger=%s findings=%zu duration_ms=%.1f", doctor_trigger_names[t], c.n_findings,
		 ri->duration_s * 1e3);
	doctor_ctx_done(&c);
}

/* Drain the inotify queue; true when something changed. */
static bool drain(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;

	while (read(fd, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

/* The daemon: what the loop's callbacks run with, owned here from start to stop. */
struct doctor_server {
	const struct doctor_options *o; /* the caller's, or opts below */
	struct doctor_options opts;     /* the caller's with the API client that follows the cluster */
	const struct doctor_serve_options *so;
	struct published p;
	struct web_endpoint *http;
	struct loop *loop; /* SIGTERM/SIGINT, the node's changes (util/loop.h) */
	int ifd;
	struct doctor_run_info ri;
	bool walked; /* the first walk ran */
	/* the node, the pods bound to it and the Operator's pod, followed (doctor/cluster_live.c); NULL: a walk
	 * asks for them, or reads none (no API server configured) */
	struct doctor_api *api;
	double next_interval, change_due, last_walk; /* CLOCK_MONOTONIC s; change_due 0: no change pending */
};

/* Milliseconds until t (CLOCK_MONOTONIC s), for the loop. */
static long long ms_until(double t)
{
	double left = t - now_s(CLOCK_MONOTONIC);

	return left <= 0 ? 0 : left > INT_MAX / 1000.0 ? INT_MAX : (long long)(left * 1000.0) + 1;
}

/* The node changed: walk again after the debounce, and never sooner than delay_s after the last walk. */
static int on_change(void *data)
{
	struct doctor_server *s = data;

	if (drain(s->ifd)) {
		double earliest = s->last_walk + s->so->delay_s;
		double quiet = now_s(CLOCK_MONOTONIC) + s->so->delay_s;

		s->change_due = quiet > earliest ? quiet : earliest;
	}
	return 0;
}

/* Walk at start, then when the interval or a change (after its debounce) comes due. */
static long long on_tick(void *data)
{
	struct doctor_server *s = data;
	double due = s->change_due && s->change_due < s->next_interval ? s->change_due : s->next_interval;
	enum doctor_trigger t = DOCTOR_TRIGGER_START;

	if (s->walked && now_s(CLOCK_MONOTONIC) < due)
		return ms_until(due);
	if (s->walked)
		t = s->change_due && s->change_due <= s->next_interval ? DOCTOR_TRIGGER_CHANGE
								       : DOCTOR_TRIGGER_INTERVAL;
	walk(s->o, &s->ri, t, &s->p);
	s->walked = true;
	s->last_walk = now_s(CLOCK_MONOTONIC);
	s->next_interval = s->last_walk + s->so->interval_s;
	s->change_due = 0;
	if (s->ifd >= 0 && t != DOCTOR_TRIGGER_START)
		add_watches(s->ifd, doctor_root(s->o));
	return ms_until(s->next_interval);
}

/* The node or a GPU pod on it changed in the API: walk again, as after a change on the node. */
static int on_cluster(void *data)
{
	struct doctor_server *s = data;

	if (doctor_api_changed(s->api)) {
		double earliest = s->last_walk + s->so->delay_s;
		double quiet = now_s(CLOCK_MONOTONIC) + s->so->delay_s;

		if (s->walked)
			s->change_due = quiet > earliest ? quiet : earliest;
	}
	return 0;
}

static const struct loop_ops serve_loop_ops = {.tick = on_tick};

/* Follow the cluster's side where no file gives it; a client that cannot be made leaves each walk to ask
 * (and say why in its findings). */
static int follow_cluster(struct doctor_server *s)
{
	struct gerr err = {0};
	int r;

	if (s->o->pods_file && s->o->node_file && s->o->events_file)
		return 0;
	r = doctor_api_open(s->o, true, &s->api, &err);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		log_warn("Cannot follow the cluster's side; each walk asks the API server", "error=\"%s\"", err.msg);
		return r == -ENOMEM ? r : 0;
	}
	log_info("Following this node and its pods in the API server", NULL);
	s->opts = *s->o;
	s->opts.api = s->api;
	s->o = &s->opts;
	for (size_t i = 0; i < doctor_api_n_fds(); i++)
		if (doctor_api_fd(s->api, i) >= 0 &&
		    (r = loop_add_fd(s->loop, doctor_api_fd(s->api, i), on_cluster, s)) < 0)
			return r;
	return 0;
}

void doctor_serve_stop(struct doctor_server *s)
{
	if (!s)
		return;
	web_endpoint_stop(s->http); /* no scrape reads p after this */
	loop_free(s->loop);
	doctor_api_close(s->api);
	if (s->ifd >= 0)
		close(s->ifd);
	free(s->p.text);
	free(s->p.html);
	pthread_mutex_destroy(&s->p.lock);
	free(s);
}

int doctor_serve_start(const struct doctor_options *o, const struct doctor_serve_options *so,
		       struct doctor_server **ret, struct gerr *err)
{
	struct doctor_server *s = calloc(1, sizeof(*s));
	sigset_t stop;
	int r;

	if (!s)
		return gerr_set(err, ENOMEM, "out of memory");
	*s = (struct doctor_server){
	    .o = o, .so = so, .ifd = -1, .ri = {.node = so->node_name, .interval_s = so->interval_s}};
	pthread_mutex_init(&s->p.lock, NULL);
	sig_stop_set(&stop);
	r = loop_new(&stop, &serve_loop_ops, s, &s->loop, err);
	if (r < 0) {
		doctor_serve_stop(s);
		return r;
	}
	s->http = listen_on(so, &s->p, err);
	if (!s->http) {
		r = -(err->code ? err->code : EINVAL);
		doctor_serve_stop(s);
		return r;
	}
	s->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->ifd < 0)
		log_warn("Cannot watch the node for changes, re-checking on the interval only", "error=\"%s\"",
			 strerror(errno));
	else
		add_watches(s->ifd, doctor_root(o));
	if ((s->ifd >= 0 && (r = loop_add_fd(s->loop, s->ifd, on_change, s)) < 0) || (r = follow_cluster(s)) < 0) {
		doctor_serve_stop(s);
		return gerr_set(err, -r, "%s", strerror(-r));
	}
	*ret = s;
	return 0;
}

void doctor_serve_run(struct doctor_server *s)
{
	(void)loop_run(s->loop);
	log_info("Stopping", NULL);
}

int doctor_serve(const struct doctor_options *o, const struct doctor_serve_options *so, struct gerr *err)
{
	struct doctor_server *s = NULL;
	int r = doctor_serve_start(o, so, &s, err);

	if (r < 0)
		return r;
	assert(s); /* started: *ret is set */
	doctor_serve_run(s);
	doctor_serve_stop(s);
	return 0;
}
