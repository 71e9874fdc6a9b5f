/* SPDX-License-Identifier: Apache-2.0 */
/* Unary gRPC client over C-core; see grpc_client.h. Facts: docs/reference/real-peers.md §A. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
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
#include "util/enumtab.h"

static pthread_once_t grpc_once = PTHREAD_ONCE_INIT;

static void grpc_global_init(void)
{
	/* grpc logs to stderr on its own; only errors should reach a daemon's log. */
	gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
	grpc_init(); /* never shut down: other threads (plugin server) share the library state */
}

/*
 * grpc_status_code <-> errno, the one map of this program (status codes: grpc/status.h). Status to
 * errno takes a code's first row; errno to status (the plugin's server) the first row of that errno,
 * so the later rows of a code are aliases a server may answer with: out of memory is
 * RESOURCE_EXHAUSTED, a stopping server UNAVAILABLE. errnum 0: no errno of its own (-EPROTO).
 */
static const struct {
	int value; /* grpc_status_code */
	const char *name;
	int errnum;
} status_table[] = {
    {GRPC_STATUS_OK, "OK", 0},
    {GRPC_STATUS_CANCELLED, "CANCELLED", ECANCELED},
    {GRPC_STATUS_UNKNOWN, "UNKNOWN", 0},
    {GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT", EINVAL},
    {GRPC_STATUS_DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED", ETIMEDOUT},
    {GRPC_STATUS_NOT_FOUND, "NOT_FOUND", ENOENT},
    {GRPC_STATUS_ALREADY_EXISTS, "ALREADY_EXISTS", EEXIST},
    {GRPC_STATUS_PERMISSION_DENIED, "PERMISSION_DENIED", EACCES},
    {GRPC_STATUS_RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED", ENOSPC},
    {GRPC_STATUS_RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED", ENOMEM},
    {GRPC_STATUS_FAILED_PRECONDITION, "FAILED_PRECONDITION", EPROTO},
    {GRPC_STATUS_ABORTED, "ABORTED", 0},
    {GRPC_STATUS_OUT_OF_RANGE, "OUT_OF_RANGE", 0},
    {GRPC_STATUS_UNIMPLEMENTED, "UNIMPLEMENTED", EOPNOTSUPP},
    {GRPC_STATUS_INTERNAL, "INTERNAL", 0},
    {GRPC_STATUS_UNAVAILABLE, "UNAVAILABLE", ECONNREFUSED},
    {GRPC_STATUS_UNAVAILABLE, "UNAVAILABLE", ESHUTDOWN},
    {GRPC_STATUS_DATA_LOSS, "DATA_LOSS", 0},
    {GRPC_STATUS_UNAUTHENTICATED, "UNAUTHENTICATED", EACCES},
};

int grpc_status_to_errno(int status)
{
	typeof(&status_table[0]) row = enum_row(status_table, status);

	if (status == GRPC_STATUS_OK)
		return 0;
	return row && row->errnum ? -row->errnum : -EPROTO;
}

int grpc_status_from_errno(int r)
{
	if (r >= 0)
		return GRPC_STATUS_OK;
	for (size_t i = 0; i < ELEMENTSOF(status_table); i++)
		if (status_table[i].errnum == -r)
			return status_table[i].value;
	return GRPC_STATUS_UNKNOWN;
}

const char *grpc_status_name(int status)
{
	return enum_to_name(status_table, status, "UNKNOWN");
}

/* Everything one call owns, released in one place whatever path we leave by. */
struct unary_call {
	grpc_call *call;
	grpc_byte_buffer *send;
	grpc_byte_buffer *recv;
	grpc_metadata_array initial_md;
	grpc_metadata_array trailing_md;
	grpc_status_code status;
	grpc_slice details;
	bool started, done;
};

void grpc_call_drop(grpc_call *call, grpc_byte_buffer *sent, grpc_byte_buffer *received)
{
	if (call)
		grpc_call_unref(call);
	if (sent)
		grpc_byte_buffer_destroy(sent);
	if (received)
		grpc_byte_buffer_destroy(received);
}

static void unary_call_release(struct unary_call *u)
{
	grpc_call_drop(u->call, u->send, u->recv);
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

/* One batch per call: send the request and half-close, receive the reply and the status. */
static int start_call(grpc_channel *ch, grpc_completion_queue *cq, gpr_timespec deadline, struct unary_call *u,
		      const struct grpc_unary *c)
{
	grpc_slice method = grpc_slice_from_copied_string(c->method);
	grpc_slice payload = grpc_slice_from_copied_buffer(c->req ? c->req : "", c->req_len);
	grpc_op ops[6];

	u->send = grpc_raw_byte_buffer_create(&payload, 1);
	grpc_slice_unref(payload);
	u->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL, deadline, NULL);
	grpc_slice_unref(method);
	if (!u->call || !u->send)
		return -ENOMEM;
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = u->send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &u->initial_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &u->recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &u->trailing_md;
	ops[5].data.recv_status_on_client.status = &u->status;
	ops[5].data.recv_status_on_client.status_details = &u->details;
	if (grpc_call_start_batch(u->call, ops, ELEMENTSOF(ops), u, NULL) != GRPC_CALL_OK)
		return -EPROTO;
	u->started = true;
	return 0;
}

/* c's result from its completed batch (ok: the batch succeeded; a failed one is a dead channel). */
static void finish_call(struct unary_call *u, bool ok, const char *target, struct grpc_unary *c)
{
	grpc_status_code status = ok ? u->status : GRPC_STATUS_UNAVAILABLE;

	u->done = true;
	if (status != GRPC_STATUS_OK) {
		char *text = grpc_slice_to_c_string(u->details);

		c->result = grpc_status_to_errno(status);
		gerr_set(&c->err, -c->result, "gRPC %s on %s failed: status %d (%s)%s", c->method, target, (int)status,
			 text ? text : "",
			 status == GRPC_STATUS_UNAVAILABLE ? "; is the socket there and served?" : "");
		gpr_free(text);
		return;
	}
	if (!u->recv) {
		c->result =
		    gerr_set(&c->err, EPROTO, "gRPC %s on %s: OK status without a response message", c->method, target);
		return;
	}
	c->result = copy_response(u->recv, &c->resp, &c->resp_len);
	if (c->result < 0)
		gerr_set(&c->err, -c->result, "gRPC %s on %s: cannot read the response", c->method, target);
}

/* Start every call; returns how many are in flight. */
static size_t start_calls(grpc_channel *ch, grpc_completion_queue *cq, int timeout_ms, const char *target,
			  struct unary_call *u, struct grpc_unary *calls, size_t n)
{
	gpr_timespec deadline =
	    gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	size_t pending = 0;

	for (size_t i = 0; i < n; i++) {
		struct grpc_unary *c = &calls[i];
		int r;

		if (!c->method || (!c->req && c->req_len)) {
			c->result = gerr_set(&c->err, EINVAL, "grpc_unary_call: invalid arguments");
			continue;
		}
		r = ch && cq ? start_call(ch, cq, deadline, &u[i], c) : -ENOMEM;
		if (r == 0)
			pending++;
		else if (r == -ENOMEM)
			c->result =
			    gerr_set(&c->err, ENOMEM, "gRPC %s on %s: cannot create the call", c->method, target);
		else
			c->result = gerr_set(&c->err, -r, "gRPC %s on %s: cannot start the call", c->method, target);
	}
	return pending;
}

size_t grpc_unary_calls(const char *target, struct grpc_unary *calls, size_t n, int timeout_ms)
{
	_cleanup_free_ struct unary_call *u = calloc(n ? n : 1, sizeof(*u));
	grpc_channel *ch = NULL;
	grpc_completion_queue *cq = NULL;
	size_t pending, failed = 0;

	for (size_t i = 0; i < n; i++)
		calls[i] =
		    (struct grpc_unary){.method = calls[i].method, .req = calls[i].req, .req_len = calls[i].req_len};
	if (!u || !target || timeout_ms <= 0) {
		for (size_t i = 0; i < n; i++)
			calls[i].result = gerr_set(&calls[i].err, u ? EINVAL : ENOMEM, "grpc_unary_call: %s",
						   u ? "invalid arguments" : "out of memory");
		return n;
	}
	pthread_once(&grpc_once, grpc_global_init);
	for (size_t i = 0; i < n; i++) {
		u[i].details = grpc_empty_slice();
		grpc_metadata_array_init(&u[i].initial_md);
		grpc_metadata_array_init(&u[i].trailing_md);
	}
	grpc_channel_credentials *creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_next(NULL);

	/* The deadline bounds every batch; each completes (with DEADLINE_EXCEEDED at worst). */
	pending = start_calls(ch, cq, timeout_ms, target, u, calls, n);
	while (pending > 0) {
		grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct unary_call *x = ev.tag;

		if (ev.type != GRPC_OP_COMPLETE)
			break;
		finish_call(x, ev.success, target, &calls[x - u]);
		pending--;
	}
	for (size_t i = 0; i < n; i++) {
		if (u[i].started && !u[i].done)
			calls[i].result = gerr_set(&calls[i].err, EPROTO, "gRPC %s on %s: completion queue failed",
						   calls[i].method, target);
		failed += calls[i].result < 0;
		unary_call_release(&u[i]);
	}
	if (ch)
		grpc_channel_destroy(ch);
	if (cq) {
		grpc_completion_queue_shutdown(cq);
		/* a queue must be drained to its shutdown event before destroy */
		while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(cq);
	}
	return failed;
}

int grpc_unary_call(const char *target, const char *method, const void *req, size_t req_len, void **ret_resp,
		    size_t *ret_len, int timeout_ms, struct gerr *err)
{
	struct grpc_unary c = {.method = method, .req = req, .req_len = req_len};

	if (!target || !method || (!req && req_len) || !ret_resp || !ret_len || timeout_ms <= 0)
		return gerr_set(err, EINVAL, "grpc_unary_call: invalid arguments");
	grpc_unary_calls(target, &c, 1, timeout_ms);
	if (c.result < 0) {
		if (err)
			*err = c.err;
		return c.result;
	}
	*ret_resp = c.resp;
	*ret_len = c.resp_len;
	return 0;
}
