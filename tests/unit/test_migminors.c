/* SPDX-License-Identifier: Apache-2.0 */
/* mig-minors parsing and MIG profile naming. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nvml/node.h"

static void test_parse(void **state)
{
	const char *text = "config 1\n"
			   "monitor 2\n"
			   "gpu0/gi0/access 3\n"
			   "gpu0/gi0/ci0/access 4\n"
			   "gpu0/gi1/access 12\n"
			   "gpu0/gi1/ci0/access 13\n"
			   "gpu0/gi1/ci1/access 14\n"
			   "gpu7/gi2/access 255\n"
			   "gpu7/gi2/ci0/access 256";
	struct mig_minors *m = NULL;

	assert_int_equal(mig_minors_parse(text, &m, NULL), 0);
	assert_int_equal(mig_minors_lookup(m, 0, 1, -1), 12);
	assert_int_equal(mig_minors_lookup(m, 0, 1, 0), 13);
	assert_int_equal(mig_minors_lookup(m, 0, 1, 1), 14);
	assert_int_equal(mig_minors_lookup(m, 7, 2, 0), 256); /* last line without newline */
	assert_int_equal(mig_minors_lookup(m, 7, 2, 1), -ENOENT);
	assert_int_equal(mig_minors_lookup(m, 3, 0, -1), -ENOENT);
	assert_int_equal(mig_minors_lookup(NULL, 0, 0, -1), -ENOENT);
	mig_minors_free(m);
}

/* Lines off the driver's usual spelling are read as sscanf reads them (the fast reader leaves them to it). */
static void test_parse_unusual_spellings(void **state)
{
	const char *text = "gpu 1/gi2/access 20\n"            /* %u skips the blank */
			   "gpu1/gi3/access  21\n"            /* two blanks before the minor */
			   "gpu1/gi4/access 022\n"            /* leading zero: decimal */
			   "gpu1/gi5/ci1/access 1234567890\n" /* ten digits */
			   "gpu1/gi6/access 23 \n"            /* trailing blank: not all consumed, skipped */
			   "gpu1/gi7/ci/access 24\n"          /* no ci number: skipped */
			   "gpu01/gi8/access 25\n";
	struct mig_minors *m = NULL;

	(void)state;
	assert_int_equal(mig_minors_parse(text, &m, NULL), 0);
	assert_int_equal(mig_minors_lookup(m, 1, 2, -1), 20);
	assert_int_equal(mig_minors_lookup(m, 1, 3, -1), 21);
	assert_int_equal(mig_minors_lookup(m, 1, 4, -1), 22);
	assert_int_equal(mig_minors_lookup(m, 1, 5, 1), 1234567890);
	assert_int_equal(mig_minors_lookup(m, 1, 6, -1), -ENOENT);
	assert_int_equal(mig_minors_lookup(m, 1, 7, -1), -ENOENT);
	assert_int_equal(mig_minors_lookup(m, 1, 8, -1), 25);
	mig_minors_free(m);
}

static void test_parse_garbage(void **state)
{
	struct mig_minors *m = NULL;
	struct gerr err = {0};
	char longline[300];

	/* Unknown and malformed lines are skipped, not fatal. */
	assert_int_equal(
	    mig_minors_parse("gpu0/gi1/access\ngpuX/gi/access 3\ngpu0/gi1/access 7 trailing\n\n", &m, &err), 0);
	assert_int_equal(mig_minors_lookup(m, 0, 1, -1), -ENOENT);
	mig_minors_free(m);
	m = NULL;
	assert_int_equal(mig_minors_parse("gpu0/gi1/access -5\n", &m, &err), -EINVAL);
	assert_null(m);
	memset(longline, 'g', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = 0;
	assert_int_equal(mig_minors_parse(longline, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ":1: line too long"));
}

static void test_profile_names(void **state)
{
	static const struct {
		unsigned g, c;
		uint64_t mig_mb, gpu_mib;
		const char *want;
	} rows[] = {
	    /* A100-SXM4-40GB profiles (docs/reference/nvml-abi.md, go-nvml mock a100) */
	    {1, 1, 4864, 40960, "1g.5gb"},
	    {2, 2, 9856, 40960, "2g.10gb"},
	    {3, 3, 19968, 40960, "3g.20gb"},
	    {4, 4, 19968, 40960, "4g.20gb"},
	    {7, 7, 40192, 40960, "7g.40gb"},
	    {3, 1, 19968, 40960, "1c.3g.20gb"},
	    /* A100 80GB */
	    {1, 1, 9728, 81920, "1g.10gb"},
	    {7, 7, 80384, 81920, "7g.80gb"},
	    /* H100 80GB HBM3 */
	    {1, 1, 9856, 81559, "1g.10gb"},
	    {3, 3, 40192, 81559, "3g.40gb"},
	};
	char buf[32];

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		node_mig_profile_name(rows[i].g, rows[i].c, rows[i].mig_mb, rows[i].gpu_mib * 1048576, buf,
				      sizeof(buf));
		assert_string_equal(buf, rows[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_parse_unusual_spellings),
	    cmocka_unit_test(test_parse_garbage),
	    cmocka_unit_test(test_profile_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
