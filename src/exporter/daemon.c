/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter/collectors.h"
#include "exporter/daemon.h"
#include "dra/dra.h"
#include "exporter/hpc.h"
#include "kube/podres.h"
#include "nvml/node.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/macro.h"

#define NVML_RETRY_S 10

struct exporter_daemon {
	struct exporter_daemon_options o;
	struct exp_collectors collectors;
	struct exp_http *http;
	struct nvml *nv;
	struct node *node;
	struct exporter e;
	bool e_init, e_started;
	struct podres_cache pc;
	bool pc_started;
	struct exp_podmeta pm; /* the pods watch (pod labels, UIDs), when asked for */
	bool pm_started;
	char host[256];
	struct loop *loop; /* the stop signals (util/loop.h) */
};

/*
 * A daemon whose sampler is stuck in a hung NVML call when it stops: the sampler still points into
 * it, so it is kept (not freed, NVML not closed) until the process exits. At most one per process.
 */
static struct exporter_daemon *kept_for_stuck_sampler;

/* What a collectors file asks for that is served differently or not at all: one warning each. */
static void warn_collectors(const struct exp_collectors *c)
{
	for (size_t k = 0; k < c->n; k++) {
		const struct exp_counter *ct = &c->v[k];
		bool dup = false;

		for (size_t j = 0; j < k; j++)
			dup |= streq(c->v[j].name, ct->name);
		if (dup)
			log_warn("field listed twice in the collectors file; the first line is used",
				 "file=%s line=%u field=%s", c->file, ct->line, ct->name);
		else if ((ct->kind == EXP_COUNTER_UNAVAILABLE ||
			  (ct->kind == EXP_COUNTER_METRIC && streq(ct->type, "label"))) &&
			 !(streq(ct->type, "label") && exp_label_field_index(ct->name) >= 0)) /* served as a label */
			log_warn(
			    "gpulet does not sample this field; not served (see gpulet_exporter_field_unavailable)",
			    "file=%s line=%u field=%s", c->file, ct->line, ct->name);
		else if (streq(ct->type, "histogram") || streq(ct->type, "summary"))
			log_warn("a single value cannot be a histogram or summary; served as gauge",
				 "file=%s line=%u field=%s", c->file, ct->line, ct->name);
	}
}

/* NVML and the node; a failure is said on /metrics and /healthz, and tried again. */
static int load_node(struct exporter_daemon *d)
{
	struct gerr err = {0};

	if (nvml_open_host(d->o.host, &d->nv, &err) >= 0 && node_load(d->nv, d->o.host->root, &d->node, &err) >= 0)
		return 0;
	nvml_close(d->nv);
	d->nv = NULL;
	log_error("cannot load NVML; /metrics serves gpulet_exporter_ready 0 and /healthz 503 with this error, "
		  "retrying",
		  "error=\"%s\" retry_s=%d", err.msg, NVML_RETRY_S);
	exp_http_set_not_ready(d->http, err.msg);
	return -ENOENT;
}

static void set_host(struct exporter_daemon *d)
{
	const char *node_name = d->o.node_name;

	if (node_name && *node_name)
		snprintf(d->host, sizeof(d->host), "%s", node_name);
	else if (gethostname(d->host, sizeof(d->host) - 1) < 0)
		snprintf(d->host, sizeof(d->host), "unknown");
	for (size_t i = 0; d->o.replace_blanks && i < d->node->n_gpus; i++)
		for (char *p = d->node->gpus[i].name; *p; p++)
			if (*p == ' ')
				*p = '-';
}

