/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A unary gRPC call with the C core (libgrpc), for talking to kubelet over its unix sockets:
 * Registration.Register (device plugin) and PodResourcesLister.List (exporter, doctor).
 * Messages are opaque bytes here; callers pack/unpack them with protobuf-c.
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

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

/* Map a gRPC status code (grpc_status_code) to a negative errno; 0 for OK. */
int grpc_status_to_errno(int status);
