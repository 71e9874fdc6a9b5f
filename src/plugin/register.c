/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet Registration client: unary calls over C-core. Written here because
 * src/core/grpc_client.[ch] (the generic unary client) had not landed when this was written,
 * and because registering every resource in one round trip needs several calls in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "deviceplugin.pb-c.h"
#include "util/macro.h"
#include "plugin/register.h"

/* kubelet's API version string (deviceplugin/v1beta1 constants.go: Version = "v1beta1") */
#define DP_API_VERSION  "v1beta1"
#define REGISTER_METHOD "/v1beta1.Registration/Register"

struct rcall {
	grpc_call *call;
	grpc_metadata_array init_md, trail_md;
	grpc_byte_buffer *send_bb, *recv_bb;
	grpc_status_code status;
	grpc_slice details;
	bool started;
};

static int status_errno(grpc_status_code st)
{
	switch (st) {
	case GRPC_STATUS_OK:
		return 0;
	case GRPC_STATUS_UNAVAILABLE:
		return -ECONNREFUSED;
	case GRPC_STATUS_DEADLINE_EXCEEDED:
		return -ETIMEDOUT;
	case GRPC_STATUS_UNIMPLEMENTED:
		return -EPROTONOSUPPORT;
	default:
		return -EPROTO;
	}
}

static grpc_byte_buffer *pack_request(const struct plugin_registration *r)
{
	V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	_cleanup_free_ uint8_t *buf = NULL;
	grpc_byte_buffer *bb;
	grpc_slice sl;
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
	sl = grpc_slice_from_copied_buffer((const char *)buf, len);
	bb = grpc_raw_byte_buffer_create(&sl, 1);
	grpc_slice_unref(sl);
	return bb;
}

static bool start_call(grpc_channel *ch, grpc_completion_queue *cq, gpr_timespec deadline, struct rcall *c,
		       const struct plugin_registration *r)
{
	grpc_op ops[6];

	c->details = grpc_empty_slice();
	c->status = GRPC_STATUS_UNKNOWN;
	grpc_metadata_array_init(&c->init_md);
	grpc_metadata_array_init(&c->trail_md);
	c->send_bb = pack_request(r);
	if (!c->send_bb)
		return false;
	c->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					   grpc_slice_from_static_string(REGISTER_METHOD), NULL, deadline, NULL);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = c->send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &c->recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &c->trail_md;
	ops[5].data.recv_status_on_client.status = &c->status;
	ops[5].data.recv_status_on_client.status_details = &c->details;
	c->started = grpc_call_start_batch(c->call, ops, ELEMENTSOF(ops), c, NULL) == GRPC_CALL_OK;
	return c->started;
}

static void rcall_release(struct rcall *c)
{
	if (c->call)
		grpc_call_unref(c->call);
	grpc_slice_unref(c->details);
	grpc_metadata_array_destroy(&c->init_md);
	grpc_metadata_array_destroy(&c->trail_md);
	if (c->send_bb)
		grpc_byte_buffer_destroy(c->send_bb);
	if (c->recv_bb)
		grpc_byte_buffer_destroy(c->recv_bb);
}

size_t plugin_register(const char *kubelet_socket, struct plugin_registration *regs, size_t n, int timeout_ms)
{
	_cleanup_free_ char *target = NULL;
	_cleanup_free_ struct rcall *calls = calloc(n ? n : 1, sizeof(*calls));
	grpc_channel_credentials *creds;
	grpc_completion_queue *cq;
	grpc_channel *ch;
	gpr_timespec deadline;
	size_t pending = 0, failed = 0;

	if (!calls || asprintf(&target, "unix:%s", kubelet_socket) < 0) {
		for (size_t i = 0; i < n; i++)
			regs[i].result = gerr_set(&regs[i].err, ENOMEM, "out of memory");
		return n;
	}
	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_next(NULL);
	deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));

	for (size_t i = 0; i < n; i++) {
		if (start_call(ch, cq, deadline, &calls[i], &regs[i]))
			pending++;
		else
			regs[i].result =
			    gerr_set(&regs[i].err, EIO, "cannot start the Register call to %s", kubelet_socket);
	}
	while (pending > 0) {
		grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct rcall *c = ev.tag;
		struct plugin_registration *r;

		if (ev.type != GRPC_OP_COMPLETE)
			break;
		r = &regs[c - calls];
		r->result = status_errno(ev.success ? c->status : GRPC_STATUS_UNAVAILABLE);
		if (r->result < 0) {
			char *d = grpc_slice_to_c_string(c->details);

			gerr_set(&r->err, -r->result, "Register of %s at %s failed: gRPC status %d: %s",
				 r->resource_name, kubelet_socket, (int)c->status, d && *d ? d : "(no message)");
			gpr_free(d);
		}
		pending--;
	}
	for (size_t i = 0; i < n; i++) {
		failed += regs[i].result < 0;
		rcall_release(&calls[i]);
	}
	grpc_channel_destroy(ch);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	return failed;
}
