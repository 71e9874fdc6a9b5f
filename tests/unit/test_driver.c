/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Driver discovery on a driver root built here: real tiny libraries linked by `ldconfig -r`,
 * device nodes, firmware, a socket, tools. Checks what is found, what is not, and that the
 * spec paths carry the driver root but never the read prefix.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "host/driver.h"
#include "util/fileio.h"
#include "test_cdi_helpers.h"

#define VER    "550.54.15"
#define LIBDIR "/usr/lib/x86_64-linux-gnu"

/* A unix socket bound at path (the IPC discoverer wants a real socket). */
static void mk_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}

/* root/drv is the driver root; read prefix is root. */
static char *make_driver_root(bool with_cache)
{
	char *root = mk_tempdir();
	_cleanup_free_ char *drv = NULL, *sock = NULL;

	assert_non_null(root);
	assert_true(asprintf(&drv, "%s/drv", root) > 0);
	assert_int_equal(mk_lib(drv, LIBDIR, "libcuda.so." VER, "libcuda.so.1"), 0);
	assert_int_equal(mk_lib(drv, LIBDIR, "libnvidia-ml.so." VER, "libnvidia-ml.so.1"), 0);
	assert_int_equal(mk_lib(drv, LIBDIR, "libnvidia-ptxjitcompiler.so." VER, "libnvidia-ptxjitcompiler.so.1"), 0);
	/* a driver lib that is not in the known table: found by its version, like nvidia-ctk */
	assert_int_equal(mk_lib(drv, LIBDIR, "libnvidia-future.so." VER, "libnvidia-future.so.1"), 0);
	/* an old version left behind and an unrelated lib: not mounted */
	assert_int_equal(mk_lib(drv, LIBDIR, "libnvidia-cfg.so.470.1.2", "libnvidia-cfg.so.1"), 0);
	assert_int_equal(mk_lib(drv, LIBDIR, "libz.so.1.2.13", "libz.so.1"), 0);
	assert_int_equal(mk_lib(drv, LIBDIR "/vdpau", "libvdpau_nvidia.so." VER, "libvdpau_nvidia.so.1"), 0);
	if (with_cache)
		assert_int_equal(mk_ldcache(drv, LIBDIR, "new"), 0);
	else
		assert_int_equal(shf("cd '%s%s' && for l in cuda nvidia-ml nvidia-ptxjitcompiler nvidia-future; do "
				     "ln -s lib$l.so." VER " lib$l.so.1; done",
				     drv, LIBDIR),
				 0);
	assert_int_equal(shf("cd '%s' && mkdir -p dev lib/firmware/nvidia/" VER " usr/bin run/nvidia-persistenced "
			     "tmp/nvidia-mps && touch dev/nvidiactl dev/nvidia-uvm dev/nvidia0 "
			     "lib/firmware/nvidia/" VER "/gsp_ga10x.bin lib/firmware/nvidia/" VER "/gsp_tu10x.bin "
			     "lib/firmware/nvidia/" VER "/other.bin usr/bin/nvidia-debugdump && "
			     "printf '#!/bin/sh\\n' > usr/bin/nvidia-smi && chmod 755 usr/bin/nvidia-smi",
			     drv),
			 0);
	assert_true(asprintf(&sock, "%s/run/nvidia-persistenced/socket", drv) > 0);
	mk_socket(sock);
	return root;
}

static const struct driver_file *find(const struct driver_info *d, enum driver_file_kind k, const char *cpath)
{
	for (size_t i = 0; i < d->n_files; i++)
		if (d->files[i].kind == k && streq(d->files[i].container_path, cpath))
			return &d->files[i];
	return NULL;
}

