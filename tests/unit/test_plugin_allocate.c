/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DevicePlugin service functions (src/plugin/dp.c) without sockets: an Allocate round trip
 * through protobuf-c bytes, and a deterministic fuzz smoke feeding random and mutated bytes to
 * every method: each call answers -errno whose gRPC status is OK or INVALID_ARGUMENT, never crashes (ASan/UBSan in the
 * sanitizer build).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <grpc/status.h>

#include "kube/grpc_client.h"
#include "plugin/dp.h"

static struct node_gpu gpus[2] = {
    {.index = 0, .minor = 0, .uuid = "GPU-aaaa", .numa_node = 0, .cc_major = 8},
    {.index = 1, .minor = 1, .uuid = "GPU-bbbb", .numa_node = 1, .cc_major = 8},
};
static struct node node = {.gpus = gpus, .n_gpus = 2, .driver_version = "550.54.15"};

struct fixture {
	struct plugin_config *cfg;
	struct resource_set *rs;
	struct dp_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct resource_options o;

	unsetenv("DEVICE_LIST_STRATEGY");
	unsetenv("DEVICE_ID_STRATEGY");
	unsetenv("CONFIG_FILE");
	assert_int_equal(config_load(NULL, &f->cfg, NULL), 0);
	config_resource_options(f->cfg, &o);
	assert_int_equal(resources_build(&node, &o, &f->rs, NULL), 0);
	f->ctx = (struct dp_ctx){.cfg = f->cfg, .node = &node, .res = &f->rs->res[0]};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	resource_set_free(f->rs);
	config_free(f->cfg);
	free(f);
	return 0;
}

static size_t pack_request(const char *const *ids, size_t n, uint8_t *buf)
{
	V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
	V1beta1__ContainerAllocateRequest cr = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
	V1beta1__ContainerAllocateRequest *crs[1] = {&cr};

	cr.devices_ids = (char **)ids;
	cr.n_devices_ids = n;
	req.container_requests = crs;
	req.n_container_requests = 1;
	return v1beta1__allocate_request__pack(&req, buf);
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	const char *ids[] = {"GPU-bbbb", "GPU-aaaa", "GPU-bbbb"};
	uint8_t in[256], *out = NULL;
	size_t inlen = pack_request(ids, 3, in), outlen = 0;
	struct gerr err = {0};
	V1beta1__AllocateResponse *resp;
	int r;

	assert_int_equal(dp_unary(&f->ctx, DP_ALLOCATE, in, inlen, &out, &outlen, &err), 0);
	resp = v1beta1__allocate_response__unpack(NULL, outlen, out);
	assert_non_null(resp);
	assert_int_equal(resp->n_container_responses, 1);
	assert_int_equal(resp->container_responses[0]->n_envs, 1);
	assert_string_equal(resp->container_responses[0]->envs[0]->key, "NVIDIA_VISIBLE_DEVICES");
	assert_string_equal(resp->container_responses[0]->envs[0]->value, "GPU-bbbb,GPU-aaaa");
	v1beta1__allocate_response__free_unpacked(resp, NULL);
	free(out);

	ids[1] = "GPU-zzzz";
	inlen = pack_request(ids, 3, in);
	out = NULL;
	r = dp_unary(&f->ctx, DP_ALLOCATE, in, inlen, &out, &outlen, &err);
	assert_int_equal(r, -EINVAL);
	assert_int_equal(grpc_status_from_errno(r), GRPC_STATUS_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "GPU-zzzz"));
	assert_null(out);
}

static void test_fuzz(void **state)
{
	struct fixture *f = *state;
	const char *ids[] = {"GPU-aaaa", "GPU-bbbb"};
	uint8_t base[256], buf[300];
	size_t baselen = pack_request(ids, 2, base);
	uint32_t seed = 777;

	for (int iter = 0; iter < 20000; iter++) {
		size_t len = baselen;
		uint8_t *out = NULL;
		size_t outlen = 0;
		struct gerr err = {0};
		unsigned method = (unsigned)iter % DP_N_METHODS;
		int st;

		memcpy(buf, base, baselen);
		seed = seed * 1103515245u + 12345u;
		if (iter % 3 == 0) { /* pure noise */
			len = (seed >> 8) % sizeof(buf);
			for (size_t i = 0; i < len; i++) {
				seed = seed * 1103515245u + 12345u;
				buf[i] = (uint8_t)(seed >> 16);
			}
		} else { /* a few flipped bytes of a valid request */
			for (int k = 0; k < 1 + iter % 3; k++) {
				seed = seed * 1103515245u + 12345u;
				buf[(seed >> 8) % len] ^= (uint8_t)(1u << ((seed >> 4) % 8));
			}
		}
		if (method == DP_LIST_AND_WATCH)
			continue; /* streaming: no request bytes */
		st = grpc_status_from_errno(dp_unary(&f->ctx, method, buf, len, &out, &outlen, &err));
		assert_true(st == GRPC_STATUS_OK || st == GRPC_STATUS_INVALID_ARGUMENT);
		if (st == GRPC_STATUS_OK)
			assert_true(out != NULL || outlen == 0);
		free(out);
	}
}

/*
 * Every refusal is -errno + gerr; the server answers the status of that errno (kube/grpc_client.c).
 * kubelet's device manager reads these statuses: pinned here so the wire does not drift.
 */
static void test_refusals(void **state)
{
	struct fixture *f = *state;
	const char *one[] = {"GPU-aaaa"};
	uint8_t in[256], *out = NULL, garbage[] = {0xff, 0xff, 0xff, 0x20};
	size_t inlen = pack_request(one, 1, in), outlen = 0;
	struct gerr err = {0};
	int r;

	r = dp_unary(&f->ctx, DP_ALLOCATE, garbage, sizeof(garbage), &out, &outlen, &err);
	assert_int_equal(grpc_status_from_errno(r), GRPC_STATUS_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "cannot decode AllocateRequest (4 bytes)");
	r = dp_unary(&f->ctx, DP_GET_PREFERRED, garbage, sizeof(garbage), &out, &outlen, &err);
	assert_int_equal(grpc_status_from_errno(r), GRPC_STATUS_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "cannot decode PreferredAllocationRequest (4 bytes)");
	r = dp_unary(&f->ctx, DP_ALLOCATE, NULL, 0, &out, &outlen, &err);
	assert_int_equal(grpc_status_from_errno(r), GRPC_STATUS_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "invalid request for nvidia.com/gpu: no container requests");
	r = dp_unary(&f->ctx, DP_N_METHODS + 3, in, inlen, &out, &outlen, &err);
	assert_int_equal(grpc_status_from_errno(r), GRPC_STATUS_UNIMPLEMENTED);
	f->ctx.empty = true;
	r = dp_unary(&f->ctx, DP_ALLOCATE, in, inlen, &out, &outlen, &err);
	assert_int_equal(grpc_status_from_errno(r), GRPC_STATUS_UNAVAILABLE);
	assert_string_equal(err.msg, "the device plugin is stopping");
	assert_null(out);
	/* and the NULL err of the -errno contract */
	f->ctx.empty = false;
	assert_int_equal(dp_unary(&f->ctx, DP_ALLOCATE, garbage, sizeof(garbage), &out, &outlen, NULL), -EINVAL);
	assert_int_equal(dp_unary(&f->ctx, DP_ALLOCATE, in, inlen, &out, &outlen, NULL), 0);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
