/* SPDX-License-Identifier: Apache-2.0 */
/* The enum <-> string table idiom (src/util/enumtab.h): plain rows, rows with more columns, aliases. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plugin/resources.h"
#include "util/enumtab.h"

enum color { RED, GREEN, BLUE = 7 };

static const struct enum_name colors[] = {
    {RED, "red"}, {GREEN, "green"}, {BLUE, "blue"}, {GREEN, "verde"}, /* an alias: read, never written */
};

/* A row with more columns: the idiom only needs `value` and `name`. */
static const struct {
	const char *help;
	enum color value;
	int weight;
	const char *name;
} wide[] = {
    {"warm", RED, 3, "RED"},
    {"cold", BLUE, 5, "BLUE"},
};

static void test_plain(void **state)
{
	enum color c = RED;

	(void)state;
	assert_string_equal(enum_to_name(colors, GREEN, "?"), "green");
	assert_string_equal(enum_to_name(colors, BLUE, "?"), "blue");
	assert_string_equal(enum_to_name(colors, 3, "?"), "?");
	assert_int_equal(enum_from_name(colors, "verde", &c), 0);
	assert_int_equal(c, GREEN);
	assert_int_equal(enum_from_name(colors, "blue", &c), 0);
	assert_int_equal(c, BLUE);
	/* unknown or NULL name: -EINVAL and *ret untouched */
	assert_int_equal(enum_from_name(colors, "Blue", &c), -EINVAL);
	assert_int_equal(enum_from_name(colors, NULL, &c), -EINVAL);
	assert_int_equal(c, BLUE);
	assert_int_equal(enum_from_name_icase(colors, "GREEN", &c), 0);
	assert_int_equal(c, GREEN);
}

static void test_wide(void **state)
{
	enum color c = RED;

	(void)state;
	assert_string_equal(enum_to_name(wide, BLUE, "?"), "BLUE");
	assert_string_equal(enum_to_name(wide, GREEN, "none"), "none");
	assert_int_equal(enum_row(wide, BLUE)->weight, 5);
	assert_string_equal(enum_row_named(wide, "RED")->help, "warm");
	assert_null(enum_row_named(wide, "GREEN"));
	assert_null(enum_row(wide, GREEN));
	assert_int_equal(enum_from_name(wide, "BLUE", &c), 0);
	assert_int_equal(c, BLUE);
}

/* The tables converted to the idiom keep their words: upstream flags and GFD labels read them. */
static void test_plugin_words(void **state)
{
	enum mig_strategy m = MIG_STRATEGY_NONE;
	enum sharing_strategy sh = SHARING_NONE;
	enum replica_policy p = REPLICA_DISTRIBUTED;

	(void)state;
	assert_int_equal(mig_strategy_from_name("mixed", &m), 0);
	assert_int_equal(m, MIG_STRATEGY_MIXED);
	assert_string_equal(mig_strategy_name(MIG_STRATEGY_SINGLE), "single");
	assert_int_equal(mig_strategy_from_name("Mixed", &m), -EINVAL);
	assert_int_equal(sharing_strategy_from_name("time-slicing", &sh), 0);
	assert_int_equal(sh, SHARING_TIME_SLICING);
	assert_string_equal(sharing_strategy_name(SHARING_MPS), "mps");
	assert_string_equal(sharing_strategy_name(SHARING_NONE), "none");
	assert_int_equal(replica_policy_from_name("packed", &p), 0);
	assert_int_equal(p, REPLICA_PACKED);
	assert_int_equal(replica_policy_from_name("spread", &p), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain),
	    cmocka_unit_test(test_wide),
	    cmocka_unit_test(test_plugin_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
