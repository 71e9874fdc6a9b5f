/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Basic auth for gpulet's HTTP endpoints: bcrypt checks with the system's crypt_r (libxcrypt), off
 * the serving thread. One verifier thread checks passwords one at a time (as upstream's
 * bcryptMtx), taking the most deserving waiting check first (web/authq.h: clients that sent no
 * wrong credentials on their connection, then addresses with the fewest recent failures); the queue
 * is bounded and a full queue turns away its worst check ("busy", 429), never a better newcomer.
 * Results are remembered (SHA-256 of user and password, never the password) in two separate tables:
 * good credentials are served without bcrypt again, and a credential that failed fails again at
 * once; wrong passwords can never push good ones out (docs/reference/alerts.md, "HTTP").
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

#include "web/webconfig.h"

#define WEB_AUTH_CACHE 32  /* good credentials remembered */
#define WEB_AUTH_BAD   128 /* wrong credentials remembered */

struct web_auth;

enum web_auth_result {
	WEB_AUTH_OK,      /* good credentials */
	WEB_AUTH_DENIED,  /* absent or malformed: 401 */
	WEB_AUTH_WRONG,   /* wrong credentials (a strike for the connection): 401 */
	WEB_AUTH_PENDING, /* queued: done(ctx, OK, WRONG or BUSY) follows, from any thread */
	WEB_AUTH_BUSY,    /* no room for a check that ranks this low: 429 */
};

/* Who asks, for the queue's ranking (web/authq.h). */
struct web_auth_client {
	const struct sockaddr *addr; /* NULL: unknown */
	unsigned strikes;            /* WEB_AUTH_WRONG answers on this connection so far */
};

typedef void (*web_auth_done_fn)(void *ctx, enum web_auth_result r);

/* The users of c (none: NULL, no auth). Makes the hash unknown users are checked against. */
int web_auth_new(const struct web_config *c, struct web_auth **ret, struct gerr *err);
enum web_auth_result web_auth_check(struct web_auth *a, const char *authorization, const struct web_auth_client *who,
				    web_auth_done_fn done, void *ctx);
/* Stop taking checks and finish the queued ones as wrong (done is called for each). */
void web_auth_shutdown(struct web_auth *a);
void web_auth_free(struct web_auth *a);
