/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet doctor's verdict as one self-contained HTML page (doctor/html.h). */
#include "doctor/html.h"
#include "util/macro.h"

/* The drawing: boxes of BOX_W x BOX_H, PER_ROW to a row, below a title band of TOP pixels. */
enum {
	BOX_W = 140,
	BOX_H = 56,
	GAP = 28, /* between two boxes of a row: the arrow */
	ROW_GAP = 36,
	PER_ROW = 6,
	MARGIN = 12,
	TOP = 64,
};

/* How a link is drawn: its worst shown finding, or grey when none was shown (not checked, skipped). */
enum look { LOOK_UNCHECKED, LOOK_OK, LOOK_WARN, LOOK_FAIL, _LOOK_MAX };
static const struct {
	const char *state; /* data-state, for the test and for CSS */
	const char *word;  /* what the box says under the link's name */
	const char *fill, *ink;
} looks[_LOOK_MAX] = {
    [LOOK_UNCHECKED] = {"unchecked", "not checked", "#9e9e9e", "#ffffff"},
    [LOOK_OK] = {"ok", "ok", "#2e7d32", "#ffffff"},
    [LOOK_WARN] = {"warn", "WARN", "#f9a825", "#000000"},
    [LOOK_FAIL] = {"fail", "FAIL", "#c62828", "#ffffff"},
};

/* The chain's links as the page names them, in the doctor's order (doctor.h, enum doctor_link). */
static const char *const link_titles[] = {
    [LINK_DRIVER] = "driver",  [LINK_DEVNODE] = "device nodes", [LINK_NVML] = "NVML",
    [LINK_GPU] = "GPU health", [LINK_TOOLKIT] = "toolkit",      [LINK_RUNTIME] = "runtime",
    [LINK_CDI] = "CDI",        [LINK_KUBELET] = "kubelet",      [LINK_PLUGIN] = "device plugin",
    [LINK_MIG] = "MIG",        [LINK_ALLOC] = "allocations",    [LINK_VERSIONS] = "versions",
};
#define N_DRAWN ELEMENTSOF(link_titles)
_Static_assert(N_DRAWN == LINK_LINT, "a title for every link of the chain (lint findings are not a link)");

/* Characters that may not appear as themselves in HTML text or a quoted attribute; C0 controls but tab
 * and newline are not allowed in HTML at all and become U+FFFD. */
static const char *const entities[256] = {
    ['&'] = "&amp;",  ['<'] = "&lt;",         ['>'] = "&gt;",           ['"'] = "&quot;",
    ['\''] = "&#39;", [1 ... 8] = "&#xfffd;", [11 ... 31] = "&#xfffd;", [127] = "&#xfffd;",
};

static void esc(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		if (entities[*p])
			fputs(entities[*p], f);
		else
			fputc(*p, f);
}

static const enum look by_severity[] = {[DOCTOR_OK] = LOOK_OK, [DOCTOR_WARN] = LOOK_WARN, [DOCTOR_FAIL] = LOOK_FAIL};

static enum look link_look(const struct doctor_ctx *c, enum doctor_link l, char *const *only, size_t n_only)
{
	enum look worst = LOOK_UNCHECKED;

	for (size_t k = 0; k < c->n_findings; k++) {
		const struct doctor_finding *f = &c->findings[k];

		if (f->link == l && doctor_finding_shown(c, f, only, n_only) && by_severity[f->severity] > worst)
			worst = by_severity[f->severity];
	}
	return worst;
}

static const char style[] =
    "body{margin:0;font:14px/1.45 sans-serif;color:#212121;background:#ffffff}"
    "svg.chain{display:block}"
    "main{padding:0 12px 24px;max-width:1100px}"
    ".cause{border-left:8px solid;padding:4px 12px;margin:12px 0}"
    ".cause.fail{border-color:#c62828;background:#ffebee}.cause.ok{border-color:#2e7d32;background:#e8f5e9}"
    "pre{background:#f5f5f5;padding:6px;white-space:pre-wrap;word-break:break-all}"
    "table{border-collapse:collapse;width:100%}td,th{text-align:left;vertical-align:top;padding:3px 6px;"
    "border-bottom:1px solid #e0e0e0}"
    ".sev{font-weight:bold;white-space:nowrap}.fail .sev{color:#c62828}.warn .sev{color:#8d6e00}"
    ".ok .sev{color:#2e7d32}ul{margin:2px 0;padding-left:18px}";

