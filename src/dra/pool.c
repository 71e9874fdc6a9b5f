/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writes that make the node's pool what is wanted (pool.h). The kubelet helper's slice
 * controller (k8s dynamic-resource-allocation v0.34.4 resourceslice/resourceslicecontroller.go
 * syncPool) does the same job: obsolete slices deleted, the rest updated or created, the generation
 * bumped when the pool changes; this plan bumps it on every change of the devices (always safe,
 * docs/reference/dra.md §5.4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dra/devices.h"
#include "dra/pool.h"
#include "util/macro.h"

static bool empty_container(const json_t *j)
{
	return (json_is_array(j) && !json_array_size(j)) || (json_is_object(j) && !json_object_size(j));
}

bool dra_json_covers(const json_t *have, const json_t *want)
{
	const char *k;
	json_t *v;
	size_t i;

	if (!have)
		return !want || empty_container(want);
	if (json_is_object(want)) {
		if (!json_is_object(have))
			return false;
		json_object_foreach ((json_t *)want, k, v)
			if (!dra_json_covers(json_object_get(have, k), v))
				return false;
		return true;
	}
	if (json_is_array(want)) {
		if (!json_is_array(have) || json_array_size(have) != json_array_size(want))
			return false;
		json_array_foreach (want, i, v)
			if (!dra_json_covers(json_array_get(have, i), v))
				return false;
		return true;
	}
	return json_equal(have, want);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

static int64_t generation_of(const json_t *slice)
{
	return json_integer_value(
	    json_object_get(json_object_get(json_object_get(slice, "spec"), "pool"), "generation"));
}

static int by_name(const void *a, const void *b)
{
	const char *x = str_at(*(json_t *const *)a, "metadata", "name"),
		   *y = str_at(*(json_t *const *)b, "metadata", "name");

	return strcmp(x ? x : "", y ? y : "");
}

void dra_pool_plan_clear(struct dra_pool_plan *p)
{
	json_decref(p->creates);
	json_decref(p->updates);
	json_decref(p->deletes);
	*p = (struct dra_pool_plan){0};
}

bool dra_pool_plan_empty(const struct dra_pool_plan *p)
{
	return !json_array_size(p->creates) && !json_array_size(p->updates) && !json_array_size(p->deletes);
}

static int add_delete(struct dra_pool_plan *p, const json_t *slice)
{
	const char *name = str_at(slice, "metadata", "name"), *uid = str_at(slice, "metadata", "uid");

	if (!name)
		return 0;
	return json_array_append_new(p->deletes, json_pack("{s:s, s:s}", "name", name, "uid", uid ? uid : "")) < 0
		   ? -ENOMEM
		   : 0;
}

/* wanted[i] as it must be now: the generation, the owner; the caller owns the copy. */
static json_t *desired(const json_t *w, const char *node_uid, int64_t gen)
{
	json_t *d = json_deep_copy(w), *spec = json_object_get(d, "spec"), *meta = json_object_get(d, "metadata");
	const char *node = json_string_value(json_object_get(spec, "nodeName"));

	if (!d || !json_is_object(meta) ||
	    json_object_set_new(json_object_get(spec, "pool"), "generation", json_integer((json_int_t)gen)) < 0 ||
	    (node_uid &&
	     json_object_set_new(meta, "ownerReferences",
				 json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "v1", "kind", "Node", "name",
					   node ? node : "", "uid", node_uid, "controller", 1)) < 0)) {
		json_decref(d);
		return NULL;
	}
	return d;
}

/* have already is d: its spec, and the owner references when d has them. */
static bool same_slice(const json_t *have, const json_t *d)
{
	const json_t *owners = json_object_get(json_object_get(d, "metadata"), "ownerReferences");

	return dra_json_covers(json_object_get(have, "spec"), json_object_get(d, "spec")) &&
	       (!owners ||
		dra_json_covers(json_object_get(json_object_get(have, "metadata"), "ownerReferences"), owners));
}

int dra_pool_plan(const json_t *existing, const json_t *wanted, const char *node_uid, int64_t prev,
		  struct dra_pool_plan *ret, struct gerr *err)
{
	struct dra_pool_plan p = {.creates = json_array(), .updates = json_array(), .deletes = json_array()};
	const char *pool = json_string_value(
	    json_object_get(json_object_get(json_object_get(json_array_get(wanted, 0), "spec"), "pool"), "name"));
	size_t n = json_array_size(existing), n_ours = 0, i;
	_cleanup_free_ json_t **ours = calloc(n + 1, sizeof(*ours));
	json_auto_t *newest = json_array();
	int64_t max_found = 0, top;
	json_t *s;
	int r = 0;

	if (!p.creates || !p.updates || !p.deletes || !ours || !newest || !pool)
		goto nomem;
	/* this pool's slices; slices of another pool of this node and driver are obsolete */
	json_array_foreach (existing, i, s) {
		const char *sp =
		    json_string_value(json_object_get(json_object_get(json_object_get(s, "spec"), "pool"), "name"));

		if (sp && streq(sp, pool)) {
			ours[n_ours++] = s;
			max_found = MAX(max_found, generation_of(s));
		} else if (add_delete(&p, s) < 0)
			goto nomem;
	}
	qsort(ours, n_ours, sizeof(*ours), by_name);
	for (size_t k = 0; k < n_ours; k++)
		if (generation_of(ours[k]) == max_found && json_array_append(newest, ours[k]) < 0)
			goto nomem;
	top = MAX(prev, max_found);
	p.generation = dra_slices_next_generation(n_ours ? newest : NULL, wanted, top);
	/* pair the wanted slices with ours by name: one that says something else (an older generation
	 * too) is updated in place, the missing ones created, the surplus deleted */
	for (size_t k = 0; k < json_array_size(wanted); k++) {
		json_auto_t *d = desired(json_array_get(wanted, k), node_uid, p.generation);

		if (!d)
			goto nomem;
		if (k >= n_ours) {
			r = json_array_append(p.creates, d);
		} else if (!same_slice(ours[k], d)) {
			json_t *meta = json_object_get(d, "metadata");

			json_object_del(meta, "generateName");
			r = json_object_set(meta, "name",
					    json_object_get(json_object_get(ours[k], "metadata"), "name"));
			if (r >= 0)
				r = json_object_set(
				    meta, "resourceVersion",
				    json_object_get(json_object_get(ours[k], "metadata"), "resourceVersion"));
			if (r >= 0)
				r = json_array_append(p.updates, d);
		}
		if (r < 0)
			goto nomem;
	}
	for (size_t k = json_array_size(wanted); k < n_ours; k++)
		if (add_delete(&p, ours[k]) < 0)
			goto nomem;
	*ret = p;
	return 0;
nomem:
	dra_pool_plan_clear(&p);
	return gerr_set(err, ENOMEM, "out of memory");
}
