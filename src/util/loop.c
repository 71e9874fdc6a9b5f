/* SPDX-License-Identifier: Apache-2.0 */
/* The one daemon loop and SIGHUP's one reload path (loop.h). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/loop.h"

struct loop_fd {
	int fd;
	int (*fn)(void *data);
	int (*src_fn)(void *data, struct loop *l); /* a source's (loop_add_source()), instead of fn */
	void *data;
};

struct loop {
	const struct loop_ops *ops;
	void *data;
	int sigfd;
	sigset_t old_mask;     /* before loop_new(), set back by loop_free() */
	void (*old_pipe)(int); /* SIGPIPE's action before loop_new() */
	bool mask_saved, pipe_saved;
	struct loop_fd fds[LOOP_MAX_FDS];
	size_t n_fds;
	long long due_ms; /* when the tick is due (CLOCK_MONOTONIC ms), < 0: not before an event */
	bool stopped;
	int code;
	const char *cause; /* of the reload under way (loop_reload_cause()) */
};

long long loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	if (l->sigfd >= 0)
		close(l->sigfd);
	if (l->pipe_saved)
		signal(SIGPIPE, l->old_pipe);
	if (l->mask_saved)
		(void)pthread_sigmask(SIG_SETMASK, &l->old_mask, NULL);
	free(l);
}

int loop_new(const sigset_t *set, const struct loop_ops *ops, void *data, struct loop **ret, struct gerr *err)
{
	_cleanup_(loop_freep) struct loop *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return gerr_set(err, ENOMEM, "out of memory");
	*l = (struct loop){.ops = ops, .data = data, .sigfd = -1};
	r = pthread_sigmask(SIG_BLOCK, set, &l->old_mask); /* returns its error; errno is not set */
	if (r != 0)
		return gerr_set(err, r, "cannot block signals: %s", strerror(r));
	l->mask_saved = true;
	l->sigfd = signalfd(-1, set, SFD_CLOEXEC);
	if (l->sigfd < 0)
		return gerr_set(err, errno, "signalfd: %s", strerror(errno));
	l->old_pipe = signal(SIGPIPE, SIG_IGN);
	l->pipe_saved = l->old_pipe != SIG_ERR;
	*ret = TAKE_PTR(l);
	return 0;
}

int loop_add_fd(struct loop *l, int fd, int (*fn)(void *data), void *data)
{
	if (l->n_fds == LOOP_MAX_FDS)
		return -E2BIG;
	l->fds[l->n_fds++] = (struct loop_fd){.fd = fd, .fn = fn, .data = data};
	return 0;
}

int loop_add_source(struct loop *l, const struct loop_source *s)
{
	if (l->n_fds == LOOP_MAX_FDS)
		return -E2BIG;
	l->fds[l->n_fds++] = (struct loop_fd){.fd = s->fd, .src_fn = s->fn, .data = s->data};
	return 0;
}

int loop_reload(struct loop *l, const char *cause, struct gerr *err)
{
	int r;

	if (!l->ops->reload)
		return gerr_set(err, EOPNOTSUPP, "this daemon does not reload its config");
	l->cause = cause;
	r = l->ops->reload(l->data, err);
	l->cause = NULL;
	if (r < 0)
		log_error("Config reload failed, keeping the running config", "cause=\"%s\" error=\"%s\" hint=\"%s\"",
			  cause, err->msg[0] ? err->msg : "unknown",
			  "fix what the error names, then send SIGHUP again");
	return r;
}

const char *loop_reload_cause(const struct loop *l)
{
	return l->cause ? l->cause : "SIGHUP";
}

void loop_due(struct loop *l, long long ms)
{
	l->due_ms = ms < 0 ? -1 : loop_now_ms() + ms;
}

void loop_stop(struct loop *l, int code)
{
	l->stopped = true;
	l->code = code;
}

static void tick(struct loop *l)
{
	if (l->ops->tick)
		loop_due(l, l->ops->tick(l->data));
	else
		l->due_ms = -1;
}

