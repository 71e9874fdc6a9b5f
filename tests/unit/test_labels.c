/* SPDX-License-Identifier: Apache-2.0 */
/* GFD-compatible labels from hand-made nodes (golden files per fixture live in tests/golden/labels). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "labels/labels.h"

static struct node_mig migs[4];
static struct node_gpu gpus[2];
static struct node nd;

static void mig(struct node_mig *m, const char *profile, unsigned gi_slices, uint64_t mb, const char *uuid)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->profile, sizeof(m->profile), "%s", profile);
	snprintf(m->uuid, sizeof(m->uuid), "%s", uuid);
	m->gi_slices = m->ci_slices = gi_slices;
	m->memory_mb = mb;
}

/* Two A100-40GB; GPU 1 has MIG on with 1g.5gb ×3 + 3g.20gb ×1 unless uniform. */
static void a100_node(bool mig_on, bool uniform)
{
	memset(&nd, 0, sizeof(nd));
	memset(gpus, 0, sizeof(gpus));
	snprintf(nd.driver_version, sizeof(nd.driver_version), "550.54.15");
	nd.cuda_driver_version = 12040;
	for (unsigned i = 0; i < 2; i++) {
		gpus[i].index = i;
		snprintf(gpus[i].name, sizeof(gpus[i].name), "NVIDIA A100-SXM4-40GB");
		gpus[i].memory_total = 40960ull * 1048576;
		gpus[i].cc_major = 8;
		gpus[i].cc_minor = 0;
		gpus[i].mig_capable = true;
	}
	mig(&migs[0], "1g.5gb", 1, 4864, "MIG-0");
	mig(&migs[1], "1g.5gb", 1, 4864, "MIG-1");
	mig(&migs[2], "1g.5gb", 1, 4864, "MIG-2");
	if (uniform)
		mig(&migs[3], "1g.5gb", 1, 4864, "MIG-3");
	else
		mig(&migs[3], "3g.20gb", 3, 19968, "MIG-3");
	gpus[1].mig_enabled = mig_on;
	gpus[1].migs = mig_on ? migs : NULL;
	gpus[1].n_migs = mig_on ? 4 : 0;
	nd.gpus = gpus;
	nd.n_gpus = 2;
}

static struct label_set *build(const struct labels_options *o)
{
	struct label_set *s = NULL;
	struct gerr err = {0};
	assert_int_equal(labels_build(&nd, o, &s, &err), 0);
	return s;
}

#define L(key) labels_get(s, "nvidia.com/" key)

static void test_plain_gpus(void **state)
{
	a100_node(false, false);
	struct labels_options o = {.timestamp = true, .now = 1724632719, .machine = "DGX A100 (x)"};
	_cleanup_(label_set_freep) struct label_set *s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB");
	assert_string_equal(L("gpu.count"), "2");
	assert_string_equal(L("gpu.memory"), "40960");
	assert_string_equal(L("gpu.family"), "ampere");
	assert_string_equal(L("gpu.compute.major"), "8");
	assert_string_equal(L("gpu.compute.minor"), "0");
	assert_string_equal(L("gpu.replicas"), "1");
	assert_string_equal(L("gpu.sharing-strategy"), "none");
	assert_string_equal(L("gpu.machine"), "DGX-A100-x");
	assert_string_equal(L("cuda.driver-version.full"), "550.54.15");
	assert_string_equal(L("cuda.driver-version.major"), "550");
	assert_string_equal(L("cuda.driver-version.minor"), "54");
	assert_string_equal(L("cuda.driver-version.revision"), "15");
	assert_string_equal(L("cuda.driver.rev"), "15");
	assert_string_equal(L("cuda.runtime-version.full"), "12.4");
	assert_string_equal(L("cuda.runtime-version.major"), "12");
	assert_string_equal(L("cuda.runtime-version.minor"), "4");
	assert_string_equal(L("mig.capable"), "true");
	assert_string_equal(L("gfd.timestamp"), "1724632719");
	assert_null(L("mig.strategy")); /* only when not none */
	assert_null(labels_get(s, "gpu-type"));
	for (size_t i = 1; i < s->n; i++) /* sorted, unique keys */
		assert_true(strcmp(s->v[i - 1].key, s->v[i].key) < 0);
}