static void page_head(const struct doctor_html_page *pg, FILE *f)
{
	fputs(
	    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
	    "<meta name=\"viewport\" content=\"width=device-width\">\n<title>gpulet doctor: ",
	    f);
	esc(f, pg->node);
	fprintf(f, "</title>\n<style>%s</style>\n</head><body>\n", style);
}

static void counts(const struct doctor_ctx *c, char *const *only, size_t n_only, size_t n[3])
{
	n[DOCTOR_OK] = n[DOCTOR_WARN] = n[DOCTOR_FAIL] = 0;
	for (size_t k = 0; k < c->n_findings; k++)
		if (doctor_finding_shown(c, &c->findings[k], only, n_only))
			n[c->findings[k].severity]++;
}

/* Where box i is drawn (its top-left corner). */
static void box_at(size_t i, unsigned *x, unsigned *y)
{
	*x = MARGIN + (unsigned)(i % PER_ROW) * (BOX_W + GAP);
	*y = TOP + (unsigned)(i / PER_ROW) * (BOX_H + ROW_GAP);
}

/* An arrow from box i to box i + 1: along the row, or down and back to the next row's start. */
static void arrow(size_t i, FILE *f)
{
	unsigned x, y, nx, ny;

	box_at(i, &x, &y);
	box_at(i + 1, &nx, &ny);
	if (ny == y)
		fprintf(f, "<path d=\"M%u %u H%u\"/>\n", x + BOX_W, y + BOX_H / 2, nx - 2);
	else
		fprintf(f, "<path d=\"M%u %u V%u H%u V%u\"/>\n", x + BOX_W / 2, y + BOX_H, y + BOX_H + ROW_GAP / 2,
			nx + BOX_W / 2, ny - 2);
}

static void chain(const struct doctor_ctx *c, const struct doctor_html_page *pg, char *const *only, size_t n_only,
		  const struct doctor_finding *cause, FILE *f)
{
	size_t rows = (N_DRAWN + PER_ROW - 1) / PER_ROW, n[3];
	unsigned width = 2 * MARGIN + PER_ROW * BOX_W + (PER_ROW - 1) * GAP;
	unsigned height = TOP + (unsigned)rows * BOX_H + (unsigned)(rows - 1) * ROW_GAP + MARGIN;

	counts(c, only, n_only, n);
	fprintf(f,
		"<svg class=\"chain\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\" role=\"img\" aria-label=\"the chain, link by link\">\n"
		"<defs><marker id=\"a\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
		"<path d=\"M0 0 L8 4 L0 8 z\" fill=\"#616161\"/></marker></defs>\n"
		"<text x=\"%u\" y=\"26\" font-size=\"20\" font-weight=\"bold\">gpulet doctor: ",
		width, height, width, height, MARGIN);
	esc(f, pg->node);
	fprintf(f, "</text>\n<text x=\"%u\" y=\"48\" font-size=\"14\">%zu fail, %zu warn, %zu ok", MARGIN,
		n[DOCTOR_FAIL], n[DOCTOR_WARN], n[DOCTOR_OK]);
	if (pg->when) {
		fputs(" \xc2\xb7 ", f);
		esc(f, pg->when);
	}
	fputs("</text>\n<g fill=\"none\" stroke=\"#616161\" stroke-width=\"2\" marker-end=\"url(#a)\">\n", f);
	for (size_t i = 0; i + 1 < N_DRAWN; i++)
		arrow(i, f);
	fputs("</g>\n", f);
	for (size_t i = 0; i < N_DRAWN; i++) {
		enum look lk = link_look(c, (enum doctor_link)i, only, n_only);
		bool is_cause = cause && cause->link == (enum doctor_link)i;
		unsigned x, y;

		box_at(i, &x, &y);
		fprintf(f,
			"<g><rect class=\"link\" data-link=\"%s\" data-state=\"%s\" x=\"%u\" y=\"%u\" width=\"%u\" "
			"height=\"%u\" rx=\"6\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%u\"/>\n"
			"<text x=\"%u\" y=\"%u\" text-anchor=\"middle\" fill=\"%s\" font-weight=\"bold\">%s</text>\n"
			"<text x=\"%u\" y=\"%u\" text-anchor=\"middle\" fill=\"%s\" font-size=\"12\">%s%s</text></g>\n",
			doctor_link_name((enum doctor_link)i), looks[lk].state, x, y, BOX_W, BOX_H, looks[lk].fill,
			is_cause ? "#000000" : looks[lk].fill, is_cause ? 4 : 1, x + BOX_W / 2, y + 24, looks[lk].ink,
			link_titles[i], x + BOX_W / 2, y + 43, looks[lk].ink, looks[lk].word,
			is_cause ? " \xc2\xb7 root cause" : "");
	}
	fputs("</svg>\n", f);
}

