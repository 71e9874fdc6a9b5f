/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor's verdict as a picture (gpulet doctor --format html, and / of --serve-metrics): one
 * self-contained HTML page, no script and no external asset (its Content-Security-Policy forbids
 * both), that draws the chain with each link green (ok), amber (a warning), red (a failure) or grey
 * (not checked), names the root cause and its fix, then lists every finding. Every text a finding
 * carries is escaped: findings quote node files, pod names and tool output.
 */
#pragma once

#include <stdio.h>

#include "doctor/doctor.h"

struct doctor_html_page {
	const char *node; /* the heading: the node's name, or the root the doctor read */
	const char *when; /* NULL, or when the walk ended, shown beside the counts */
};

/* The page for the findings of c (those --only selects: only, n_only) on f. */
void doctor_render_html(const struct doctor_ctx *c, const struct doctor_html_page *pg, char *const *only, size_t n_only,
			FILE *f);
