/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CDI hook: paths confined to the rootfs (openat2 and the walk fallback, each checked against
 * "..", absolute symlinks, symlink loops, creation through dangling links), the OCI state reader,
 * and the actions on temp rootfs trees (update-ldcache with the machine's real ldconfig).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cdihook/cdihook.h"
#include "cdihook/inroot.h"
#include "host/ldcache.h"
#include "util/fileio.h"

/* tmp/outside/secret and tmp/root/... ; the root's fd */
struct tree {
	char tmp[64];
	char root[128];
	int root_fd;
};

static void put(const char *dir, const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *dir, const char *rel, const char *target)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void mkdir_at(const char *dir, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char outside[128];

	snprintf(t->tmp, sizeof(t->tmp), "/tmp/gpulet-cdihook.XXXXXX");
	assert_non_null(mkdtemp(t->tmp));
	snprintf(t->root, sizeof(t->root), "%s/root", t->tmp);
	snprintf(outside, sizeof(outside), "%s/outside", t->tmp);
	assert_int_equal(mkdir(outside, 0755), 0);
	put(outside, "secret", "host");
	assert_int_equal(mkdir(t->root, 0755), 0);
	mkdir_at(t->root, "etc");
	put(t->root, "etc/hostname", "inside");
	mkdir_at(t->root, "outside");
	link_at(t->root, "abs", "/etc/hostname");
	link_at(t->root, "dotdot", "../../../../../../etc/hostname");
	link_at(t->root, "esc", "../outside/secret"); /* the host's tmp/outside, if it escaped */
	link_at(t->root, "etcdir", "/../../etc");
	link_at(t->root, "loop1", "loop2");
	link_at(t->root, "loop2", "loop1");
	link_at(t->root, "self", "self");
	link_at(t->root, "dangle", "/../../created");
	t->root_fd = open(t->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(t->root_fd >= 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	close(t->root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->tmp);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

typedef int (*open_fn)(int root_fd, const char *path, int flags, mode_t mode);

/* The file's text when path opens below the root, else "" and the -errno in *r. */
static const char *read_via(open_fn fn, int root_fd, const char *path, int *r)
{
	static char buf[64];
	int fd = fn(root_fd, path, O_RDONLY, 0);
	ssize_t n;

	buf[0] = '\0';
	*r = fd < 0 ? fd : 0;
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

static void check_confined(open_fn fn, struct tree *t)
{
	char host_created[128];
	int r, fd;

	assert_string_equal(read_via(fn, t->root_fd, "/etc/hostname", &r), "inside");
	assert_string_equal(read_via(fn, t->root_fd, "etc/hostname", &r), "inside");
	/* ".." stops at the root */
	assert_string_equal(read_via(fn, t->root_fd, "/../../../../etc/hostname", &r), "inside");
	assert_string_equal(read_via(fn, t->root_fd, "etc/../../etc/hostname", &r), "inside");
	/* absolute and climbing symlinks resolve inside the root */
	assert_string_equal(read_via(fn, t->root_fd, "abs", &r), "inside");
	assert_string_equal(read_via(fn, t->root_fd, "dotdot", &r), "inside");
	assert_string_equal(read_via(fn, t->root_fd, "etcdir/hostname", &r), "inside");
	/* ../outside/secret from the root is the root's (empty) /outside, never the host's file */
	read_via(fn, t->root_fd, "esc", &r);
	assert_int_equal(r, -ENOENT);
	read_via(fn, t->root_fd, "../outside/secret", &r);
	assert_int_equal(r, -ENOENT);
	/* loops */
	read_via(fn, t->root_fd, "loop1", &r);
	assert_int_equal(r, -ELOOP);
	read_via(fn, t->root_fd, "self/x", &r);
	assert_int_equal(r, -ELOOP);
	/* O_NOFOLLOW|O_PATH opens the link itself */
	fd = fn(t->root_fd, "loop1", O_PATH | O_NOFOLLOW, 0);
	assert_true(fd >= 0);
	close(fd);
	/* creating through a dangling absolute link creates inside */
	fd = fn(t->root_fd, "dangle", O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(host_created, sizeof(host_created), "%s/created", t->root);
	assert_int_equal(access(host_created, F_OK), 0);
	assert_int_equal(unlink(host_created), 0);
	assert_int_not_equal(access("/created", F_OK), 0);
	/* "/" is the root itself */
	fd = fn(t->root_fd, "/", O_PATH | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	close(fd);
	read_via(fn, t->root_fd, "", &r);
	assert_int_equal(r, -ENOENT);
}

static void test_confined_openat2(void **state)
{
	check_confined(inroot_open, *state);
}

static void test_confined_walk(void **state)
{
	check_confined(inroot_open_walk, *state);
}

static void test_mkdir_and_write(void **state)
{
	struct tree *t = *state;
	char p[256], buf[64] = "";
	int fd;
	FILE *f;

	/* through an absolute link to a path above the root: the dirs appear inside */
	link_at(t->root, "usr", "/../../../outside2");
	mkdir_at(t->root, "outside2");
	fd = inroot_mkdir_p(t->root_fd, "/usr/lib64/x", 0755);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/outside2/lib64/x", t->root);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/outside2", t->tmp);
	assert_int_not_equal(access(p, F_OK), 0);
	/* a write through etcdir (-> /../../etc) lands in the root's /etc */
	assert_int_equal(cdihook_write_in_root(t->root_fd, "/etcdir/ld.so.conf.d/a.conf", "/x\n", NULL), 0);
	snprintf(p, sizeof(p), "%s/etc/ld.so.conf.d/a.conf", t->root);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "/x\n");
	/* a link at the file's place is replaced, its target untouched */
	link_at(t->root, "etc/ld.so.conf.d/b.conf", "../../../outside/secret");
	assert_int_equal(cdihook_write_in_root(t->root_fd, "/etc/ld.so.conf.d/b.conf", "y\n", NULL), 0);
	snprintf(p, sizeof(p), "%s/outside/secret", t->tmp);
	f = fopen(p, "r");
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "host");
}

static void test_symlinks(void **state)
{
	struct tree *t = *state;
	const char *links[] = {"libcuda.so.1::/usr/lib64/libcuda.so", "libcuda.so.1::/usr/lib64/libcuda.so",
			       "a::/etcdir/l"};
	const char *bad[] = {"no-separator"};
	char p[256], target[64];
	ssize_t n;

	link_at(t->root, "usr", "/../../x/usr");
	mkdir_at(t->root, "x");
	mkdir_at(t->root, "x/usr");
	assert_int_equal(cdihook_create_symlinks(t->root_fd, links, 3, NULL), 0);
	snprintf(p, sizeof(p), "%s/x/usr/lib64/libcuda.so", t->root);
	n = readlink(p, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "libcuda.so.1");
	snprintf(p, sizeof(p), "%s/etc/l", t->root);
	assert_int_equal(readlink(p, target, sizeof(target)), 1);
	/* again: kept; a file in the way is replaced */
	assert_int_equal(cdihook_create_symlinks(t->root_fd, links, 1, NULL), 0);
	put(t->root, "etc/f", "file");
	links[0] = "b::/etc/f";
	assert_int_equal(cdihook_create_symlinks(t->root_fd, links, 1, NULL), 0);
	snprintf(p, sizeof(p), "%s/etc/f", t->root);
	assert_int_equal(readlink(p, target, sizeof(target)), 1);
	assert_int_equal(cdihook_create_symlinks(t->root_fd, bad, 1, NULL), -EINVAL);
}

static void test_cuda_compat(void **state)
{
	struct tree *t = *state;
	char p[256];

	mkdir_at(t->root, "usr");
	mkdir_at(t->root, "usr/local");
	mkdir_at(t->root, "usr/local/cuda");
	mkdir_at(t->root, "usr/local/cuda/compat");
	put(t->root, "usr/local/cuda/compat/libcuda.so.550.54.15", "");
	snprintf(p, sizeof(p), "%s/etc/ld.so.conf.d/00-compat-gpulet.conf", t->root);
	assert_int_equal(cdihook_enable_cuda_compat(t->root_fd, "550.10", NULL, NULL), 0);
	assert_int_not_equal(access(p, F_OK), 0); /* same major: host driver is enough */
	assert_int_equal(cdihook_enable_cuda_compat(t->root_fd, "", NULL, NULL), 0);
	assert_int_not_equal(access(p, F_OK), 0);
	assert_int_equal(cdihook_enable_cuda_compat(t->root_fd, "535.261.03", NULL, NULL), 0);
	assert_int_equal(access(p, F_OK), 0);
}

static void test_oci_state(void **state)
{
	struct tree *t = *state;
	struct oci_state s = {0};
	char *rootfs = NULL, cfg[256];
	const char *ok = "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":7,\"bundle\":\"%s\"}";
	char text[512];

	snprintf(text, sizeof(text), ok, t->tmp);
	assert_int_equal(oci_state_parse("stdin", text, strlen(text), &s, NULL), 0);
	assert_string_equal(s.id, "c1");
	put(t->tmp, "config.json", "{\"root\":{\"path\":\"root\",\"readonly\":false}}");
	assert_int_equal(oci_state_rootfs(&s, &rootfs, NULL), 0);
	snprintf(cfg, sizeof(cfg), "%s/root", t->tmp);
	assert_string_equal(rootfs, cfg);
	free(rootfs);
	put(t->tmp, "config.json", "{\"root\":{\"path\":\"/\"}}");
	assert_int_equal(oci_state_rootfs(&s, &rootfs, NULL), -EINVAL);
	put(t->tmp, "config.json", "{\"root\":{\"path\":7}}");
	assert_int_equal(oci_state_rootfs(&s, &rootfs, NULL), -EINVAL);
	put(t->tmp, "config.json", "{}");
	assert_int_equal(oci_state_rootfs(&s, &rootfs, NULL), -EINVAL);
	oci_state_clear(&s);
	/* crun's "root" wins over the bundle */
	assert_int_equal(oci_state_parse("s", "{\"root\":\"/r\",\"bundle\":\"/b\"}", 27, &s, NULL), 0);
	assert_int_equal(oci_state_rootfs(&s, &rootfs, NULL), 0);
	assert_string_equal(rootfs, "/r");
	free(rootfs);
	oci_state_clear(&s);
	assert_int_equal(oci_state_parse("s", "{}", 2, &s, NULL), -EINVAL);
	assert_int_equal(oci_state_parse("s", "[]", 2, &s, NULL), -EINVAL);
	assert_int_equal(oci_state_parse("s", "{\"bundle\":1}", 12, &s, NULL), -EINVAL);
	assert_int_equal(oci_state_parse("s", "{\"bundle\":\"/a\\u0000b\"}", 22, &s, NULL), -EINVAL);
	assert_int_equal(oci_state_parse("s", "{\"bundle\":\"rel\"}", 16, &s, NULL), 0);
	assert_int_equal(oci_state_rootfs(&s, &rootfs, NULL), -EINVAL);
	oci_state_clear(&s);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cp -L '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/* The machine's static ldconfig, isolated in the rootfs: a library in /usr/lib64 is in the new cache. */
static void test_update_ldcache(void **state)
{
	struct tree *t = *state;
	const char *folders[] = {"/usr/lib64", "/usr/lib64"};
	struct cdihook_ldcache_options o = {"/sbin/ldconfig", folders, 2, t->root, 0};
	_cleanup_(ldcache_freep) struct ldcache *c = NULL;
	char p[256];
	struct gerr err = {0};
	bool found = false;

	if (geteuid() != 0 || access("/sbin/ldconfig", X_OK) != 0)
		skip();
	mkdir_at(t->root, "usr");
	mkdir_at(t->root, "usr/lib64");
	snprintf(p, sizeof(p), "%s/usr/lib64/libz.so.1", t->root);
	copy_file("/lib/x86_64-linux-gnu/libz.so.1", p);
	/* a script or a dynamic binary is refused before anything runs */
	put(t->tmp, "ldconfig-script", "#!/bin/sh\n");
	snprintf(p, sizeof(p), "%s/ldconfig-script", t->tmp);
	o.ldconfig_path = p;
	assert_int_equal(cdihook_update_ldcache(t->root_fd, &o, &err), -ENOEXEC);
	assert_non_null(strstr(err.msg, "script"));
	o.ldconfig_path = "/bin/true";
	assert_int_equal(cdihook_update_ldcache(t->root_fd, &o, &err), -ENOEXEC);
	assert_non_null(strstr(err.msg, "dynamically linked"));
	/* valgrind runs an exec by fd through /proc/self/fd, which the chroot hides: the run is
	 * checked natively (and by cdihook_podman) */
	if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
		skip();
	o.ldconfig_path = "/sbin/ldconfig";
	assert_int_equal(cdihook_update_ldcache(t->root_fd, &o, &err), 0);
	snprintf(p, sizeof(p), "%s/etc/ld.so.cache", t->root);
	assert_int_equal(ldcache_read(p, &c, NULL), 0);
	for (size_t i = 0; i < c->n_entries; i++)
		found = found ||
			(streq(c->entries[i].key, "libz.so.1") && streq(c->entries[i].value, "/usr/lib64/libz.so.1"));
	assert_true(found);
	snprintf(p, sizeof(p), "%s/etc/ld.so.conf", t->root); /* made, as the image had none */
	assert_int_equal(access(p, F_OK), 0);
}

/* In a private mount namespace: the container's params file gets a read-only copy saying 0. */
static void test_devnode_params(void **state)
{
	struct tree *t = *state;
	char host[256], p[256];
	pid_t pid;
	int status;

	if (geteuid() != 0)
		skip();
	put(t->tmp, "params", "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n");
	snprintf(host, sizeof(host), "%s/params", t->tmp);
	mkdir_at(t->root, "proc");
	mkdir_at(t->root, "proc/driver");
	mkdir_at(t->root, "proc/driver/nvidia");
	put(t->root, "proc/driver/nvidia/params", "ModifyDeviceFiles: 1\n");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[256] = "";
		FILE *f;

		if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		struct gerr err = {0};

		int root_fd;

		/* the rootfs fd of this namespace, as the hook opens it (the runtime's mount namespace) */
		root_fd = open(t->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root_fd < 0 || cdihook_disable_devnode_mod(root_fd, host, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			_exit(err.code == ENOSYS ? 77 : 1); /* no fsopen (before 5.2, or valgrind): skipped */
		}
		snprintf(p, sizeof(p), "%s/proc/driver/nvidia/params", t->root);
		f = fopen(p, "r");
		if (!f || fread(buf, 1, sizeof(buf) - 1, f) == 0 || !strstr(buf, "ModifyDeviceFiles: 0\n") ||
		    !strstr(buf, "DeviceFileUID: 0"))
			_exit(2);
		fclose(f);
		_exit(fopen(p, "w") == NULL ? 0 : 3); /* read-only */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	/* already 0: nothing to do, nothing mounted */
	put(t->tmp, "params", "ModifyDeviceFiles: 0\n");
	assert_int_equal(cdihook_disable_devnode_mod(t->root_fd, host, NULL), 0);
	snprintf(host, sizeof(host), "%s/none", t->tmp);
	assert_int_equal(cdihook_disable_devnode_mod(t->root_fd, host, NULL), 0);
}

/* apply-cuda-memory-limits' parsers: the two variables (either one is enough), and the cgroup v2 line. */
static void test_memlimits(void **state)
{
	static const struct {
		const char *env;
		int ret;
		bool wanted;
		unsigned long long request, limit;
	} cases[] = {
	    {"\"PATH=/bin\"", 0, false, 0, 0},
	    {"\"NVIDIA_GPU_MEMORY_REQUEST=1024\",\"NVIDIA_GPU_MEMORY_LIMIT=4096\"", 0, true, 1024ull << 20,
	     4096ull << 20},
	    {"\"NVIDIA_GPU_MEMORY_LIMIT=4096\"", 0, true, 4096ull << 20, 4096ull << 20},
	    {"\"NVIDIA_GPU_MEMORY_REQUEST=1024\"", 0, true, 1024ull << 20, ULLONG_MAX},
	    /* the first entry wins, as getenv in the container */
	    {"\"NVIDIA_GPU_MEMORY_LIMIT=8\",\"NVIDIA_GPU_MEMORY_LIMIT=x\"", 0, true, 8ull << 20, 8ull << 20},
	    {"\"NVIDIA_GPU_MEMORY_LIMIT=4G\"", -EINVAL, false, 0, 0},
	    {"\"NVIDIA_GPU_MEMORY_LIMIT=\"", -EINVAL, false, 0, 0},
	    {"\"NVIDIA_GPU_MEMORY_LIMIT=-1\"", -EINVAL, false, 0, 0},
	    {"\"NVIDIA_GPU_MEMORY_LIMIT=17592186044416\"", -ERANGE, false, 0, 0},
	    {"\"NVIDIA_GPU_MEMORY_REQUEST=2\",\"NVIDIA_GPU_MEMORY_LIMIT=1\"", -EINVAL, false, 0, 0},
	    {"1", -EINVAL, false, 0, 0},
	};
	char text[256], *cg = NULL;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cdihook_memlimits m = {0};

		snprintf(text, sizeof(text), "{\"process\":{\"env\":[%s]}}", cases[i].env);
		assert_int_equal(cdihook_memlimits_from_config("config.json", text, strlen(text), &m, NULL),
				 cases[i].ret);
		if (cases[i].ret < 0)
			continue;
		assert_int_equal(m.wanted, cases[i].wanted);
		assert_true(m.request == cases[i].request && m.limit == cases[i].limit);
	}
	assert_int_equal(cdihook_cgroup_path("cgroup", "12:memory:/x\n 0::/kubepods/./pod1/ctr \n", &cg, NULL), 0);
	assert_string_equal(cg, "/sys/fs/cgroup/kubepods/pod1/ctr");
	free(cg);
	assert_int_equal(cdihook_cgroup_path("cgroup", "0::/a/../../etc\n", &cg, NULL), -EINVAL);
	assert_int_equal(cdihook_cgroup_path("cgroup", "12:memory:/x\n", &cg, NULL), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_confined_openat2, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_confined_walk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mkdir_and_write, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cuda_compat, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oci_state, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_update_ldcache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_devnode_params, setup, teardown),
	    cmocka_unit_test(test_memlimits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
