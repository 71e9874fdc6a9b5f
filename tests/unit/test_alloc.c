/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/alloc.h"
#include "health_testnode.h"

static struct resource_set *build(const struct node *nd, const struct resource_options *o)
{
	struct resource_set *s = NULL;
	struct gerr err = {0};
	if (resources_build(nd, o, &s, &err) < 0)
		fail_msg("resources_build: %s", err.msg);
	return s;
}

/* All device IDs of r as an "available" list. */
static const char **all_ids(const struct resource *r)
{
	const char **ids = calloc(r->n_devices + 1, sizeof(*ids));
	for (size_t i = 0; i < r->n_devices; i++)
		ids[i] = r->devices[i].id;
	return ids;
}

static const char **pick(const struct node *nd, const struct resource *r, enum replica_policy pol,
			 const char *const *avail, size_t n_avail, const char *const *must, size_t n_must, size_t size)
{
	const char **out = NULL;
	struct gerr err = {0};
	int rc = alloc_preferred(nd, r, pol, avail, n_avail, must, n_must, size, &out, &err);
	if (rc < 0)
		fail_msg("alloc_preferred: %d %s", rc, err.msg);
	/* whatever the policy: distinct, known, every must included */
	for (size_t i = 0; i < size; i++) {
		assert_non_null(resource_find_device(r, out[i]));
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(out[i], out[j]);
	}
	for (size_t m = 0; m < n_must; m++) {
		size_t i;
		for (i = 0; i < size && !streq(out[i], must[m]); i++)
			;
		if (i == size)
			fail_msg("must-include %s missing", must[m]);
	}
	return out;
}

static unsigned gpu_of(const struct resource *r, const char *id)
{
	return resource_find_device(r, id)->gpu;
}

static int set_score(const struct node *nd, const struct resource *r, const char **ids, size_t k)
{
	int s = 0;
	for (size_t i = 0; i < k; i++)
		for (size_t j = i + 1; j < k; j++)
			s += alloc_pair_score(nd, gpu_of(r, ids[i]), gpu_of(r, ids[j]));
	return s;
}

/* 8 GPUs: NUMA halves (0-3, 4-7); NVLink 0-5 x4 and 1-2 x2. */
static struct node *ring_node(void)
{
	struct node *nd = testnode_new(8);
	for (size_t a = 0; a < 8; a++)
		for (size_t b = a + 1; b < 8; b++)
			testnode_link(nd, a, b, 0, (a < 4) == (b < 4) ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM);
	testnode_link(nd, 0, 5, 4, NVML_TOPOLOGY_SYSTEM);
	testnode_link(nd, 1, 2, 2, NVML_TOPOLOGY_NODE);
	return nd;
}

static void test_pair_score(void **state)
{
	struct node *nd = testnode_new(4);
	testnode_link(nd, 0, 1, 12, NVML_TOPOLOGY_SINGLE);
	testnode_link(nd, 0, 2, 0, NVML_TOPOLOGY_HOSTBRIDGE);
	testnode_link(nd, 0, 3, 0, NVML_TOPOLOGY_INTERNAL);
	assert_int_equal(alloc_pair_score(nd, 0, 1), 1250);
	assert_int_equal(alloc_pair_score(nd, 1, 0), 1250);
	assert_int_equal(alloc_pair_score(nd, 0, 2), 30);
	assert_int_equal(alloc_pair_score(nd, 0, 3), 60);
	assert_int_equal(alloc_pair_score(nd, 1, 2), 0); /* unknown level */
	assert_int_equal(alloc_pair_score(nd, 0, 0), 0);
	assert_int_equal(alloc_pair_score(nd, 0, 9), 0);
	testnode_free(nd);
}

static void test_topology_choice(void **state)
{
	struct node *nd = ring_node();
	struct resource_options o = {0};
	struct resource_set *s = build(nd, &o);
	const struct resource *r = &s->res[0];
	const char **avail = all_ids(r);
	const char **out;

	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 2);
	assert_string_equal(out[0], nd->gpus[0].uuid);
	assert_string_equal(out[1], nd->gpus[5].uuid);
	free(out);

	const char *must[] = {nd->gpus[1].uuid};
	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, must, 1, 2);
	assert_string_equal(out[0], nd->gpus[1].uuid);
	assert_string_equal(out[1], nd->gpus[2].uuid);
	free(out);

	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 4);
	unsigned got = 0;
	for (int i = 0; i < 4; i++)
		got |= 1u << gpu_of(r, out[i]);
	assert_int_equal(got, (1u << 0) | (1u << 1) | (1u << 2) | (1u << 5));
	free(out);

	/* size == all and size 0 */
	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 8);
	free(out);
	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 0);
	free(out);
	free(avail);
	resource_set_free(s);
	testnode_free(nd);
}