/* The exporter over the loaded node, pod attribution, then the samplers. */
static int start_exporter(struct exporter_daemon *d)
{
	struct exporter *e = &d->e;
	struct gerr err = {0};
	const char *what = "cannot start the exporter";
	int r;

	set_host(d);
	r = exporter_init(e, d->node, d->o.no_hostname ? NULL : d->host, &err);
	d->e_init = r >= 0;
	if (r >= 0) {
		struct exp_config served = d->o.served;
		served.dra_pool = d->host; /* the pool gpulet's DRA driver publishes, even under --no-hostname */
		exporter_configure(e, &served);
		e->virtual_gpus = d->o.virtual_gpus;
		e->xid_policy = d->o.xid_policy;
		e->podmeta = d->pm_started ? &d->pm : NULL;
		e->pod_uid = d->o.kube.pod_uid;
		e->pod_labels = d->o.kube.pod_labels;
		e->per_process = d->o.kube.per_process;
		e->root = d->o.host->root;
		e->hpc_dir = d->o.hpc_dir;
	}
	if (r >= 0 && d->o.kubernetes) {
		what = "cannot start pod attribution";
		r = podres_cache_start(&d->pc, d->o.host->root, d->o.podres_socket, (int)d->o.podres_ms,
				       d->o.resource_names, &err);
		d->pc_started = r >= 0;
		if (r >= 0 && d->pc.errors)
			log_warn("PodResources List failed; metrics carry no pod labels until it answers",
				 "socket=%s error=\"%s\"", d->o.podres_socket, d->pc.last_error);
		if (r >= 0)
			e->podres = &d->pc;
		if (r >= 0 && d->o.served.dra) /* the one thing that must match what the DRA driver publishes */
			log_info("DRA claims attributed", "driver=%s pool=%s", DRA_DRIVER_DEFAULT, d->host);
	}
	if (r >= 0) {
		what = "cannot start the samplers";
		r = exporter_start(e, d->nv, (int)d->o.interval_ms, &err);
		d->e_started = r >= 0;
	}
	if (r < 0)
		log_error(what, "error=\"%s\"", err.msg);
	return r;
}

/*
 * The loop's tick: NVML and the node (every NVML_RETRY_S until they load), then the exporter over
 * them; after that, once a second, whether the MIG layout changed. The MIG layout is read once;
 * after a re-partition the samplers stop publishing the moved instances and we exit so the
 * DaemonSet restarts us on the new layout (the plugin's upstream does the same on MIG changes,
 * device-plugin.md §6).
 */
static long long on_tick(void *data)
{
	struct exporter_daemon *d = data;
	int r;

	if (d->e_started) {
		if (atomic_load(&d->e.layout_changed)) {
			log_warn("MIG layout changed; exiting to restart with the new layout", NULL);
			loop_stop(d->loop, 0);
		}
		return 1000;
	}
	if (load_node(d) < 0)
		return NVML_RETRY_S * 1000;
	r = start_exporter(d);
	if (r < 0) {
		loop_stop(d->loop, r);
		return -1;
	}
	exp_http_set_exporter(d->http, &d->e);
	log_info("Exporter ready", "gpus=%zu mig_instances=%zu driver=%s hostname=%s", d->e.n_gpus,
		 d->e.n_devs - d->e.n_gpus, d->node->driver_version, d->o.no_hostname ? "-" : d->host);
	return 1000;
}

static const struct loop_ops exporter_loop_ops = {.tick = on_tick};

/* The pods watch changed (its eventfd): the table again; a watch failure said once, and its end. */
static int on_pods(void *data)
{
	struct exporter_daemon *d = data;
	char msg[GERR_MAX];
	int error = 0;

	if (exp_podmeta_update(&d->pm, &error, msg, sizeof(msg)) < 0)
		log_error("cannot update the pods' labels", "error=\"out of memory\"");
	if (error && error != d->pm.last_error)
		log_error("cannot watch this node's pods: pod labels and UIDs are missing or old until it works",
			  "error=\"%s\"", msg);
	else if (!error && d->pm.last_error)
		log_info("Watching this node's pods again", NULL);
	d->pm.last_error = error;
	return 0;
}

/*
 * The pods watch (kapi/): asked for by pod labels or UIDs, it must start (a refusal ends the exporter,
 * naming what is missing); for the per-process values of virtual GPUs alone, the exporter serves
 * without it, and FB_USED and GPU_UTIL then have no per-pod lines (one warning).
 */
