/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet doctor --serve-metrics: the doctor as a node daemon. It walks the chain at start, every
 * interval and shortly after a watched node path changes (device nodes, CDI dirs, containerd and
 * toolkit config, kubelet's device-plugin dir), and serves the findings of the last walk as
 * Prometheus metrics (gpulet_doctor_*, root cause first) and as a page at / (doctor/html.h), with /healthz
 * answering once one walk ended.
 */
#pragma once

#include <stdio.h>

#include "doctor/doctor.h"

struct doctor_serve_options {
	const char *address;   /* ":9402", "127.0.0.1:0" (any free port) */
	unsigned interval_s;   /* periodic re-check */
	unsigned delay_s;      /* after a change: this much quiet, and this long since the last walk */
	const char *node_name; /* the node label of every series */
	/* exporter-toolkit's web config (TLS, basic auth), as the exporter's; NULL or "": plain HTTP */
	const char *web_config_file;
};

/* What starts a walk; doctor_trigger_names[] names them in gpulet_doctor_runs_total. */
enum doctor_trigger { DOCTOR_TRIGGER_START, DOCTOR_TRIGGER_INTERVAL, DOCTOR_TRIGGER_CHANGE, _DOCTOR_TRIGGER_MAX };
extern const char *const doctor_trigger_names[_DOCTOR_TRIGGER_MAX];

/* What one walk was, for the metrics. */
struct doctor_run_info {
	const char *node;
	unsigned interval_s;
	double finished_at; /* Unix seconds */
	double duration_s;
	unsigned long runs[_DOCTOR_TRIGGER_MAX]; /* walks so far by trigger */
};

/* The findings of c (a finished walk) as Prometheus text on f: the root cause first. */
void doctor_render_metrics(const struct doctor_ctx *c, const struct doctor_run_info *ri, FILE *f);

/*
 * The daemon, start/run/stop (the caller blocks SIGTERM/SIGINT first): start listens and watches
 * the node (o and so must outlive the server); run walks and serves until a signal of stop; stop
 * stops serving and frees. doctor_serve() is the three in a row: 0, or <0 with err set (cannot listen).
 */
struct doctor_server;
int doctor_serve_start(const struct doctor_options *o, const struct doctor_serve_options *so,
		       struct doctor_server **ret, struct gerr *err);
void doctor_serve_run(struct doctor_server *s);
void doctor_serve_stop(struct doctor_server *s);
int doctor_serve(const struct doctor_options *o, const struct doctor_serve_options *so, struct gerr *err);