static void test_mixed(void **state)
{
	a100_node(true, false);
	struct labels_options o = {.mig_strategy = MIG_STRATEGY_MIXED};
	_cleanup_(label_set_freep) struct label_set *s = build(&o);
	assert_string_equal(L("mig.strategy"), "mixed");
	assert_string_equal(L("mig-1g.5gb.count"), "3");
	assert_string_equal(L("mig-1g.5gb.memory"), "4864");
	assert_string_equal(L("mig-1g.5gb.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
	assert_string_equal(L("mig-1g.5gb.slices.gi"), "1");
	assert_string_equal(L("mig-1g.5gb.replicas"), "1");
	assert_string_equal(L("mig-3g.20gb.count"), "1");
	assert_string_equal(L("mig-3g.20gb.slices.ci"), "3");
	assert_string_equal(L("gpu.count"), "1"); /* GPUs advertised whole: the MIG one is not */
	assert_null(L("gfd.timestamp"));
}

static void test_single_valid_and_invalid(void **state)
{
	a100_node(true, true);
	gpus[0].mig_enabled = true; /* single needs every GPU in MIG mode */
	gpus[0].migs = &migs[3];
	gpus[0].n_migs = 1;
	gpus[1].n_migs = 3;
	struct labels_options o = {.mig_strategy = MIG_STRATEGY_SINGLE};
	struct label_set *s = build(&o);
	assert_string_equal(L("mig.strategy"), "single");
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
	assert_string_equal(L("gpu.count"), "4");
	assert_string_equal(L("gpu.memory"), "4864");
	assert_string_equal(L("gpu.slices.gi"), "1");
	label_set_free(s);

	a100_node(true, false); /* two profiles, and GPU 0 not in MIG mode */
	s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
	assert_string_equal(L("gpu.count"), "0");
	label_set_free(s);

	a100_node(false, false); /* single with no MIG at all: plain GPU labels */
	s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB");
	assert_string_equal(L("gpu.count"), "2");
	label_set_free(s);
}

static void test_sharing(void **state)
{
	a100_node(false, false);
	struct labels_options o = {.sharing = SHARING_TIME_SLICING, .replicas = 4};
	struct label_set *s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-SHARED");
	assert_string_equal(L("gpu.replicas"), "4");
	assert_string_equal(L("gpu.sharing-strategy"), "time-slicing");
	label_set_free(s);
	o.rename_by_default = true; /* resource nvidia.com/gpu.shared: labels move, no -SHARED */
	s = build(&o);
	assert_null(L("gpu.replicas"));
	assert_string_equal(L("gpu.shared.product"), "NVIDIA-A100-SXM4-40GB");
	assert_string_equal(L("gpu.shared.replicas"), "4");
	label_set_free(s);
	o.rename_by_default = false;
	o.sharing = SHARING_MPS;
	s = build(&o);
	assert_string_equal(L("mps.capable"), "true");
	assert_string_equal(L("gpu.sharing-strategy"), "mps");
	label_set_free(s);
}

static void test_custom_labels(void **state)
{
	a100_node(true, false);
	struct labels_options o = {.gpu_type = "auto", .gpu_mig = true};
	struct label_set *s = build(&o);
	assert_string_equal(labels_get(s, "gpu-type"), "a100");
	assert_string_equal(labels_get(s, "gpu-mig"), "enabled");
	label_set_free(s);
	snprintf(gpus[0].name, sizeof(gpus[0].name), "Tesla T4");
	a100_node(false, false);
	snprintf(gpus[0].name, sizeof(gpus[0].name), "Tesla T4");
	s = build(&o);
	assert_string_equal(labels_get(s, "gpu-type"), "t4");
	assert_string_equal(labels_get(s, "gpu-mig"), "disabled");
	label_set_free(s);
	o.gpu_type = "my type!";
	s = build(&o);
	assert_string_equal(labels_get(s, "gpu-type"), "my-type");
	label_set_free(s);
}

static void test_family_table(void **state)
{
	assert_string_equal(labels_gpu_family(7, 0), "volta");
	assert_string_equal(labels_gpu_family(7, 5), "turing");
	assert_string_equal(labels_gpu_family(8, 6), "ampere");
	assert_string_equal(labels_gpu_family(8, 9), "ada-lovelace");
	assert_string_equal(labels_gpu_family(9, 0), "hopper");
	assert_string_equal(labels_gpu_family(10, 0), "blackwell");
	assert_string_equal(labels_gpu_family(12, 0), "blackwell");
	assert_string_equal(labels_gpu_family(-1, -1), "undefined");
}

static void test_no_gpu_and_format(void **state)
{
	memset(&nd, 0, sizeof(nd));
	snprintf(nd.driver_version, sizeof(nd.driver_version), "535.104.05");
	struct labels_options o = {0};
	_cleanup_(label_set_freep) struct label_set *s = build(&o);
	assert_string_equal(L("cuda.driver-version.revision"), "05");
	assert_null(L("gpu.count"));
	_cleanup_free_ char *text = NULL;
	assert_int_equal(labels_format(s, &text), 0);
	assert_non_null(strstr(text, "\nnvidia.com/cuda.driver-version.full=535.104.05\n"));
	assert_true(text[0] == '#');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_gpus),
	    cmocka_unit_test(test_mixed),
	    cmocka_unit_test(test_single_valid_and_invalid),
	    cmocka_unit_test(test_sharing),
	    cmocka_unit_test(test_custom_labels),
	    cmocka_unit_test(test_family_table),
	    cmocka_unit_test(test_no_gpu_and_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
