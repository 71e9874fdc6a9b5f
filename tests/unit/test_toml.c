/* SPDX-License-Identifier: Apache-2.0 */
/* The TOML reader's own contract: positions in errors, lookups, merge depth, containerd imports. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"
#include "parse/toml.h"

static struct toml *parse_ok(const char *text)
{
	struct toml *t = NULL;
	struct gerr err = {0};

	assert_int_equal(toml_parse(text, strlen(text), "t.toml", &t, &err), 0);
	return t;
}

static void expect_error(const char *text, const char *where)
{
	struct toml *t = NULL;
	struct gerr err = {0};

	assert_int_equal(toml_parse(text, strlen(text), "t.toml", &t, &err), -EINVAL);
	assert_null(t);
	if (strncmp(err.msg, where, strlen(where)) != 0)
		fail_msg("expected error at %s, got '%s'", where, err.msg);
}

static void test_errors_have_line_and_column(void **state)
{
	expect_error("a = 1\nb = \"x\n", "t.toml:2:7:");
	expect_error("[plugins\n", "t.toml:1:1:");
	expect_error("a = 1\n  a = 2\n", "t.toml:2:3:");
	expect_error("x = 012\n", "t.toml:1:5:");
	expect_error("x = 9223372036854775808\n", "t.toml:1:5:");
	expect_error("\n\nx = [1,\n 2 3]\n", "t.toml:4:4:");
	expect_error("x = {a = 1}\nx.b = 2\n", "t.toml:2:1:");
}

static void test_lookups_and_types(void **state)
{
	_cleanup_(toml_freep) struct toml *t = parse_ok("version = 3\n"
							"[plugins.'io.containerd.cri.v1.runtime']\n"
							"enable_cdi = true\n"
							"cdi_spec_dirs = ['/etc/cdi']\n"
							"[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n"
							"default_runtime_name = \"nvidia\"\n");
	const struct toml *cri = toml_path(t, "plugins", "io.containerd.cri.v1.runtime", NULL);

	assert_int_equal(toml_int(t, "version", 0), 3);
	assert_non_null(cri);
	assert_int_equal(toml_bool(cri, "enable_cdi", -1), 1);
	assert_int_equal(toml_bool(cri, "missing", -1), -1);
	assert_string_equal(toml_string(toml_get(cri, "containerd"), "default_runtime_name", ""), "nvidia");
	assert_int_equal(toml_get(cri, "cdi_spec_dirs")->type, TOML_ARRAY);
	assert_string_equal(toml_get(cri, "cdi_spec_dirs")->vals[0]->s, "/etc/cdi");
	/* wrong type falls back */
	assert_string_equal(toml_string(cri, "enable_cdi", "fb"), "fb");
	assert_null(toml_path(t, "plugins", "nope", "x", NULL));
}

static void test_merge_depth(void **state)
{
	_cleanup_(toml_freep) struct toml *a = parse_ok("[p.x]\nk = 1\nj = 1\n[p.y]\nk = 1\n");
	_cleanup_(toml_freep) struct toml *b = parse_ok("[p.x]\nk = 2\n");
	_cleanup_(toml_freep) struct toml *c = parse_ok("[p.x]\nk = 1\nj = 1\n");
	_cleanup_(toml_freep) struct toml *d = parse_ok("[p.x]\nk = 2\n");

	/* depth 1: p.x replaced wholesale, p.y untouched */
	assert_int_equal(toml_merge(a, b, 1), 0);
	assert_int_equal(toml_int(toml_path(a, "p", "x", NULL), "k", 0), 2);
	assert_null(toml_get(toml_path(a, "p", "x", NULL), "j"));
	assert_non_null(toml_path(a, "p", "y", NULL));
	/* deep merge keeps j */
	assert_int_equal(toml_merge(c, d, -1), 0);
	assert_int_equal(toml_int(toml_path(c, "p", "x", NULL), "k", 0), 2);
	assert_int_equal(toml_int(toml_path(c, "p", "x", NULL), "j", 0), 1);
}

static void write_under(const char *root, const char *path, const char *text)
{
	_cleanup_free_ char *p = root_path(root, path);
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(write_file_atomic(p, text, strlen(text), 0644, NULL), 0);
}

static void test_containerd_imports_below_root(void **state)
{
	char root[] = "/tmp/toml-root-XXXXXX";
	_cleanup_(toml_freep) struct toml *t = NULL;
	char **files = NULL;
	struct gerr err = {0};
	char cmd[256];

	assert_non_null(mkdtemp(root));
	write_under(root, "/etc/containerd/config.toml",
		    "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"
		    "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"runc\"\n"
		    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"x\"\n"
		    "[plugins.\"io.containerd.runtime.v1.linux\"]\nshim = \"s\"\n");
	write_under(root, "/etc/containerd/conf.d/99-nvidia.toml",
		    "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
		    "default_runtime_name = \"nvidia\"\n"
		    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\nruntime_type = \"y\"\n");
	assert_int_equal(toml_load_containerd(root, "/etc/containerd/config.toml", &t, &files, &err), 0);
	assert_string_equal(files[0], "/etc/containerd/config.toml");
	assert_string_equal(files[1], "/etc/containerd/conf.d/99-nvidia.toml");
	assert_null(files[2]);
	{
		const struct toml *ctr = toml_path(t, "plugins", "io.containerd.grpc.v1.cri", "containerd", NULL);

		assert_string_equal(toml_string(ctr, "default_runtime_name", ""), "nvidia");
		/* version 2: the drop-in's CRI table replaced the main file's (containerd < 2.1) */
		assert_null(toml_path(ctr, "runtimes", "runc", NULL));
		assert_non_null(toml_path(ctr, "runtimes", "nvidia", NULL));
		/* other plugins untouched */
		assert_non_null(toml_path(t, "plugins", "io.containerd.runtime.v1.linux", NULL));
	}
	for (size_t k = 0; files[k]; k++)
		free(files[k]);
	free(files);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_errors_have_line_and_column),
	    cmocka_unit_test(test_lookups_and_types),
	    cmocka_unit_test(test_merge_depth),
	    cmocka_unit_test(test_containerd_imports_below_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
