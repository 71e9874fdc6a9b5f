/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one HTTP server (libmicrohttpd) behind every gpulet endpoint: the exporter's /metrics and
 * doctor --serve-metrics. It owns what every endpoint must get right the same way: one internal
 * epoll thread with non-blocking I/O (a stalled client costs one slot, never a thread), bounded
 * connections in all and per client address, an absolute deadline for each phase of a connection
 * (TLS handshake and request headers, answer, keep-alive wait) that a client trickling bytes cannot
 * push back, bounded request memory, keep-alive (the answer is queued once the whole request is
 * read; libmicrohttpd 0.9.75 closes a connection answered on the first call), GET and HEAD only
 * (405 with Allow), extra headers on every answer, optional TLS, and an optional access check that
 * may suspend a request (docs/reference/alerts.md, "HTTP").
 *
 * Reached only from the HTTP serving module (docs/HACKING.md §7): the lean executable never
 * links it.
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "util/err.h"

/* Deadlines (seconds, absolute: bytes arriving do not extend them; docs/reference/alerts.md "HTTP") */
#define HTTPD_HEADERS_S 10 /* from accept: TLS handshake and the first request's headers */
#define HTTPD_ANSWER_S  30 /* from the headers: body, access check and the whole answer sent */
/* between requests on a keep-alive connection: longer than Prometheus' usual 15-30 s interval, so its
 * connection is reused; also libmicrohttpd's idle timeout */
#define HTTPD_IDLE_S 65

struct httpd;

/* The client of a connection, for the access check. */
struct httpd_peer {
	struct sockaddr_storage addr;
	socklen_t len;
	unsigned strikes; /* wrong credentials sent on this connection (counted by the access check) */
};

/* One request in flight (MHD's per-request pointer). The access fields belong to .access. */
struct httpd_req {
	struct httpd *srv;
	struct MHD_Connection *c;
	struct httpd_peer *peer; /* lives as long as the connection */
	bool seen;               /* the headers were handed over once already */
	bool checked;            /* access granted */
	bool pending;            /* an asynchronous check is queued */
	bool done;               /* its verdict is in .verdict */
	int verdict;             /* the access check's own value */
	bool suspended;          /* waiting for it (MHD_suspend_connection) */
};

struct httpd_header {
	const char *name, *value;
};

struct httpd_options {
	const char *address;                /* ":9400", "127.0.0.1:0" (any free port), "[::1]:9400" */
	const char *flag;                   /* the option that gave address, for messages ("--address") */
	unsigned max_connections;           /* 0: 1024; never more than the open-files limit leaves */
	const struct httpd_header *headers; /* added to every answer */
	size_t n_headers;
	/* TLS (PEM in memory, GnuTLS priorities); cert NULL: plain HTTP */
	const char *cert, *key, *priorities, *client_ca;
	void *ctx; /* passed to the hooks */
	/* a new request's first call: < 0 closes the connection (a refused client certificate); NULL: none */
	int (*on_request)(void *ctx, struct httpd_req *rq);
	/*
	 * Access check once the request is read, before the method check (as upstream's wrappers
	 * answer 401 first). *answered true: the return value is the answer (queued or suspended);
	 * false: go on. NULL: everyone may. Setting it allows suspending requests.
	 */
	enum MHD_Result (*access)(void *ctx, struct httpd_req *rq, bool *answered);
	/* The answer to a GET or HEAD of url. */
	enum MHD_Result (*serve)(void *ctx, struct httpd_req *rq, const char *url);
};

/* Listen and serve. err names the address and o->flag when it cannot. */
int httpd_start(const struct httpd_options *o, struct httpd **ret, struct gerr *err);
unsigned httpd_port(const struct httpd *s);
/* The connection limits in force: in all, and per client address. */
void httpd_limits(const struct httpd *s, unsigned *ret_total, unsigned *ret_per_address);
/* Stop serving (requests in flight end) and free; NULL is fine. */
void httpd_stop(struct httpd *s);

/* Queue an answer. mode as MHD's: MUST_FREE hands body over (freed on failure too). */
enum MHD_Result httpd_reply(struct httpd_req *rq, unsigned status, const char *type, char *body, size_t len,
			    enum MHD_ResponseMemoryMode mode);
/* A plain-text answer from a string that outlives the request. */
enum MHD_Result httpd_text(struct httpd_req *rq, unsigned status, const char *msg);

/* The ctx of the server a request came to (httpd_options.ctx). */
void *httpd_ctx(const struct httpd_req *rq);
