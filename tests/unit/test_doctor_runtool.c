/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor_run_tool(): host tools are run without a shell, found only below --root, their stdout
 * bounded, stderr dropped, and a hanging tool is killed at the timeout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "doctor/doctor.h"

static char root[256];

static void tool(const char *dir, const char *name, const char *body)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s%s/%s", root, dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static int setup(void **state)
{
	char path[512];

	snprintf(root, sizeof(root), "/tmp/gpulet-runtool-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(path, sizeof(path), "%s/usr", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/usr/local", root);
	mkdir(path, 0755);
	tool("/usr/bin", "gtool", "echo \"Fake Tool version 1.14.3 commit abc\"; echo 'noise 9.9.9' >&2");
	tool("/usr/local/bin", "ltool", "echo v2.5.0");
	tool("/usr/bin", "hang", "exec sleep 30");
	tool("/usr/bin", "fail", "echo 1.0.0; exit 3");
	tool("/usr/bin", "big", "yes x | head -c 1000000");
	tool("/usr/bin", "env", "echo \"path=$PATH bashenv=$BASH_ENV\"");
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	(void)!system(cmd); /* test cleanup only */
	return 0;
}

static void test_stdout_only(void **state)
{
	char *const argv[] = {"gtool", "--version", NULL};
	char out[256], v[32];

	assert_true(doctor_run_tool(root, "gtool", argv, out, sizeof(out), 5000) > 0);
	assert_non_null(strstr(out, "version 1.14.3"));
	assert_null(strstr(out, "noise")); /* stderr is not captured */
	assert_true(doctor_scan_version(out, v, sizeof(v)));
	assert_string_equal(v, "1.14.3");
}

static void test_found_below_root_only(void **state)
{
	char *const argv[] = {"ltool", NULL};
	char out[64], v[32];

	assert_true(doctor_run_tool(root, "ltool", argv, out, sizeof(out), 5000) > 0);
	assert_true(doctor_scan_version(out, v, sizeof(v)));
	assert_string_equal(v, "2.5.0");
	/* not below this root, and never a path or a $PATH lookup */
	assert_int_equal(doctor_run_tool(root, "sh", argv, out, sizeof(out), 5000), -ENOENT);
	assert_int_equal(doctor_run_tool(root, "../usr/bin/gtool", argv, out, sizeof(out), 5000), -ENOENT);
	assert_int_equal(doctor_run_tool(root, "missing", argv, out, sizeof(out), 5000), -ENOENT);
}

static void test_hang_killed(void **state)
{
	char *const argv[] = {"hang", NULL};
	char out[64];
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(doctor_run_tool(root, "hang", argv, out, sizeof(out), 300), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 5);
}

static void test_exit_status_and_bound(void **state)
{
	char *const argv[] = {"x", NULL};
	char out[100];
	int r;

	assert_int_equal(doctor_run_tool(root, "fail", argv, out, sizeof(out), 5000), -EIO);
	r = doctor_run_tool(root, "big", argv, out, sizeof(out), 10000);
	assert_int_equal(r, 99);
	assert_int_equal(strlen(out), 99);
}

static void test_fixed_environment(void **state)
{
	char *const argv[] = {"env", NULL};
	char out[256];

	setenv("BASH_ENV", "/tmp/evil", 1);
	assert_true(doctor_run_tool(root, "env", argv, out, sizeof(out), 5000) > 0);
	assert_non_null(strstr(out, "path=/usr/sbin:/usr/bin:/sbin:/bin "));
	assert_non_null(strstr(out, "bashenv=\n"));
}

static void test_scan_version(void **state)
{
	char v[32];

	assert_true(doctor_scan_version("Kubernetes v1.29.2\n", v, sizeof(v)));
	assert_string_equal(v, "1.29.2");
	assert_false(doctor_scan_version("build 42, 7 items\n", v, sizeof(v)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stdout_only),       cmocka_unit_test(test_found_below_root_only),
	    cmocka_unit_test(test_hang_killed),       cmocka_unit_test(test_exit_status_and_bound),
	    cmocka_unit_test(test_fixed_environment), cmocka_unit_test(test_scan_version),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
