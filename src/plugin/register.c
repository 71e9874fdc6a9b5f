/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet Registration client, one unary call over C-core. Written here because
 * src/core/grpc_client.[ch] (the generic unary client) had not landed when this was written.
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
#include "macro.h"
#include "register.h"

/* kubelet's API version string (deviceplugin/v1beta1 constants.go: Version = "v1beta1") */
#define DP_API_VERSION "v1beta1"

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

int plugin_register(const char *kubelet_socket, const char *endpoint, const char *resource_name,
		    bool preferred_allocation, int timeout_ms, struct gerr *err)
{
	V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	_cleanup_free_ char *target = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	grpc_metadata_array init_md, trail_md;
	grpc_byte_buffer *send_bb, *recv_bb = NULL;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice(), method, sl;
	grpc_channel_credentials *creds;
	grpc_completion_queue *cq;
	grpc_channel *ch;
	grpc_call *call;
	grpc_op ops[6];
	grpc_event ev;
	gpr_timespec deadline;
	size_t len;
	int r;

	opts.get_preferred_allocation_available = preferred_allocation;
	req.version = (char *)DP_API_VERSION;
	req.endpoint = (char *)endpoint;
	req.resource_name = (char *)resource_name;
	req.options = &opts;
	len = v1beta1__register_request__get_packed_size(&req);
	buf = malloc(len ? len : 1);
	if (!buf || asprintf(&target, "unix:%s", kubelet_socket) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	v1beta1__register_request__pack(&req, buf);

	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	method = grpc_slice_from_static_string("/v1beta1.Registration/Register");
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL, deadline, NULL);

	sl = grpc_slice_from_copied_buffer((const char *)buf, len);
	send_bb = grpc_raw_byte_buffer_create(&sl, 1);
	grpc_slice_unref(sl);
	grpc_metadata_array_init(&init_md);
	grpc_metadata_array_init(&trail_md);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;

	if (grpc_call_start_batch(call, ops, ELEMENTSOF(ops), (void *)call, NULL) != GRPC_CALL_OK) {
		r = gerr_set(err, EIO, "cannot start the Register call to %s", kubelet_socket);
	} else {
		ev = grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		r = status_errno(ev.success ? status : GRPC_STATUS_UNAVAILABLE);
		if (r < 0) {
			char *d = grpc_slice_to_c_string(details);

			gerr_set(err, -r, "Register of %s at %s failed: gRPC status %d: %s", resource_name,
				 kubelet_socket, (int)status, d && *d ? d : "(no message)");
			gpr_free(d);
		}
	}

	grpc_call_unref(call);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&init_md);
	grpc_metadata_array_destroy(&trail_md);
	grpc_byte_buffer_destroy(send_bb);
	if (recv_bb)
		grpc_byte_buffer_destroy(recv_bb);
	grpc_channel_destroy(ch);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	return r;
}
