/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8sobj_parse() anchors: the latest definition of a redefined anchor wins, and no path leaks
 * (jansson's allocator is counted here, so a leaked value fails without valgrind).
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

#include "kube/k8sobj.h"

static long live;

static void *count_malloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		live++;
	return p;
}

static void count_free(void *p)
{
	if (p)
		live--;
	free(p);
}

static json_t *parse_ok(const char *text)
{
	json_t *objs = NULL;
	struct gerr err = {0};

	assert_int_equal(k8sobj_parse("t.yaml", text, strlen(text), &objs, &err), 0);
	return objs;
}

static void test_redefined_anchor_latest_wins(void **state)
{
	/* tests/fuzz/corpus/podyaml/leak-anchor-redefined.yaml */
	static const char text[] = "a: &x 1\nb: &x 2\nc: *x\nd: &y {k: 1}\ne: &y [1]\nf: *y\n";
	json_t *objs, *o;

	live = 0;
	objs = parse_ok(text);
	o = json_array_get(objs, 0);
	assert_int_equal(json_integer_value(json_object_get(o, "c")), 2);
	assert_true(json_is_array(json_object_get(o, "f")));
	json_decref(objs);
	assert_int_equal(live, 0);
}

static void test_too_many_anchors_no_leak(void **state)
{
	size_t cap = 300 * 32 + 64, n = 0;
	char *text = malloc(cap);
	json_t *objs = NULL;
	struct gerr err = {0};

	assert_non_null(text);
	for (int k = 0; k < 300; k++)
		n += (size_t)snprintf(text + n, cap - n, "k%d: &a%d {v: [%d]}\n", k, k, k);
	live = 0;
	assert_int_equal(k8sobj_parse("t.yaml", text, n, &objs, &err), -E2BIG);
	assert_null(objs);
	assert_non_null(strstr(err.msg, "anchors"));
	assert_int_equal(live, 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_redefined_anchor_latest_wins),
	    cmocka_unit_test(test_too_many_anchors_no_leak),
	};

	json_set_alloc_funcs(count_malloc, count_free);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