static void check_common(const struct driver_info *d)
{
	const struct driver_file *f;

	assert_string_equal(d->version, VER);
	f = find(d, DRIVER_LIBRARY, LIBDIR "/libcuda.so." VER);
	assert_non_null(f);
	assert_string_equal(f->host_path, "/drv" LIBDIR "/libcuda.so." VER);
	assert_non_null(find(d, DRIVER_LIBRARY, LIBDIR "/libcuda.so.1"));
	assert_non_null(find(d, DRIVER_LIBRARY, LIBDIR "/libnvidia-ml.so." VER));
	assert_non_null(find(d, DRIVER_LIBRARY, LIBDIR "/libnvidia-ptxjitcompiler.so.1"));
	assert_non_null(find(d, DRIVER_LIBRARY, LIBDIR "/libnvidia-future.so." VER));
	assert_non_null(find(d, DRIVER_LIBRARY, LIBDIR "/vdpau/libvdpau_nvidia.so." VER));
	assert_null(find(d, DRIVER_LIBRARY, LIBDIR "/libnvidia-cfg.so.470.1.2"));
	assert_null(find(d, DRIVER_LIBRARY, LIBDIR "/libnvidia-cfg.so.1"));
	assert_null(find(d, DRIVER_LIBRARY, LIBDIR "/libz.so.1"));
	f = find(d, DRIVER_DEVICE_NODE, "/dev/nvidiactl");
	assert_non_null(f);
	assert_string_equal(f->host_path, "/drv/dev/nvidiactl");
	assert_non_null(find(d, DRIVER_DEVICE_NODE, "/dev/nvidia-uvm"));
	assert_null(find(d, DRIVER_DEVICE_NODE, "/dev/nvidia-modeset"));
	assert_null(find(d, DRIVER_DEVICE_NODE, "/dev/nvidia0")); /* per GPU, not a control node */
	assert_non_null(find(d, DRIVER_FIRMWARE, "/lib/firmware/nvidia/" VER "/gsp_ga10x.bin"));
	assert_non_null(find(d, DRIVER_FIRMWARE, "/lib/firmware/nvidia/" VER "/gsp_tu10x.bin"));
	assert_null(find(d, DRIVER_FIRMWARE, "/lib/firmware/nvidia/" VER "/other.bin"));
	assert_non_null(find(d, DRIVER_IPC_SOCKET, "/run/nvidia-persistenced/socket"));
	assert_null(find(d, DRIVER_IPC_SOCKET, "/run/nvidia-fabricmanager/socket"));
	/* root's and 0755 only when the test runs as root: else it is left out (test_mps_dir) */
	f = find(d, DRIVER_IPC_SOCKET, "/tmp/nvidia-mps");
	if (geteuid() == 0) {
		assert_non_null(f);
		assert_true(f->is_dir);
	} else
		assert_null(f);
	assert_non_null(find(d, DRIVER_BINARY, "/usr/bin/nvidia-smi"));
	assert_null(find(d, DRIVER_BINARY, "/usr/bin/nvidia-debugdump")); /* not executable */
	assert_int_equal(d->n_lib_dirs, 1);
	assert_string_equal(d->lib_dirs[0], LIBDIR);
	/* sorted by kind then container path, no duplicates */
	for (size_t i = 1; i < d->n_files; i++) {
		const struct driver_file *a = &d->files[i - 1], *b = &d->files[i];

		assert_true(a->kind < b->kind ||
			    (a->kind == b->kind && strcmp(a->container_path, b->container_path) < 0));
	}
}

static void test_discover_with_ldcache(void **state)
{
	_cleanup_free_ char *root = make_driver_root(true);
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(root, "/drv", NULL);
	struct driver_options o = {.host = hp, .version = VER};
	struct gerr err = {0};

	assert_int_equal(driver_discover(&o, &d, &err), 0);
	assert_true(d->ldcache_found);
	check_common(d);
	rm_tree(root);
}

static void test_discover_without_ldcache_searches_default_dirs(void **state)
{
	_cleanup_free_ char *root = make_driver_root(false);
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(root, "/drv", NULL);
	struct driver_options o = {.host = hp, .version = VER};

	assert_int_equal(driver_discover(&o, &d, NULL), 0);
	assert_false(d->ldcache_found);
	check_common(d);
	rm_tree(root);
}

static void test_version_inferred_from_cache(void **state)
{
	_cleanup_free_ char *root = make_driver_root(true);
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(root, "/drv", NULL);
	struct driver_options o = {.host = hp};

	assert_int_equal(driver_discover(&o, &d, NULL), 0);
	check_common(d);
	rm_tree(root);
}

static void test_dev_root_and_broken_cache(void **state)
{
	_cleanup_free_ char *root = make_driver_root(true);
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(root, "/drv", "/devroot");
	struct driver_options o = {.host = hp, .version = VER};
	struct gerr err = {0};

	assert_int_equal(shf("mkdir -p '%s/devroot/dev' && touch '%s/devroot/dev/nvidia-modeset'", root, root), 0);
	assert_int_equal(driver_discover(&o, &d, &err), 0);
	assert_non_null(find(d, DRIVER_DEVICE_NODE, "/dev/nvidia-modeset"));
	assert_string_equal(find(d, DRIVER_DEVICE_NODE, "/dev/nvidia-modeset")->host_path,
			    "/devroot/dev/nvidia-modeset");
	assert_null(find(d, DRIVER_DEVICE_NODE, "/dev/nvidiactl"));
	driver_info_free(TAKE_PTR(d));
	/* a corrupt cache is an error that names the file, not a silent empty list */
	assert_int_equal(shf("printf 'garbage' > '%s/drv/etc/ld.so.cache'", root), 0);
	assert_int_equal(driver_discover(&o, &d, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "ld.so.cache"));
	rm_tree(root);
}

