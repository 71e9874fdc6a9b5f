/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet_doctor_* metrics: one walk's findings in the Prometheus text format (docs/reference/monitoring-doctor.md). */
#include "doctor/daemon.h"
#include "util/macro.h"
#include "util/prom.h"

const char *const doctor_trigger_names[_DOCTOR_TRIGGER_MAX] = {"start", "interval", "change"};

/* The order the metrics list problems in: failures before warnings, each in chain order. The first is the root
 * cause, as the readable report names it. */
static size_t rank_problems(const struct doctor_ctx *c, const struct doctor_finding **out, size_t max)
{
	static const enum doctor_severity order[] = {DOCTOR_FAIL, DOCTOR_WARN};
	size_t n = 0;

	for (size_t s = 0; s < ELEMENTSOF(order); s++)
		for (int l = 0; l < _LINK_MAX; l++)
			for (size_t k = 0; k < c->n_findings && n < max; k++)
				if (c->findings[k].severity == order[s] && (int)c->findings[k].link == l)
					out[n++] = &c->findings[k];
	return n;
}

static void render_findings(const struct doctor_finding *const *ranked, size_t n, const char *node, FILE *f)
{
	fputs("# HELP gpulet_doctor_finding A problem gpulet doctor found on this node, 1 while it lasts; rank 0 is "
	      "the root cause, then the other failures and the warnings in chain order.\n"
	      "# TYPE gpulet_doctor_finding gauge\n",
	      f);
	for (size_t k = 0; k < n; k++)
		fprintf(
		    f, "gpulet_doctor_finding{node=\"%s\",id=\"%s\",severity=\"%s\",component=\"%s\",rank=\"%zu\"} 1\n",
		    node, ranked[k]->id, doctor_severity_name(ranked[k]->severity), doctor_link_name(ranked[k]->link),
		    k);
}

static void render_root_cause(const struct doctor_finding *f, const char *node, FILE *out)
{
	char summary[2 * sizeof(f->summary)], fix[2 * sizeof(f->fix)];

	fputs("# HELP gpulet_doctor_root_cause The earliest broken link on this node, with its summary and fix; "
	      "absent while nothing fails.\n"
	      "# TYPE gpulet_doctor_root_cause gauge\n",
	      out);
	if (!f || f->severity != DOCTOR_FAIL)
		return;
	prom_escape(f->summary, summary, sizeof(summary));
	prom_escape(f->fix, fix, sizeof(fix));
	fprintf(out, "gpulet_doctor_root_cause{node=\"%s\",id=\"%s\",component=\"%s\",summary=\"%s\",fix=\"%s\"} 1\n",
		node, f->id, doctor_link_name(f->link), summary, fix);
}

static void render_run(const struct doctor_ctx *c, const struct doctor_run_info *ri, const char *node, FILE *f)
{
	static const enum doctor_severity sevs[] = {DOCTOR_FAIL, DOCTOR_WARN, DOCTOR_OK};

	fputs("# HELP gpulet_doctor_findings Findings of the last walk by severity (ok: links that passed).\n"
	      "# TYPE gpulet_doctor_findings gauge\n",
	      f);
	for (size_t s = 0; s < ELEMENTSOF(sevs); s++) {
		size_t n = 0;

		for (size_t k = 0; k < c->n_findings; k++)
			n += c->findings[k].severity == sevs[s];
		fprintf(f, "gpulet_doctor_findings{node=\"%s\",severity=\"%s\"} %zu\n", node,
			doctor_severity_name(sevs[s]), n);
	}
	fprintf(f,
		"# HELP gpulet_doctor_last_run_timestamp_seconds When the last walk of the chain ended.\n"
		"# TYPE gpulet_doctor_last_run_timestamp_seconds gauge\n"
		"gpulet_doctor_last_run_timestamp_seconds{node=\"%s\"} %.3f\n"
		"# HELP gpulet_doctor_run_duration_seconds How long the last walk took.\n"
		"# TYPE gpulet_doctor_run_duration_seconds gauge\n"
		"gpulet_doctor_run_duration_seconds{node=\"%s\"} %.6f\n"
		"# HELP gpulet_doctor_interval_seconds How often the doctor re-checks when nothing changes.\n"
		"# TYPE gpulet_doctor_interval_seconds gauge\n"
		"gpulet_doctor_interval_seconds{node=\"%s\"} %u\n"
		"# HELP gpulet_doctor_runs_total Walks of the chain by what started them.\n"
		"# TYPE gpulet_doctor_runs_total counter\n",
		node, ri->finished_at, node, ri->duration_s, node, ri->interval_s);
	for (size_t t = 0; t < _DOCTOR_TRIGGER_MAX; t++)
		fprintf(f, "gpulet_doctor_runs_total{node=\"%s\",trigger=\"%s\"} %lu\n", node, doctor_trigger_names[t],
			ri->runs[t]);
}

void doctor_render_metrics(const struct doctor_ctx *c, const struct doctor_run_info *ri, FILE *f)
{
	const struct doctor_finding *ranked[256];
	size_t n = rank_problems(c, ranked, ELEMENTSOF(ranked));
	char node[512];

	prom_escape(ri->node, node, sizeof(node));
	render_root_cause(n ? ranked[0] : NULL, node, f);
	render_findings(ranked, n, node, f);
	render_run(c, ri, node, f);
}
