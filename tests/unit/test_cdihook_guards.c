/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hook's guards against a hostile image (docs/reference/cdi-hook.md §5): the rootfs refused by
 * identity when it is the host's "/", relative --ldconfig-path refused, temp names never cut, the
 * component walk retrying a component swapped under it, a dangling /etc/ld.so.conf.d, and the
 * isolation ldconfig runs in, seen from inside by a static stand-in (tests/unit/jailprobe.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cdihook/cdihook.h"
#include "cdihook/confine.h"
#include "cdihook/inroot.h"
#include "util/fileio.h"

struct tree {
	char tmp[64];
	char root[128];
	int root_fd;
};

static void at(char *buf, size_t size, const char *dir, const char *rel)
{
	assert_true((size_t)snprintf(buf, size, "%s/%s", dir, rel) < size);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	at(p, sizeof(p), dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void mkdir_at(const char *dir, const char *rel)
{
	char p[512];

	at(p, sizeof(p), dir, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void link_at(const char *dir, const char *rel, const char *target)
{
	char p[512];

	at(p, sizeof(p), dir, rel);
	assert_int_equal(symlink(target, p), 0);
}

static bool exists_at(const char *dir, const char *rel)
{
	char p[512];
	struct stat st;

	at(p, sizeof(p), dir, rel);
	return lstat(p, &st) == 0;
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	snprintf(t->tmp, sizeof(t->tmp), "/tmp/gpulet-guards.XXXXXX");
	assert_non_null(mkdtemp(t->tmp));
	at(t->root, sizeof(t->root), t->tmp, "root");
	assert_int_equal(mkdir(t->root, 0755), 0);
	mkdir_at(t->root, "etc");
	put(t->root, "etc/hostname", "inside");
	t->root_fd = open(t->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(t->root_fd >= 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[160];

	close(t->root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->tmp);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

/* root.path of <tmp>/bundle/config.json → the opened rootfs (fd) or -errno */
static int rootfs_of(const struct tree *t, const char *root_path)
{
	_cleanup_free_ char *rootfs = NULL;
	struct oci_state st = {0};
	char bundle[128], json[1024];
	struct gerr err = {0};
	int r;

	at(bundle, sizeof(bundle), t->tmp, "bundle");
	(void)mkdir(bundle, 0755);
	snprintf(json, sizeof(json), "{\"root\": {\"path\": \"%s\"}}", root_path);
	put(bundle, "config.json", json);
	st.bundle = bundle;
	r = oci_state_rootfs(&st, &rootfs, &err);
	if (r < 0)
		return r;
	r = cdihook_open_rootfs(rootfs, &err);
	if (r < 0)
		assert_non_null(strstr(err.msg, "host's \"/\""));
	return r;
}

static void test_rootfs_identity(void **state)
{
	struct tree *t = *state;
	char climb[600] = "", slash[128];
	const char *host_roots[] = {"/",   "//", "/.", "/./", "/tmp/..", "/proc/self/root", "/tmp/../../../..",
				    slash, climb};
	int fd;

	at(slash, sizeof(slash), t->tmp, "slash");
	link_at(t->tmp, "slash", "/");
	for (int i = 0; i < 40; i++)
		strcat(climb, "../");
	for (size_t i = 0; i < ELEMENTSOF(host_roots); i++) {
		fd = rootfs_of(t, host_roots[i]);
		if (fd >= 0)
			fail_msg("root.path '%s' was accepted", host_roots[i]);
		assert_int_equal(fd, -EINVAL);
	}
	/* the bundle's own rootfs, relative and absolute, is fine */
	mkdir_at(t->tmp, "bundle/rootfs");
	fd = rootfs_of(t, "rootfs");
	assert_true(fd >= 0);
	close(fd);
	fd = rootfs_of(t, t->root);
	assert_true(fd >= 0);
	close(fd);
}

static void test_relative_ldconfig(void **state)
{
	struct tree *t = *state;
	const char *folders[] = {"/usr/lib64"};
	struct cdihook_ldcache_options o = {"sbin/ldconfig", folders, 1, t->root, 0};
	struct gerr err = {0};

	assert_int_equal(cdihook_check_ldconfig_path("/sbin/ldconfig", &err), 0);
	assert_int_equal(cdihook_check_ldconfig_path("@/sbin/ldconfig", &err), 0);
	assert_int_equal(cdihook_check_ldconfig_path(NULL, &err), 0);
	assert_int_equal(cdihook_check_ldconfig_path("sbin/ldconfig", &err), -EINVAL);
	assert_int_equal(cdihook_check_ldconfig_path("@sbin/ldconfig", &err), -EINVAL);
	assert_int_equal(cdihook_check_ldconfig_path("./ldconfig", &err), -EINVAL);
	assert_int_equal(cdihook_update_ldcache(t->root_fd, &o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--ldconfig-path 'sbin/ldconfig'"));
	/* nothing was written into the image */
	assert_false(exists_at(t->root, "etc/ld.so.conf.d"));
	/* a time bound longer than the default is refused */
	o.ldconfig_path = "/sbin/ldconfig";
	o.timeout_s = CDIHOOK_LDCONFIG_TIMEOUT_S + 1;
	assert_int_equal(cdihook_update_ldcache(t->root_fd, &o, &err), -EINVAL);
}

/* A name as long as a file system takes: written whole, and no temp file left beside it. */
static void test_long_temp_names(void **state)
{
	struct tree *t = *state;
	char name[NAME_MAX + 1], path[PATH_MAX], link[NAME_MAX + 32], *text = NULL;
	const char *links[] = {link};
	struct gerr err = {0};
	size_t len;
	int n = 0;

	memset(name, 'x', 250);
	name[250] = '\0';
	snprintf(path, sizeof(path), "/etc/%s", name);
	assert_int_equal(cdihook_write_in_root(t->root_fd, path, "long\n", &err), 0);
	snprintf(link, sizeof(link), "hostname::/etc/%.*s", 249, name);
	assert_int_equal(cdihook_create_symlinks(t->root_fd, links, 1, &err), 0);
	at(path, sizeof(path), t->root, "etc");
	assert_int_equal(read_file(strcat(strcat(path, "/"), name), 64, &text, &len, NULL), 0);
	assert_string_equal(text, "long\n");
	free(text);
	/* etc holds hostname, the file and the link: nothing else */
	{
		char cmd[256];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "ls -A '%s/etc' | wc -l", t->root);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_int_equal(fscanf(p, "%d", &n), 1);
		pclose(p);
	}
	assert_int_equal(n, 3);
}

/* A link past PATH_MAX is refused, and the message keeps its reason after the path, quoted short. */
static void test_long_link_message(void **state)
{
	struct tree *t = *state;
	char link[PATH_MAX + 64];
	const char *links[] = {link};
	struct gerr err = {0};
	size_t i = 0;

	i = (size_t)snprintf(link, sizeof(link), "x::");
	while (i + 2 < sizeof(link) - 1) {
		link[i++] = '/';
		link[i++] = 'd';
	}
	link[i] = '\0';
	assert_true(cdihook_create_symlinks(t->root_fd, links, 1, &err) < 0);
	assert_non_null(strstr(err.msg, strerror(ENAMETOOLONG)));
	assert_non_null(strstr(err.msg, "bytes)"));
	assert_true(strlen(err.msg) < 2 * GERR_QUOTE_MAX + 200);
}

/* /etc/ld.so.conf.d a dangling link: its target is made inside the root, never outside. */
static void test_dangling_confd(void **state)
{
	struct tree *t = *state;
	struct gerr err = {0};

	link_at(t->root, "etc/ld.so.conf.d", "../../../../../../confd");
	assert_int_equal(cdihook_write_in_root(t->root_fd, "/etc/ld.so.conf.d/00-x.conf", "/x\n", &err), 0);
	assert_true(exists_at(t->root, "confd/00-x.conf"));
	assert_false(exists_at(t->tmp, "confd"));
	assert_false(exists_at("/", "confd"));
	/* an absolute target, and a chain of two */
	link_at(t->root, "a", "/b");
	link_at(t->root, "b", "/deep/er");
	assert_true(inroot_mkdir_p(t->root_fd, "/a/c", 0755) >= 0);
	assert_true(exists_at(t->root, "deep/er/c"));
	/* a link loop stays an error, a file in the way too */
	link_at(t->root, "loop", "/loop");
	assert_true(inroot_mkdir_p(t->root_fd, "/loop/x", 0755) < 0);
	assert_int_equal(inroot_mkdir_p(t->root_fd, "/etc/hostname/x", 0755), -ENOTDIR);
}

struct swapper {
	int dir;
	volatile bool stop;
};

static void *swap_loop(void *arg)
{
	struct swapper *s = arg;

	while (!s->stop)
		(void)renameat2(s->dir, "a", s->dir, "c", RENAME_EXCHANGE);
	return NULL;
}

/*
 * w/a is a directory one moment and a symlink to w/b the next (both hold f): the walk must never
 * report the swap as ENOTDIR/ELOOP; it walks again (at worst -EAGAIN after its attempts).
 */
static void test_walk_retries(void **state)
{
	struct tree *t = *state;
	struct swapper s = {.stop = false};
	int bad = 0, ok = 0, again = 0;
	pthread_t th;
	char w[256];

	mkdir_at(t->root, "w");
	mkdir_at(t->root, "w/a");
	mkdir_at(t->root, "w/b");
	put(t->root, "w/a/f", "a");
	put(t->root, "w/b/f", "b");
	link_at(t->root, "w/c", "b");
	at(w, sizeof(w), t->root, "w");
	s.dir = open(w, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(s.dir >= 0);
	assert_int_equal(pthread_create(&th, NULL, swap_loop, &s), 0);
	for (int i = 0; i < 20000; i++) {
		int fd = inroot_open_walk(t->root_fd, "/w/a/f", O_RDONLY, 0);

		if (fd >= 0) {
			ok++;
			close(fd);
		} else if (fd == -EAGAIN) {
			again++;
		} else {
			if (bad++ < 3)
				print_message("walk: %s\n", strerror(-fd));
		}
	}
	s.stop = true;
	pthread_join(th, NULL);
	close(s.dir);
	print_message("walk under swaps: %d opened, %d -EAGAIN, %d other errors\n", ok, again, bad);
	assert_int_equal(bad, 0);
	assert_true(ok > 0);
	/* a real ENOTDIR is still one */
	assert_int_equal(inroot_open_walk(t->root_fd, "/etc/hostname/x", O_RDONLY, 0), -ENOTDIR);
}

/* In a private mount namespace: a procfs at the rootfs's /proc (a symlink to /p when link), an fd
 * left open without close-on-exec, then update-ldcache with the stand-in; exit status = result. */
static void run_probe_in_child(const struct tree *t, bool link)
{
	const char *folders[] = {"/usr/lib64"};
	struct cdihook_ldcache_options o = {JAILPROBE, folders, 1, t->root, 0};
	struct gerr err = {0};
	char proc[256];
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		at(proc, sizeof(proc), t->root, link ? "p" : "proc");
		if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("proc", proc, "proc", 0, NULL) < 0 || open("/", O_RDONLY) < 0)
			_exit(3);
		if (cdihook_update_ldcache(t->root_fd, &o, &err) < 0) {
			fprintf(stderr, "update-ldcache: %s\n", err.msg);
			_exit(1);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * What the stand-in must report: pid 1, nothing inherited, an empty /proc, effective capabilities
 * CAP_DAC_OVERRIDE and CAP_FOWNER (bits 1 and 3) and nothing else, file handles, fork and unshare
 * refused (EPERM), the jail's limits, and no FIFO where Landlock is there to refuse it.
 */
static void isolation_report(char *want, size_t size)
{
	bool landlock = syscall(__NR_landlock_create_ruleset, NULL, 0, 1U) >= 1;
	size_t used = (size_t)snprintf(want, size,
				       "pid 1\nfds 0\nenv 0\nproc_entries 0\nproc_1_root 0\nmarker 1\ncwd_marker 1\n"
				       "caps 0:0xa\nsys_admin_bound 0\nno_new_privs 1\nuid 0\nhandle %d\nfork %d\n"
				       "unshare %d\n",
				       EPERM, EPERM, EPERM);
	static const char *const names[] = {"data", "as", "stack", "fsize", "nofile", "core", "memlock"};

	assert_int_equal(confine_n_limits, ELEMENTSOF(names));
	for (size_t i = 0; i < confine_n_limits; i++)
		used += (size_t)snprintf(want + used, size - used, "limit_%s %llu %llu\n", names[i],
					 (unsigned long long)confine_limit_table[i].value,
					 (unsigned long long)confine_limit_table[i].value);
	snprintf(want + used, size - used, "mkfifo %d\n", landlock ? EACCES : 0);
}

static void test_isolation(void **state)
{
	struct tree *t = *state;
	char report[256], want[1024];

	if (geteuid() != 0)
		skip();
	isolation_report(want, sizeof(want));
	put(t->root, "marker-inside", "");
	mkdir_at(t->root, "proc");
	run_probe_in_child(t, false);
	at(report, sizeof(report), t->root, "report");
	{
		_cleanup_free_ char *text = NULL;
		size_t len;

		assert_int_equal(read_file(report, 4096, &text, &len, NULL), 0);
		assert_string_equal(text, want);
	}
	/* /proc a symlink: the procfs a runtime mounted where it leads is covered all the same */
	assert_int_equal(unlink(report), 0);
	assert_int_equal(rmdir(strcat(strcpy(report, t->root), "/proc")), 0);
	mkdir_at(t->root, "p");
	link_at(t->root, "proc", "/p");
	run_probe_in_child(t, true);
	{
		_cleanup_free_ char *text = NULL;
		size_t len;

		at(report, sizeof(report), t->root, "report");
		assert_int_equal(read_file(report, 4096, &text, &len, NULL), 0);
		assert_string_equal(text, want);
	}
}

/* A stand-in that never exits is killed at the bound, with a one-line error. */
static void test_time_bound(void **state)
{
	struct tree *t = *state;
	char *const argv[] = {"ldconfig", "hang", NULL};
	struct stat st;
	struct cdihook_jail j = {.rootfs = t->root, .name = JAILPROBE, .argv = argv, .timeout_s = 1};
	struct gerr err = {0};
	time_t start = time(NULL);

	if (geteuid() != 0)
		skip();
	assert_int_equal(fstat(t->root_fd, &st), 0);
	j.dev = st.st_dev;
	j.ino = st.st_ino;
	j.exe_fd = open(JAILPROBE, O_RDONLY | O_CLOEXEC);
	assert_true(j.exe_fd >= 0);
	assert_int_equal(cdihook_run_isolated(&j, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "did not finish within 1 s"));
	assert_null(strchr(err.msg, '\n'));
	assert_true(time(NULL) - start < 10);
	/* the host's "/" itself is refused, whatever the caller checked */
	{
		struct stat host;
		struct cdihook_jail h = j;

		assert_int_equal(stat("/", &host), 0);
		h.dev = host.st_dev;
		h.ino = host.st_ino;
		h.rootfs = "/";
		assert_int_equal(cdihook_run_isolated(&h, &err), -EINVAL);
	}
	/* the rootfs swapped for another directory after the check: refused */
	j.ino++;
	j.argv = (char *const[]){"ldconfig", NULL};
	assert_int_equal(cdihook_run_isolated(&j, &err), -EXDEV);
	assert_non_null(strstr(err.msg, "another directory"));
	close(j.exe_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rootfs_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_relative_ldconfig, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_temp_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_link_message, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dangling_confd, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_walk_retries, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_isolation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_bound, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
