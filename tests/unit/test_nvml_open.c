/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML opened one way (nvml_open_host): --nvml-library, and --driver-root under --root, as
 * host_paths_new() resolves them (the container driver root where the plugin has it mounted); no env
 * var is read here (the verbs' rows read them); the one list of library dirs (Debian's
 * nvidia/current, RHEL's usr/lib64); Debian's absolute /etc/alternatives link followed inside the
 * driver root, never on this host (docs/reference/real-driver.md §3). The fake NVML stands in for
 * the library; tests/realdriver/test_verbs.py does the same with NVIDIA's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/driver.h"
#include "nvml/nvml.h"

static char fake_lib[4096], root[64], cmd[12000];

static int setup(void **state)
{
	const char *b = getenv("GPULET_BUILD"), *s = getenv("GPULET_SRC");
	char fixture[4096];

	assert_non_null(b);
	assert_non_null(s);
	snprintf(fake_lib, sizeof(fake_lib), "%s/fakenvml/libnvidia-ml.so.1", b);
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/single-t4.json", s);
	setenv("FAKE_NVML_FIXTURE", fixture, 1);
	unsetenv("GPULET_NVML_LIBRARY");
	unsetenv("NVIDIA_DRIVER_ROOT");
	snprintf(root, sizeof(root), "/tmp/gpulet-nvml-open-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void sh(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* Opens via the paths o resolves to; returns the loaded path (static) or NULL with err set. */
static const char *open_path(const struct host_paths_options *o, struct gerr *err)
{
	_cleanup_(host_paths_freep) struct host_paths *h = NULL;
	static char path[4096];
	struct nvml *nv = NULL;

	assert_int_equal(host_paths_new(o, &h, err), 0);
	if (nvml_open_host(h, &nv, err) < 0)
		return NULL;
	snprintf(path, sizeof(path), "%s", nv->path);
	nvml_close(nv);
	return path;
}

static void test_one_list(void **state)
{
	static const char *const need[] = {"/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib64",
					   "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		bool found = false;

		for (size_t j = 0; j < driver_n_lib_dirs; j++)
			found |= strcmp(driver_lib_dirs[j], need[i]) == 0;
		assert_true(found);
	}
}

/* Debian: the triplet dir's link is absolute through /etc/alternatives, the library in nvidia/current. */
static void test_debian_layout_under_root(void **state)
{
	struct gerr err = {0};
	char want[4200];
	const char *p;

	sh("d='%s/run/nvidia/driver' && mkdir -p \"$d/usr/lib/x86_64-linux-gnu/nvidia/current\" "
	   "\"$d/etc/alternatives\" && "
	   "cp '%s' \"$d/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535.261.03\" && "
	   "ln -s libnvidia-ml.so.535.261.03 \"$d/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1\" && "
	   "ln -s /usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1 "
	   "\"$d/etc/alternatives/nvidia--libnvidia-ml.so.1-x86_64-linux-gnu\" && "
	   "ln -s /etc/alternatives/nvidia--libnvidia-ml.so.1-x86_64-linux-gnu "
	   "\"$d/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\"",
	   root, fake_lib);
	snprintf(want, sizeof(want), "%s/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", root);
	/* --driver-root under --root */
	p = open_path(&(struct host_paths_options){.root = root, .driver_root = "/run/nvidia/driver"}, &err);
	assert_non_null(p);
	assert_string_equal(p, want);
	/* the library reads no env var: NVIDIA_DRIVER_ROOT is the verbs' row, never a fallback here */
	setenv("NVIDIA_DRIVER_ROOT", "/run/nvidia/driver", 1);
	p = open_path(&(struct host_paths_options){.root = root}, &err);
	assert_null(p);
	unsetenv("NVIDIA_DRIVER_ROOT");
	/* the plugin's container driver root: where the driver root is mounted, when it is not "/" */
	sh("mkdir -p '%s/driver-root' && cp -a '%s/run/nvidia/driver/.' '%s/driver-root/'", root, root, root);
	snprintf(want, sizeof(want), "%s/driver-root/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", root);
	p = open_path(
	    &(struct host_paths_options){.root = root, .driver_root = "/elsewhere", .ctr_driver_root = "/driver-root"},
	    &err);
	assert_non_null(p);
	assert_string_equal(p, want);
	/* a driver root of "/" is read where it is, and so is one whose mount is missing */
	p = open_path(&(struct host_paths_options){.root = root, .ctr_driver_root = "/driver-root"}, &err);
	assert_null(p);
	snprintf(want, sizeof(want), "%s/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", root);
	p = open_path(&(struct host_paths_options){.root = root,
						   .driver_root = "/run/nvidia/driver",
						   .ctr_driver_root = "/no-mount"},
		      &err);
	assert_non_null(p);
	assert_string_equal(p, want);
	/* without the triplet link, nvidia/current itself is in the list */
	sh("rm '%s/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1'", root);
	p = open_path(&(struct host_paths_options){.root = root, .driver_root = "/run/nvidia/driver"}, &err);
	assert_non_null(p);
	assert_non_null(strstr(p, "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1"));
}

static void test_library_flag(void **state)
{
	struct gerr err = {0};
	const char *p;

	p = open_path(
	    &(struct host_paths_options){.root = root, .driver_root = "/nothing-here", .nvml_library = fake_lib}, &err);
	assert_non_null(p);
	assert_string_equal(p, fake_lib);
	p = open_path(&(struct host_paths_options){.nvml_library = "/nonexistent/libnvidia-ml.so.1"}, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1"));
	/* GPULET_NVML_LIBRARY is the verbs' row: the library never falls back to it */
	setenv("GPULET_NVML_LIBRARY", fake_lib, 1);
	p = open_path(&(struct host_paths_options){.root = root, .driver_root = "/nothing-here"}, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "libnvidia-ml.so.1 was not found"));
	unsetenv("GPULET_NVML_LIBRARY");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_list),
	    cmocka_unit_test(test_debian_layout_under_root),
	    cmocka_unit_test(test_library_flag),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
