/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "health_testnode.h"
#include "plugin/resources.h"

static const char *const a100_mixed[] = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
static const char *const a100_ones[] = {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"};

static struct resource_set *build_ok(const struct node *nd, const struct resource_options *o)
{
	struct resource_set *s = NULL;
	struct gerr err = {0};
	int r = resources_build(nd, o, &s, &err);
	if (r < 0)
		fail_msg("resources_build: %d %s", r, err.msg);
	return s;
}

static void build_fails(const struct node *nd, const struct resource_options *o, const char *needle)
{
	struct resource_set *s = (struct resource_set *)0x1;
	struct gerr err = {0};
	assert_int_equal(resources_build(nd, o, &s, &err), -EINVAL);
	assert_ptr_equal(s, (struct resource_set *)0x1); /* out-param untouched */
	if (!strstr(err.msg, needle))
		fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_none(void **state)
{
	struct node *nd = testnode_new(8);
	struct resource_options o = {.mig_strategy = MIG_STRATEGY_NONE};
	testnode_mig(nd, 0, a100_mixed, 4);

	struct resource_set *s = build_ok(nd, &o);
	assert_int_equal(s->n, 1);
	const struct resource *r = resources_find(s, "nvidia.com/gpu");
	assert_non_null(r);
	assert_string_equal(r->socket, "nvidia-gpu.sock");
	assert_int_equal(r->n_devices, 8); /* the MIG-enabled GPU is advertised whole */
	assert_string_equal(r->devices[0].id, nd->gpus[0].uuid);
	assert_int_equal(r->devices[0].mig, -1);
	assert_string_equal(r->devices[5].index, "5");
	assert_int_equal(r->devices[5].numa_node, 1);
	assert_int_equal(r->devices[5].replica, -1);
	assert_true(r->devices[5].healthy);
	assert_ptr_equal(resource_find_device(r, nd->gpus[7].uuid), &r->devices[7]);
	assert_null(resource_find_device(r, "GPU-nope"));
	assert_null(resources_find(s, "nvidia.com/mig-1g.5gb"));
	resource_set_free(s);
	testnode_free(nd);
}

static void test_single(void **state)
{
	struct node *nd = testnode_new(2);
	struct resource_options o = {.mig_strategy = MIG_STRATEGY_SINGLE};

	/* no MIG at all: single behaves like none */
	struct resource_set *s = build_ok(nd, &o);
	assert_int_equal(resources_find(s, "nvidia.com/gpu")->n_devices, 2);
	resource_set_free(s);

	testnode_mig(nd, 0, a100_ones, 7);
	build_fails(nd, &o, "same migEnabled value");
	testnode_mig(nd, 1, a100_ones, 3);
	s = build_ok(nd, &o);
	assert_int_equal(s->n, 1);
	const struct resource *r = resources_find(s, "nvidia.com/gpu");
	assert_int_equal(r->n_devices, 10);
	assert_string_equal(r->devices[8].id, nd->gpus[1].migs[1].uuid);
	assert_string_equal(r->devices[8].index, "1:1");
	assert_int_equal(r->devices[8].mig, 1);
	resource_set_free(s);

	nd->gpus[1].migs[2].profile[0] = '2'; /* "2g.5gb" */
	build_fails(nd, &o, "more than one MIG device type present on node");
	nd->gpus[1].n_migs = 0;
	build_fails(nd, &o, "has MIG enabled but no MIG devices");

	/* a lost GPU cannot fail the node (#2038) */
	nd->gpus[1].lost = true;
	nd->gpus[1].mig_enabled = false;
	s = build_ok(nd, &o);
	assert_int_equal(resources_find(s, "nvidia.com/gpu")->n_devices, 7);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_mixed(void **state)
{
	static const char *const me[] = {"1g.10gb+me", "1c.2g.10gb"};
	struct node *nd = testnode_new(4);
	struct resource_options o = {.mig_strategy = MIG_STRATEGY_MIXED};
	testnode_mig(nd, 0, a100_mixed, 4);
	testnode_mig(nd, 1, me, 2);
	testnode_mig(nd, 2, NULL, 0); /* MIG on, no instances: only a warning upstream */

	struct resource_set *s = build_ok(nd, &o);
	static const struct {
		const char *name, *socket;
		size_t n;
	} want[] = {
	    {"nvidia.com/gpu", "nvidia-gpu.sock", 1},
	    {"nvidia.com/mig-1g.10gb.me", "nvidia-mig-1g.10gb.me.sock", 1},
	    {"nvidia.com/mig-1g.5gb", "nvidia-mig-1g.5gb.sock", 2},
	    {"nvidia.com/mig-2g.10gb", "nvidia-mig-2g.10gb.sock", 1},
	    {"nvidia.com/mig-3g.20gb", "nvidia-mig-3g.20gb.sock", 1},
	};
	assert_int_equal(s->n, sizeof(want) / sizeof(want[0])); /* 1c.2g.10gb is not a resource */
	for (size_t i = 0; i < s->n; i++) {
		assert_string_equal(s->res[i].name, want[i].name);
		assert_string_equal(s->res[i].socket, want[i].socket);
		assert_int_equal(s->res[i].n_devices, want[i].n);
	}
	assert_string_equal(s->res[0].devices[0].id, nd->gpus[3].uuid);
	const struct resource *r = resources_find(s, "nvidia.com/mig-3g.20gb");
	assert_string_equal(r->devices[0].id, nd->gpus[0].migs[3].uuid);
	assert_string_equal(r->devices[0].index, "0:3");
	resource_set_free(s);
	testnode_free(nd);
}

static void test_time_slicing(void **state)
{
	struct node *nd = testnode_new(8);
	struct replica_rule rules[] = {{.name = "nvidia.com/gpu", .replicas = 4}};
	struct resource_options o = {
	    .mig_strategy = MIG_STRATEGY_NONE, .sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};

	struct resource_set *s = build_ok(nd, &o);
	const struct resource *r = resources_find(s, "nvidia.com/gpu");
	assert_non_null(r);
	assert_int_equal(r->replicas, 4);
	assert_int_equal(r->n_devices, 32);
	char want[160];
	snprintf(want, sizeof(want), "%s::3", nd->gpus[2].uuid);
	assert_string_equal(r->devices[11].id, want);
	assert_string_equal(r->devices[11].uuid, nd->gpus[2].uuid);
	assert_int_equal(r->devices[11].replica, 3);
	assert_int_equal(r->devices[11].gpu, 2);
	resource_set_free(s);

	o.rename_by_default = true;
	s = build_ok(nd, &o);
	assert_null(resources_find(s, "nvidia.com/gpu"));
	r = resources_find(s, "nvidia.com/gpu.shared");
	assert_non_null(r);
	assert_string_equal(r->socket, "nvidia-gpu.shared.sock");
	resource_set_free(s);

	/* short names get the prefix; explicit rename wins */
	snprintf(rules[0].name, sizeof(rules[0].name), "gpu");
	snprintf(rules[0].rename, sizeof(rules[0].rename), "gpu.ts");
	s = build_ok(nd, &o);
	assert_non_null(resources_find(s, "nvidia.com/gpu.ts"));
	resource_set_free(s);

	/* sharing none: rules do nothing */
	o.sharing = SHARING_NONE;
	s = build_ok(nd, &o);
	assert_int_equal(resources_find(s, "nvidia.com/gpu")->n_devices, 8);
	resource_set_free(s);

	/* MIG profile replicas in mixed; MPS refuses MIG */
	testnode_mig(nd, 0, a100_mixed, 4);
	struct replica_rule mig_rule[] = {{.name = "nvidia.com/mig-1g.5gb", .replicas = 3}};
	struct resource_options m = {
	    .mig_strategy = MIG_STRATEGY_MIXED, .sharing = SHARING_TIME_SLICING, .rules = mig_rule, .n_rules = 1};
	s = build_ok(nd, &m);
	r = resources_find(s, "nvidia.com/mig-1g.5gb");
	assert_int_equal(r->n_devices, 6);
	assert_int_equal(resources_find(s, "nvidia.com/gpu")->n_devices, 7);
	resource_set_free(s);
	m.sharing = SHARING_MPS;
	build_fails(nd, &m, "MPS is not supported for MIG");

	struct replica_rule twice[] = {{.name = "nvidia.com/gpu", .replicas = 2}, {.name = "gpu", .replicas = 3}};
	struct resource_options t = {.sharing = SHARING_TIME_SLICING, .rules = twice, .n_rules = 2};
	build_fails(nd, &t, "listed twice");
	testnode_free(nd);
}

static void test_health_replicas(void **state)
{
	/* upstream #1929: only the last replica turned unhealthy */
	struct node *nd = testnode_new(8);
	struct replica_rule rules[] = {{.name = "nvidia.com/gpu", .replicas = 4}};
	struct resource_options o = {.sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};
	struct resource_set *s = build_ok(nd, &o);

	assert_int_equal(resources_set_health(s, nd, nd->gpus[3].uuid, -1, -1, false, "XID 79"), 4);
	for (size_t i = 0; i < s->res[0].n_devices; i++) {
		const struct rdevice *d = &s->res[0].devices[i];
		assert_int_equal(d->healthy, d->gpu != 3);
		assert_string_equal(d->reason, d->gpu == 3 ? "XID 79" : "");
	}
	assert_int_equal(resources_set_health(s, nd, nd->gpus[3].uuid, -1, -1, false, "XID 48"), 0);
	assert_string_equal(s->res[0].devices[12].reason, "XID 48");
	assert_int_equal(resources_set_health(s, nd, nd->gpus[3].uuid, -1, -1, true, NULL), 4);
	assert_string_equal(s->res[0].devices[12].reason, "");
	assert_int_equal(resources_set_health(s, nd, "GPU-unknown", -1, -1, false, "x"), -ENOENT);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_health_mig(void **state)
{
	struct node *nd = testnode_new(2);
	struct replica_rule rules[] = {{.name = "nvidia.com/mig-1g.5gb", .replicas = 2}};
	struct resource_options o = {
	    .mig_strategy = MIG_STRATEGY_MIXED, .sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};
	testnode_mig(nd, 0, a100_mixed, 4);
	testnode_mig(nd, 1, a100_mixed, 4);
	struct resource_set *s = build_ok(nd, &o);
	const struct resource *small = resources_find(s, "nvidia.com/mig-1g.5gb");
	const struct resource *big = resources_find(s, "nvidia.com/mig-3g.20gb");

	/* an event attributed to GI 2 on GPU 0 = the second 1g.5gb: its two replicas only */
	assert_int_equal(resources_set_health(s, nd, nd->gpus[0].uuid, 2, 0, false, "XID 94"), 2);
	for (size_t i = 0; i < small->n_devices; i++) {
		const struct rdevice *d = &small->devices[i];
		assert_int_equal(d->healthy, !(d->gpu == 0 && d->mig == 1));
	}
	assert_true(big->devices[0].healthy);
	/* ci unknown (-1): every CI of that GI; already unhealthy, so no change */
	assert_int_equal(resources_set_health(s, nd, nd->gpus[0].uuid, 2, -1, false, "XID 94"), 0);
	/* whole GPU 1: its 1g.5gb x2 (4 replicas), 2g, 3g */
	assert_int_equal(resources_set_health(s, nd, nd->gpus[1].uuid, -1, -1, false, "XID 79"), 6);
	/* by MIG UUID: the 3g.20gb of GPU 0 */
	assert_int_equal(resources_set_health(s, nd, nd->gpus[0].migs[3].uuid, -1, -1, false, "XID 95"), 1);
	assert_false(big->devices[0].healthy);
	resource_set_free(s);

	/* strategy none: a MIG-attributed event still takes down the whole-GPU device holding it */
	struct resource_options none = {.mig_strategy = MIG_STRATEGY_NONE};
	s = build_ok(nd, &none);
	assert_int_equal(resources_set_health(s, nd, nd->gpus[1].uuid, 3, 0, false, "XID 94"), 1);
	assert_false(s->res[0].devices[1].healthy);
	assert_true(s->res[0].devices[0].healthy);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_lost_at_build(void **state)
{
	struct node *nd = testnode_new(3);
	nd->gpus[1].lost = true;
	struct resource_options o = {0};
	struct resource_set *s = build_ok(nd, &o);
	const struct resource *r = resources_find(s, "nvidia.com/gpu");
	assert_int_equal(r->n_devices, 3); /* capacity still shows it; allocatable drops */
	assert_false(r->devices[1].healthy);
	assert_non_null(strstr(r->devices[1].reason, "GPU_IS_LOST"));
	assert_true(r->devices[2].healthy);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_big(void **state)
{
	/* the ListAndWatch benchmark's shape: 8 GPUs x 7 MIG x 48 replicas */
	struct node *nd = testnode_new(8);
	for (size_t g = 0; g < 8; g++)
		testnode_mig(nd, g, a100_ones, 7);
	struct replica_rule rules[] = {{.name = "nvidia.com/gpu", .replicas = 48}};
	struct resource_options o = {
	    .mig_strategy = MIG_STRATEGY_SINGLE, .sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};
	struct resource_set *s = build_ok(nd, &o);
	assert_int_equal(s->res[0].n_devices, 8 * 7 * 48);
	assert_int_equal(resources_set_health(s, nd, nd->gpus[7].uuid, -1, -1, false, "x"), 7 * 48);
	resource_set_free(s);
	testnode_free(nd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_none),
	    cmocka_unit_test(test_single),
	    cmocka_unit_test(test_mixed),
	    cmocka_unit_test(test_time_slicing),
	    cmocka_unit_test(test_health_replicas),
	    cmocka_unit_test(test_health_mig),
	    cmocka_unit_test(test_lost_at_build),
	    cmocka_unit_test(test_big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
