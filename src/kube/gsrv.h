/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small gRPC server on C-core: one completion queue and one thread serve a group of unix-socket
 * servers (one per kubelet resource). Unary methods get the request bytes and return reply bytes;
 * server-streaming methods send a fresh snapshot each time gsrv_notify() says the state changed.
 * All handler callbacks run with the group lock held; callers change shared state under
 * gsrv_lock() too. Facts on C-core usage: docs/reference/real-peers.md §A.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define GSRV_DETAILS_MAX 512

struct gsrv_method {
	const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
	bool streaming;   /* server streaming (ListAndWatch) */
};

struct gsrv_handler {
	/*
	 * A unary call. Returns 0 with the packed reply in out and outlen (malloc'ed; an empty message
	 * has outlen 0), or -errno with err saying why. The server answers the gRPC status of that
	 * errno (grpc_status_from_errno(), kube/grpc_client.h) with err's message as the status details
	 * (at most GSRV_DETAILS_MAX - 1 bytes).
	 */
	int (*unary)(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		     struct gerr *err);
	/* The message a streaming call sends now (malloc'ed). Returns 0 or -errno. */
	int (*snapshot)(void *data, unsigned method, uint8_t **out, size_t *outlen);
};

struct gsrv_group;
struct gsrv;

int gsrv_group_new(struct gsrv_group **ret, struct gerr *err);
/*
 * Serve methods on a unix socket: a stale socket file (nobody listening) is removed first; one
 * another process still serves is -EADDRINUSE naming its pid, a regular file there is an error.
 * The new socket gets mode 0600. Call before gsrv_group_run().
 */
int gsrv_add(struct gsrv_group *g, const char *socket_path, const struct gsrv_method *methods, size_t n_methods,
	     const struct gsrv_handler *h, void *data, struct gsrv **ret, struct gerr *err);
int gsrv_group_run(struct gsrv_group *g, struct gerr *err);
/* -EADDRINUSE (naming its pid) when another process serves socket_path now; 0 otherwise. */
int gsrv_socket_live(const char *socket_path, struct gerr *err);

void gsrv_lock(struct gsrv_group *g);
void gsrv_unlock(struct gsrv_group *g);
/* State behind s changed: every open stream sends a new snapshot. Call with the lock held. */
void gsrv_notify(struct gsrv *s);
/* Wait (without the lock held) until every open stream has sent its latest snapshot. */
int gsrv_flush(struct gsrv_group *g, int timeout_ms);
/* Number of open streaming calls on s (lock held). */
unsigned gsrv_streams(const struct gsrv *s);
const char *gsrv_socket(const struct gsrv *s);

/*
 * Stop: open streams send their last snapshot and end with OK, calls still open after
 * grace_ms are cancelled, the thread is joined and the socket files removed.
 */
void gsrv_group_free(struct gsrv_group *g, int grace_ms);
