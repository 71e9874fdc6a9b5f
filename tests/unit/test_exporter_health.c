/* SPDX-License-Identifier: Apache-2.0 */
/* Exporter health from NVML's current state (src/exporter/conditions.c), on stub NVML answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "exporter/exporter.h"
#include "exporter/conditions.h"

/* What the stub NVML answers: the volatile DBE count, the remap state, and which calls exist. */
static struct {
	unsigned long long dbe_volatile;
	unsigned pending, failure;
	nvmlReturn_t ecc_ret, remap_ret;
} answer;

static nvmlReturn_t stub_ecc(nvmlDevice_t dev, nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter,
			     unsigned long long *ret)
{
	(void)dev;
	/* health reads the uncorrected, volatile counter and nothing else */
	*ret = type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED && counter == NVML_VOLATILE_ECC ? answer.dbe_volatile : 99;
	return answer.ecc_ret;
}

static nvmlReturn_t stub_remap(nvmlDevice_t dev, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failure)
{
	(void)dev;
	*corr = 5;
	*unc = 1;
	*pending = answer.pending;
	*failure = answer.failure;
	return answer.remap_ret;
}

static struct nvml stub_nvml(void)
{
	struct nvml nv;
	memset(&nv, 0, sizeof(nv));
	nv.device_get_total_ecc_errors = stub_ecc;
	nv.device_get_remapped_rows = stub_remap;
	memset(&answer, 0, sizeof(answer));
	return nv;
}

#define ALL_KNOWN ((1u << EXP_HEALTH_COND_COUNT) - 1)
#define BIT(c)    (1u << (c))

static void test_read_conditions(void **state)
{
	(void)state;
	struct nvml nv = stub_nvml();
	struct exp_health h = exp_health_read(&nv, NULL);
	assert_int_equal(h.known, ALL_KNOWN);
	assert_int_equal(h.bad, 0);

	answer.dbe_volatile = 2;
	h = exp_health_read(&nv, NULL);
	assert_int_equal(h.bad, BIT(EXP_HEALTH_DBE_VOLATILE));

	answer.dbe_volatile = 0;
	answer.pending = 1;
	h = exp_health_read(&nv, NULL);
	assert_int_equal(h.bad, BIT(EXP_HEALTH_ROW_REMAP_PENDING));

	answer.pending = 0;
	answer.failure = 1;
	h = exp_health_read(&nv, NULL);
	assert_int_equal(h.bad, BIT(EXP_HEALTH_ROW_REMAP_FAILURE));
}

/* A GPU without row remapping (pre-Ampere) or an old driver without the call: unknown, never bad. */
static void test_unsupported_is_unknown(void **state)
{
	(void)state;
	struct nvml nv = stub_nvml();
	answer.remap_ret = NVML_ERROR_NOT_SUPPORTED;
	answer.pending = answer.failure = 1;
	struct exp_health h = exp_health_read(&nv, NULL);
	assert_int_equal(h.known, BIT(EXP_HEALTH_DBE_VOLATILE));
	assert_int_equal(h.bad, 0);

	nv.device_get_total_ecc_errors = NULL;
	nv.device_get_remapped_rows = NULL;
	h = exp_health_read(&nv, NULL);
	assert_int_equal(h.known, 0);
	assert_int_equal(h.bad, 0);
	assert_string_equal(exp_health_cond_name(EXP_HEALTH_ROW_REMAP_PENDING), "row_remap_pending");
	assert_string_equal(exp_health_cond_name(EXP_HEALTH_COND_COUNT), "unknown");
}

static void test_ok_combines_events_and_state(void **state)
{
	(void)state;
	struct exp_gpu_state st;
	memset(&st, 0, sizeof(st));
	assert_true(exp_health_ok(&st));
	st.health.known = ALL_KNOWN;
	assert_true(exp_health_ok(&st));
	st.health.bad = BIT(EXP_HEALTH_ROW_REMAP_PENDING);
	assert_false(exp_health_ok(&st));
	st.health.bad = 0;
	st.lost = true;
	assert_false(exp_health_ok(&st));
	st.lost = false;
	st.xid_unhealthy = true;
	assert_false(exp_health_ok(&st));
	st.xid_unhealthy = false;
	st.dbe = true;
	assert_false(exp_health_ok(&st));
}

/* The sampler's update reaches the render: one line per condition NVML could read, 0 or 1. */
static void test_update_and_render(void **state)
{
	(void)state;
	struct node_gpu g;
	struct node n;
	memset(&g, 0, sizeof(g));
	memset(&n, 0, sizeof(n));
	snprintf(g.uuid, sizeof(g.uuid), "GPU-1bbbbbbb-1111-2222-3333-444444444444");
	snprintf(g.name, sizeof(g.name), "NVIDIA A100-SXM4-40GB");
	snprintf(n.driver_version, sizeof(n.driver_version), "550.54.15");
	n.gpus = &g;
	n.n_gpus = 1;
	struct exporter e;
	assert_int_equal(exporter_init(&e, &n, "node-a", NULL), 0);

	struct strbuf b = {0};
	exp_health_render(&b, &e);
	assert_int_equal(b.len, 0); /* nothing read yet: no series */

	struct nvml nv = stub_nvml();
	answer.pending = 1;
	exp_health_update(&e.gpus[0], &nv, NULL);
	assert_false(exp_health_ok(&e.gpus[0].st));
	exp_health_render(&b, &e);
	assert_non_null(strstr(b.s, "# TYPE gpulet_gpu_health_condition gauge\n"));
	assert_non_null(strstr(b.s, ",condition=\"row_remap_pending\"} 1\n"));
	assert_non_null(strstr(b.s, ",condition=\"dbe_volatile\"} 0\n"));
	assert_non_null(strstr(b.s, "UUID=\"GPU-1bbbbbbb-1111-2222-3333-444444444444\""));
	assert_non_null(strstr(b.s, "Hostname=\"node-a\""));

	/* after the GPU reset the condition reads 0 and the GPU is healthy again */
	answer.pending = 0;
	exp_health_update(&e.gpus[0], &nv, NULL);
	assert_true(exp_health_ok(&e.gpus[0].st));
	strbuf_free(&b);
	exporter_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_conditions),
	    cmocka_unit_test(test_unsupported_is_unknown),
	    cmocka_unit_test(test_ok_combines_events_and_state),
	    cmocka_unit_test(test_update_and_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
