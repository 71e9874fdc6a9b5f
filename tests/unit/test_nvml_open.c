/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML opened one way (nvml_open_host): --nvml-library / GPULET_NVML_LIBRARY and --driver-root /
 * NVIDIA_DRIVER_ROOT under --root, flags before env; the one list of library dirs (Debian's
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

/* Opens via h; returns the loaded path (static) or NULL with err set. */
static const char *open_path(const struct nvml_host *h, struct gerr *err)
{
	static char path[4096];
	struct nvml *nv = NULL;

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
	p = open_path(&(struct nvml_host){.root = root, .driver_root = "/run/nvidia/driver"}, &err);
	assert_non_null(p);
	assert_string_equal(p, want);
	/* NVIDIA_DRIVER_ROOT under --root: the doctor ignored it before */
	setenv("NVIDIA_DRIVER_ROOT", "/run/nvidia/driver", 1);
	p = open_path(&(struct nvml_host){.root = root}, &err);
	assert_non_null(p);
	assert_string_equal(p, want);
	/* the flag wins over the env */
	p = open_path(&(struct nvml_host){.root = root, .driver_root = "/elsewhere"}, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "/elsewhere"));
	unsetenv("NVIDIA_DRIVER_ROOT");
	/* without the triplet link, nvidia/current itself is in the list */
	sh("rm '%s/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1'", root);
	p = open_path(&(struct nvml_host){.root = root, .driver_root = "/run/nvidia/driver"}, &err);
	assert_non_null(p);
	assert_non_null(strstr(p, "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1"));
}

static void test_library_flag_and_env(void **state)
{
	struct gerr err = {0};
	const char *p;

	setenv("GPULET_NVML_LIBRARY", fake_lib, 1);
	p = open_path(&(struct nvml_host){.root = root, .driver_root = "/nothing-here"}, &err);
	assert_non_null(p);
	assert_string_equal(p, fake_lib);
	p = open_path(&(struct nvml_host){.library = "/nonexistent/libnvidia-ml.so.1"}, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1"));
	unsetenv("GPULET_NVML_LIBRARY");
	p = open_path(&(struct nvml_host){.root = root, .driver_root = "/nothing-here"}, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "libnvidia-ml.so.1 was not found"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_list),
	    cmocka_unit_test(test_debian_layout_under_root),
	    cmocka_unit_test(test_library_flag_and_env),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
