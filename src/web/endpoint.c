/* SPDX-License-Identifier: Apache-2.0 */
/* An HTTP endpoint with its web config (web/endpoint.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/macro.h"
#include "web/endpoint.h"
#include "web/webauth.h"
#include "web/webtls.h"

struct web_endpoint {
	struct httpd *srv;
	struct web_endpoint_options o;
	struct web_config *wc;                        /* NULL: no --web-config-file */
	struct web_tls *tls;                          /* NULL: plain HTTP */
	struct web_auth *auth;                        /* NULL: no basic_auth_users */
	pthread_mutex_t auth_lock;                    /* guards struct httpd_req's verdict and suspension */
	struct httpd_header headers[WEB_MAX_HEADERS]; /* http_server_config.headers */
	size_t n_headers;
};

/* the verifier's answer: resume the request if it is waiting (see check_access()) */
static void auth_done(void *ctx, enum web_auth_result r)
{
	struct httpd_req *rq = ctx;
	struct web_endpoint *e = httpd_ctx(rq);

	pthread_mutex_lock(&e->auth_lock);
	rq->verdict = r;
	rq->done = true;
	if (rq->suspended) {
		rq->suspended = false;
		MHD_resume_connection(rq->c); /* rq may be gone once MHD runs again: not touched after */
	}
	pthread_mutex_unlock(&e->auth_lock);
}

/* The answer to a verdict other than OK. */
static enum MHD_Result refuse(struct httpd_req *rq, enum web_auth_result r)
{
	if (r == WEB_AUTH_BUSY)
		return httpd_text(rq, MHD_HTTP_TOO_MANY_REQUESTS, "too many password checks at once; retry\n");
	if (r == WEB_AUTH_WRONG && rq->peer->strikes < UINT32_MAX)
		rq->peer->strikes++; /* this connection's next checks wait behind others' */
	return httpd_text(rq, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
}

/*
 * Basic auth (httpd_options.access) for a request whose headers are all read: *served false when it
 * may be served; otherwise the answer (401, 429) is queued or the request waits suspended for the
 * verifier.
 */
static enum MHD_Result check_access(void *ctx, struct httpd_req *rq, bool *served)
{
	struct web_endpoint *e = ctx;
	struct MHD_Connection *c = rq->c;
	enum web_auth_result r;

	*served = true;
	if (!rq->pending) {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		struct web_auth_client who = {.addr = rq->peer->len ? (const struct sockaddr *)&rq->peer->addr : NULL,
					      .strikes = rq->peer->strikes};

		r = web_auth_check(e->auth, a, &who, auth_done, rq);
		if (r != WEB_AUTH_PENDING) {
			if (r != WEB_AUTH_OK)
				return refuse(rq, r);
			rq->checked = true;
			*served = false;
			return MHD_YES;
		}
		rq->pending = true;
	}
	pthread_mutex_lock(&e->auth_lock);
	bool done = rq->done;
	if (!done) {
		rq->suspended = true;
		MHD_suspend_connection(c);
	}
	pthread_mutex_unlock(&e->auth_lock);
	if (!done)
		return MHD_YES; /* called again once auth_done() resumes it */
	if (rq->verdict != WEB_AUTH_OK)
		return refuse(rq, rq->verdict);
	rq->checked = true;
	*served = false;
	return MHD_YES;
}

/* a client certificate that client_auth_type or client_allowed_sans refuses: close */
static int check_peer(void *ctx, struct httpd_req *rq)
{
	struct web_endpoint *e = ctx;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->c, MHD_CONNECTION_INFO_GNUTLS_SESSION);

	return !ci || web_tls_check_peer(e->tls, ci->tls_session) < 0 ? -EPERM : 0;
}

static enum MHD_Result serve(void *ctx, struct httpd_req *rq, const char *url)
{
	struct web_endpoint *e = ctx;

	return e->o.serve(e->o.ctx, rq, url);
}

static void endpoint_free(struct web_endpoint *e)
{
	web_auth_free(e->auth);
	web_tls_free(e->tls);
	webconfig_free(e->wc);
	pthread_mutex_destroy(&e->auth_lock);
	free(e);
}

/* --web-config-file: read and checked before anything is served; an error serves nothing */
static int load_web_config(struct web_endpoint *e, const char *path, struct gerr *err)
{
	int r = webconfig_load(path, &e->wc, err);

	if (r >= 0 && e->wc->tls)
		r = web_tls_load(e->wc, &e->tls, err);
	if (r >= 0)
		r = web_auth_new(e->wc, &e->auth, err);
	if (r < 0)
		return gerr_prefix(err, "--web-config-file: ");
	/* http_server_config.headers: on every answer, as upstream sets them before its auth check */
	for (size_t i = 0; i < e->wc->n_headers; i++)
		e->headers[e->n_headers++] = (struct httpd_header){e->wc->headers[i].name, e->wc->headers[i].value};
	return 0;
}

int web_endpoint_start(const struct web_endpoint_options *o, struct web_endpoint **ret, struct gerr *err)
{
	struct web_endpoint *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return gerr_set(err, ENOMEM, "out of memory");
	e->o = *o;
	pthread_mutex_init(&e->auth_lock, NULL);
	r = o->web_config_file && *o->web_config_file ? load_web_config(e, o->web_config_file, err) : 0;
	if (r >= 0) {
		struct httpd_options so = {
		    .address = o->address,
		    .flag = o->flag,
		    .max_connections = o->max_connections,
		    .headers = e->headers,
		    .n_headers = e->n_headers,
		    .ctx = e,
		    .on_request = e->tls ? check_peer : NULL,
		    .access = e->auth ? check_access : NULL,
		    .serve = serve,
		};

		if (e->tls) {
			so.cert = e->tls->cert;
			so.key = e->tls->key;
			so.priorities = e->tls->priorities;
			so.client_ca = e->tls->client_ca;
		}
		r = httpd_start(&so, &e->srv, err);
	}
	if (r < 0) {
		endpoint_free(e);
		return r;
	}
	*ret = e;
	return 0;
}

unsigned web_endpoint_port(const struct web_endpoint *e)
{
	return httpd_port(e->srv);
}

const char *web_endpoint_scheme(const struct web_endpoint *e)
{
	static const char *const names[2][2] = {{"http", "http+auth"}, {"https", "https+auth"}};

	return names[!!e->tls][!!e->auth];
}

void web_endpoint_stop(struct web_endpoint *e)
{
	if (!e)
		return;
	web_auth_shutdown(e->auth); /* resumes every suspended request before MHD stops */
	httpd_stop(e->srv);
	endpoint_free(e);
}
