/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the exporter's unit tests (test_metrics.c, test_exporter_pods.c): a PodResources holder
 * added to a map as the podres cache builds it, and one scrape rendered. Include after <cmocka.h>.
 */
#pragma once

#include <stdlib.h>
#include <string.h>

#include "exporter/exporter.h"

static inline void exp_test_add_holder(struct podres_map *m, const char *id, const char *resource, const char *ns,
				       const char *pod, const char *ctr)
{
	struct podres_device *d;
	const char *sep = strstr(id, "::");

	m->v = realloc(m->v, (m->n + 1) * sizeof(*m->v));
	assert_non_null(m->v);
	d = &m->v[m->n++];
	memset(d, 0, sizeof(*d));
	d->id = strdup(id);
	d->base = sep ? strndup(id, (size_t)(sep - id)) : strdup(id);
	d->replica = sep ? atoi(sep + 2) : -1;
	d->resource = strdup(resource);
	d->ns = strdup(ns);
	d->pod = strdup(pod);
	d->container = strdup(ctr);
}

static inline char *exp_test_render(struct exporter *e, const struct podres_map *m)
{
	struct strbuf b = {0};

	assert_int_equal(exporter_render(e, m, exp_now_monotonic(), &b), 0);
	return b.s;
}
