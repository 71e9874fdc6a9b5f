/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet Registration client: one Register call per resource, all in flight at once on one
 * channel (kube/grpc_client.c), so registering every resource costs one round trip.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin.pb-c.h"
#include "kube/grpc_client.h"
#include "plugin/register.h"
#include "util/macro.h"

/* kubelet's API version string (deviceplugin/v1beta1 constants.go: Version = "v1beta1") */
#define DP_API_VERSION  "v1beta1"
#define REGISTER_METHOD "/v1beta1.Registration/Register"

/* The serialized RegisterRequest of r (malloc'd), NULL when out of memory. */
static uint8_t *pack_request(const struct plugin_registration *r, size_t *ret_len)
{
	V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	uint8_t *buf;
	size_t len;

	opts.get_preferred_allocation_available = r->preferred_allocation;
	req.version = (char *)DP_API_VERSION;
	req.endpoint = (char *)r->endpoint;
	req.resource_name = (char *)r->resource_name;
	req.options = &opts;
	len = v1beta1__register_request__get_packed_size(&req);
	buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	v1beta1__register_request__pack(&req, buf);
	*ret_len = len;
	return buf;
}

size_t plugin_register(const char *kubelet_socket, struct plugin_registration *regs, size_t n, int timeout_ms)
{
	_cleanup_free_ char *target = NULL;
	_cleanup_free_ struct grpc_unary *calls = calloc(n ? n : 1, sizeof(*calls));
	size_t failed = 0;

	if (!calls || asprintf(&target, "unix:%s", kubelet_socket) < 0) {
		for (size_t i = 0; i < n; i++)
			regs[i].result = gerr_set(&regs[i].err, ENOMEM, "out of memory");
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		calls[i].req = pack_request(&regs[i], &calls[i].req_len);
		calls[i].method = calls[i].req ? REGISTER_METHOD : NULL; /* no method: not sent */
	}
	grpc_unary_calls(target, calls, n, timeout_ms);
	for (size_t i = 0; i < n; i++) {
		struct plugin_registration *r = &regs[i];

		r->result = calls[i].result;
		r->err = calls[i].err;
		if (!calls[i].req)
			r->result = gerr_set(&r->err, ENOMEM, "Register of %s: out of memory", r->resource_name);
		else if (r->result < 0)
			gerr_prefix(&r->err, "Register of %s: ", r->resource_name);
		failed += r->result < 0;
		free((void *)calls[i].req);
		free(calls[i].resp);
	}
	return failed;
}
