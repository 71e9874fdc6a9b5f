/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor's verdict for the reader: which findings --only selects, the root cause, the report as
 * JSON and as text with the checks not done. The checks and their runner: doctor/doctor.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/enumtab.h"
#include "util/macro.h"

bool doctor_id_selected(const char *id, char *const *only, size_t n_only)
{
	if (!n_only)
		return true;
	for (size_t k = 0; k < n_only; k++) {
		size_t n = strlen(only[k]);

		if (streq(id, only[k]) || (n && only[k][n - 1] == '.' && !strncmp(id, only[k], n)) ||
		    (!strchr(only[k], '.') && !strncmp(id, only[k], n) && id[n] == '.'))
			return true;
	}
	return false;
}

/* Does any id a check may report (ids, space separated, or "<name>.ok") fall under the selection? */
static bool check_selected(const char *name, const char *ids, char *const *only, size_t n_only)
{
	char id[64];

	snprintf(id, sizeof(id), "%s.ok", name);
	if (doctor_id_selected(id, only, n_only))
		return true;
	for (const char *p = ids + strspn(ids, " "); *p; p += strspn(p, " ")) {
		size_t n = strcspn(p, " ");

		snprintf(id, sizeof(id), "%.*s", (int)n, p);
		if (doctor_id_selected(id, only, n_only))
			return true;
		p += n;
	}
	return false;
}

bool doctor_only_valid(const char *sel)
{
	/* ids reported outside the check table: bad input files */
	static const char *const input_ids[] = {"input.pods-invalid", "input.node-invalid",
						"input.cuda-version-invalid", "input.events-invalid",
						"input.api-failed"};
	char *const one[] = {(char *)sel};

	for (size_t k = 0; k < doctor_n_checks; k++)
		if (check_selected(doctor_checks[k].name, doctor_checks[k].ids, one, 1))
			return true;
	for (size_t k = 0; k < ELEMENTSOF(input_ids); k++)
		if (doctor_id_selected(input_ids[k], one, 1))
			return true;
	return false;
}

/*
 * Selected findings, plus the finding that blocked a selected check: --only cdi on a node whose
 * driver is not loaded must still say why the CDI checks did not run.
 */
bool doctor_finding_shown(const struct doctor_ctx *c, const struct doctor_finding *f, char *const *only, size_t n_only)
{
	size_t i;
	json_t *s;

	if (doctor_id_selected(f->id, only, n_only))
		return true;
	json_array_foreach (c->skipped, i, s) {
		const char *by = json_string_value(json_object_get(s, "explained_by"));
		const char *name = json_string_value(json_object_get(s, "check"));
		const char *ids = json_string_value(json_object_get(s, "ids"));

		if (by && name && ids && streq(by, f->id) && check_selected(name, ids, only, n_only))
			return true;
	}
	return false;
}

json_t *doctor_to_json(const struct doctor_ctx *c, char *const *only, size_t n_only)
{
	json_t *doc = json_object(), *arr = json_array();

	if (!doc || !arr) {
		json_decref(doc);
		json_decref(arr);
		return NULL;
	}
	for (size_t k = 0; k < c->n_findings; k++) {
		const struct doctor_finding *f = &c->findings[k];
		json_t *ev;

		if (!doctor_finding_shown(c, f, only, n_only))
			continue;
		ev = json_array();
		for (size_t e = 0; e < f->n_evidence; e++)
			json_array_append_new(ev, json_string(f->evidence[e]));
		json_t *one = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s}", "id", f->id, "severity",
					doctor_severity_name(f->severity), "component", doctor_link_name(f->link),
					"summary", f->summary, "evidence", ev, "fix", f->fix);

		/* the fix as a command: for the node, and for here when the node is under --root */
		if (one && f->run)
			json_object_set_new(one, "run", json_string(f->run));
		if (one && f->run_here)
			json_object_set_new(one, "run_here", json_string(f->run_here));
		json_array_append_new(arr, one);
	}
	json_object_set_new(doc, "findings", arr);
	json_object_set(doc, "skipped", c->skipped);
	return doc;
}

/* The words of a space-separated list. */
static size_t count_words(const char *s)
{
	size_t n = 0;

	for (s += strspn(s, " "); *s; s += strspn(s, " "), n++)
		s += strcspn(s, " ");
	return n;
}

