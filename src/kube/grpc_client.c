/* SPDX-License-Identifier: Apache-2.0 */
/* Unary gRPC client over C-core; see grpc_client.h. Facts: docs/reference/real-peers.md §A. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "kube/grpc_client.h"

static pthread_once_t grpc_once = PTHREAD_ONCE_INIT;

static void grpc_global_init(void)
{
	/* grpc logs to stderr on its own; only errors should reach a daemon's log. */
	gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
	grpc_init(); /* never shut down: other threads (plugin server) share the library state */
}

/* grpc_status_code → errno: one row per status a kubelet peer can answer (grpc/status.h). */
static const struct {
	grpc_status_code status;
	int errnum;
} status_errno[] = {
    {GRPC_STATUS_CANCELLED, ECANCELED},         {GRPC_STATUS_INVALID_ARGUMENT, EINVAL},
    {GRPC_STATUS_DEADLINE_EXCEEDED, ETIMEDOUT}, {GRPC_STATUS_NOT_FOUND, ENOENT},
    {GRPC_STATUS_ALREADY_EXISTS, EEXIST},       {GRPC_STATUS_PERMISSION_DENIED, EACCES},
    {GRPC_STATUS_RESOURCE_EXHAUSTED, ENOSPC},   {GRPC_STATUS_FAILED_PRECONDITION, EPROTO},
    {GRPC_STATUS_UNIMPLEMENTED, EOPNOTSUPP},    {GRPC_STATUS_UNAVAILABLE, ECONNREFUSED},
    {GRPC_STATUS_UNAUTHENTICATED, EACCES},
};

int grpc_status_to_errno(int status)
{
	if (status == GRPC_STATUS_OK)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(status_errno); i++)
		if ((int)status_errno[i].status == status)
			return -status_errno[i].errnum;
	return -EPROTO;
}

/* Everything one call owns, released in one place whatever path we leave by. */
struct unary_call {
	grpc_channel *channel;
	grpc_completion_queue *cq;
	grpc_call *call;
	grpc_byte_buffer *send;
	grpc_byte_buffer *recv;
	grpc_metadata_array initial_md;
	grpc_metadata_array trailing_md;
	grpc_slice details;
};

static void unary_call_release(struct unary_call *u)
{
	if (u->call)
		grpc_call_unref(u->call);
	if (u->cq) {
		grpc_completion_queue_shutdown(u->cq);
		/* a pluck queue must be drained to its shutdown event before destroy */
		while (grpc_completion_queue_pluck(u->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(u->cq);
	}
	if (u->channel)
		grpc_channel_destroy(u->channel);
	if (u->send)
		grpc_byte_buffer_destroy(u->send);
	if (u->recv)
		grpc_byte_buffer_destroy(u->recv);
	grpc_metadata_array_destroy(&u->initial_md);
	grpc_metadata_array_destroy(&u->trailing_md);
	grpc_slice_unref(u->details);
}

static int copy_response(grpc_byte_buffer *bb, void **ret_resp, size_t *ret_len)
{
	grpc_byte_buffer_reader reader;
	if (!grpc_byte_buffer_reader_init(&reader, bb))
		return -EPROTO;
	grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	size_t len = GRPC_SLICE_LENGTH(all);
	void *copy = NULL;
	if (len > 0) {
		copy = malloc(len);
		if (!copy) {
			grpc_slice_unref(all);
			return -ENOMEM;
		}
		memcpy(copy, GRPC_SLICE_START_PTR(all), len);
	}
	grpc_slice_unref(all);
	*ret_resp = copy;
	*ret_len = len;
	return 0;
}

int grpc_unary_call(const char *target, const char *method, const void *req, size_t req_len, void **ret_resp,
		    size_t *ret_len, int timeout_ms, struct gerr *err)
{
	if (!target || !method || (!req && req_len) || !ret_resp || !ret_len || timeout_ms <= 0)
		return gerr_set(err, EINVAL, "grpc_unary_call: invalid arguments");
	pthread_once(&grpc_once, grpc_global_init);

	struct unary_call u = {.details = grpc_empty_slice()};
	grpc_metadata_array_init(&u.initial_md);
	grpc_metadata_array_init(&u.trailing_md);
	int r;

	grpc_channel_credentials *creds = grpc_insecure_credentials_create();
	u.channel = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	u.cq = grpc_completion_queue_create_for_pluck(NULL);
	gpr_timespec deadline =
	    gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	grpc_slice method_slice = grpc_slice_from_copied_string(method);
	u.call = grpc_channel_create_call(u.channel, NULL, GRPC_PROPAGATE_DEFAULTS, u.cq, method_slice, NULL, deadline,
					  NULL);
	grpc_slice_unref(method_slice);
	grpc_slice payload = grpc_slice_from_copied_buffer(req ? req : "", req_len);
	u.send = grpc_raw_byte_buffer_create(&payload, 1);
	grpc_slice_unref(payload);
	if (!u.channel || !u.cq || !u.call || !u.send) {
		r = gerr_set(err, ENOMEM, "gRPC %s on %s: cannot create the call", method, target);
		goto out;
	}

	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_op ops[6];
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = u.send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &u.initial_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &u.recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &u.trailing_md;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &u.details;

	void *tag = &u;
	if (grpc_call_start_batch(u.call, ops, ELEMENTSOF(ops), tag, NULL) != GRPC_CALL_OK) {
		r = gerr_set(err, EPROTO, "gRPC %s on %s: cannot start the call", method, target);
		goto out;
	}
	/* The deadline bounds the batch; it always completes (with DEADLINE_EXCEEDED at worst). */
	grpc_event ev = grpc_completion_queue_pluck(u.cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		r = gerr_set(err, EPROTO, "gRPC %s on %s: completion queue failed", method, target);
		goto out;
	}
	if (status != GRPC_STATUS_OK) {
		char *text = grpc_slice_to_c_string(u.details);
		r = grpc_status_to_errno(status);
		gerr_set(err, -r, "gRPC %s on %s failed: status %d (%s)%s", method, target, (int)status,
			 text ? text : "",
			 status == GRPC_STATUS_UNAVAILABLE ? "; is the socket there and served?" : "");
		gpr_free(text);
		goto out;
	}
	if (!u.recv) {
		r = gerr_set(err, EPROTO, "gRPC %s on %s: OK status without a response message", method, target);
		goto out;
	}
	r = copy_response(u.recv, ret_resp, ret_len);
	if (r < 0)
		gerr_set(err, -r, "gRPC %s on %s: cannot read the response", method, target);
out:
	unary_call_release(&u);
	return r;
}
