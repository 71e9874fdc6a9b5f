/* SPDX-License-Identifier: Apache-2.0 */
/* util/opt: the one parser of option values (docs/reference/go-parsing.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/macro.h"
#include "util/opt.h"

/* Exactly Go's strconv.ParseBool words; everything else (YAML's yes/on, odd case, blanks) refused. */
static void test_bool_go_words(void **state)
{
	static const char *const trues[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const falses[] = {"0", "f", "F", "FALSE", "false", "False"};
	static const char *const bad[] = {"", "yes", "no", "on", "off", "tRUE", "fAlse", " true", "true ", "2", "y"};
	bool b;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(trues); i++) {
		b = false;
		assert_int_equal(opt_parse_bool(trues[i], &b), 0);
		assert_true(b);
		assert_int_equal(opt_parse_bool(falses[i], &b), 0);
		assert_false(b);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		b = true;
		assert_int_equal(opt_parse_bool(bad[i], &b), -EINVAL);
		assert_true(b); /* untouched */
	}
}

/*
 * Go's time.ParseDuration, case for case: the valid inputs of Go's own parseDurationTests
 * (src/time/time_test.go) that matter to options, and the errors (docs/reference/go-parsing.md).
 */
static void test_duration_go_table(void **state)
{
	static const struct {
		const char *in;
		int64_t ns;
	} ok[] = {
	    {"0", 0},
	    {"-0", 0},
	    {"+0", 0},
	    {"5s", 5 * OPT_NSEC_PER_SEC},
	    {"30s", 30 * OPT_NSEC_PER_SEC},
	    {"1478s", 1478 * OPT_NSEC_PER_SEC},
	    {"-5s", -5 * OPT_NSEC_PER_SEC},
	    {"+5s", 5 * OPT_NSEC_PER_SEC},
	    {"-0s", 0},
	    {"5.0s", 5 * OPT_NSEC_PER_SEC},
	    {"5.6s", 5600 * OPT_NSEC_PER_MSEC},
	    {"5.s", 5 * OPT_NSEC_PER_SEC},
	    {".5s", 500 * OPT_NSEC_PER_MSEC},
	    {"1.004s", 1004 * OPT_NSEC_PER_MSEC},
	    {"10ns", 10},
	    {"11us", 11000},
	    {"12\xc2\xb5s", 12000}, /* U+00B5 micro sign */
	    {"12\xce\xbcs", 12000}, /* U+03BC Greek mu */
	    {"13ms", 13 * OPT_NSEC_PER_MSEC},
	    {"500ms", 500 * OPT_NSEC_PER_MSEC},
	    {"14s", 14 * OPT_NSEC_PER_SEC},
	    {"15m", 900 * OPT_NSEC_PER_SEC},
	    {"16h", 16 * 3600 * OPT_NSEC_PER_SEC},
	    {"1.5h", 5400 * OPT_NSEC_PER_SEC},
	    {"3h30m", (3 * 3600 + 1800) * OPT_NSEC_PER_SEC},
	    {"1m30s", 90 * OPT_NSEC_PER_SEC},
	    {"2h0m0s", 7200 * OPT_NSEC_PER_SEC},
	    {"10.5s4m", 4 * 60 * OPT_NSEC_PER_SEC + 10500 * OPT_NSEC_PER_MSEC},
	    {"-2m3.4s", -(2 * 60 * OPT_NSEC_PER_SEC + 3400 * OPT_NSEC_PER_MSEC)},
	    {"1h2m3s4ms5us6ns", 3600 * OPT_NSEC_PER_SEC + 2 * 60 * OPT_NSEC_PER_SEC + 3 * OPT_NSEC_PER_SEC +
				    4 * OPT_NSEC_PER_MSEC + 5000 + 6},
	    {"39h9m14.425s", 140954425 * OPT_NSEC_PER_MSEC},
	    {"52763797000ns", 52763797000},
	    {"0.3333333333333333333h", 20 * 60 * OPT_NSEC_PER_SEC}, /* fraction digits dropped */
	    {"9007199254740993ns", INT64_C(9007199254740993)},      /* 2^53 + 1 exactly */
	    {"9223372036854775807ns", INT64_MAX},                   /* the largest */
	    {"9223372036854775.807us", INT64_MAX},
	    {"-9223372036854775808ns", INT64_MIN},                                       /* the smallest */
	    {"0.100000000000000000000h", 6 * 60 * OPT_NSEC_PER_SEC},                     /* 0.1h */
	    {"0.830103483285477580700h", (49 * 60 + 48) * OPT_NSEC_PER_SEC + 372539827}, /* Go's own row */
	};
	static const struct {
		const char *in;
		int err;
	} bad[] = {
	    {"", -EINVAL},
	    {"3", -EINVAL},
	    {"60", -EINVAL}, /* a bare non-zero number: missing unit */
	    {"-", -EINVAL},
	    {"s", -EINVAL},
	    {".", -EINVAL},
	    {".s", -EINVAL},
	    {"+.s", -EINVAL},
	    {"1d", -EINVAL},
	    {"1sec", -EINVAL},
	    {"1 s", -EINVAL},
	    {" 1s", -EINVAL},
	    {"1s ", -EINVAL},
	    {"1S", -EINVAL},
	    {"infinite", -EINVAL},
	    {"00", -EINVAL},
	    {"1.2.3s", -EINVAL},
	    {"9223372036854775808ns", -ERANGE},
	    {"9223372036854775810ns", -ERANGE},
	    {"3000000h", -ERANGE},
	    {"-9223372036854775809ns", -ERANGE},
	};
	int64_t ns;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		ns = -42;
		if (opt_parse_duration(ok[i].in, &ns) != 0 || ns != ok[i].ns)
			fail_msg("'%s': got %lld, want %lld", ok[i].in, (long long)ns, (long long)ok[i].ns);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		ns = -42;
		if (opt_parse_duration(bad[i].in, &ns) != bad[i].err || ns != -42)
			fail_msg("'%s': accepted or wrong error", bad[i].in);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bool_go_words),
	    cmocka_unit_test(test_duration_go_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