/* The exact search finds the true optimum: compare with brute force on random topologies. */
static void test_exact_is_optimal(void **state)
{
	uint32_t seed = 12345;
	for (int round = 0; round < 40; round++) {
		struct node *nd = testnode_new(8);
		for (size_t a = 0; a < 8; a++)
			for (size_t b = a + 1; b < 8; b++) {
				seed = seed * 1103515245 + 12345;
				static const int levels[] = {0, 10, 20, 30, 40, 50};
				testnode_link(nd, a, b, (seed >> 16) % 3 == 0 ? (seed >> 20) % 5 : 0,
					      levels[(seed >> 8) % 6]);
			}
		struct resource_options o = {0};
		struct resource_set *s = build(nd, &o);
		const struct resource *r = &s->res[0];
		const char **avail = all_ids(r);
		size_t k = 2 + (size_t)round % 5;
		const char **out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, k);
		int best = -1;
		for (unsigned mask = 0; mask < 256; mask++) {
			if ((size_t)__builtin_popcount(mask) != k)
				continue;
			int sc = 0;
			for (unsigned a = 0; a < 8; a++)
				for (unsigned b = a + 1; b < 8; b++)
					if ((mask >> a & 1) && (mask >> b & 1))
						sc += alloc_pair_score(nd, a, b);
			best = MAX(best, sc);
		}
		if (set_score(nd, r, out, k) != best)
			fail_msg("round %d k=%zu: got score %d, optimum %d", round, k, set_score(nd, r, out, k), best);
		free(out);
		free(avail);
		resource_set_free(s);
		testnode_free(nd);
	}
}

static void test_lost_gpu_never_breaks(void **state)
{
	/* upstream #2038: GPU 0 fell off the bus; allocation keeps serving the others */
	struct node *nd = ring_node();
	struct resource_options o = {0};
	nd->gpus[0].lost = true;
	struct resource_set *s = build(nd, &o);
	const struct resource *r = &s->res[0];
	const char **avail = all_ids(r); /* kubelet may still offer it in a race */
	const char **out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 2);
	assert_string_equal(out[0], nd->gpus[1].uuid);
	assert_string_equal(out[1], nd->gpus[2].uuid);
	free(out);

	/* marked unhealthy later (XID) the same way */
	resource_set_free(s);
	nd->gpus[0].lost = false;
	s = build(nd, &o);
	r = &s->res[0];
	free(avail);
	avail = all_ids(r);
	assert_int_equal(resources_set_health(s, nd, nd->gpus[1].uuid, -1, -1, false, "XID 79"), 1);
	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 7);
	for (int i = 0; i < 7; i++)
		assert_string_not_equal(out[i], nd->gpus[1].uuid);
	free(out);
	/* only unhealthy left to fill: still an answer, not an error */
	const char *two[] = {nd->gpus[1].uuid, nd->gpus[3].uuid, "GPU-not-ours"};
	out = pick(nd, r, REPLICA_DISTRIBUTED, two, 3, NULL, 0, 2);
	free(out);
	free(avail);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_errors(void **state)
{
	struct node *nd = ring_node();
	struct resource_options o = {0};
	struct resource_set *s = build(nd, &o);
	const struct resource *r = &s->res[0];
	const char **avail = all_ids(r);
	const char **out = (const char **)0x1;
	struct gerr err = {0};
	const char *bad[] = {"GPU-nope"};
	const char *three[] = {avail[0], avail[1], avail[2]};

	assert_int_equal(alloc_preferred(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, 9, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "9 devices requested"));
	assert_int_equal(alloc_preferred(nd, r, REPLICA_DISTRIBUTED, avail, 8, bad, 1, 2, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "GPU-nope"));
	assert_int_equal(alloc_preferred(nd, r, REPLICA_DISTRIBUTED, avail, 8, three, 3, 2, &out, &err), -EINVAL);
	assert_ptr_equal(out, (const char **)0x1);
	free(avail);
	resource_set_free(s);
	testnode_free(nd);
}

static int count_gpu(const struct resource *r, const char **out, size_t k, unsigned g)
{
	int c = 0;
	for (size_t i = 0; i < k; i++)
		c += gpu_of(r, out[i]) == g;
	return c;
}