static void test_empty_root(void **state)
{
	_cleanup_free_ char *root = mk_tempdir();
	_cleanup_(driver_info_freep) struct driver_info *d = NULL;
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(root, NULL, NULL);
	struct driver_options o = {.host = hp};

	assert_int_equal(driver_discover(&o, &d, NULL), 0);
	assert_int_equal(d->n_files, 0);
	assert_int_equal(d->n_lib_dirs, 0);
	rm_tree(root);
}

/* The warning about the MPS dir, or NULL. */
static const char *mps_warning(const struct driver_info *d)
{
	for (size_t i = 0; i < d->warnings.n; i++)
		if (strstr(d->warnings.items[i], "/drv/tmp/nvidia-mps (MPS pipe dir): not mounted"))
			return d->warnings.items[i];
	return NULL;
}

/*
 * /tmp/nvidia-mps is mounted read-write into every GPU container: only when root owns it and each
 * dir from the driver root down that group or others may write is sticky, never through a link;
 * otherwise a warning that names the path and why. Each case: a shell command on the driver root,
 * then whether it is mounted and what the warning says.
 */
static void test_mps_dir(void **state)
{
	static const struct {
		const char *cmd, *why; /* why: NULL = mounted */
	} cases[] = {
	    {"chmod 0755 tmp/nvidia-mps", NULL},
	    {"chmod 0700 tmp/nvidia-mps", NULL},
	    {"chmod 1777 tmp/nvidia-mps", NULL}, /* made so before the daemon starts: it keeps the mode */
	    {"chmod 1777 tmp && chmod 0755 tmp/nvidia-mps", NULL},
	    /* what nvidia-cuda-mps-control makes when the dir is missing */
	    {"chmod 0777 tmp/nvidia-mps", "/tmp/nvidia-mps has mode 0777: writable by group or others and not sticky"},
	    {"chmod 0775 tmp/nvidia-mps", "/tmp/nvidia-mps has mode 0775: writable by group or others and not sticky"},
	    {"chmod 0755 tmp/nvidia-mps && chown 1000:1000 tmp/nvidia-mps", "/tmp/nvidia-mps is owned by uid 1000"},
	    {"chmod 1777 tmp/nvidia-mps && chown 1000 tmp/nvidia-mps", "/tmp/nvidia-mps is owned by uid 1000"},
	    {"chmod 0777 tmp && chmod 0755 tmp/nvidia-mps",
	     "/tmp has mode 0777: writable by group or others and not sticky"},
	    {"mv tmp/nvidia-mps safe && ln -s ../safe tmp/nvidia-mps", "/tmp/nvidia-mps is a symlink"},
	};

	(void)state;
	if (geteuid() != 0)
		skip(); /* chown, and a root-owned dir to begin with */
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *root = make_driver_root(true);
		_cleanup_(driver_info_freep) struct driver_info *d = NULL;
		_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(root, "/drv", NULL);
		struct driver_options o = {.host = hp, .version = VER};
		const char *w;

		assert_int_equal(shf("cd '%s/drv' && chmod 0755 tmp && %s", root, cases[i].cmd), 0);
		assert_int_equal(driver_discover(&o, &d, NULL), 0);
		w = mps_warning(d);
		if (!cases[i].why) {
			if (!find(d, DRIVER_IPC_SOCKET, "/tmp/nvidia-mps") || w)
				fail_msg("%s: want /tmp/nvidia-mps mounted, no warning; got %s", cases[i].cmd,
					 w ? w : "no mount");
		} else if (find(d, DRIVER_IPC_SOCKET, "/tmp/nvidia-mps") || !w || !strstr(w, cases[i].why))
			fail_msg("%s: want /tmp/nvidia-mps left out with a warning saying '%s'; got %s", cases[i].cmd,
				 cases[i].why, w ? w : "a mount");
		rm_tree(root);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_discover_with_ldcache),
	    cmocka_unit_test(test_discover_without_ldcache_searches_default_dirs),
	    cmocka_unit_test(test_version_inferred_from_cache),
	    cmocka_unit_test(test_dev_root_and_broken_cache),
	    cmocka_unit_test(test_empty_root),
	    cmocka_unit_test(test_mps_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
