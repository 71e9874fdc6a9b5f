/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util/httpd.h"
#include "util/macro.h"
#include "util/netaddr.h"

#define HTTPD_CONN_MEMORY (32 * 1024) /* request line + headers; beyond that MHD answers 431/413 */
/* idle seconds before a connection is closed: longer than Prometheus' usual 15-30 s interval, so
 * its keep-alive connection is reused, short enough that stalled connections free their slot */
#define HTTPD_CONN_TIMEOUT_S  65
#define HTTPD_CONN_LIMIT      1024u /* default total; never more than the open-files limit allows */
#define HTTPD_FDS_KEPT_FOR_US 64    /* NVML, the PodResources socket, logs, epoll */

struct httpd {
	struct MHD_Daemon *daemon;
	struct httpd_options o;
	unsigned port;
};

enum MHD_Result httpd_reply(struct httpd_req *rq, unsigned status, const char *type, char *body, size_t len,
			    enum MHD_ResponseMemoryMode mode)
{
	const struct httpd_options *o = &rq->srv->o;
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result r;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic");
	for (size_t i = 0; i < o->n_headers; i++)
		MHD_add_response_header(resp, o->headers[i].name, o->headers[i].value);
	r = MHD_queue_response(rq->c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

enum MHD_Result httpd_text(struct httpd_req *rq, unsigned status, const char *msg)
{
	return httpd_reply(rq, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
	free(*con_cls);
	*con_cls = NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct httpd *s = cls;
	struct httpd_req *rq = *con_cls;
	bool method_ok = streq(method, MHD_HTTP_METHOD_GET) || streq(method, MHD_HTTP_METHOD_HEAD);
	bool answered = false;
	enum MHD_Result ar;

	if (!rq) {
		if (!(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		rq->srv = s;
		rq->c = c;
		*con_cls = rq;
		if (s->o.on_request && s->o.on_request(s->o.ctx, rq) < 0)
			return MHD_NO;
	}
	/* without an access check, at once (a body is never read); with one, after it */
	if (!method_ok && !s->o.access)
		return httpd_text(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	/*
	 * Answer on the second call, once MHD has read the whole request: libmicrohttpd 0.9.75 sends a
	 * response queued on the first call (headers only) with Connection: close, as a body might
	 * still be coming, and every scrape paid a new TCP connection (tests: exporter_http).
	 */
	if (!rq->seen) {
		rq->seen = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET with a body: ignore the body, answer at its end */
		return MHD_YES;
	}
	if (s->o.access && !rq->checked) {
		ar = s->o.access(s->o.ctx, rq, &answered);
		if (answered)
			return ar;
	}
	if (!method_ok)
		return httpd_text(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	return s->o.serve(s->o.ctx, rq, url);
}

/*
 * The connection limit: asked for (0: HTTPD_CONN_LIMIT), but leaving HTTPD_FDS_KEPT_FOR_US
 * descriptors of the open-files limit to the rest of the process, so accept() never starves NVML
 * or kubelet.
 */
static unsigned connection_limit(unsigned asked)
{
	unsigned limit = asked ? asked : HTTPD_CONN_LIMIT;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rlim_t room =
		    rl.rlim_cur > 2 * HTTPD_FDS_KEPT_FOR_US ? rl.rlim_cur - HTTPD_FDS_KEPT_FOR_US : rl.rlim_cur / 2;

		if ((rlim_t)limit > room)
			limit = (unsigned)room;
	}
	return MAX(limit, 1u);
}

static struct MHD_Daemon *listen_on(struct httpd *s, const struct sockaddr_storage *ss, bool v6)
{
	const struct httpd_options *o = &s->o;
	/* epoll in one internal thread: every socket non-blocking, no thread per connection */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (v6 ? MHD_USE_IPv6 : 0);
	struct MHD_OptionItem opts[16] = {
	    {MHD_OPTION_SOCK_ADDR, 0, (void *)ss},
	    {MHD_OPTION_CONNECTION_LIMIT, connection_limit(o->max_connections), NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, HTTPD_CONN_TIMEOUT_S, NULL},
	    {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTPD_CONN_MEMORY, NULL},
	    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_done, NULL},
	};
	size_t n = 5;

	if (o->access)
		flags |= MHD_ALLOW_SUSPEND_RESUME;
	if (o->cert) {
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->cert};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->key};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)o->priorities};
		if (o->client_ca)
			opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)o->client_ca};
	}
	opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	return MHD_start_daemon(flags, 0, NULL, NULL, handler, s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
}

int httpd_start(const struct httpd_options *o, struct httpd **ret, struct gerr *err)
{
	struct sockaddr_storage ss;
	socklen_t slen = 0;
	bool v6 = false;
	const union MHD_DaemonInfo *info;
	struct httpd *s;
	int r = net_parse_address(o->flag, o->address, &ss, &slen, &v6, err);

	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return gerr_set(err, ENOMEM, "out of memory");
	s->o = *o;
	s->daemon = listen_on(s, &ss, v6);
	if (!s->daemon) {
		free(s);
		return gerr_set(err, EADDRINUSE,
				"cannot listen on %s (port in use or address not on this host); pick another with %s",
				o->address, o->flag);
	}
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	*ret = s;
	return 0;
}

unsigned httpd_port(const struct httpd *s)
{
	return s->port;
}

void httpd_stop(struct httpd *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->daemon);
	free(s);
}

void *httpd_ctx(const struct httpd_req *rq)
{
	return rq->srv->o.ctx;
}
