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

#include "kube/allocresp.h"
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

/* core/v1 and events.k8s.io/v1 Events from kubectl JSON; other objects are not Events */
static void test_events(void **state)
{
	json_t *objs = parse_ok(
	    "{\"kind\":\"List\",\"items\":[{\"kind\":\"Event\",\"type\":\"Warning\",\"reason\":\"FailedScheduling\","
	    "\"message\":\"0/1 nodes are available\",\"count\":4,\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\","
	    "\"namespace\":\"ml\"}},{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"reason\":\"Failed\","
	    "\"note\":\"n\",\"series\":{\"count\":9},\"regarding\":{\"name\":\"q\"}},{\"kind\":\"Pod\"},7]}");
	struct k8s_event ev;

	assert_true(k8sobj_event(json_array_get(objs, 0), &ev));
	assert_string_equal(ev.reason, "FailedScheduling");
	assert_string_equal(ev.ns, "ml");
	assert_string_equal(ev.name, "p");
	assert_int_equal(ev.count, 4);
	assert_true(k8sobj_event(json_array_get(objs, 1), &ev));
	assert_string_equal(ev.message, "n");
	assert_string_equal(ev.name, "q");
	assert_string_equal(ev.type, "");
	assert_int_equal(ev.count, 9);
	assert_false(k8sobj_event(json_array_get(objs, 2), &ev));
	assert_false(k8sobj_event(json_array_get(objs, 3), &ev));
	json_decref(objs);
}

/* AllocResp: base64 of a ContainerAllocateResponse (bytes written by hand in wire format) */
static void test_allocresp(void **state)
{
	struct allocresp a;
	struct gerr err = {0};

	/* cdi_devices[0].name = "v/c=0" (field 5) */
	assert_int_equal(allocresp_decode("KgcKBXYvYz0w", &a, &err), 0);
	assert_int_equal(a.mode, ALLOCRESP_CDI_CRI);
	assert_string_equal(a.example, "v/c=0");
	/* envs {NVIDIA_VISIBLE_DEVICES: GPU-1} (field 1, map entry key 1 value 2) */
	assert_int_equal(allocresp_decode("Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBUdQVS0x", &a, &err), 0);
	assert_int_equal(a.mode, ALLOCRESP_ENVVAR);
	assert_string_equal(a.example, "GPU-1");
	/* an empty map entry, what kubelet keeps for a response with no env */
	assert_int_equal(allocresp_decode("CgA=", &a, &err), 0);
	assert_int_equal(a.mode, ALLOCRESP_NONE);
	assert_int_equal(allocresp_decode("", &a, &err), 0);
	assert_int_equal(allocresp_decode("Cg", &a, &err), -EINVAL);   /* not a multiple of 4 */
	assert_int_equal(allocresp_decode("C*A=", &a, &err), -EINVAL); /* not base64 */
	assert_int_equal(allocresp_decode("Cv8=", &a, &err), -EINVAL); /* field 1 with a length past the end */
	assert_non_null(strstr(err.msg, "ContainerAllocateResponse"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_redefined_anchor_latest_wins),
	    cmocka_unit_test(test_too_many_anchors_no_leak),
	    cmocka_unit_test(test_events),
	    cmocka_unit_test(test_allocresp),
	};

	json_set_alloc_funcs(count_malloc, count_free);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