size_t doctor_skipped_each(const struct doctor_ctx *c, const char *key, doctor_skipped_fn fn, void *userdata)
{
	size_t i, n = 0;
	json_t *s;

	json_array_foreach (c->skipped, i, s) {
		const char *v = json_string_value(json_object_get(s, key));

		if (v)
			fn(userdata, n++, json_string_value(json_object_get(s, "check")),
			   json_string_value(json_object_get(s, "ids")), v);
	}
	return n;
}

struct skipped_text {
	FILE *out;
	const char *heading, *arrow;
	bool verbose;
};

static void print_one_skipped(void *userdata, size_t k, const char *check, const char *ids, const char *value)
{
	const struct skipped_text *t = userdata;

	if (k == 0)
		fprintf(t->out, "\n  %s\n", t->heading);
	/* the ids a check would report: their count, the list itself under --verbose */
	if (t->verbose)
		fprintf(t->out, "    %-10s (%s) %s %s\n", check, ids, t->arrow, value);
	else
		fprintf(t->out, "    %-10s (%zu ids) %s %s\n", check, count_words(ids), t->arrow, value);
}

/* The skipped checks that carry `key` ("explained_by" or "reason"), under one heading. */
static void print_skipped(FILE *out, const struct doctor_ctx *c, const char *key, const char *heading,
			  const char *arrow)
{
	struct skipped_text t = {out, heading, arrow, c->o && c->o->verbose};

	doctor_skipped_each(c, key, print_one_skipped, &t);
}

const struct doctor_finding *doctor_root_cause(const struct doctor_ctx *c, char *const *only, size_t n_only)
{
	for (int l = 0; l < _LINK_MAX; l++)
		for (size_t k = 0; k < c->n_findings; k++)
			if ((int)c->findings[k].link == l && c->findings[k].severity == DOCTOR_FAIL &&
			    doctor_finding_shown(c, &c->findings[k], only, n_only))
				return &c->findings[k];
	return NULL;
}

/* The readable report: grouped by link in chain order, the first failure named as the root cause. */
void doctor_print(FILE *out, const struct doctor_ctx *c, char *const *only, size_t n_only)
{
	const struct doctor_finding *root_cause = doctor_root_cause(c, only, n_only);
	size_t n_fail = 0, n_warn = 0, n_ok = 0;
	bool chain = false; /* a finding on the chain: lint's are about a manifest, on no link, and never ok */

	for (int l = 0; l < _LINK_MAX; l++)
		for (size_t k = 0; k < c->n_findings; k++) {
			const struct doctor_finding *f = &c->findings[k];

			if ((int)f->link != l || !doctor_finding_shown(c, f, only, n_only))
				continue;
			chain = chain || f->link != LINK_LINT;
			if (f->severity == DOCTOR_OK) {
				n_ok++;
				fprintf(out, "  %-9s ok    %s\n", doctor_link_name(f->link), f->summary);
				for (size_t e = 0; e < f->n_evidence; e++)
					fprintf(out, "                  note: %s\n", f->evidence[e]);
				continue;
			}
			if (f->severity == DOCTOR_FAIL)
				n_fail++;
			else
				n_warn++;
			fprintf(out, "  %-9s %-5s %s: %s\n", doctor_link_name(f->link),
				f->severity == DOCTOR_FAIL ? "FAIL" : "WARN", f->id, f->summary);
			for (size_t e = 0; e < f->n_evidence; e++)
				fprintf(out, "                  - %s\n", f->evidence[e]);
			if (f->fix[0])
				fprintf(out, "                  fix: %s\n", f->fix);
			if (f->run)
				fprintf(out, "                  run on the node: %s\n", f->run);
			if (f->run_here)
				fprintf(out, "                  run here (node under %s): %s\n", doctor_root(c->o),
					f->run_here);
		}
	print_skipped(out, c, "explained_by", "not checked, already explained by an earlier failure:", "<-");
	print_skipped(out, c, "reason", "not checked here:", "--");
	fprintf(out, "\n");
	if (root_cause)
		fprintf(out, "Root cause: %s%s%s%s: %s\nFix first: %s\n", root_cause->id, chain ? " (" : "",
			chain ? doctor_link_name(root_cause->link) : "", chain ? " link)" : "", root_cause->summary,
			root_cause->fix);
	if (root_cause && (root_cause->run_here || root_cause->run))
		fprintf(out, "Run: %s\n", root_cause->run_here ? root_cause->run_here : root_cause->run);
	fprintf(out, "%zu fail, %zu warn", n_fail, n_warn);
	if (chain || n_ok)
		fprintf(out, ", %zu ok", n_ok);
	fputc('\n', out);
}
