/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TEMPORARY stand-in for src/core/resources.c (owned by the health/sharing work) so the plugin
 * links and its tests run before that lands. cmake/plugin.cmake compiles this file only while
 * src/core/resources.c does not exist; delete it once resources.c is on main.
 * Covers whole GPUs, MIG single/mixed by profile, and time-slicing replicas with renames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resources.h"

static struct resource *get_res(struct resource_set *s, const char *name)
{
	struct resource *r;

	for (size_t i = 0; i < s->n; i++)
		if (streq(s->res[i].name, name))
			return &s->res[i];
	r = realloc(s->res, (s->n + 1) * sizeof(*r));
	if (!r)
		return NULL;
	s->res = r;
	r = &s->res[s->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->socket, sizeof(r->socket), "nvidia-%s.sock",
		 strncmp(name, "nvidia.com/", 11) == 0 ? name + 11 : name);
	return r;
}

static int add_dev(struct resource_set *s, const struct resource_options *o, const char *name, const struct node_gpu *g,
		   unsigned gi, int mig)
{
	const struct replica_rule *rule = NULL;
	unsigned reps = 1;
	struct resource *r;

	for (size_t i = 0; o->sharing != SHARING_NONE && i < o->n_rules; i++)
		if (streq(o->rules[i].name, name))
			rule = &o->rules[i];
	if (rule && rule->replicas > 1) {
		reps = rule->replicas;
		if (rule->rename[0])
			name = rule->rename;
	}
	r = get_res(s, name);
	if (!r)
		return -ENOMEM;
	r->replicas = reps;
	for (unsigned k = 0; k < reps; k++) {
		struct rdevice *d = realloc(r->devices, (r->n_devices + 1) * sizeof(*d));
		const char *uuid = mig >= 0 ? g->migs[mig].uuid : g->uuid;

		if (!d)
			return -ENOMEM;
		r->devices = d;
		d = &r->devices[r->n_devices++];
		memset(d, 0, sizeof(*d));
		snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
		if (reps > 1)
			snprintf(d->id, sizeof(d->id), "%s::%u", uuid, k);
		else
			snprintf(d->id, sizeof(d->id), "%s", uuid);
		if (mig >= 0)
			snprintf(d->index, sizeof(d->index), "%u:%u", g->index, g->migs[mig].index);
		else
			snprintf(d->index, sizeof(d->index), "%u", g->index);
		d->gpu = gi;
		d->mig = mig;
		d->replica = reps > 1 ? (int)k : -1;
		d->numa_node = g->numa_node;
		d->healthy = !g->lost;
		if (g->lost)
			snprintf(d->reason, sizeof(d->reason), "GPU is lost");
	}
	return 0;
}

int resources_build(const struct node *n, const struct resource_options *o, struct resource_set **ret, struct gerr *err)
{
	struct resource_set *s = calloc(1, sizeof(*s));
	int r = 0;

	if (!s)
		return gerr_set(err, ENOMEM, "out of memory");
	for (unsigned i = 0; i < n->n_gpus && r >= 0; i++) {
		const struct node_gpu *g = &n->gpus[i];

		if (!g->mig_enabled || o->mig_strategy == MIG_STRATEGY_NONE) {
			r = add_dev(s, o, "nvidia.com/gpu", g, i, -1);
			continue;
		}
		for (size_t m = 0; m < g->n_migs && r >= 0; m++) {
			char name[128];

			if (o->mig_strategy == MIG_STRATEGY_SINGLE)
				snprintf(name, sizeof(name), "nvidia.com/gpu");
			else
				snprintf(name, sizeof(name), "nvidia.com/mig-%s", g->migs[m].profile);
			for (char *p = name; *p; p++)
				if (*p == '+')
					*p = '.';
			r = add_dev(s, o, name, g, i, (int)m);
		}
	}
	if (r < 0) {
		resource_set_free(s);
		return gerr_set(err, -r, "out of memory");
	}
	*ret = s;
	return 0;
}

void resource_set_free(struct resource_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->res[i].devices);
	free(s->res);
	free(s);
}

const struct resource *resources_find(const struct resource_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->res[i].name, name))
			return &s->res[i];
	return NULL;
}

const struct rdevice *resource_find_device(const struct resource *r, const char *id)
{
	for (size_t i = 0; i < r->n_devices; i++)
		if (streq(r->devices[i].id, id))
			return &r->devices[i];
	return NULL;
}

int resources_set_health(struct resource_set *s, const struct node *n, const char *gpu_uuid, int gi, int ci,
			 bool healthy, const char *reason)
{
	int changed = 0;

	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->res[i].n_devices; k++) {
			struct rdevice *d = &s->res[i].devices[k];
			const struct node_gpu *g = &n->gpus[d->gpu];

			if (!streq(g->uuid, gpu_uuid))
				continue;
			if (gi >= 0 && (d->mig < 0 || g->migs[d->mig].gi != (unsigned)gi ||
					(ci >= 0 && g->migs[d->mig].ci != (unsigned)ci)))
				continue;
			if (d->healthy == healthy)
				continue;
			d->healthy = healthy;
			snprintf(d->reason, sizeof(d->reason), "%s", healthy ? "" : reason);
			changed++;
		}
	return changed;
}
