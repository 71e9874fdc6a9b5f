/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An HTTP endpoint of gpulet with its --web-config-file: the exporter's :9400 and the doctor's
 * :9402 are started the same way. The web config (exporter-toolkit's format,
 * docs/reference/dcgm-exporter.md §7) is read and checked in full before anything listens; then
 * the one server (web/httpd.h) serves with its TLS, client-certificate checks, basic auth on every
 * path (as upstream wraps its whole handler) and extra headers. A password check that is not
 * already known is handed to the verifier thread (web/webauth.h) and the connection is suspended
 * meanwhile, so bcrypt never runs on the serving thread.
 */
#pragma once

#include "web/httpd.h"

struct web_endpoint;

struct web_endpoint_options {
	const char *address;         /* ":9400", "127.0.0.1:0" (any free port) */
	const char *flag;            /* the option that gave address, for messages */
	unsigned max_connections;    /* 0: 1024 (web/httpd.h) */
	const char *web_config_file; /* NULL or "": plain HTTP, everyone may (as exporter-toolkit's Serve()) */
	void *ctx;                   /* passed to serve */
	/* The answer to a GET or HEAD of url, once access is granted. */
	enum MHD_Result (*serve)(void *ctx, struct httpd_req *rq, const char *url);
};

/* Read the web config and listen. err: "--web-config-file: FILE:LINE:COL: ..." or the address. */
int web_endpoint_start(const struct web_endpoint_options *o, struct web_endpoint **ret, struct gerr *err);
unsigned web_endpoint_port(const struct web_endpoint *e);
/* What the endpoint serves with, for the start-up log line: "http", "https", "https+auth", "http+auth". */
const char *web_endpoint_scheme(const struct web_endpoint *e);
/* Stop serving (waiting checks answered, requests in flight end) and free; NULL is fine. */
void web_endpoint_stop(struct web_endpoint *e);
