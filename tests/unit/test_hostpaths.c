/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one host-path rule (src/util/hostpaths.h): an empty driver root is "/", an empty dev root the
 * driver root; every root is read below --root, joined once; NVML is looked for where the plugin's
 * container has the driver root mounted, when it is not "/" and the mount is there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/hostpaths.h"

static struct host_paths *resolve(const struct host_paths_options *o)
{
	struct host_paths *p = NULL;

	assert_int_equal(host_paths_new(o, &p, NULL), 0);
	return p;
}

static void test_defaults(void **state)
{
	_cleanup_(host_paths_freep) struct host_paths *p = resolve(&(struct host_paths_options){0});
	_cleanup_(host_paths_freep) struct host_paths *e =
	    resolve(&(struct host_paths_options){.root = "", .driver_root = "", .dev_root = "", .nvml_library = ""});

	(void)state;
	for (const struct host_paths *h = p; h; h = h == p ? e : NULL) {
		assert_string_equal(h->root, "/");
		assert_string_equal(h->driver_root, "/");
		assert_string_equal(h->dev_root, "/");
		assert_string_equal(h->driver_dir, "/");
		assert_string_equal(h->dev_dir, "/");
		assert_string_equal(h->nvml_dir, "/");
		assert_null(h->mount_dir);
		assert_null(h->nvml_library);
	}
}

/* Each root is joined to --root once: <root><driver root>, never <root><root><driver root>. */
static void test_joined_once(void **state)
{
	_cleanup_(host_paths_freep) struct host_paths *p = resolve(&(struct host_paths_options){
	    .root = "/host/", .driver_root = "/run/nvidia/driver", .nvml_library = "/lib/libnvidia-ml.so.1"});
	_cleanup_(host_paths_freep) struct host_paths *d = resolve(
	    &(struct host_paths_options){.root = "/host", .driver_root = "/run/nvidia/driver", .dev_root = "/"});

	(void)state;
	assert_string_equal(p->root, "/host/");
	assert_string_equal(p->driver_root, "/run/nvidia/driver");
	assert_string_equal(p->dev_root, "/run/nvidia/driver"); /* the dev root follows the driver root */
	assert_string_equal(p->driver_dir, "/host/run/nvidia/driver");
	assert_string_equal(p->dev_dir, "/host/run/nvidia/driver");
	assert_string_equal(p->nvml_dir, "/host/run/nvidia/driver");
	assert_string_equal(p->nvml_library, "/lib/libnvidia-ml.so.1");
	assert_string_equal(d->dev_root, "/");
	assert_string_equal(d->dev_dir, "/host/");
}

/* The container driver root is where NVML is read, when the driver root is not "/" and it is mounted. */
static void test_container_driver_root(void **state)
{
	char root[] = "/tmp/gpulet-hostpaths-XXXXXX", mnt[64];
	struct host_paths *p;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(mnt, sizeof(mnt), "%s/driver-root", root);
	/* not mounted: the driver root where the host has it */
	p = resolve(&(struct host_paths_options){
	    .root = root, .driver_root = "/run/nvidia/driver", .ctr_driver_root = "/driver-root"});
	assert_string_equal(p->mount_dir, mnt);
	assert_non_null(strstr(p->nvml_dir, "/run/nvidia/driver"));
	host_paths_free(p);
	assert_int_equal(mkdir(mnt, 0755), 0);
	p = resolve(&(struct host_paths_options){
	    .root = root, .driver_root = "/run/nvidia/driver", .ctr_driver_root = "/driver-root"});
	assert_string_equal(p->nvml_dir, mnt);
	assert_string_equal(p->driver_root, "/run/nvidia/driver"); /* what specs and Allocate carry is unchanged */
	host_paths_free(p);
	/* a driver root of "/" is read where it is */
	p = resolve(&(struct host_paths_options){.root = root, .ctr_driver_root = "/driver-root"});
	assert_string_equal(p->nvml_dir, p->driver_dir);
	host_paths_free(p);
	assert_int_equal(rmdir(mnt), 0);
	assert_int_equal(rmdir(root), 0);
}

static void test_same_nvml(void **state)
{
	_cleanup_(host_paths_freep) struct host_paths *a =
	    resolve(&(struct host_paths_options){.root = "/r", .driver_root = "/d"});
	_cleanup_(host_paths_freep) struct host_paths *b =
	    resolve(&(struct host_paths_options){.root = "/r", .driver_root = "/d", .dev_root = "/x"});
	_cleanup_(host_paths_freep) struct host_paths *c =
	    resolve(&(struct host_paths_options){.root = "/r", .driver_root = "/e"});
	_cleanup_(host_paths_freep) struct host_paths *l =
	    resolve(&(struct host_paths_options){.root = "/r", .driver_root = "/d", .nvml_library = "/l.so"});

	(void)state;
	assert_true(host_paths_same_nvml(a, b));
	assert_false(host_paths_same_nvml(a, c));
	assert_false(host_paths_same_nvml(a, l));
	assert_false(host_paths_same_nvml(a, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_joined_once),
	    cmocka_unit_test(test_container_driver_root),
	    cmocka_unit_test(test_same_nvml),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
