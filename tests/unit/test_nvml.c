/* SPDX-License-Identifier: Apache-2.0 */
/* NVML loader: missing library, missing symbols, old drivers, driver-root search, error mapping. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvml/nvml.h"

static char fake_lib[4096], old_lib[4096], broken_lib[4096], fixture[4096];

static int setup(void **state)
{
	const char *b = getenv("GPULET_BUILD"), *s = getenv("GPULET_SRC");

	assert_non_null(b);
	assert_non_null(s);
	snprintf(fake_lib, sizeof(fake_lib), "%s/fakenvml/libnvidia-ml.so.1", b);
	snprintf(old_lib, sizeof(old_lib), "%s/fakenvml/old/libnvidia-ml.so.1", b);
	snprintf(broken_lib, sizeof(broken_lib), "%s/fakenvml/broken/libnvidia-ml.so.1", b);
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/dgx-a100.json", s);
	setenv("FAKE_NVML_FIXTURE", fixture, 1);
	return 0;
}

static void test_missing_library(void **state)
{
	struct gerr err = {0};
	struct nvml *nv = NULL;
	char root[] = "/tmp/gpulet-nvml-XXXXXX";

	assert_non_null(mkdtemp(root));
	assert_int_equal(nvml_open(NULL, root, &nv, &err), -ELIBACC);
	assert_null(nv);
	/* One sentence: what is missing, where we looked, what to do. */
	assert_non_null(strstr(err.msg, "libnvidia-ml.so.1 was not found"));
	assert_non_null(strstr(err.msg, root));
	assert_non_null(strstr(err.msg, "--driver-root"));
	assert_int_equal(nvml_open("/nonexistent/libnvidia-ml.so.1", "/", &nv, &err), -ELIBACC);
	assert_non_null(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1"));
	rmdir(root);
}

static void test_missing_required_symbol(void **state)
{
	struct gerr err = {0};
	struct nvml *nv = NULL;

	assert_int_equal(nvml_open(broken_lib, "/", &nv, &err), -ENOSYS);
	assert_null(nv);
	assert_non_null(strstr(err.msg, "nvmlDeviceGetCount_v2"));
}

static void test_old_driver_degrades(void **state)
{
	struct gerr err = {0};
	struct nvml *nv = NULL;

	/* Only the required symbols: loads, optional features are NULL. */
	assert_int_equal(nvml_open(old_lib, "/", &nv, &err), 0);
	assert_non_null(nv);
	assert_true(NVML_HAS(nv, device_get_count));
	assert_false(NVML_HAS(nv, device_get_mig_mode));
	assert_false(NVML_HAS(nv, event_set_wait));
	nvml_close(nv);
}

static void test_driver_root_search(void **state)
{
	struct gerr err = {0};
	struct nvml *nv = NULL;
	char root[] = "/tmp/gpulet-nvml-XXXXXX", dir[4200], dst[4300], cmd[9000];

	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/usr/lib/x86_64-linux-gnu", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s/'", dir, fake_lib, dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(nvml_open(NULL, root, &nv, &err), 0);
	snprintf(dst, sizeof(dst), "%s/libnvidia-ml.so.1", dir);
	assert_string_equal(nv->path, dst);
	nvml_close(nv);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_init_failure(void **state)
{
	struct gerr err = {0};
	struct nvml *nv = NULL;
	char tmp[] = "/tmp/gpulet-fixture-XXXXXX";
	int fd = mkstemp(tmp);
	const char *doc = "{\"init_error\": \"DRIVER_NOT_LOADED\", \"gpus\": []}";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, doc, strlen(doc)), (int)strlen(doc));
	close(fd);
	setenv("FAKE_NVML_FIXTURE", tmp, 1);
	assert_int_equal(nvml_open(fake_lib, "/", &nv, &err), -ENXIO);
	assert_non_null(strstr(err.msg, "modprobe nvidia"));
	setenv("FAKE_NVML_FIXTURE", fixture, 1);
	unlink(tmp);
}

static void test_error_mapping(void **state)
{
	static const struct {
		nvmlReturn_t r;
		int e;
	} rows[] = {
	    {NVML_SUCCESS, 0},
	    {NVML_ERROR_UNINITIALIZED, -EBADF},
	    {NVML_ERROR_INVALID_ARGUMENT, -EINVAL},
	    {NVML_ERROR_NOT_SUPPORTED, -EOPNOTSUPP},
	    {NVML_ERROR_NO_PERMISSION, -EACCES},
	    {NVML_ERROR_NOT_FOUND, -ENOENT},
	    {NVML_ERROR_INSUFFICIENT_SIZE, -ENOBUFS},
	    {NVML_ERROR_DRIVER_NOT_LOADED, -ENXIO},
	    {NVML_ERROR_TIMEOUT, -ETIMEDOUT},
	    {NVML_ERROR_LIBRARY_NOT_FOUND, -ELIBACC},
	    {NVML_ERROR_FUNCTION_NOT_FOUND, -ENOSYS},
	    {NVML_ERROR_GPU_IS_LOST, -ENODEV},
	    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, -EPROTO},
	    {NVML_ERROR_IN_USE, -EBUSY},
	    {NVML_ERROR_MEMORY, -ENOMEM},
	    {NVML_ERROR_NO_DATA, -ENODATA},
	    {NVML_ERROR_UNKNOWN, -EIO},
	    {12345, -EIO}, /* a code newer than our table */
	};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++)
		assert_int_equal(nvml_errno(rows[i].r), rows[i].e);
	/* Every named code round-trips through its name. */
	for (nvmlReturn_t r = 0; r <= 30; r++) {
		nvmlReturn_t back = -1;

		assert_int_equal(nvml_return_from_name(nvml_return_name(r), &back), 0);
		assert_int_equal(back, r);
	}
	assert_string_equal(nvml_return_name(NVML_ERROR_GPU_IS_LOST), "GPU_IS_LOST");
	assert_int_equal(nvml_return_from_name("NO_SUCH_CODE", &(nvmlReturn_t){0}), -EINVAL);
	/* Without a library, strerror falls back to our names. */
	assert_string_equal(nvml_strerror(NULL, NVML_ERROR_TIMEOUT), "TIMEOUT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_missing_library),     cmocka_unit_test(test_missing_required_symbol),
	    cmocka_unit_test(test_old_driver_degrades), cmocka_unit_test(test_driver_root_search),
	    cmocka_unit_test(test_init_failure),        cmocka_unit_test(test_error_mapping),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
