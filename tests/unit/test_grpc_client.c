/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one gRPC status <-> errno map (src/kube/grpc_client.c) and the clients built on it: the
 * plugin's Registration client and the server's answers (src/kube/gsrv.c). The statuses are the
 * ones kubelet answers and reads (docs/reference/device-plugin.md §3): UNAVAILABLE while kubelet is
 * not listening (the plugin retries on -ECONNREFUSED), UNIMPLEMENTED for an RPC a peer does not
 * have, INVALID_ARGUMENT for a bad Allocate.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <grpc/status.h>

#include "kube/grpc_client.h"
#include "kube/gsrv.h"
#include "plugin/register.h"

static void test_status_to_errno(void **state)
{
	static const struct {
		int status, r;
	} rows[] = {
	    {GRPC_STATUS_OK, 0},
	    {GRPC_STATUS_CANCELLED, -ECANCELED},
	    {GRPC_STATUS_INVALID_ARGUMENT, -EINVAL},
	    {GRPC_STATUS_DEADLINE_EXCEEDED, -ETIMEDOUT},
	    {GRPC_STATUS_NOT_FOUND, -ENOENT},
	    {GRPC_STATUS_ALREADY_EXISTS, -EEXIST},
	    {GRPC_STATUS_PERMISSION_DENIED, -EACCES},
	    {GRPC_STATUS_RESOURCE_EXHAUSTED, -ENOSPC},
	    {GRPC_STATUS_FAILED_PRECONDITION, -EPROTO},
	    {GRPC_STATUS_UNIMPLEMENTED, -EOPNOTSUPP}, /* one answer for podres and register alike */
	    {GRPC_STATUS_UNAVAILABLE, -ECONNREFUSED},
	    {GRPC_STATUS_UNAUTHENTICATED, -EACCES},
	    {GRPC_STATUS_UNKNOWN, -EPROTO},
	    {GRPC_STATUS_ABORTED, -EPROTO},
	    {GRPC_STATUS_INTERNAL, -EPROTO},
	    {GRPC_STATUS_DATA_LOSS, -EPROTO},
	    {99, -EPROTO},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(grpc_status_to_errno(rows[i].status), rows[i].r);
}

static void test_status_from_errno(void **state)
{
	(void)state;
	assert_int_equal(grpc_status_from_errno(0), GRPC_STATUS_OK);
	assert_int_equal(grpc_status_from_errno(7), GRPC_STATUS_OK);
	assert_int_equal(grpc_status_from_errno(-EINVAL), GRPC_STATUS_INVALID_ARGUMENT);
	assert_int_equal(grpc_status_from_errno(-ENOMEM), GRPC_STATUS_RESOURCE_EXHAUSTED);
	assert_int_equal(grpc_status_from_errno(-ENOSPC), GRPC_STATUS_RESOURCE_EXHAUSTED);
	assert_int_equal(grpc_status_from_errno(-ESHUTDOWN), GRPC_STATUS_UNAVAILABLE);
	assert_int_equal(grpc_status_from_errno(-ECONNREFUSED), GRPC_STATUS_UNAVAILABLE);
	assert_int_equal(grpc_status_from_errno(-EOPNOTSUPP), GRPC_STATUS_UNIMPLEMENTED);
	assert_int_equal(grpc_status_from_errno(-EACCES), GRPC_STATUS_PERMISSION_DENIED);
	assert_int_equal(grpc_status_from_errno(-E2BIG), GRPC_STATUS_UNKNOWN);
	/* both directions are one table: a status a server answers reads back as the same status */
	for (int st = GRPC_STATUS_CANCELLED; st <= GRPC_STATUS_UNAUTHENTICATED; st++) {
		int r = grpc_status_to_errno(st);

		if (r != -EPROTO && st != GRPC_STATUS_UNAUTHENTICATED)
			assert_int_equal(grpc_status_from_errno(r), st);
	}
	assert_string_equal(grpc_status_name(GRPC_STATUS_INVALID_ARGUMENT), "INVALID_ARGUMENT");
	assert_string_equal(grpc_status_name(GRPC_STATUS_UNIMPLEMENTED), "UNIMPLEMENTED");
	assert_string_equal(grpc_status_name(99), "UNKNOWN");
}

/* A stand-in kubelet made of our own server: Register answers what its errno says. */
static int register_errno;
static unsigned register_calls;

static int h_register(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		      struct gerr *err)
{
	(void)data, (void)method, (void)in, (void)inlen;
	register_calls++;
	if (register_errno)
		return gerr_set(err, register_errno, "kubelet says no");
	*out = NULL;
	*outlen = 0; /* Empty */
	return 0;
}

static const struct gsrv_handler handler = {h_register, NULL};

static void serve(struct gsrv_group **g, const char *sock, bool with_register)
{
	static const struct gsrv_method methods[] = {{"/v1beta1.Registration/Register", false}};
	struct gerr err = {0};

	assert_int_equal(gsrv_group_new(g, &err), 0);
	assert_int_equal(gsrv_add(*g, sock, methods, with_register ? 1 : 0, &handler, NULL, NULL, &err), 0);
	assert_int_equal(gsrv_group_run(*g, &err), 0);
}

static void test_register(void **state)
{
	char dir[] = "/tmp/gpulet-grpc-XXXXXX", sock[64];
	struct plugin_registration regs[3] = {
	    {.endpoint = "a.sock", .resource_name = "nvidia.com/gpu"},
	    {.endpoint = "b.sock", .resource_name = "nvidia.com/mig-1g.10gb"},
	    {.endpoint = "c.sock", .resource_name = "nvidia.com/mig-2g.20gb"},
	};
	struct gsrv_group *g = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/kubelet.sock", dir);

	/* nobody listening: every entry -ECONNREFUSED, which the daemon retries on */
	assert_int_equal(plugin_register(sock, regs, 3, 20000), 3); /* fails fast; the deadline only bounds it */
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(regs[i].result, -ECONNREFUSED);
	assert_non_null(strstr(regs[1].err.msg, "Register of nvidia.com/mig-1g.10gb: "));

	/* a peer without the Registration service: UNIMPLEMENTED */
	serve(&g, sock, false);
	assert_int_equal(plugin_register(sock, regs, 1, 20000), 1);
	assert_int_equal(regs[0].result, -EOPNOTSUPP);
	assert_non_null(strstr(regs[0].err.msg, "status 12 (method not implemented by this device plugin)"));
	gsrv_group_free(g, 100);

	/* kubelet refuses, then accepts all three in one round trip */
	serve(&g, sock, true);
	register_errno = EINVAL;
	assert_int_equal(plugin_register(sock, regs, 3, 20000), 3);
	assert_int_equal(regs[2].result, -EINVAL);
	assert_non_null(strstr(regs[2].err.msg, "Register of nvidia.com/mig-2g.20gb: "));
	assert_non_null(strstr(regs[2].err.msg, "status 3 (kubelet says no)"));
	register_errno = 0;
	register_calls = 0;
	assert_int_equal(plugin_register(sock, regs, 3, 20000), 0);
	assert_int_equal(register_calls, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(regs[i].result, 0);
	gsrv_group_free(g, 100);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_status_to_errno),
	    cmocka_unit_test(test_status_from_errno),
	    cmocka_unit_test(test_register),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
