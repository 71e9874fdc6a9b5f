/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for ldconfig, built static by test_hook_attacks.py and given to the update-ldcache hook
 * as --ldconfig-path. It writes what it can see into /probe.out of the root it runs in (the
 * container's rootfs when the hook confines it): its pid, environment, open descriptors above 2,
 * what /proc/1/root, /proc/self/root and /proc/self/cwd read as, and whether the host canary
 * (CANARY, compiled in) is reachable through the magic links of /proc, its effective capabilities
 * and its resource limits ("limit.NAME=SOFT HARD", -1 for unlimited). Built with -DPWN it also
 * tries to write a file into the canary through each of them (the image's own "ldconfig" of the
 * relative --ldconfig-path attack). Exits 0, as ldconfig does.
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CANARY
#error "build with -DCANARY=\"/host/canary/dir\""
#endif

extern char **environ;

/* where the host's canary could be seen from: "" (this root), /proc/<pid>/root of the first pids, and
 * the magic links of the process itself */
#define MAX_PID 32
static const char *const self_prefixes[] = {"", "/proc/self/root", "/proc/self/cwd", "/proc/thread-self/root"};

static void show_link(FILE *f, const char *key, const char *path)
{
	char buf[4096];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0)
		fprintf(f, "%s=-\n", key);
	else
		fprintf(f, "%s=%.*s\n", key, (int)n, buf);
}

/* is the canary reachable under prefix; with -DPWN, write into it from there too */
static void look(FILE *f, const char *prefix)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s/a.txt", prefix, CANARY);
	if (stat(path, &st) == 0)
		fprintf(f, "reach=%s\n", path);
#ifdef PWN
	snprintf(path, sizeof(path), "%s%s/pwned-by-image-ldconfig", prefix, CANARY);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		fprintf(f, "pwned=%s\n", path);
		close(fd);
	}
#endif
}

static void limits(FILE *f)
{
	static const struct {
		int res;
		const char *name;
	} rows[] = {{RLIMIT_DATA, "data"},     {RLIMIT_AS, "as"},     {RLIMIT_FSIZE, "fsize"},
		    {RLIMIT_NOFILE, "nofile"}, {RLIMIT_CORE, "core"}, {RLIMIT_STACK, "stack"}};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct rlimit rl;

		if (getrlimit(rows[i].res, &rl) == 0)
			fprintf(f, "limit.%s=%lld %lld\n", rows[i].name,
				rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
				rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max);
	}
}

int main(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[2] = {{0}};
	FILE *f = fopen("/probe.out", "w");
	char path[4096], fdpath[64];

	if (!f)
		return 0; /* nowhere to report: the test sees no /probe.out and fails */
	fprintf(f, "pid=%d\n", (int)getpid());
	if (syscall(SYS_capget, &hdr, caps) == 0)
		fprintf(f, "caps=%#llx\n", (unsigned long long)caps[1].effective << 32 | caps[0].effective);
	limits(f);
	for (char **e = environ; e && *e; e++)
		fprintf(f, "env=%s\n", *e);
	for (int fd = 3; fd < 4096; fd++) {
		if (fd == fileno(f) || fcntl(fd, F_GETFD) < 0)
			continue;
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		snprintf(path, sizeof(path), "fd.%d", fd);
		show_link(f, path, fdpath);
	}
	show_link(f, "proc1root", "/proc/1/root");
	show_link(f, "selfroot", "/proc/self/root");
	show_link(f, "selfcwd", "/proc/self/cwd");
	for (size_t i = 0; i < sizeof(self_prefixes) / sizeof(self_prefixes[0]); i++)
		look(f, self_prefixes[i]);
	for (int pid = 1; pid <= MAX_PID; pid++) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "/proc/%d/root", pid);
		look(f, prefix);
	}
	fclose(f);
	return 0;
}
