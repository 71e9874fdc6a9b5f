/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "util/macro.h"
#include "util/netaddr.h"
#include "util/thread.h"
#include "web/httpd.h"

#define HTTPD_CONN_MEMORY     (32 * 1024) /* request line + headers; beyond that MHD answers 431/413 */
#define HTTPD_CONN_LIMIT      1024u       /* default total; never more than the open-files limit allows */
#define HTTPD_FDS_KEPT_FOR_US 64          /* NVML, the PodResources socket, logs, epoll */
/* per client address: a sixteenth of the total, at least 4 (Prometheus, a second replica, kubelet's
 * probes, a curl), at most 64 */
#define HTTPD_PER_ADDRESS_DIV 16u
#define HTTPD_PER_ADDRESS_MIN 4u
#define HTTPD_PER_ADDRESS_MAX 64u

/*
 * A connection as the deadline keeper sees it: created when libmicrohttpd accepts it (its socket
 * context), gone when libmicrohttpd closes it. deadline_ms is absolute (CLOCK_MONOTONIC); 0 once
 * the keeper has shut the socket down.
 */
struct httpd_conn {
	struct httpd_conn *prev, *next;
	int fd;
	uint64_t deadline_ms;
	struct httpd_peer peer;
};

struct httpd {
	struct MHD_Daemon *daemon;
	struct httpd_options o;
	unsigned port, limit, per_address;
	/* the deadline keeper: every open connection, and the thread that shuts down late ones */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t keeper;
	bool keeper_started, stopping;
	struct httpd_conn *conns;
	uint64_t wake_ms; /* when the keeper looks next (UINT64_MAX: nothing armed) */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Give c a new deadline, secs from now (s->lock held); wake the keeper when that is before it looks next. */
static void arm_locked(struct httpd *s, struct httpd_conn *c, unsigned secs)
{
	if (!c->deadline_ms)
		return; /* shut down already: it stays so */
	c->deadline_ms = now_ms() + secs * 1000u;
	if (c->deadline_ms < s->wake_ms)
		pthread_cond_signal(&s->cond);
}

static void arm(struct httpd *s, struct httpd_conn *c, unsigned secs)
{
	pthread_mutex_lock(&s->lock);
	arm_locked(s, c, secs);
	pthread_mutex_unlock(&s->lock);
}

/* The connection of a libmicrohttpd connection (its socket context). */
static struct httpd_conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/*
 * The deadline keeper. libmicrohttpd 0.9.75 has only an idle timeout, which every byte a client
 * sends starts again: a client trickling a header line (or a TLS ClientHello) every few seconds
 * held its slot for ever. This thread shuts down (shutdown(2), never close) the socket of every
 * connection past its deadline; libmicrohttpd's epoll thread then sees the end of the stream and
 * closes it as usual. The socket is still open when this runs: libmicrohttpd tells us it closes a
 * connection (notify_connection(), under the same lock) before it closes the descriptor.
 */
static void *keeper(void *arg)
{
	struct httpd *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		uint64_t now = now_ms(), next = UINT64_MAX;

		for (struct httpd_conn *c = s->conns; c; c = c->next) {
			if (!c->deadline_ms)
				continue;
			if (c->deadline_ms <= now) {
				(void)shutdown(c->fd, SHUT_RDWR);
				c->deadline_ms = 0;
			} else
				next = MIN(next, c->deadline_ms);
		}
		s->wake_ms = next;
		if (next == UINT64_MAX)
			pthread_cond_wait(&s->cond, &s->lock);
		else {
			/* a tenth of a second late at most: one wake-up serves the deadlines close together */
			struct timespec ts = deadline_after_ms(CLOCK_MONOTONIC, (int)(next - now) + 100);

			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* libmicrohttpd accepted or closed a connection (its epoll thread). */
static void notify_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	struct httpd *s = cls;
	struct httpd_conn *c = *socket_context;
	const union MHD_ConnectionInfo *fd_info, *addr_info;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		pthread_mutex_lock(&s->lock);
		if (c->prev)
			c->prev->next = c->next;
		else
			s->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		pthread_mutex_unlock(&s->lock);
		free(c);
		*socket_context = NULL;
		return;
	}
	fd_info = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr_info = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	c = fd_info ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		/* no deadline could be kept for it: refuse it now rather than serve it unbounded */
		if (fd_info)
			(void)shutdown(fd_info->connect_fd, SHUT_RDWR);
		return;
	}
	c->fd = fd_info->connect_fd;
	if (addr_info && addr_info->client_addr) {
		const struct sockaddr *sa = addr_info->client_addr;

		c->peer.len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
		memcpy(&c->peer.addr, sa, c->peer.len);
	}
	c->deadline_ms = 1; /* any non-zero value: arm_locked() sets it */
	pthread_mutex_lock(&s->lock);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	arm_locked(s, c, HTTPD_HEADERS_S);
	pthread_mutex_unlock(&s->lock);
	*socket_context = c;
}

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