static void test_replicas(void **state)
{
	struct node *nd = testnode_new(4);
	struct replica_rule rules[] = {{.name = "nvidia.com/gpu", .replicas = 4}};
	struct resource_options o = {.sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};
	struct resource_set *s = build(nd, &o);
	const struct resource *r = &s->res[0];
	const char **avail = all_ids(r);
	const char **out;

	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 16, NULL, 0, 4);
	for (unsigned g = 0; g < 4; g++)
		assert_int_equal(count_gpu(r, out, 4, g), 1);
	free(out);
	out = pick(nd, r, REPLICA_PACKED, avail, 16, NULL, 0, 4);
	assert_int_equal(count_gpu(r, out, 4, gpu_of(r, out[0])), 4);
	free(out);

	/* GPU 0 has 3 of 4 replicas handed out (only ::3 is available); GPU 1 has 1 out */
	const char **part = calloc(16, sizeof(*part));
	size_t np = 0;
	for (size_t i = 0; i < r->n_devices; i++) {
		const struct rdevice *d = &r->devices[i];
		if ((d->gpu == 0 && d->replica < 3) || (d->gpu == 1 && d->replica == 0))
			continue;
		part[np++] = d->id;
	}
	out = pick(nd, r, REPLICA_DISTRIBUTED, part, np, NULL, 0, 2);
	assert_int_equal(count_gpu(r, out, 2, 0), 0);
	assert_int_equal(count_gpu(r, out, 2, 1), 0); /* GPUs 2 and 3 have none out */
	free(out);
	out = pick(nd, r, REPLICA_PACKED, part, np, NULL, 0, 2);
	assert_int_equal(count_gpu(r, out, 2, 0), 1); /* fill GPU 0 first, then GPU 1 */
	assert_int_equal(count_gpu(r, out, 2, 1), 1);
	free(out);

	/* unhealthy GPU 2: its replicas are skipped while others remain */
	assert_int_equal(resources_set_health(s, nd, nd->gpus[2].uuid, -1, -1, false, "XID 48"), 4);
	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 16, NULL, 0, 12);
	assert_int_equal(count_gpu(r, out, 12, 2), 0);
	free(out);
	free(part);
	free(avail);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_mig_greedy(void **state)
{
	static const char *const profiles[] = {"1g.5gb", "1g.5gb", "1g.5gb"};
	struct node *nd = testnode_new(2);
	testnode_mig(nd, 0, profiles, 3);
	testnode_mig(nd, 1, profiles, 3);
	struct resource_options o = {.mig_strategy = MIG_STRATEGY_MIXED};
	struct resource_set *s = build(nd, &o);
	const struct resource *r = resources_find(s, "nvidia.com/mig-1g.5gb");
	const char **avail = all_ids(r);
	assert_int_equal(resources_set_health(s, nd, nd->gpus[0].uuid, 1, 0, false, "XID 94"), 1);
	const char **out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 6, NULL, 0, 5);
	for (int i = 0; i < 5; i++)
		assert_string_not_equal(out[i], nd->gpus[0].migs[0].uuid);
	free(out);
	free(avail);
	resource_set_free(s);
	testnode_free(nd);
}

static void test_large_greedy(void **state)
{
	/* 40 GPUs, size 20: C(40,20) is far too many subsets; the greedy path still answers */
	struct node *nd = testnode_new(40);
	for (size_t a = 0; a < 40; a++)
		for (size_t b = a + 1; b < 40; b++)
			testnode_link(nd, a, b, (a / 4 == b / 4) ? 2 : 0, NVML_TOPOLOGY_SYSTEM);
	struct resource_options o = {0};
	struct resource_set *s = build(nd, &o);
	const struct resource *r = &s->res[0];
	const char **avail = all_ids(r);
	const char *must[] = {avail[9]};
	const char **out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 40, must, 1, 4);
	/* 9 is in NVLink group 8..11: greedy completes that group */
	for (int i = 0; i < 4; i++)
		assert_int_equal(gpu_of(r, out[i]) / 4, 2);
	free(out);
	out = pick(nd, r, REPLICA_DISTRIBUTED, avail, 40, NULL, 0, 20);
	free(out);
	free(avail);
	resource_set_free(s);
	testnode_free(nd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pair_score),       cmocka_unit_test(test_topology_choice),
	    cmocka_unit_test(test_exact_is_optimal), cmocka_unit_test(test_lost_gpu_never_breaks),
	    cmocka_unit_test(test_errors),           cmocka_unit_test(test_replicas),
	    cmocka_unit_test(test_mig_greedy),       cmocka_unit_test(test_large_greedy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
