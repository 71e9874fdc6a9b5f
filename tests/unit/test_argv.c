/* SPDX-License-Identifier: Apache-2.0 */
/* Go-style single-dash long flags (src/util/argv.h): what is rewritten, and what must not be. */
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/argv.h"
#include "util/macro.h"

/* as cmd_parse() builds them for a verb with -o FILE, -k[=BOOL], -n and long names */
static const struct option lo[] = {
    {"output", required_argument, NULL, 'o'},
    {"kubernetes", optional_argument, NULL, 'k'},
    {"no-hostname", no_argument, NULL, 'n'},
    {"mig-strategy", required_argument, NULL, 256},
    {"json", no_argument, NULL, 257},
    {"on", no_argument, NULL, 258}, /* spelled with short letters */
    {NULL, 0, NULL, 0},
};
static const char shorts[] = "o:k::nh";

/* Rewrite a copy of in[] and compare with want[] (NULL-terminated lists). */
static void expect(const char *const *in, const char *const *want)
{
	char *argv[16];
	int argc = 0;

	while (in[argc]) {
		argv[argc] = (char *)in[argc];
		argc++;
	}
	argv[argc] = NULL;
	argv_single_dash_longs(argc, argv, lo, shorts);
	for (int i = 0; i < argc; i++) {
		assert_non_null(want[i]);
		assert_string_equal(argv[i], want[i]); /* a rewritten token is util/argv.c's to keep */
	}
	assert_null(want[argc]);
}

static void test_rewritten(void **state)
{
	expect((const char *[]){"verb", "-mig-strategy=mixed", "-json", "-output", "f", NULL},
	       (const char *[]){"verb", "--mig-strategy=mixed", "--json", "--output", "f", NULL});
	expect((const char *[]){"verb", "-kubernetes=false", "-no-hostname", NULL},
	       (const char *[]){"verb", "--kubernetes=false", "--no-hostname", NULL});
	/* an unknown Go-style name becomes an unknown long option (getopt names it), not "-n -o -such-option";
	 * a short option's attached value with a dash in it is not a name */
	expect((const char *[]){"verb", "-no-such-option", "-ok-2", "-o/x-y", NULL},
	       (const char *[]){"verb", "--no-such-option", "-ok-2", "-o/x-y", NULL});
}

static void test_left_alone(void **state)
{
	/* short options, grouped or with their value attached, stay short */
	expect((const char *[]){"verb", "-o", "-json", "-nk", "-ofile", "-kfalse", NULL},
	       (const char *[]){"verb", "-o", "-json", "-nk", "-ofile", "-kfalse", NULL});
	/* the value of a long option given as the next token */
	expect((const char *[]){"verb", "--output", "-json", "-output", "-json", "-mig-strategy", "-json", NULL},
	       (const char *[]){"verb", "--output", "-json", "--output", "-json", "--mig-strategy", "-json", NULL});
	/* a long name spelled with short letters is a group of short options; unknown and partial names */
	expect((const char *[]){"verb", "-on", "-mig", "-jsonx", "-", "x", NULL},
	       (const char *[]){"verb", "-on", "-mig", "-jsonx", "-", "x", NULL});
	/* everything after -- is an operand */
	expect((const char *[]){"verb", "-json", "--", "-json", NULL},
	       (const char *[]){"verb", "--json", "--", "-json", NULL});
}

/* The rewritten argv goes through getopt_long as --name would. */
static void test_getopt(void **state)
{
	char *argv[] = {"verb", "-mig-strategy=single", "-o", "x", NULL};
	const char *mig = NULL, *out = NULL;
	int c;

	argv_single_dash_longs(4, argv, lo, shorts);
	optind = 1;
	while ((c = getopt_long(4, argv, shorts, lo, NULL)) != -1)
		if (c == 256)
			mig = optarg;
		else if (c == 'o')
			out = optarg;
	assert_string_equal(mig, "single");
	assert_string_equal(out, "x");
}

/* Go's "-o=-" is -o with "-"; "-k=false" -k with "false"; "-n=x" has no value to give. */
static void test_short_with_equals(void **state)
{
	expect((const char *[]){"verb", "-o=-", "-k=false", "-o=", "-n=x", NULL},
	       (const char *[]){"verb", "--output=-", "--kubernetes=false", "--output=", "-n=x", NULL});
}

/* A reparse of the same argv (SIGHUP) gets the strings made the first time, not new ones. */
static void test_rewrite_once(void **state)
{
	char *a[] = {"verb", "-mig-strategy=mixed", NULL}, *b[] = {"verb", "-mig-strategy=mixed", NULL};

	argv_single_dash_longs(2, a, lo, shorts);
	argv_single_dash_longs(2, b, lo, shorts);
	assert_ptr_equal(a[1], b[1]);
}

/* Only a beginning of a long name is named; an unknown name is getopt's to report. */
static void test_inexact_long(void **state)
{
	char *ok[] = {"verb", "--output", "--mig", "--json", NULL};
	char *bad[] = {"verb", "--json", "--mig=x", NULL};
	char *unknown[] = {"verb", "--bogus", NULL};

	assert_null(argv_inexact_long(4, ok, lo, shorts)); /* "--mig" is the value of --output */
	assert_string_equal(argv_inexact_long(3, bad, lo, shorts), "--mig=x");
	assert_null(argv_inexact_long(2, unknown, lo, shorts));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rewritten),         cmocka_unit_test(test_left_alone),
	    cmocka_unit_test(test_short_with_equals), cmocka_unit_test(test_rewrite_once),
	    cmocka_unit_test(test_inexact_long),      cmocka_unit_test(test_getopt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
