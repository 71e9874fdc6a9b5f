/* SPDX-License-Identifier: Apache-2.0 */
/* Node model over the fake NVML: every fixture loads; lookups; layout comparison; lost GPUs. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvml/node.h"

static char lib[4096];

static int setup(void **state)
{
	snprintf(lib, sizeof(lib), "%s/fakenvml/libnvidia-ml.so.1", getenv("GPULET_BUILD"));
	return 0;
}

static struct node *load_fixture_file(const char *path)
{
	struct gerr err = {0};
	struct nvml *nv = NULL;
	struct node *n = NULL;

	setenv("FAKE_NVML_FIXTURE", path, 1);
	assert_int_equal(nvml_open(lib, "/", &nv, &err), 0);
	assert_int_equal(node_load(nv, "/nonexistent-root", &n, &err), 0);
	nvml_close(nv);
	return n;
}

static struct node *load_fixture(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s.json", getenv("GPULET_SRC"), name);
	return load_fixture_file(path);
}

static void test_every_fixture(void **state)
{
	static const struct {
		const char *name;
		size_t gpus, migs;
	} rows[] = {
	    {"dgx-a100", 8, 7}, {"dgx-h100", 8, 0},  {"single-t4", 1, 0},
	    {"no-gpu", 0, 0},   {"pcie-4gpu", 4, 0}, {"mixed", 2, 7},
	};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		struct node *n = load_fixture(rows[i].name);
		size_t migs = 0;

		if (rows[i].gpus)
			assert_int_equal(n->n_gpus, rows[i].gpus);
		for (size_t g = 0; g < n->n_gpus; g++) {
			assert_true(n->gpus[g].uuid[0] != 0);
			assert_true(n->gpus[g].memory_total > 0);
			assert_string_equal(n->gpus[g].error, "");
			migs += n->gpus[g].n_migs;
		}
		if (rows[i].migs)
			assert_int_equal(migs, rows[i].migs);
		node_free(n);
	}
}

static void test_lookups(void **state)
{
	struct node *n = load_fixture("dgx-a100");
	const struct node_gpu *parent = NULL;
	const struct node_mig *m;

	assert_ptr_equal(node_find_gpu(n, n->gpus[2].uuid), &n->gpus[2]);
	assert_null(node_find_gpu(n, "GPU-nope"));
	m = node_find_mig(n, n->gpus[6].migs[1].uuid, &parent);
	assert_ptr_equal(m, &n->gpus[6].migs[1]);
	assert_ptr_equal(parent, &n->gpus[6]);
	assert_null(node_find_mig(n, n->gpus[6].uuid, NULL));
	assert_true(node_equal_layout(n, n));
	node_free(n);
}

/* Re-partitioning GPU 7 (one MIG instance removed) is a layout change; a lost GPU keeps the rest. */
static void test_layout_change_and_lost(void **state)
{
	char src[4096], tmp[] = "/tmp/gpulet-node-XXXXXX";
	json_t *fx, *gpus, *migs;
	struct node *a, *b, *c;
	int fd;

	snprintf(src, sizeof(src), "%s/tests/fixtures/dgx-a100.json", getenv("GPULET_SRC"));
	fx = json_load_file(src, 0, NULL);
	assert_non_null(fx);
	a = load_fixture_file(src);
	gpus = json_object_get(fx, "gpus");
	migs = json_object_get(json_array_get(gpus, 7), "mig");
	assert_int_equal(json_array_remove(migs, json_array_size(migs) - 1), 0);
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(json_dump_file(fx, tmp, 0), 0);
	b = load_fixture_file(tmp);
	assert_false(node_equal_layout(a, b));
	assert_int_equal(b->gpus[7].n_migs + 1, a->gpus[7].n_migs);

	json_object_set_new(json_array_get(gpus, 2), "lost", json_true());
	assert_int_equal(json_dump_file(fx, tmp, 0), 0);
	c = load_fixture_file(tmp);
	assert_int_equal(c->n_gpus, 8);
	assert_true(c->gpus[2].lost);
	assert_false(c->gpus[3].lost);
	assert_string_equal(c->gpus[3].uuid, a->gpus[3].uuid);
	unlink(tmp);
	json_decref(fx);
	node_free(a);
	node_free(b);
	node_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_fixture),
	    cmocka_unit_test(test_lookups),
	    cmocka_unit_test(test_layout_change_and_lost),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
