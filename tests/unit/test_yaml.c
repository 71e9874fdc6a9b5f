/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse/yaml: the one YAML reader. Every expected value below is what sigs.k8s.io/yaml's YAMLToJSON
 * gives for the same text (its go-yaml v2 fork's resolve(), then convertToJSONableObject() for
 * keys): that is the consumer of these files -- the CDI Go library (podman, containerd, CRI-O),
 * kubectl and the API server for manifests, the NVIDIA device plugin for its config file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "parse/yaml.h"

static json_t *read_ok(const char *text, unsigned flags)
{
	struct gerr err = {0};
	json_t *j = NULL;

	if (yaml_to_json(text, strlen(text), "t.yaml", flags, &j, NULL, &err) < 0)
		fail_msg("'%s' not read: %s", text, err.msg);
	return j;
}

static void expect(const char *yaml, const char *want_json)
{
	json_auto_t *got = read_ok(yaml, 0);
	json_auto_t *want = json_loads(want_json, JSON_DECODE_ANY, NULL);
	_cleanup_free_ char *text = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS);

	assert_non_null(want);
	if (!json_equal(got, want))
		fail_msg("'%s': got %s, sigs.k8s.io/yaml gives %s", yaml, text, want_json);
}

static void expect_error(const char *yaml, unsigned flags, int code, const char *msg)
{
	struct gerr err = {0};
	json_t *j = NULL;

	assert_int_equal(yaml_to_json(yaml, strlen(yaml), "t.yaml", flags, &j, NULL, &err), -code);
	assert_null(j);
	if (!strstr(err.msg, msg))
		fail_msg("'%s': message '%s' lacks '%s'", yaml, err.msg, msg);
}

