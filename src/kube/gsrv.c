/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC C-core server group. One completion queue, one thread. Every call is a struct gcall; every
 * batch completes on the queue with a tag that points into it. C-core allows one SEND_MESSAGE in
 * flight per call, and RECV_CLOSE_ON_SERVER of a stream needs its own batch/tag
 * (docs/reference/real-peers.md §A), hence send_busy and the separate t_close tag.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "kube/grpc_client.h"
#include "kube/gsrv.h"
#include "util/macro.h"

#define GSRV_MAX_METHODS 8
#define GSRV_GENERIC     GSRV_MAX_METHODS /* method index of the catch-all call */

enum tag_kind { T_REQUEST, T_SEND, T_CLOSE, T_SHUTDOWN };

struct gtag {
	enum tag_kind kind;
	void *obj; /* struct gcall * or struct gsrv * */
};

struct gcall {
	struct gsrv *srv;
	unsigned method;
	grpc_call *call;
	bool generic; /* a method nobody registered: answered UNIMPLEMENTED */
	grpc_call_details call_details;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
	grpc_byte_buffer *send_bb;
	grpc_slice details;
	bool has_details;
	int cancelled;
	struct gtag t_req, t_send, t_close;
	int pending; /* batches started and not completed */
	bool send_busy, closed, finished, streaming_live;
	unsigned long sent_gen;
	struct gcall *next, *prev; /* open streams of srv */
};

struct gsrv {
	struct gsrv_group *g;
	grpc_server *server;
	char *socket;
	struct gsrv_method methods[GSRV_MAX_METHODS];
	void *handles[GSRV_MAX_METHODS];
	size_t n_methods;
	struct gsrv_handler h;
	void *data;
	unsigned long gen;
	bool finishing, shutdown_done, started;
	struct gcall *streams;
	unsigned n_streams;
	struct gtag t_shutdown;
	struct gsrv *next;
};

struct gsrv_group {
	grpc_completion_queue *cq;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stopping, cq_shutdown;
	unsigned live_calls;
	struct gsrv *servers;
};

void gsrv_lock(struct gsrv_group *g)
{
	pthread_mutex_lock(&g->lock);
}
void gsrv_unlock(struct gsrv_group *g)
{
	pthread_mutex_unlock(&g->lock);
}
unsigned gsrv_streams(const struct gsrv *s)
{
	return s->n_streams;
}
const char *gsrv_socket(const struct gsrv *s)
{
	return s->socket;
}

