/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `config-manager` does with a choice (nodeconfig.h): CONFIG_FILE_DST made a symlink to the
 * chosen config, and the process named PROCESS_TO_SIGNAL signalled, as upstream's updateSymlink()
 * and signalProcess() do, with the care docs/reference/config-manager.md §4 describes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nodeconfig/nodeconfig.h"
#include "util/fileio.h"

#define COMM_LEN 15 /* TASK_COMM_LEN - 1: the kernel cuts comm there */

int nodeconfig_link(const char *dst, const char *src, struct gerr *err)
{
	char tmp[PATH_MAX], *rs = NULL, *rd = NULL;
	struct stat st;
	bool same;

	/* an existing dst that resolves to what src resolves to is left alone (no signal follows) */
	if (stat(dst, &st) == 0 && !S_ISDIR(st.st_mode)) {
		rs = realpath(src, NULL);
		rd = realpath(dst, NULL);
		same = rs && rd && streq(rs, rd);
		free(rs);
		free(rd);
		if (same)
			return 0;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.gpulet-%d", dst, (int)getpid()) >= (int)sizeof(tmp))
		return gerr_set(err, ENAMETOOLONG, "%s: path too long", dst);
	(void)unlink(tmp);
	if (symlink(src, tmp) < 0)
		return gerr_set(err, errno, "cannot create the symlink %s -> %s: %s", tmp, src, strerror(errno));
	/* one rename: a reader of dst sees the old config or the new one, never none */
	if (rename(tmp, dst) < 0) {
		int e = errno;

		(void)unlink(tmp);
		return gerr_set(err, e, "cannot replace %s: %s", dst, strerror(e));
	}
	return 1;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The first line or NUL-terminated word of a small file under proc/pid into buf ("" when unreadable). */
static void read_word(const char *proc, pid_t pid, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%d/%s", proc, (int)pid, file);
	if (read_file(path, 64 * 1024, &text, &len, NULL) < 0 || !len)
		return;
	snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text); /* stops at the first NUL too */
}

/*
 * Is pid the process name names: its command line's first word is name or has name's base name
 * (upstream compares the first word alone), and the kernel's view agrees (comm, cut at 15
 * characters, or the executable's base name): a process can write any command line, and under
 * hostPID every process of the node is in view.
 */
static bool is_named(const char *proc, pid_t pid, const char *name)
{
	const char *base = base_name(name);
	char word[PATH_MAX], comm[64], exe_link[PATH_MAX], exe[PATH_MAX];
	ssize_t n;

	read_word(proc, pid, "cmdline", word, sizeof(word));
	if (!word[0] || (!streq(word, name) && !streq(base_name(word), base)))
		return false;
	read_word(proc, pid, "comm", comm, sizeof(comm));
	if (comm[0] && strncmp(comm, base, COMM_LEN) == 0 && strlen(comm) == MIN(strlen(base), (size_t)COMM_LEN))
		return true;
	snprintf(exe_link, sizeof(exe_link), "%s/%d/exe", proc, (int)pid);
	n = readlink(exe_link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	return streq(base_name(exe), base);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int nodeconfig_find_process(const char *proc, const char *name, pid_t self, pid_t *ret, struct gerr *err)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	struct dirent *e;

	if (!name || !*name)
		return gerr_set(err, EINVAL, "no process name to signal (PROCESS_TO_SIGNAL is empty)");
	if (!(d = opendir(proc)))
		return gerr_set(err, errno, "cannot list the processes in %s: %s", proc, strerror(errno));
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || pid <= 1 ||
		    pid == (long)self) /* never pid 1: the pod's pause or the host's init */
			continue;
		if (n == cap) {
			pid_t *p = grow_alloc(pids, &cap, sizeof(*pids), 64);

			if (!p) {
				closedir(d);
				return gerr_set(err, ENOMEM, "out of memory");
			}
			pids = p;
		}
		pids[n++] = (pid_t)pid;
	}
	closedir(d);
	/* the first by pid, as procfs.AllProcs() hands them to upstream */
	if (n > 0)
		qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; i < n; i++)
		if (is_named(proc, pids[i], name)) {
			*ret = pids[i];
			return 0;
		}
	return gerr_set(err, ESRCH,
			"no process named %s (the command line's first word, with its comm or executable) in %s", name,
			proc);
}

int nodeconfig_signal(const char *proc, const char *name, int sig, pid_t *ret_pid, struct gerr *err)
{
	pid_t pid;
	int fd, r = nodeconfig_find_process(proc, name, getpid(), &pid, err);

	if (r < 0)
		return r;
	fd = pidfd_open(pid, 0);
	if (fd < 0 && errno == ENOSYS) {
		/* a kernel older than 5.3: the pid as found */
		if (kill(pid, sig) < 0)
			return gerr_set(err, errno, "cannot signal %s (pid %d): %s", name, (int)pid, strerror(errno));
		*ret_pid = pid;
		return 0;
	}
	if (fd < 0)
		return gerr_set(err, errno, "cannot signal %s (pid %d): %s", name, (int)pid, strerror(errno));
	/* the pidfd holds that process: if the pid was reused before it was opened, the check fails */
	if (!is_named(proc, pid, name))
		r = gerr_set(err, ESRCH, "process %d is no longer %s", (int)pid, name);
	else if (pidfd_send_signal(fd, sig, NULL, 0) < 0)
		r = gerr_set(err, errno, "cannot signal %s (pid %d): %s", name, (int)pid, strerror(errno));
	close(fd);
	if (r < 0)
		return r;
	*ret_pid = pid;
	return 0;
}
