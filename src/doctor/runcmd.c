/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asking a host tool for its version without a shell (issue 8 §4: gpulet runs as root and never
 * invokes /bin/sh): the tool is looked up at fixed absolute paths below --root (no $PATH lookup),
 * started with fork + execve and a fixed argv and environment, its stdout read through a pipe up
 * to a bound, its stderr sent to /dev/null, and it is killed when it does not finish in time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "util/fileio.h"
#include "util/macro.h"

/* Where host tools live; /usr/local/bin last (hand-installed copies). */
static const char *const tool_dirs[] = {"/usr/bin", "/usr/sbin", "/usr/local/bin"};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static char *find_tool(const char *root, const char *name)
{
	char rel[256];

	if (strchr(name, '/'))
		return NULL;
	for (size_t k = 0; k < ELEMENTSOF(tool_dirs); k++) {
		_cleanup_free_ char *p = NULL;

		snprintf(rel, sizeof(rel), "%s/%s", tool_dirs[k], name);
		p = root_path(root, rel);
		if (p && access(p, X_OK) == 0)
			return TAKE_PTR(p);
	}
	return NULL;
}

/* In the child: stdout to the pipe, stdin/stderr to /dev/null, then exec. Only async-signal-safe calls. */
__attribute__((noreturn)) static void child_exec(const char *path, char *const argv[], int out_fd)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDERR_FILENO) < 0 ||
	    dup2(out_fd, STDOUT_FILENO) < 0)
		_exit(127);
	execve(path, argv, envp);
	_exit(127);
}

int doctor_run_tool(const char *root, const char *name, char *const argv[], char *buf, size_t size, int timeout_ms)
{
	_cleanup_free_ char *path = find_tool(root, name);
	_cleanup_close_ int rfd = -1;
	int fds[2], status = 0, r = 0;
	size_t len = 0;
	long deadline;
	pid_t pid;

	if (!path)
		return -ENOENT;
	if (size == 0)
		return -EINVAL;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	if (pid == 0)
		child_exec(path, argv, fds[1]);
	close(fds[1]);
	rfd = fds[0];
	deadline = now_ms() + timeout_ms;
	for (;;) {
		struct pollfd pfd = {.fd = rfd, .events = POLLIN};
		long left = deadline - now_ms();
		char chunk[512];
		ssize_t n;

		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			continue;
		n = read(rfd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EOF: the tool closed stdout */
		/* keep the first size-1 bytes, drain the rest so the tool is not blocked on a full pipe */
		if (len < size - 1) {
			size_t take = MIN((size_t)n, size - 1 - len);

			memcpy(buf + len, chunk, take);
			len += take;
		}
	}
	buf[len] = '\0';
	if (r == -ETIMEDOUT)
		kill(pid, SIGKILL);
	/* after EOF the tool normally exits at once; a tool that closed stdout and hangs is killed */
	for (;;) {
		pid_t w = waitpid(pid, &status, r == -ETIMEDOUT ? 0 : WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			if (!r)
				r = -errno;
			break;
		}
		if (w == 0) {
			if (now_ms() >= deadline) {
				kill(pid, SIGKILL);
				r = -ETIMEDOUT;
			} else
				usleep(10000);
		}
	}
	if (r < 0)
		return r;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	return (int)len;
}