/* YAML 1.1 booleans and nulls: go-yaml v2 resolveMapList, kept by sigs.k8s.io/yaml */
static void test_booleans_and_nulls(void **state)
{
	static const char *const trues[] = {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"};
	static const char *const falses[] = {"n",   "N",   "no",    "No",    "NO",   "off",
					     "Off", "OFF", "false", "False", "FALSE"};
	static const char *const strings[] = {"yEs", "oN", "tRUE",  "nO",     "nULL",
					      "t",   "f",  "'yes'", "\"on\"", "!!str y"};
	char buf[64];

	for (size_t i = 0; i < ELEMENTSOF(trues); i++) {
		snprintf(buf, sizeof(buf), "a: %s\n", trues[i]);
		expect(buf, "{\"a\": true}");
	}
	for (size_t i = 0; i < ELEMENTSOF(falses); i++) {
		snprintf(buf, sizeof(buf), "a: %s\n", falses[i]);
		expect(buf, "{\"a\": false}");
	}
	expect("[~, null, Null, NULL, !!null '']", "[null, null, null, null, null]");
	expect("a:\n", "{\"a\": null}");
	expect("", "null");
	for (size_t i = 0; i < ELEMENTSOF(strings); i++) {
		json_auto_t *j = NULL;

		snprintf(buf, sizeof(buf), "a: %s\n", strings[i]);
		j = read_ok(buf, 0);
		assert_true(json_is_string(json_object_get(j, "a")));
	}
}

/* integers: strconv base 0 after dropping '_'; floats: yamlStyleFloat; the rest strings */
static void test_numbers(void **state)
{
	expect("[010, 0o10, 0x1F, 0X1f, 0b101, -0b101, 1_000, +5, -0, 0]", "[8, 8, 31, 31, 5, -5, 1000, 5, 0, 0]");
	expect("[9223372036854775807, -9223372036854775808]", "[9223372036854775807, -9223372036854775808]");
	expect("[9223372036854775808]", "[9.223372036854775808e18]"); /* a uint64 */
	expect("[08, 1e3, .5, -.5, 1., 1_0.5, 1.5E-2, +1e+2]", "[8.0, 1000.0, 0.5, -0.5, 1.0, 10.5, 0.015, 100.0]");
	expect("[1e999, 0x1p3, ._5, 1.2.3, 0x, 1e, .e1, 12:30, 2001-12-14, 1_2_]",
	       "[\"1e999\", \"0x1p3\", \"._5\", \"1.2.3\", \"0x\", \"1e\", \".e1\", \"12:30\", \"2001-12-14\", 12]");
	expect("a: +\nb: -x\n", "{\"a\": \"+\", \"b\": \"-x\"}");
	expect("[!!float 1, !!int '7', !!bool 'yes', '010', \"1e3\", !!str 5, !custom 5]",
	       "[1.0, 7, true, \"010\", \"1e3\", \"5\", \"5\"]");
	expect_error("a: .inf\n", 0, EINVAL, "t.yaml:1:4: infinity or NaN");
	expect_error("a: [-.INF]\n", 0, EINVAL, "infinity or NaN");
	expect_error("a: .NaN\n", 0, EINVAL, "infinity or NaN");
	expect_error("a: !!int x\n", 0, EINVAL, "t.yaml:1:4: the value does not match its YAML tag");
}

/* keys are typed like values, then written as JSON keys: on: is "true", 1.0: is "1" */
static void test_keys(void **state)
{
	expect("{y: 1, on: 2, NO: 3, 1: 4, 0x10: 5, 1.5: 6, 1.0: 7, 1e7: 8, 0.0001: 9, 123456: 10, '1': 11}",
	       "{\"true\": 2, \"false\": 3, \"1\": 11, \"16\": 5, \"1.5\": 6, \"1e+07\": 8, \"0.0001\": 9,"
	       " \"123456\": 10}");
	expect("{1.0: 7}", "{\"1\": 7}");
	expect("{1234567: 1, 0.00001: 2}", "{\"1234567\": 1, \"1e-05\": 2}");
	expect("{1234567.0: 1}", "{\"1.234567e+06\": 1}");
	expect("{1e39: 1, -1e300: 2}", "{\".inf\": 1, \"-.inf\": 2}"); /* +Inf as a float32 */
	expect_error("~: 1\n", 0, EINVAL, "t.yaml:1:1: a mapping key must be");
	expect_error("? [1]\n: 1\n", 0, EINVAL, "t.yaml:1:3: a mapping key must be");
}

static void test_duplicates_documents_aliases(void **state)
{
	json_auto_t *docs = read_ok("a: 1\n---\n---\nb: &x [1, {c: 2}]\nd: *x\n", YAML_ALL_DOCUMENTS);
	json_t *b;

	/* yaml.Unmarshal: the last one wins; yaml.UnmarshalStrict (the CDI library): an error */
	expect("a: 1\na: 2\n", "{\"a\": 2}");
	expect_error("a: 1\nb: 0\na: 2\n", YAML_STRICT, EINVAL, "t.yaml:3:1: duplicate key");
	assert_int_equal(json_array_size(docs), 3);
	assert_true(json_is_null(json_array_get(docs, 1)));
	b = json_object_get(json_array_get(docs, 2), "b");
	assert_true(json_equal(b, json_object_get(json_array_get(docs, 2), "d")));
	expect_error("a: 1\n---\nb: 2\n", 0, EINVAL, "t.yaml:2:1: more than one YAML document");
	expect("a: &x 1\nb: &x 2\nc: *x\n", "{\"a\": 1, \"b\": 2, \"c\": 2}"); /* the latest anchor */
	expect_error("a: *nope\n", 0, EINVAL, "t.yaml:1:4: unknown YAML alias");
	expect_error("a: [1\n", 0, EINVAL, "t.yaml:");
}

static void test_alias_bomb(void **state)
{
	char text[2048];
	size_t n = (size_t)snprintf(text, sizeof(text), "a0: &a0 [x, x, x, x, x, x, x, x]\n");

	for (int k = 1; k < 12; k++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", k, k, k - 1,
				      k - 1, k - 1, k - 1, k - 1, k - 1, k - 1, k - 1);
	expect_error(text, 0, E2BIG, "aliases expand");
}

static void test_positions(void **state)
{
	static const char text[] = "# c\nkind: X\nspec:\n  items:\n    - a\n    -   b: 1\n";
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	json_auto_t *j = NULL;
	struct yaml_pos p;
	json_t *items;

	assert_int_equal(yaml_to_json(text, strlen(text), "t.yaml", 0, &j, &w, NULL), 0);
	assert_int_equal(yaml_where_key(w, j, "kind", &p), 0);
	assert_int_equal(p.line, 2);
	assert_int_equal(p.col, 1);
	items = json_object_get(json_object_get(j, "spec"), "items");
	assert_int_equal(yaml_where_key(w, json_object_get(j, "spec"), "items", &p), 0);
	assert_int_equal(p.line, 4);
	assert_int_equal(p.col, 3);
	assert_int_equal(yaml_where_key(w, json_array_get(items, 1), "b", &p), 0);
	assert_int_equal(p.col, 9);
	assert_int_equal(yaml_where_key(w, j, "nope", &p), -ENOENT);
}

/* The nodes: every value with where it starts (past the key, its ':', blanks, line breaks and comments). */
static void test_tree(void **state)
{
	static const char text[] = "# c\n---\nkind: X   # a comment\nspec:\n  items:\n    - a\n    -   b: 1\n"
				   "  empty:\n  q: 'x'\nlast: {f: [1, 2]}\n";
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	_cleanup_(yaml_node_freep) struct yaml_node *root = NULL, *shallow = NULL;
	json_auto_t *j = NULL;
	const struct yaml_node *spec, *items, *last;

	assert_int_equal(yaml_to_json(text, strlen(text), "t.yaml", 0, &j, &w, NULL), 0);
	assert_int_equal(yaml_where_tree(w, j, 8, &root), 0);
	assert_true(root->v == j && root->at.line == 3 && root->at.col == 1); /* past the "---" */
	assert_int_equal(root->n, 3);
	assert_string_equal(root->kids[0].key, "kind");
	assert_true(root->kids[0].at.line == 3 && root->kids[0].at.col == 7);
	spec = &root->kids[1];
	assert_true(spec->key_at.line == 4 && spec->key_at.col == 1 && spec->at.line == 5 && spec->at.col == 3);
	items = &spec->kids[0];
	assert_true(items->n == 2 && items->at.line == 6 && items->at.col == 5);
	assert_true(items->kids[1].at.line == 7 && items->kids[1].at.col == 9);
	assert_true(items->kids[1].kids[0].at.line == 7 && items->kids[1].kids[0].at.col == 12);
	assert_true(json_is_null(spec->kids[1].v) && spec->kids[1].key_at.line == 8);
	assert_true(spec->kids[2].at.line == 9 && spec->kids[2].at.col == 6);
	last = &root->kids[2];
	assert_true(last->at.col == 7 && last->kids[0].at.col == 11 && last->kids[0].kids[1].at.col == 15);
	/* below max_depth a collection has no kids */
	assert_int_equal(yaml_where_tree(w, j, 1, &shallow), 0);
	assert_true(shallow->n == 3 && shallow->kids[1].n == 0);
}

/* A value repeated by aliases is a node each time: bounded, an error past the bound. */
static void test_tree_bound(void **state)
{
	char text[4096];
	size_t n = (size_t)snprintf(text, sizeof(text), "a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8]\n");
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	_cleanup_(yaml_node_freep) struct yaml_node *root = NULL;
	json_auto_t *j = NULL;

	for (int k = 1; k < 6; k++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", k, k, k - 1,
				      k - 1, k - 1, k - 1, k - 1, k - 1, k - 1, k - 1);
	assert_int_equal(yaml_to_json(text, n, "t.yaml", 0, &j, &w, NULL), 0);
	assert_int_equal(yaml_where_tree(w, j, 8, &root), -E2BIG);
	assert_null(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_booleans_and_nulls),
	    cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_duplicates_documents_aliases),
	    cmocka_unit_test(test_alias_bomb),
	    cmocka_unit_test(test_positions),
	    cmocka_unit_test(test_tree),
	    cmocka_unit_test(test_tree_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
