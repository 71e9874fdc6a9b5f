/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's pool in the API server made what the driver wants it to be (docs/reference/dra.md §5.4):
 * the writes that turn the ResourceSlices there (this node's, this driver's) into the ones
 * dra_slices_build() made, with the pool generation and the owner reference filled in. Pure: the
 * slices in, a plan out; the API client (dra/api.c) does the writes.
 *
 * The generation is the highest found (in the API server or published before) and bumped when the
 * devices differ from the newest slices there: a pool wiped by kubelet, a MIG re-partition, a lost
 * or unhealthy GPU. Slices that already say what is wanted are left alone (a restart of the driver
 * writes nothing); the rest are updated in place, created, or deleted (surplus slices, other pools).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "util/err.h"

struct dra_pool_plan {
	json_t *creates; /* slices to POST (generateName) */
	json_t *updates; /* slices to PUT: metadata.name and resourceVersion of the slice each replaces */
	json_t *deletes; /* [{"name", "uid"}] */
	int64_t generation;
};

/*
 * existing: the ResourceSlices of this node and driver as the API server has them (any pool);
 * wanted: dra_slices_build()'s array (one pool); node_uid: the Node's uid for the owner reference
 * (NULL: none); prev: the generation published before (0: none). 0 with *ret, or -ENOMEM.
 */
int dra_pool_plan(const json_t *existing, const json_t *wanted, const char *node_uid, int64_t prev,
		  struct dra_pool_plan *ret, struct gerr *err);
void dra_pool_plan_clear(struct dra_pool_plan *p);
/* Nothing to write. */
bool dra_pool_plan_empty(const struct dra_pool_plan *p);

/*
 * have says everything want says: every member of an object (a member missing from have counts when
 * want's is an empty array or object: the API server leaves those out), arrays element by element,
 * other values equal. What have says besides (server-set fields) does not matter.
 */
bool dra_json_covers(const json_t *have, const json_t *want);