static int start_pods_watch(struct exporter_daemon *d)
{
	const struct exp_kube_options *k = &d->o.kube;
	struct gerr err = {0};
	int r;

	if (!k->pod_labels && !k->pod_uid && !k->per_process)
		return 0;
	r = exp_podmeta_start(&d->pm, k, &err);
	if (r >= 0)
		r = loop_add_fd(d->loop, exp_podmeta_fd(&d->pm), on_pods, d);
	if (r < 0) {
		exp_podmeta_stop(&d->pm);
		if (k->pod_labels || k->pod_uid) {
			log_error("cannot watch this node's pods for --kubernetes-enable-pod-labels/-uid",
				  "error=\"%s\"", err.msg);
			return r;
		}
		log_warn("cannot watch this node's pods: FB_USED and GPU_UTIL have no per-pod values (their pod UIDs "
			 "are not known)",
			 "error=\"%s\"", err.msg);
		return 0;
	}
	d->pm_started = true;
	if (exp_podmeta_warning(&d->pm))
		log_warn("Kubernetes API client", "warning=\"%s\"", exp_podmeta_warning(&d->pm));
	log_info("Watching this node's pods for their UID and labels", "node=%s server=%s labels=%s uid=%s",
		 k->node_name, exp_podmeta_server(&d->pm), k->pod_labels ? "true" : "false",
		 k->pod_uid ? "true" : "false");
	return 0;
}

int exporter_daemon_start(const struct exporter_daemon_options *o, const sigset_t *stop, struct exporter_daemon **ret)
{
	struct exporter_daemon *d = calloc(1, sizeof(*d));
	struct gerr err = {0};
	int r;

	*ret = NULL;
	if (!d)
		return log_error("cannot start the exporter", "error=\"out of memory\""), -ENOMEM;
	d->o = *o;
	/* read before anything is served, so a typo fails the pod at once, naming file and line */
	if (o->collectors_file) {
		r = exp_collectors_load(o->collectors_file, &d->collectors, &err);
		if (r < 0) {
			log_error("cannot read the collectors file", "error=\"%s\"", err.msg);
			exporter_daemon_stop(d);
			return r;
		}
		warn_collectors(&d->collectors);
		d->o.served.collectors = &d->collectors;
		log_info("Collectors file read", "file=%s fields=%zu", o->collectors_file, d->collectors.n);
	}
	r = loop_new(stop, &exporter_loop_ops, d, &d->loop, &err);
	if (r < 0 || (r = start_pods_watch(d)) < 0) {
		if (err.msg[0])
			log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		exporter_daemon_stop(d);
		return r;
	}
	r = exp_http_start(&o->http, &d->http, &err);
	if (r < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		exporter_daemon_stop(d);
		return r;
	}
	if (o->hpc_dir) {
		struct exp_hpc h;
		int hr = exp_hpc_read(o->host->root, o->hpc_dir, &h);

		if (hr < 0)
			log_warn("HPC job mapping directory not readable now; read again at every scrape",
				 "dir=%s error=\"%s\"", o->hpc_dir, strerror(-hr));
		else
			exp_hpc_free(&h);
	}
	log_info("Starting exporter", "address=%s port=%u collect_interval_ms=%u kubernetes=%s web_config=\"%s\"",
		 o->http.address, exp_http_port(d->http), o->interval_ms, o->kubernetes ? "true" : "false",
		 o->http.web_config_file ? o->http.web_config_file : "");
	*ret = d;
	return 0;
}

int exporter_daemon_run(struct exporter_daemon *d)
{
	int r = loop_run(d->loop);

	log_info("Stopping exporter", NULL);
	return r;
}

void exporter_daemon_stop(struct exporter_daemon *d)
{
	int left = 0;

	if (!d)
		return;
	exp_http_stop(d->http); /* no scrape is running after this */
	if (d->e_started)
		left = exporter_stop(&d->e, 2000);
	if (d->pc_started)
		podres_cache_stop(&d->pc);
	if (d->pm_started)
		exp_podmeta_stop(&d->pm); /* no scrape reads it now (HTTP stopped above) */
	if (left) {
		/* a sampler is inside a hung NVML call: leave its memory and NVML alone, just exit */
		kept_for_stuck_sampler = d;
		return;
	}
	loop_free(d->loop);
	if (d->e_init)
		exporter_free(&d->e);
	node_free(d->node);
	nvml_close(d->nv);
	exp_collectors_free(&d->collectors);
	free(d);
}
