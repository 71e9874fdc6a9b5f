/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS for the exporter's HTTP server from the web configuration: the PEM texts and GnuTLS
 * priority string handed to libmicrohttpd, checked at start (a bad certificate or key, a key that
 * does not match, a CA file without certificates: an error, nothing served), and the check of a
 * connection's client certificate against client_auth_type and client_allowed_sans.
 */
#pragma once

#include "web/webconfig.h"

struct web_tls {
	const struct web_config *c;
	char *cert, *key, *client_ca; /* PEM (client_ca NULL: no client certificates asked for) */
	char *priorities;             /* GnuTLS priority string */
};

int web_tls_load(const struct web_config *c, struct web_tls **ret, struct gerr *err);
/* 0: a request on this TLS session (a gnutls_session_t) may be served; -EACCES: refuse it. */
int web_tls_check_peer(const struct web_tls *t, void *session);
void web_tls_free(struct web_tls *t);
