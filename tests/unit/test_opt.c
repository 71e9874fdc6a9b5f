/* SPDX-License-Identifier: Apache-2.0 */
/* util/opt: the one parser of option values (docs/reference/go-parsing.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bool_go_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
