/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Basic auth for the exporter's HTTP server: bcrypt checks with the system's crypt_r (libxcrypt),
 * off the serving thread. One verifier thread checks passwords one at a time (as upstream's
 * bcryptMtx); at most WEB_AUTH_QUEUE wait, more are answered "busy" at once. Good credentials are
 * remembered (SHA-256 of user and password, never the password): a scrape with them never waits
 * on bcrypt again, and wrong passwords cannot push them out (docs/reference/dcgm-exporter.md).
 */
#pragma once

#include <stdbool.h>

#include "exporter/webconfig.h"

#define WEB_AUTH_QUEUE 16
#define WEB_AUTH_CACHE 32

struct web_auth;

enum web_auth_result {
	WEB_AUTH_OK,      /* good credentials, known at once */
	WEB_AUTH_DENIED,  /* absent, malformed, or known wrong at once */
	WEB_AUTH_PENDING, /* queued: done(ctx, ok) is called from the verifier thread */
	WEB_AUTH_BUSY,    /* the queue is full: answer 429 */
};

/* The users of c (none: NULL, no auth). Makes the hash unknown users are checked against. */
int web_auth_new(const struct web_config *c, struct web_auth **ret, struct gerr *err);
enum web_auth_result web_auth_check(struct web_auth *a, const char *authorization, void (*done)(void *ctx, bool ok),
				    void *ctx);
/* Stop taking checks and finish the queued ones as denied (done is called for each). */
void web_auth_shutdown(struct web_auth *a);
void web_auth_free(struct web_auth *a);
