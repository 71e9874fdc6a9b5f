/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/spawn.h"

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Collect the child's output until the child itself exits (a daemonized grandchild may keep the pipe). */
static int collect(pid_t pid, int rfd, char *out, size_t size, size_t *ret_len, int timeout_ms)
{
	long long deadline = mono_ms() + timeout_ms;
	size_t len = 0;
	int status = 0;
	bool done = false;

	while (!done) {
		struct pollfd pfd = {.fd = rfd, .events = POLLIN};
		pid_t w = waitpid(pid, &status, WNOHANG);
		char chunk[512];
		ssize_t n;

		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 && mono_ms() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			out[len] = '\0';
			if (ret_len)
				*ret_len = len;
			return -ETIMEDOUT;
		}
		if (w != 0) {
			done = true; /* what it wrote before exiting is still in the pipe: drain it */
			if (w < 0)
				status = 127 << 8;
		} else if (poll(&pfd, 1, 5) <= 0) {
			continue;
		}
		while ((n = read(rfd, chunk, sizeof(chunk))) > 0)
			for (ssize_t i = 0; i < n && len + 1 < size; i++)
				out[len++] = chunk[i];
	}
	out[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

/* The whole input into the pipe, before there is a child to wait for: grown past its default when needed. */
static int fill(int fd, const char *input, size_t len)
{
	ssize_t n;

	if (len > 4096 && fcntl(fd, F_SETPIPE_SZ, (int)MIN(len, (size_t)INT_MAX)) < 0) {
		/* the default size may still hold it */
	}
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	n = write(fd, input, len);
	if (n < 0)
		return errno == EAGAIN ? -EMSGSIZE : -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

/*
 * The child of a spawn with a bind mount: fork (posix_spawn cannot unshare), then only
 * async-signal-safe calls until execve (gpulet's daemons have threads). Returns the pid or -errno.
 */
static pid_t fork_in_ns(const struct spawn_opts *o, int in, int outw)
{
	static const char fail_ns[] = "cannot make a mount namespace (unshare CLONE_NEWNS needs CAP_SYS_ADMIN)\n";
	static const char fail_bind[] = "cannot bind-mount the shm dir in the child's mount namespace\n";
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	pid_t pid = fork();

	if (pid != 0)
		return pid < 0 ? -errno : pid;
	sigemptyset(&none);
	sigaction(SIGPIPE, &dfl, NULL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in, STDIN_FILENO) < 0 || dup2(outw, STDOUT_FILENO) < 0 ||
	    dup2(o->stderr_to_out ? outw : open("/dev/null", O_WRONLY), STDERR_FILENO) < 0)
		_exit(126);
	/* private: neither the bind nor anything the tool mounts reaches our namespace */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		(void)!write(STDOUT_FILENO, fail_ns, sizeof(fail_ns) - 1);
		_exit(126);
	}
	if (mount(o->bind_src, o->bind_dst, NULL, MS_BIND, NULL) < 0) {
		(void)!write(STDOUT_FILENO, fail_bind, sizeof(fail_bind) - 1);
		_exit(126);
	}
	execve(o->path, o->argv, o->envp);
	_exit(127);
}

int spawn_run(const struct spawn_opts *o, char *out, size_t size)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	int in[2] = {-1, -1}, op[2] = {-1, -1}, r;
	pid_t pid;

	if (size == 0)
		return -EINVAL;
	out[0] = '\0';
	/* only our end of the output pipe is non-blocking: the tool's writes must block on a full pipe */
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0 || fcntl(op[0], F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		close_pair(in);
		close_pair(op);
		return r;
	}
	r = o->input ? fill(in[1], o->input, o->input_len ? o->input_len : strlen(o->input)) : 0;
	close(in[1]);
	if (r < 0) {
		close(in[0]);
		close_pair(op);
		return r;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, op[1], STDOUT_FILENO);
	if (o->stderr_to_out)
		posix_spawn_file_actions_adddup2(&fa, op[1], STDERR_FILENO);
	else
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	/* the daemons block their signals for signalfd and ignore SIGPIPE: the child must not inherit that */
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (o->bind_src) {
		pid = fork_in_ns(o, in[0], op[1]);
		r = pid < 0 ? (int)pid : 0;
	} else
		r = -posix_spawn(&pid, o->path, &fa, &at, o->argv, o->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(in[0]);
	close(op[1]);
	if (r == 0)
		r = collect(pid, op[0], out, size, o->out_len, o->timeout_ms);
	close(op[0]);
	return r;
}