static void run_lines(const struct doctor_ctx *c, const struct doctor_finding *d, FILE *f)
{
	if (d->run) {
		fputs("<p>Run on the node:</p><pre>", f);
		esc(f, d->run);
		fputs("</pre>\n", f);
	}
	if (d->run_here) {
		fputs("<p>Run here (the node under ", f);
		esc(f, doctor_root(c->o));
		fputs("):</p><pre>", f);
		esc(f, d->run_here);
		fputs("</pre>\n", f);
	}
}

static void root_cause(const struct doctor_ctx *c, const struct doctor_finding *cause, FILE *f)
{
	if (!cause) {
		fputs("<section class=\"cause ok\"><h2>No failure</h2><p>Every link that was checked is healthy; grey "
		      "links were not checked here (the list below says why).</p></section>\n",
		      f);
		return;
	}
	fputs("<section class=\"cause fail\"><h2>Root cause: ", f);
	esc(f, cause->id);
	fprintf(f, " (%s link)</h2>\n<p>", doctor_link_name(cause->link));
	esc(f, cause->summary);
	fputs("</p>\n<p><b>Fix first:</b> ", f);
	esc(f, cause->fix);
	fputs("</p>\n", f);
	run_lines(c, cause, f);
	fputs("</section>\n", f);
}

static void finding_row(const struct doctor_finding *d, FILE *f)
{
	fprintf(f, "<tr class=\"%s\"><td>%s</td><td class=\"sev\">%s</td><td>", doctor_severity_name(d->severity),
		doctor_link_name(d->link), looks[by_severity[d->severity]].word);
	if (d->severity != DOCTOR_OK) {
		fputs("<b>", f);
		esc(f, d->id);
		fputs(":</b> ", f);
	}
	esc(f, d->summary);
	if (d->n_evidence) {
		fputs("<ul>", f);
		for (size_t e = 0; e < d->n_evidence; e++) {
			fputs(d->severity == DOCTOR_OK ? "<li>note: " : "<li>", f);
			esc(f, d->evidence[e]);
			fputs("</li>", f);
		}
		fputs("</ul>", f);
	}
	if (d->severity != DOCTOR_OK && d->fix[0]) {
		fputs("<b>fix:</b> ", f);
		esc(f, d->fix);
	}
	fputs("</td></tr>\n", f);
}

static void findings(const struct doctor_ctx *c, char *const *only, size_t n_only, FILE *f)
{
	fputs("<h2>Findings, link by link</h2>\n<table><tr><th>link</th><th></th><th>finding</th></tr>\n", f);
	for (int l = 0; l < _LINK_MAX; l++)
		for (size_t k = 0; k < c->n_findings; k++)
			if ((int)c->findings[k].link == l && doctor_finding_shown(c, &c->findings[k], only, n_only))
				finding_row(&c->findings[k], f);
	fputs("</table>\n", f);
}

struct skipped_page {
	FILE *f;
	const char *heading;
};

static void skipped_item(void *userdata, size_t k, const char *check, const char *ids, const char *value)
{
	const struct skipped_page *pg = userdata;

	if (k == 0)
		fprintf(pg->f, "<h2>%s</h2>\n<ul>\n", pg->heading);
	fputs("<li><b>", pg->f);
	esc(pg->f, check);
	fputs("</b> (", pg->f);
	esc(pg->f, ids);
	fputs("): ", pg->f);
	esc(pg->f, value);
	fputs("</li>\n", pg->f);
}

/* The checks not run, under one heading per kind ("explained_by" a failure, or a "reason"). */
static void skipped(const struct doctor_ctx *c, const char *key, const char *heading, FILE *f)
{
	struct skipped_page pg = {f, heading};

	if (doctor_skipped_each(c, key, skipped_item, &pg))
		fputs("</ul>\n", f);
}

void doctor_render_html(const struct doctor_ctx *c, const struct doctor_html_page *pg, char *const *only, size_t n_only,
			FILE *f)
{
	const struct doctor_finding *cause = doctor_root_cause(c, only, n_only);

	page_head(pg, f);
	chain(c, pg, only, n_only, cause, f);
	fputs("<main>\n", f);
	root_cause(c, cause, f);
	findings(c, only, n_only, f);
	skipped(c, "explained_by", "Not checked, already explained by an earlier failure", f);
	skipped(c, "reason", "Not checked here", f);
	fputs("</main>\n</body></html>\n", f);
}
