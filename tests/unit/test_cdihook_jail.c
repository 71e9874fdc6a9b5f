/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fences of the ldconfig jail (src/cdihook/isolate.c, confine.c; docs/reference/cdi-hook.md
 * §6), each judged by the kernel: a static stand-in for ldconfig (tests/unit/jailprobe.c) runs
 * through cdihook_run_isolated() and reports what it can reach.
 *   - every procfs, sysfs, nsfs, ... of the rootfs's tree is detached, wherever it is mounted,
 *     stacked or not, and the other mounts stay;
 *   - a host procfs that reaches ldconfig anyway (here: as its fd 0) does not lead into a host
 *     process whose uid is 0 and which has no capabilities: the ptrace check fails, by Landlock,
 *     and by the user namespace where Landlock is missing; neither: the jail refuses to run;
 *   - the seccomp filter refuses each listed syscall with EPERM, the x32 numbers too, and kills a
 *     process that enters through another architecture's syscall table.
 * Needs root (mounts, namespaces); skipped otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cdihook/cdihook.h"
#include "cdihook/confine.h"
#include "util/fileio.h"

struct tree {
	char tmp[64];
	char root[128];
	struct stat st;
};

static void at(char *buf, size_t size, const char *dir, const char *rel)
{
	assert_true((size_t)snprintf(buf, size, "%s/%s", dir, rel) < size);
}

