/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's pool in the API server (src/dra/pool.c) and the devices' health in it (src/dra/devices.c):
 * the writes that make the slices there what is wanted — a fresh pool created at generation 1, a pool
 * that already is so left alone (a restart writes nothing), a wiped one created again one generation
 * up, a changed one updated in place one generation up, surplus slices and other pools deleted, an
 * old owner replaced — with the API server's own fields and its empty-list habits not counted as
 * differences; unhealthy devices left out, or tainted with NVIDIA's keys, or every device withheld.
 * Facts: docs/reference/dra.md §5.4, §12.2.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "dra/devices.h"
#include "dra/pool.h"
#include "nvml/nvml.h"

#include "test_dra_helpers.h"

static json_t *build(const struct dra_devices *d, bool taints, bool withhold)
{
	struct gerr err = {0};
	json_t *s = NULL;

	if (dra_slices_build(d,
			     &(struct dra_slice_options){.driver = "gpu.nvidia.com",
							 .node_name = "node-a",
							 .generation = 1,
							 .taints = taints,
							 .withhold = withhold},
			     &s, &err) < 0)
		fail_msg("dra_slices_build: %s", err.msg);
	return s;
}

/* The API server's copy of what a plan writes: a name, a uid, a resourceVersion, its defaults. */
static json_t *stored(const json_t *sent, const char *name, const char *rv)
{
	json_t *s = json_deep_copy(sent), *meta = json_object_get(s, "metadata");

	json_object_del(meta, "generateName");
	json_object_set_new(meta, "name", json_string(name));
	json_object_set_new(meta, "uid", json_sprintf("uid-%s", name));
	json_object_set_new(meta, "resourceVersion", json_string(rv));
	json_object_set_new(meta, "creationTimestamp", json_string("2026-01-01T00:00:00Z"));
	return s;
}

static int64_t plan_gen(const json_t *obj)
{
	return json_integer_value(json_object_get(json_object_get(json_object_get(obj, "spec"), "pool"), "generation"));
}

static void test_covers(void **state)
{
	json_auto_t *have = json_pack("{s:{s:s, s:[i,i], s:{}}, s:s}", "spec", "a", "x", "b", 1, 2, "c", "extra", "y");
	json_auto_t *want = json_pack("{s:{s:s, s:[i,i], s:[], s:{}}}", "spec", "a", "x", "b", 1, 2, "d", "c");
	json_auto_t *other = json_pack("{s:{s:[i]}}", "spec", "b", 1);
	json_auto_t *value = json_pack("{s:{s:s}}", "spec", "a", "z");

	(void)state;
	/* fields the server adds do not count; an empty list it leaves out counts as there */
	assert_true(dra_json_covers(have, want));
	assert_false(dra_json_covers(have, other));
	assert_false(dra_json_covers(have, value));
	assert_false(dra_json_covers(NULL, value));
	assert_true(dra_json_covers(NULL, json_object_get(want, "nothing")));
}

static void test_plan(void **state)
{
	struct node *n = load_node("dgx-a100", "/nonexistent");
	struct dra_devices d = {0}, fewer;
	struct dra_pool_plan p = {0};
	struct gerr err = {0};
	json_auto_t *wanted = NULL, *less = NULL, *existing = json_array(), *other = NULL;
	json_t *s0;

	(void)state;
	assert_int_equal(dra_devices_build(n, "/nonexistent", &d, &err), 0);
	wanted = build(&d, false, false);

	/* nothing there: created at generation 1, owned by the Node */
	assert_int_equal(dra_pool_plan(existing, wanted, "node-uid", 0, &p, &err), 0);
	assert_int_equal(json_array_size(p.creates), 1);
	assert_true(dra_pool_plan_empty(
	    &(struct dra_pool_plan){.creates = p.updates, .updates = p.updates, .deletes = p.deletes}));
	assert_int_equal(p.generation, 1);
	s0 = json_array_get(p.creates, 0);
	assert_int_equal(plan_gen(s0), 1);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_array_get(json_object_get(json_object_get(s0, "metadata"), "ownerReferences"), 0), "uid")),
	    "node-uid");
	json_array_append_new(existing, stored(s0, "node-a-gpu.nvidia.com-abcde", "100"));
	dra_pool_plan_clear(&p);

	/* there already (a restart of the driver): nothing written, the generation kept */
	assert_int_equal(dra_pool_plan(existing, wanted, "node-uid", 0, &p, &err), 0);
	assert_true(dra_pool_plan_empty(&p));
	assert_int_equal(p.generation, 1);
	dra_pool_plan_clear(&p);

	/* a device gone (a lost GPU, a re-partition): updated in place, one generation up */
	fewer = d;
	fewer.n--;
	less = build(&fewer, false, false);
	assert_int_equal(dra_pool_plan(existing, less, "node-uid", 1, &p, &err), 0);
	assert_int_equal(json_array_size(p.updates), 1);
	assert_int_equal(json_array_size(p.creates) + json_array_size(p.deletes), 0);
	assert_int_equal(p.generation, 2);
	s0 = json_array_get(p.updates, 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(s0, "metadata"), "name")),
			    "node-a-gpu.nvidia.com-abcde");
	assert_string_equal(json_string_value(json_object_get(json_object_get(s0, "metadata"), "resourceVersion")),
			    "100");
	assert_null(json_object_get(json_object_get(s0, "metadata"), "generateName"));
	assert_int_equal(plan_gen(s0), 2);
	dra_pool_plan_clear(&p);

	/* wiped by kubelet: created again above what was published before */
	{
		json_auto_t *none = json_array();

		assert_int_equal(dra_pool_plan(none, wanted, "node-uid", 2, &p, &err), 0);
	}
	assert_int_equal(json_array_size(p.creates), 1);
	assert_int_equal(p.generation, 3);
	dra_pool_plan_clear(&p);

	/* a Node deleted and made again (another uid): the owner is updated, the devices are the same */
	assert_int_equal(dra_pool_plan(existing, wanted, "new-node-uid", 1, &p, &err), 0);
	assert_int_equal(json_array_size(p.updates), 1);
	assert_int_equal(p.generation, 1);
	dra_pool_plan_clear(&p);

	/* a higher generation found in the API server (another instance's): ours goes past it */
	json_object_set_new(json_object_get(json_object_get(json_array_get(existing, 0), "spec"), "pool"), "generation",
			    json_integer(7));
	assert_int_equal(dra_pool_plan(existing, less, "node-uid", 2, &p, &err), 0);
	assert_int_equal(p.generation, 8);
	dra_pool_plan_clear(&p);

	/* a surplus slice of the pool and a slice of another pool of this node: deleted */
	other = stored(json_array_get(wanted, 0), "node-a-gpu.nvidia.com-zzzzz", "101");
	json_array_append(existing, other);
	json_object_set_new(json_object_get(json_object_get(other, "spec"), "pool"), "name", json_string("old-name"));
	json_array_append_new(existing, stored(json_array_get(wanted, 0), "node-a-gpu.nvidia.com-yyyyy", "102"));
	assert_int_equal(dra_pool_plan(existing, wanted, "node-uid", 7, &p, &err), 0);
	assert_int_equal(json_array_size(p.deletes), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(p.deletes, 0), "name")),
			    "node-a-gpu.nvidia.com-zzzzz");
	assert_string_equal(json_string_value(json_object_get(json_array_get(p.deletes, 0), "uid")),
			    "uid-node-a-gpu.nvidia.com-zzzzz");
	assert_string_equal(json_string_value(json_object_get(json_array_get(p.deletes, 1), "name")),
			    "node-a-gpu.nvidia.com-yyyyy");
	dra_pool_plan_clear(&p);

	dra_devices_clear(&d);
	node_free(n);
}

