/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unary gRPC calls with the C core (libgrpc), for talking to kubelet over its unix sockets:
 * Registration.Register (device plugin) and PodResourcesLister.List (exporter, doctor).
 * Messages are opaque bytes here; callers pack/unpack them with protobuf-c.
 * Also the one gRPC status <-> errno table, used by these clients and by the plugin's server.
 */
#pragma once

#include <stddef.h>

#include <grpc/grpc.h>

#include "util/err.h"

/* One unary call of a batch: method and request in, result out. */
struct grpc_unary {
	const char *method; /* "/v1beta1.Registration/Register" */
	const void *req;    /* serialized request; may be NULL when req_len is 0 */
	size_t req_len;
	/* results: resp is malloc'd (NULL when resp_len is 0) and owned by the caller */
	void *resp;
	size_t resp_len;
	int result; /* 0 or -errno as grpc_unary_call() returns */
	struct gerr err;
};

/*
 * Run the n calls on one channel to target, all in flight at once under one deadline, so n calls
 * cost one round trip. Returns the number of failed calls; each call's result and err say why.
 */
size_t grpc_unary_calls(const char *target, struct grpc_unary *calls, size_t n, int timeout_ms);

/*
 * Call method (e.g. "/v1.PodResourcesLister/List") on target ("unix:///var/lib/kubelet/...sock")
 * with the serialized request. On success *ret_resp is a malloc'd copy of the response bytes
 * (may be NULL when *ret_len is 0) and 0 is returned. Failures: -ETIMEDOUT (deadline),
 * -ECONNREFUSED (server unavailable, e.g. socket missing), -EOPNOTSUPP (UNIMPLEMENTED),
 * -EPROTO (other non-OK status), -ENOMEM; err says which target/method and the gRPC status text.
 * Thread-safe; each call uses its own channel.
 */
int grpc_unary_call(const char *target, const char *method, const void *req, size_t req_len, void **ret_resp,
		    size_t *ret_len, int timeout_ms, struct gerr *err);

/* A gRPC status code (grpc_status_code) as a negative errno; 0 for OK, -EPROTO for one not in the table. */
int grpc_status_to_errno(int status);
/* The status a server answers for a -errno result: OK for r >= 0, UNKNOWN for an errno not in the table. */
int grpc_status_from_errno(int r);
/* "INVALID_ARGUMENT" for 3, "UNKNOWN" for a code not in the table. */
const char *grpc_status_name(int status);

/* Unref a call and destroy the byte buffers it sent and received (each may be NULL); client and server. */
void grpc_call_drop(grpc_call *call, grpc_byte_buffer *sent, grpc_byte_buffer *received);
