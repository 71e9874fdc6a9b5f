/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ld.so.cache reader against glibc's own: caches written by `ldconfig -r ROOT -c new|old|compat`
 * over real tiny libraries, read by us and by `ldconfig -p -C FILE`; then every truncation and
 * a sweep of corruptions must be rejected or parsed without reading out of bounds (ASan run).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "host/ldcache.h"
#include "util/fileio.h"
#include "test_cdi_helpers.h"

static const char *const formats[] = {"new", "old", "compat"};

static char *make_root(const char *format)
{
	char *root = mk_tempdir();

	assert_non_null(root);
	assert_int_equal(mk_lib(root, "/usr/lib/x86_64-linux-gnu", "libcuda.so.550.54.15", "libcuda.so.1"), 0);
	assert_int_equal(mk_lib(root, "/usr/lib/x86_64-linux-gnu", "libnvidia-ml.so.550.54.15", "libnvidia-ml.so.1"),
			 0);
	assert_int_equal(mk_lib(root, "/opt/other/lib", "libfoo.so.3.2", "libfoo.so.3"), 0);
	assert_int_equal(mk_ldcache(root, "/usr/lib/x86_64-linux-gnu /opt/other/lib", format), 0);
	return root;
}

/* Every "KEY (libc6,x86-64) => VALUE" line glibc prints must be one of our entries. */
static void compare_with_glibc(const char *cache_path, const struct ldcache *c)
{
	_cleanup_free_ char *cmd = NULL;
	char line[1024];
	size_t glibc_lines = 0;
	FILE *p;

	assert_true(asprintf(&cmd, "ldconfig -p -C '%s'", cache_path) > 0);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char key[256], flags[64], value[512];
		bool found = false;

		if (sscanf(line, " %255s (%63[^)]) => %511s", key, flags, value) != 3)
			continue;
		glibc_lines++;
		assert_string_equal(flags, "libc6,x86-64");
		for (size_t i = 0; i < c->n_entries && !found; i++)
			found = streq(c->entries[i].key, key) && streq(c->entries[i].value, value) &&
				c->entries[i].flags == (LDCACHE_FLAG_ELF_LIBC6 | LDCACHE_FLAG_X8664_LIB64);
		if (!found)
			fail_msg("glibc lists %s => %s, our reader does not", key, value);
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(glibc_lines, 3);
}

static void test_formats_match_glibc(void **state)
{
	for (size_t f = 0; f < ELEMENTSOF(formats); f++) {
		_cleanup_free_ char *root = make_root(formats[f]), *path = root_path(root, "/etc/ld.so.cache");
		_cleanup_(ldcache_freep) struct ldcache *c = NULL;
		struct gerr err = {0};

		assert_int_equal(ldcache_read(path, &c, &err), 0);
		assert_int_equal(c->new_format, !streq(formats[f], "old"));
		compare_with_glibc(path, c);
		rm_tree(root);
	}
}

/* Parse a copy of buf[0..len) so ASan sees exactly len bytes. */
static int parse_copy(const char *buf, size_t len)
{
	struct ldcache *c = NULL;
	char *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, len);
	r = ldcache_parse(copy, len, &c, NULL);
	if (r == 0) {
		for (size_t i = 0; i < c->n_entries; i++)
			assert_true(strlen(c->entries[i].key) + strlen(c->entries[i].value) < len);
		ldcache_free(c);
	} else {
		free(copy);
	}
	return r;
}

static void test_truncated_and_corrupt(void **state)
{
	for (size_t f = 0; f < ELEMENTSOF(formats); f++) {
		_cleanup_free_ char *root = make_root(formats[f]), *path = root_path(root, "/etc/ld.so.cache");
		_cleanup_free_ char *buf = NULL;
		size_t len, rejected = 0;

		assert_int_equal(read_file(path, 1 << 20, &buf, &len, NULL), 0);
		assert_int_equal(parse_copy(buf, len), 0);
		/* Every prefix that cuts into the tables or strings must be refused. */
		for (size_t l = 0; l < len; l++)
			if (parse_copy(buf, l) == -EBADMSG)
				rejected++;
		assert_true(rejected > 0);
		assert_int_equal(parse_copy(buf, 10), -EBADMSG);
		/* Each byte set to 0xff in turn: parse or -EBADMSG, never a wild read. */
		for (size_t i = 0; i < len; i++) {
			char saved = buf[i];
			int r;

			buf[i] = (char)0xff;
			r = parse_copy(buf, len);
			assert_true(r == 0 || r == -EBADMSG);
			buf[i] = saved;
		}
		rm_tree(root);
	}
}

static void test_bad_inputs(void **state)
{
	static const char junk[] = "this is not a cache at all, not even close to one ..............";
	char old_huge[16] = "ld.so-1.7.0";
	uint32_t n = 0x7fffffff;
	struct gerr err = {0};
	struct ldcache *c = NULL;
	char *copy = strdup(junk);

	assert_int_equal(ldcache_parse(copy, sizeof(junk) - 1, &c, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "ldconfig"));
	free(copy);
	memcpy(old_huge + 12, &n, sizeof(n));
	assert_int_equal(parse_copy(old_huge, sizeof(old_huge)), -EBADMSG);
	assert_int_equal(ldcache_read("/nonexistent/ld.so.cache", &c, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_formats_match_glibc),
	    cmocka_unit_test(test_truncated_and_corrupt),
	    cmocka_unit_test(test_bad_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