static void mkdirs(const struct tree *t, const char *rel)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", t->root, rel);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	if (geteuid() != 0) {
		free(t);
		*state = NULL;
		return 0;
	}
	snprintf(t->tmp, sizeof(t->tmp), "/tmp/gpulet-jail.XXXXXX");
	assert_non_null(mkdtemp(t->tmp));
	at(t->root, sizeof(t->root), t->tmp, "root");
	assert_int_equal(mkdir(t->root, 0755), 0);
	assert_int_equal(stat(t->root, &t->st), 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[160];

	if (!t)
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf --one-file-system '%s'", t->tmp);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

/* What the child does before the jail: mounts in the rootfs, an fd 0, a seccomp filter. */
typedef int (*prepare_fn)(const struct tree *t, void *arg);

/*
 * In a forked child with a private mount namespace: prepare(), then the jail runs the probe with
 * args. Returns the child's exit status (0: ran); the jail's message, if any, lands in msg.
 */
static int run_jail(const struct tree *t, prepare_fn prepare, void *arg, char *const *args, char *msg, size_t size)
{
	char path[256];
	int status, fd;
	pid_t pid;

	at(path, sizeof(path), t->tmp, "message");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[16] = {"ldconfig"};
		struct gerr err = {0};
		struct cdihook_jail j = {.rootfs = t->root,
					 .dev = t->st.st_dev,
					 .ino = t->st.st_ino,
					 .name = JAILPROBE,
					 .argv = argv,
					 .timeout_s = 10};

		for (size_t i = 0; args && args[i] && i + 2 < ELEMENTSOF(argv); i++)
			argv[i + 1] = args[i];
		if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(3);
		if (prepare && prepare(t, arg) < 0)
			_exit(4);
		j.exe_fd = open(JAILPROBE, O_RDONLY | O_CLOEXEC);
		if (j.exe_fd < 0)
			_exit(5);
		if (cdihook_run_isolated(&j, &err) < 0) {
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			(void)!write(fd, err.msg, strlen(err.msg));
			_exit(1);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	msg[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, msg, size - 1);

		msg[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	return WEXITSTATUS(status);
}

/* The value after "key " in the probe's report (a static buffer), or NULL. */
static const char *report(const struct tree *t, const char *key)
{
	static char value[256];
	_cleanup_free_ char *text = NULL;
	char path[256];
	size_t len, klen = strlen(key);

	at(path, sizeof(path), t->root, "report");
	if (read_file(path, 1 << 16, &text, &len, NULL) < 0)
		return NULL;
	for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			size_t n = strcspn(line + klen + 1, "\n");

			snprintf(value, sizeof(value), "%.*s", (int)n, line + klen + 1);
			return value;
		}
	return NULL;
}

static void expect(const struct tree *t, const char *key, const char *want)
{
	const char *got = report(t, key);

	if (!got || strcmp(got, want) != 0)
		fail_msg("probe's %s: got %s, want %s", key, got ? got : "(none)", want);
}

static bool have_landlock(void)
{
	return syscall(__NR_landlock_create_ruleset, NULL, 0, 1U /* VERSION */) >= 1;
}

/* ---- kernel file systems, wherever they are mounted ----------------------------------------- */

static int mount_kernel_fs(const struct tree *t, void *arg)
{
	static const char *const dirs[] = {"proc", "host/proc", "deep/a/b/proc2", "sys", "stack", "keep"};
	char p[512];

	(void)arg;
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		mkdirs(t, dirs[i]);
	at(p, sizeof(p), t->root, "proc");
	if (mount("proc", p, "proc", 0, NULL) < 0)
		return -1;
	at(p, sizeof(p), t->root, "host/proc"); /* a pod's read-only hostPath of the host's /proc */
	if (mount("/proc", p, NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return -1;
	at(p, sizeof(p), t->root, "deep/a/b/proc2");
	if (mount("proc", p, "proc", 0, NULL) < 0)
		return -1;
	at(p, sizeof(p), t->root, "sys");
	if (mount("sysfs", p, "sysfs", 0, NULL) < 0)
		return -1;
	/* procfs, a tmpfs over it, procfs again: the lower one comes up when the top one goes */
	at(p, sizeof(p), t->root, "stack");
	if (mount("proc", p, "proc", 0, NULL) < 0 || mount("tmpfs", p, "tmpfs", 0, "size=4k") < 0 ||
	    mount("proc", p, "proc", 0, NULL) < 0)
		return -1;
	/* an ordinary file system stays */
	at(p, sizeof(p), t->root, "keep");
	if (mount("tmpfs", p, "tmpfs", 0, "size=64k") < 0)
		return -1;
	strncat(p, "/file", sizeof(p) - strlen(p) - 1);
	return close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
}

static void test_kernel_fs_detached(void **state)
{
	struct tree *t = *state;
	char *const args[] = {"count", "/proc",  "count", "/host/proc", "count", "/deep/a/b/proc2", "count", "/sys",
			      "count", "/stack", "count", "/keep",      NULL};
	char msg[1024];

	if (!t)
		skip();
	assert_int_equal(run_jail(t, mount_kernel_fs, NULL, args, msg, sizeof(msg)), 0);
	expect(t, "count /proc", "0");
	expect(t, "count /host/proc", "0");
	expect(t, "count /deep/a/b/proc2", "0");
	expect(t, "count /sys", "0");
	expect(t, "count /stack", "0");
	expect(t, "count /keep", "1");
}

/* ---- the ptrace fence ------------------------------------------------------------------------ */

/* A host process as the chart's pods run: uid 0, no capability at all (returns once it has none). */
static pid_t capless_victim(void)
{
	int ready[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct none[2] = {{0}};

		if (syscall(SYS_capset, &hdr, none) < 0)
			_exit(2);
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

struct fence_case {
	bool no_landlock, no_userns;
};

/* A filter that makes Landlock (and user namespaces) missing, as on an older or stricter kernel. */
static int hide_features(const struct fence_case *c)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_create_ruleset, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, c->no_userns ? SECCOMP_RET_ERRNO | ENOSPC : SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ELEMENTSOF(f), .filter = f};

	if (!c->no_landlock)
		return 0;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* fd 0: the host's procfs (a reference the jail cannot know of); then the case's filter */
static int host_proc_on_stdin(const struct tree *t, void *arg)
{
	int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);

	(void)t;
	if (fd < 0 || dup2(fd, 0) < 0)
		return -1;
	close(fd);
	return hide_features(arg);
}

static void ptrace_fence(const struct tree *t, const struct fence_case *c)
{
	char target[256], args_reach[300], msg[1024], outside[256];
	char *const args[] = {"reach", args_reach, NULL};
	pid_t victim = capless_victim();
	struct stat st;
	int fd, proc, r;

	/* a host file outside the rootfs, reachable through the victim's /proc/<pid>/root */
	at(outside, sizeof(outside), t->tmp, "outside");
	fd = open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(target, sizeof(target), "%d/root%s", (int)victim, outside);
	snprintf(args_reach, sizeof(args_reach), "%s", target);
	/* outside the jail a process of the same uid gets there: the test means something */
	proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(proc >= 0);
	fd = openat(proc, target, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);
	close(proc);

	r = run_jail(t, host_proc_on_stdin, (void *)c, args, msg, sizeof(msg));
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	if (c->no_landlock && c->no_userns) {
		assert_int_equal(r, 1);
		if (!strstr(msg, "neither Landlock") || !strstr(msg, "user.max_user_namespaces"))
			fail_msg("jail without either fence: %s", msg);
		return;
	}
	if (r != 0)
		fail_msg("jail: exit %d: %s", r, msg);
	{
		char key[320];

		snprintf(key, sizeof(key), "reach %s", target);
		expect(t, key, "13"); /* EACCES from proc_fd_access_allowed: the ptrace check failed */
	}
	/* which fence held: Landlock refuses to make a FIFO; the user namespace does not */
	expect(t, "mkfifo", c->no_landlock ? "0" : "13");
	expect(t, "uid", "0");
	/* what ldconfig writes stays owned by root on the host, user namespace or not */
	at(outside, sizeof(outside), t->root, "report");
	assert_int_equal(stat(outside, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	expect(t, "caps", "0:0xa");
}

static void test_ptrace_fence_landlock(void **state)
{
	struct fence_case c = {false, false};

	if (!*state || !have_landlock())
		skip();
	ptrace_fence(*state, &c);
}

static void test_ptrace_fence_userns(void **state)
{
	struct fence_case c = {true, false};

	if (!*state)
		skip();
	ptrace_fence(*state, &c);
}

static void test_ptrace_fence_neither(void **state)
{
	struct fence_case c = {true, true};

	if (!*state)
		skip();
	ptrace_fence(*state, &c);
}

/* ---- the seccomp filter ---------------------------------------------------------------------- */

/* In a child under the filter: each listed syscall fails EPERM; getpid works; x32 numbers fail. */
static void test_seccomp_denies(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t self = getpid();

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || confine_seccomp() < 0)
			_exit(2);
		for (size_t i = 0; i < confine_n_denied_syscalls; i++) {
			long r = syscall(confine_denied_syscalls[i], 0, 0, 0, 0, 0, 0);

			if (r == 0 && getpid() != self)
				_exit(0); /* a clone or fork that went through: its child leaves quietly */
			if (r != -1 || errno != EPERM) {
				fprintf(stderr, "syscall %d: %ld, %s\n", confine_denied_syscalls[i], r,
					strerror(errno));
				_exit(10);
			}
		}
		if (getpid() != self)
			_exit(11);
#if defined(__x86_64__)
		if (syscall(0x40000000 | __NR_getpid) != -1 || errno != EPERM)
			_exit(12);
#endif
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#if defined(__x86_64__)
/* getpid through the i386 table (int 0x80, eax 20): the syscall's return value */
static long i386_getpid(void)
{
	long r = 20;

	__asm__ volatile("int $0x80" : "+a"(r) : : "memory");
	return r;
}

static int run_i386_getpid(bool filtered)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || confine_seccomp() < 0))
			_exit(2);
		_exit(i386_getpid() > 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* Another architecture's table is no way around the list: the process is killed. */
static void test_seccomp_kills_other_arch(void **state)
{
	int status = run_i386_getpid(false);

	(void)state;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		skip(); /* no IA32 emulation in this kernel: nothing to enter through */
	status = run_i386_getpid(true);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kernel_fs_detached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ptrace_fence_landlock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ptrace_fence_userns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ptrace_fence_neither, setup, teardown),
		cmocka_unit_test(test_seccomp_denies),
#if defined(__x86_64__)
		cmocka_unit_test(test_seccomp_kills_other_arch),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