/* A request ended: the next one on this connection must have its headers in within HTTPD_IDLE_S. */
static void request_done(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct httpd_conn *c = conn_of(mc);

	if (c && why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		arm(cls, c, HTTPD_IDLE_S);
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
		struct httpd_conn *conn = conn_of(c);

		/* the headers are in: from now on the answer's deadline */
		if (!conn || !(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		arm(s, conn, HTTPD_ANSWER_S);
		rq->srv = s;
		rq->c = c;
		rq->peer = &conn->peer;
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

/* Per client address: libmicrohttpd accepts and at once closes a connection over it. */
static unsigned per_address_limit(unsigned limit)
{
	return MAX(MIN(MAX(limit / HTTPD_PER_ADDRESS_DIV, HTTPD_PER_ADDRESS_MIN), HTTPD_PER_ADDRESS_MAX), 1u);
}

static struct MHD_Daemon *listen_on(struct httpd *s, const struct sockaddr_storage *ss, bool v6)
{
	const struct httpd_options *o = &s->o;
	/* epoll in one internal thread: every socket non-blocking, no thread per connection */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (v6 ? MHD_USE_IPv6 : 0);
	struct MHD_OptionItem opts[16] = {
	    {MHD_OPTION_SOCK_ADDR, 0, (void *)ss},
	    {MHD_OPTION_CONNECTION_LIMIT, s->limit, NULL},
	    {MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->per_address, NULL},
	    /* idle time, as the keep-alive wait; the deadlines end every phase at the latest */
	    {MHD_OPTION_CONNECTION_TIMEOUT, HTTPD_IDLE_S, NULL},
	    {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTPD_CONN_MEMORY, NULL},
	    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_done, s},
	    {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_connection, s},
	};
	size_t n = 7;

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

static void httpd_free(struct httpd *s)
{
	if (s->keeper_started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->keeper, NULL);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
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
	s->limit = connection_limit(o->max_connections);
	s->per_address = per_address_limit(s->limit);
	s->wake_ms = UINT64_MAX;
	pthread_mutex_init(&s->lock, NULL);
	cond_init_monotonic(&s->cond);
	r = pthread_create(&s->keeper, NULL, keeper, s);
	if (r) {
		httpd_free(s);
		return gerr_set(err, r, "cannot start the HTTP server's deadline thread: %s", strerror(r));
	}
	s->keeper_started = true;
	s->daemon = listen_on(s, &ss, v6);
	if (!s->daemon) {
		httpd_free(s);
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

void httpd_limits(const struct httpd *s, unsigned *ret_total, unsigned *ret_per_address)
{
	*ret_total = s->limit;
	*ret_per_address = s->per_address;
}

void httpd_stop(struct httpd *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->daemon); /* every connection closed: the keeper's list is empty */
	httpd_free(s);
}

void *httpd_ctx(const struct httpd_req *rq)
{
	return rq->srv->o.ctx;
}