int gsrv_group_new(struct gsrv_group **ret, struct gerr *err)
{
	struct gsrv_group *g = calloc(1, sizeof(*g));

	if (!g)
		return gerr_set(err, ENOMEM, "out of memory creating the gRPC server");
	g->cq = grpc_completion_queue_create_for_next(NULL);
	if (!g->cq) {
		free(g);
		return gerr_set(err, ENOMEM, "grpc_completion_queue_create_for_next failed");
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	*ret = g;
	return 0;
}

static void call_free(struct gcall *c)
{
	struct gsrv_group *g = c->srv->g;

	if (c->streaming_live) {
		if (c->prev)
			c->prev->next = c->next;
		else
			c->srv->streams = c->next;
		if (c->next)
			c->next->prev = c->prev;
		c->srv->n_streams--;
	}
	grpc_call_drop(c->call, c->send_bb, c->payload);
	grpc_metadata_array_destroy(&c->md);
	if (c->generic)
		grpc_call_details_destroy(&c->call_details);
	if (c->has_details)
		grpc_slice_unref(c->details);
	free(c);
	g->live_calls--;
}

static int request_call(struct gsrv *s, unsigned method)
{
	struct gcall *c = calloc(1, sizeof(*c));
	grpc_call_error e;

	if (!c)
		return -ENOMEM;
	c->srv = s;
	c->method = method;
	c->t_req = (struct gtag){T_REQUEST, c};
	c->t_send = (struct gtag){T_SEND, c};
	c->t_close = (struct gtag){T_CLOSE, c};
	grpc_metadata_array_init(&c->md);
	if (method == GSRV_GENERIC) {
		c->generic = true;
		grpc_call_details_init(&c->call_details);
		e = grpc_server_request_call(s->server, &c->call, &c->call_details, &c->md, s->g->cq, s->g->cq,
					     &c->t_req);
	} else {
		e = grpc_server_request_registered_call(s->server, s->handles[method], &c->call, &c->deadline, &c->md,
							s->methods[method].streaming ? NULL : &c->payload, s->g->cq,
							s->g->cq, &c->t_req);
	}
	if (e != GRPC_CALL_OK) {
		if (c->generic)
			grpc_call_details_destroy(&c->call_details);
		grpc_metadata_array_destroy(&c->md);
		free(c);
		return -EIO;
	}
	s->g->live_calls++;
	return 0;
}

/*
 * A socket file already at path: stale (nobody listens: ECONNREFUSED) or live (another process
 * serves it, e.g. a second plugin on the same dir). Only a stale one may be removed; stealing a
 * live one would make two plugins replace each other's sockets. A lock file does not work here:
 * kubelet deletes every file in the device-plugin dir when it restarts. Our own restarts free
 * their servers (socket closed and removed) before they bind again, so they never see themselves.
 * Returns 1 stale (remove it), 0 gone, -EADDRINUSE live.
 */
static int check_stale(const char *path, struct gerr *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);

	if (strlen(path) >= sizeof(sa.sun_path))
		return gerr_set(err, ENAMETOOLONG,
				"socket path %s is too long (max %zu bytes); use a shorter "
				"--device-plugin-path",
				path, sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return gerr_set(err, errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN || errno == EINPROGRESS) {
		/* EAGAIN: its backlog is full, but somebody listens */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
			return gerr_set(err, EADDRINUSE,
					"%s is served by another gpulet plugin (pid unknown); stop it or use another "
					"--device-plugin-path",
					path);
		return gerr_set(err, EADDRINUSE,
				"%s is served by another gpulet plugin (pid %d from SO_PEERCRED); stop it or use "
				"another --device-plugin-path",
				path, (int)cred.pid);
	}
	if (errno == ECONNREFUSED)
		return 1;
	if (errno == ENOENT)
		return 0;
	return gerr_set(err, errno,
			"cannot tell whether %s is still served (connect: %s); remove it or use "
			"another --device-plugin-path",
			path, strerror(errno));
}

int gsrv_socket_live(const char *socket_path, struct gerr *err)
{
	struct stat st;
	int r;

	if (lstat(socket_path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return 0;
	r = check_stale(socket_path, err);
	return r == -EADDRINUSE ? r : 0;
}

int gsrv_add(struct gsrv_group *g, const char *socket_path, const struct gsrv_method *methods, size_t n_methods,
	     const struct gsrv_handler *h, void *data, struct gsrv **ret, struct gerr *err)
{
	_cleanup_free_ char *target = NULL;
	grpc_server_credentials *creds;
	struct stat st;
	struct gsrv *s;
	mode_t old_mask;
	int port, r;

	if (n_methods > GSRV_MAX_METHODS)
		return gerr_set(err, E2BIG, "too many gRPC methods (%zu)", n_methods);
	if (lstat(socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return gerr_set(
			    err, EEXIST,
			    "%s exists and is not a socket; remove it or choose another --device-plugin-path",
			    socket_path);
		r = check_stale(socket_path, err);
		if (r < 0)
			return r;
		if (r > 0 && unlink(socket_path) < 0 && errno != ENOENT)
			return gerr_set(err, errno, "cannot remove stale socket %s: %s", socket_path, strerror(errno));
	}
	if (asprintf(&target, "unix:%s", socket_path) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	s = calloc(1, sizeof(*s));
	if (!s || !(s->socket = strdup(socket_path))) {
		free(s);
		return gerr_set(err, ENOMEM, "out of memory");
	}
	s->g = g;
	s->h = *h;
	s->data = data;
	s->n_methods = n_methods;
	s->t_shutdown = (struct gtag){T_SHUTDOWN, s};
	s->gen = 1; /* a stream's sent_gen 0 means "nothing sent yet" */
	s->server = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(s->server, g->cq, NULL);
	for (size_t i = 0; i < n_methods; i++) {
		s->methods[i] = methods[i];
		s->handles[i] = grpc_server_register_method(
		    s->server, methods[i].path, NULL,
		    methods[i].streaming ? GRPC_SRM_PAYLOAD_NONE : GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
	}
	creds = grpc_insecure_server_credentials_create();
	/* the socket is born 0600: nobody but root may talk to the plugin (kubelet runs as root) */
	old_mask = umask(0077);
	port = grpc_server_add_http2_port(s->server, target, creds);
	umask(old_mask);
	grpc_server_credentials_release(creds);
	if (port == 0) {
		grpc_server_destroy(s->server);
		free(s->socket);
		free(s);
		return gerr_set(err, EADDRNOTAVAIL,
				"cannot listen on %s (directory missing or not writable?); check --device-plugin-path",
				socket_path);
	}
	grpc_server_start(s->server);
	s->started = true;
	(void)chmod(socket_path, 0600);
	gsrv_lock(g);
	for (size_t i = 0; i < n_methods; i++)
		request_call(s, i);
	request_call(s, GSRV_GENERIC);
	s->next = g->servers;
	g->servers = s;
	gsrv_unlock(g);
	if (ret)
		*ret = s;
	return 0;
}

/* Start one batch on c; counts it as pending. */
static int start_batch(struct gcall *c, const grpc_op *ops, size_t n, struct gtag *tag)
{
	if (grpc_call_start_batch(c->call, ops, n, tag, NULL) != GRPC_CALL_OK)
		return -EIO;
	c->pending++;
	return 0;
}

static grpc_byte_buffer *bb_from(const uint8_t *buf, size_t len)
{
	grpc_slice sl = grpc_slice_from_copied_buffer((const char *)buf, len);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);

	grpc_slice_unref(sl);
	return bb;
}

/* Send the current snapshot on a stream, or end it when the server is finishing and up to date. */
static void stream_kick(struct gcall *c)
{
	struct gsrv *s = c->srv;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;
	grpc_op ops[2];
	size_t n = 0;

	if (c->send_busy || c->closed || c->finished)
		return;
	if (c->sent_gen == s->gen) {
		if (!s->finishing)
			return;
		memset(ops, 0, sizeof(ops));
		ops[0].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
		ops[0].data.send_status_from_server.status = GRPC_STATUS_OK;
		if (start_batch(c, ops, 1, &c->t_send) == 0) {
			c->send_busy = true;
			c->finished = true;
		}
		return;
	}
	if (s->h.snapshot(s->data, c->method, &buf, &len) < 0)
		return;
	if (c->send_bb)
		grpc_byte_buffer_destroy(c->send_bb);
	c->send_bb = bb_from(buf, len);
	memset(ops, 0, sizeof(ops));
	if (c->sent_gen == 0) {
		ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
		n++;
	}
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n].data.send_message.send_message = c->send_bb;
	n++;
	if (start_batch(c, ops, n, &c->t_send) == 0) {
		c->send_busy = true;
		c->sent_gen = s->gen;
	}
}

void gsrv_notify(struct gsrv *s)
{
	s->gen++;
	for (struct gcall *c = s->streams; c; c = c->next)
		stream_kick(c);
}

/*
 * Answer a unary call: the reply when r is 0, else the gRPC status of -errno r with err's message.
 * The one place where errno becomes a gRPC status on the wire.
 */
static void unary_answer(struct gcall *c, int r, const uint8_t *out, size_t outlen, const struct gerr *err)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (r >= 0) {
		c->send_bb = bb_from(out, outlen);
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->send_bb;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = (grpc_status_code)grpc_status_from_errno(r);
	if (r < 0) {
		c->details = grpc_slice_from_copied_buffer(err->msg, strnlen(err->msg, GSRV_DETAILS_MAX - 1));
		c->has_details = true;
		ops[n].data.send_status_from_server.status_details = &c->details;
	}
	n++;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	if (start_batch(c, ops, n, &c->t_send) < 0)
		call_free(c);
	else
		c->finished = true;
}

static void unary_handle(struct gcall *c)
{
	struct gsrv *s = c->srv;
	_cleanup_free_ uint8_t *out = NULL;
	size_t outlen = 0, inlen = 0;
	struct gerr err = {0};
	grpc_slice in = grpc_empty_slice();
	int r;

	if (c->payload) {
		grpc_byte_buffer_reader rd;

		if (grpc_byte_buffer_reader_init(&rd, c->payload)) {
			in = grpc_byte_buffer_reader_readall(&rd);
			grpc_byte_buffer_reader_destroy(&rd);
		}
		inlen = GRPC_SLICE_LENGTH(in);
	}
	r = s->h.unary(s->data, c->method, GRPC_SLICE_START_PTR(in), inlen, &out, &outlen, &err);
	grpc_slice_unref(in);
	unary_answer(c, r, out, outlen, &err);
}

static void unimplemented(struct gcall *c)
{
	struct gerr err = {0};

	unary_answer(c, gerr_set(&err, EOPNOTSUPP, "method not implemented by this device plugin"), NULL, 0, &err);
}

static void stream_begin(struct gcall *c)
{
	struct gsrv *s = c->srv;
	grpc_op op;

	c->streaming_live = true;
	c->next = s->streams;
	if (s->streams)
		s->streams->prev = c;
	s->streams = c;
	s->n_streams++;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &c->cancelled;
	if (start_batch(c, &op, 1, &c->t_close) < 0) {
		call_free(c);
		return;
	}
	stream_kick(c);
}

static void handle_event(struct gsrv_group *g, struct gtag *t, bool ok)
{
	struct gcall *c = t->obj;

	switch (t->kind) {
	case T_SHUTDOWN:
		((struct gsrv *)t->obj)->shutdown_done = true;
		return;
	case T_REQUEST:
		if (!ok) { /* server shutting down: the requested call never came */
			call_free(c);
			return;
		}
		if (!g->stopping && !c->srv->finishing)
			request_call(c->srv, c->method);
		if (c->generic)
			unimplemented(c);
		else if (c->srv->methods[c->method].streaming)
			stream_begin(c);
		else
			unary_handle(c);
		return;
	case T_SEND:
		c->pending--;
		c->send_busy = false;
		if (!ok)
			c->closed = true;
		else if (!c->generic && c->srv->methods[c->method].streaming)
			stream_kick(c);
		break;
	case T_CLOSE:
		c->pending--;
		c->closed = true;
		break;
	}
	if (c->pending == 0)
		call_free(c);
}

static bool all_shut(struct gsrv_group *g)
{
	for (struct gsrv *s = g->servers; s; s = s->next)
		if (!s->shutdown_done)
			return false;
	return g->live_calls == 0;
}

static void *cq_thread(void *arg)
{
	struct gsrv_group *g = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		gsrv_lock(g);
		handle_event(g, ev.tag, ev.success);
		if (g->stopping && !g->cq_shutdown && all_shut(g)) {
			g->cq_shutdown = true;
			grpc_completion_queue_shutdown(g->cq);
		}
		pthread_cond_broadcast(&g->cond);
		gsrv_unlock(g);
	}
	return NULL;
}

int gsrv_group_run(struct gsrv_group *g, struct gerr *err)
{
	int r = pthread_create(&g->thread, NULL, cq_thread, g);

	if (r != 0)
		return gerr_set(err, r, "cannot start the gRPC thread: %s", strerror(r));
	g->running = true;
	return 0;
}

static bool streams_flushed(struct gsrv_group *g)
{
	for (struct gsrv *s = g->servers; s; s = s->next)
		for (struct gcall *c = s->streams; c; c = c->next)
			if (!c->closed && (c->send_busy || c->sent_gen != s->gen))
				return false;
	return true;
}

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Wait under the lock until pred(g) holds or timeout; returns -ETIMEDOUT on timeout. */
static int wait_for(struct gsrv_group *g, bool (*pred)(struct gsrv_group *), int timeout_ms)
{
	struct timespec ts;

	deadline_in(&ts, timeout_ms);
	while (!pred(g))
		if (pthread_cond_timedwait(&g->cond, &g->lock, &ts) == ETIMEDOUT)
			return pred(g) ? 0 : -ETIMEDOUT;
	return 0;
}

int gsrv_flush(struct gsrv_group *g, int timeout_ms)
{
	int r;

	if (!g->running)
		return 0;
	gsrv_lock(g);
	r = wait_for(g, streams_flushed, timeout_ms);
	gsrv_unlock(g);
	return r;
}

static bool no_streams(struct gsrv_group *g)
{
	for (struct gsrv *s = g->servers; s; s = s->next)
		if (s->streams)
			return false;
	return true;
}

static bool thread_done(struct gsrv_group *g)
{
	return g->cq_shutdown;
}

void gsrv_group_free(struct gsrv_group *g, int grace_ms)
{
	if (!g)
		return;
	gsrv_lock(g);
	g->stopping = true;
	for (struct gsrv *s = g->servers; s; s = s->next) {
		s->finishing = true;
		for (struct gcall *c = s->streams; c; c = c->next)
			stream_kick(c);
		grpc_server_shutdown_and_notify(s->server, g->cq, &s->t_shutdown);
	}
	if (g->running)
		(void)wait_for(g, no_streams, grace_ms);
	for (struct gsrv *s = g->servers; s; s = s->next)
		grpc_server_cancel_all_calls(s->server);
	if (!g->running) {
		/* no thread: drain the queue here */
		gsrv_unlock(g);
		g->running = true;
		gsrv_group_run(g, NULL);
		gsrv_lock(g);
	}
	if (!g->cq_shutdown && all_shut(g)) {
		g->cq_shutdown = true;
		grpc_completion_queue_shutdown(g->cq);
	}
	(void)wait_for(g, thread_done, 60000);
	gsrv_unlock(g);
	pthread_join(g->thread, NULL);
	while (g->servers) {
		struct gsrv *s = g->servers;

		g->servers = s->next;
		grpc_server_destroy(s->server);
		(void)unlink(s->socket);
		free(s->socket);
		free(s);
	}
	grpc_completion_queue_destroy(g->cq);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