static size_t n_devices(const json_t *slices)
{
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(slices); i++)
		n += json_array_size(json_object_get(json_object_get(json_array_get(slices, i), "spec"), "devices"));
	return n;
}

static const json_t *device(const json_t *slices, const char *name)
{
	const json_t *devs = json_object_get(json_object_get(json_array_get(slices, 0), "spec"), "devices");

	for (size_t i = 0; i < json_array_size(devs); i++)
		if (streq(json_string_value(json_object_get(json_array_get(devs, i), "name")), name))
			return json_array_get(devs, i);
	return NULL;
}

static void test_health(void **state)
{
	struct node *n = load_node("dgx-a100", "/nonexistent");
	struct dra_devices d = {0};
	struct gerr err = {0};
	json_auto_t *out = NULL, *tainted = NULL, *held = NULL, *back = NULL;
	const json_t *t;
	const char *gpu6 = NULL, *gpu0 = NULL;

	(void)state;
	assert_int_equal(dra_devices_build(n, "/nonexistent", &d, &err), 0);
	assert_int_equal(d.n, 13);
	for (size_t i = 0; i < d.n; i++) {
		if (streq(d.v[i].name, "gpu-0"))
			gpu0 = d.v[i].gpu->uuid;
		if (d.v[i].mig && d.v[i].mig->gi == 9)
			gpu6 = d.v[i].gpu->uuid;
	}
	assert_non_null(gpu0);
	assert_non_null(gpu6);
	/* XID 79 on GPU 0; an XID on one MIG instance of GPU 6 (GI 9): that one device only */
	assert_int_equal(dra_devices_set_health(&d, gpu0, -1, -1, false, DRA_TAINT_XID, "79", "XID 79", 100), 1);
	assert_int_equal(dra_devices_set_health(&d, gpu6, 9, -1, false, DRA_TAINT_XID, "31", "XID 31", 100), 1);
	/* said twice: no change */
	assert_int_equal(dra_devices_set_health(&d, gpu0, -1, -1, false, DRA_TAINT_XID, "79", "XID 79", 101), 0);
	out = build(&d, false, false);
	assert_int_equal(n_devices(out), 11);
	assert_null(device(out, "gpu-0"));
	tainted = build(&d, true, false);
	assert_int_equal(n_devices(tainted), 13);
	t = json_array_get(json_object_get(device(tainted, "gpu-0"), "taints"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "key")), "gpu.nvidia.com/xid");
	assert_string_equal(json_string_value(json_object_get(t, "value")), "79");
	assert_string_equal(json_string_value(json_object_get(t, "effect")), "NoSchedule");
	assert_null(json_object_get(device(tainted, "gpu-1"), "taints"));
	/* withheld: a pool without devices, still one slice */
	held = build(&d, true, true);
	assert_int_equal(json_array_size(held), 1);
	assert_int_equal(n_devices(held), 0);
	/* recovered */
	assert_int_equal(dra_devices_set_health(&d, gpu0, -1, -1, true, NULL, NULL, NULL, 200), 1);
	assert_int_equal(d.v[0].health_since, 200);
	back = build(&d, false, false);
	assert_int_equal(n_devices(back), 12);
	assert_non_null(device(back, "gpu-0"));
	dra_devices_clear(&d);
	node_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_covers),
	    cmocka_unit_test(test_plan),
	    cmocka_unit_test(test_health),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	nvml_close(nv);
	return r;
}