/* poll()'s timeout for the tick's due time. */
static int timeout_ms(const struct loop *l)
{
	long long left;

	if (l->due_ms < 0)
		return -1;
	left = l->due_ms - loop_now_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* A signal arrived: SIGHUP reloads (true: go on), any other stops the loop. */
static bool on_signal(struct loop *l)
{
	struct signalfd_siginfo si;
	struct gerr err = {0};

	if (read(l->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return true;
	if (si.ssi_signo == SIGHUP && l->ops->reload) {
		(void)loop_reload(l, "SIGHUP", &err);
		return true;
	}
	log_info("Received signal, shutting down", "signal=%s", strsignal((int)si.ssi_signo));
	loop_stop(l, 0);
	return false;
}

int loop_run(struct loop *l)
{
	struct pollfd pfd[1 + LOOP_MAX_FDS];

	tick(l);
	while (!l->stopped) {
		int n;

		/* a negative fd (a watch that could not be set up) is skipped by poll() */
		pfd[0] = (struct pollfd){.fd = l->sigfd, .events = POLLIN};
		for (size_t k = 0; k < l->n_fds; k++)
			pfd[1 + k] = (struct pollfd){.fd = l->fds[k].fd, .events = POLLIN};
		n = poll(pfd, 1 + l->n_fds, timeout_ms(l));
		if (n < 0 && errno != EINTR) {
			int e = errno;

			log_error("Cannot wait for events, exiting", "error=\"poll: %s\"", strerror(e));
			return -e;
		}
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			(void)on_signal(l);
			continue;
		}
		for (size_t k = 0; n > 0 && k < l->n_fds && !l->stopped; k++) {
			const struct loop_fd *f = &l->fds[k];
			int r = !(pfd[1 + k].revents & POLLIN) ? 0 : f->src_fn ? f->src_fn(f->data, l) : f->fn(f->data);

			if (r < 0)
				loop_stop(l, r);
		}
		if (!l->stopped)
			tick(l);
	}
	return l->code;
}

/* ---- the command line kept for SIGHUP -------------------------------------------------------- */

struct loop_argv {
	int argc;
	char **argv; /* a copy, with the command's own defaults first */
	loop_file_fn file_fn;
	void *file_data;
};

void loop_argv_free(struct loop_argv *a)
{
	if (!a)
		return;
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	free(a);
}

int loop_argv_new(int argc, char *const *argv, const char *const *defaults, struct loop_argv **ret)
{
	_cleanup_(loop_argv_freep) struct loop_argv *a = calloc(1, sizeof(*a));
	int nd = 0;

	while (defaults && defaults[nd])
		nd++;
	if (!a || !(a->argv = calloc((size_t)argc + (size_t)nd + 1, sizeof(char *))))
		return -ENOMEM;
	for (int i = 0; i < argc + nd; i++) {
		/* the verb, then the defaults as flags (a later real flag wins), then the rest */
		const char *s = i == 0 ? argv[0] : i <= nd ? defaults[i - 1] : argv[i - nd];

		if (!(a->argv[a->argc++] = strdup(s)))
			return -ENOMEM;
	}
	*ret = TAKE_PTR(a);
	return 0;
}

char **loop_argv_vector(const struct loop_argv *a, int *argc)
{
	char **v = calloc((size_t)a->argc + 1, sizeof(char *));

	if (v)
		memcpy(v, a->argv, (size_t)a->argc * sizeof(char *));
	*argc = a->argc;
	return v;
}

void loop_argv_set_file(struct loop_argv *a, loop_file_fn fn, void *data)
{
	a->file_fn = fn;
	a->file_data = data;
}

int loop_reparse(const struct optspec_cli *cli, const struct loop_argv *a, void *opts, struct gerr *err)
{
	_cleanup_free_ char **v = NULL;
	_cleanup_free_ char *path = NULL, *flag = NULL;
	enum optspec_action action;
	enum optspec_fail fail;
	int argc, r;

	if (!(v = calloc((size_t)a->argc + 2, sizeof(char *))))
		return gerr_set(err, ENOMEM, "out of memory");
	memcpy(v, a->argv, (size_t)a->argc * sizeof(char *));
	argc = a->argc;
	if (a->file_fn && cli->file_opt) {
		if ((r = a->file_fn(a->file_data, &path, err)) < 0)
			return r;
		/* after argv[0]: before a "--" that would make it an operand */
		if (asprintf(&flag, "--%s=%s", cli->file_opt, path) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
		memmove(v + 2, v + 1, (size_t)(argc - 1) * sizeof(char *));
		v[1] = flag;
		argc++;
	}
	return optspec_parse(cli, argc, v, opts, &action, &fail, err);
}
