/* SPDX-License-Identifier: Apache-2.0 */
/*
 * validate as the CDI Go library reads a spec (docs/reference/cdi.md §1, §2, §8): a 'v' version prefix
 * per runtime, keys matched without regard to case (the later of two wins), types of the Go struct
 * (fileMode uint32), 'none' permissions unknown to released libraries, the no-libraries warning;
 * relative spec dirs; the conflicts generate refuses.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cdi/cdi.h"
#include "test_cdi_helpers.h"

/* Validate text (JSON) and return the codes of the problems, space-separated, "E:" before errors. */
static char *codes(const char *text, const char *runtime)
{
	struct cdi_validate_options o = {.no_host_paths = true, .runtime_name = runtime};
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	json_auto_t *spec = NULL;
	struct gerr err = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	o.runtime_version = runtime ? cdi_runtime_max_version(runtime) : NULL;
	assert_int_equal(cdi_parse_spec("t.json", text, strlen(text), &spec, &err), 0);
	assert_int_equal(cdi_validate_spec("t.json", spec, &o, &rep), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	for (size_t i = 0; i < rep.n_problems; i++)
		fprintf(f, "%s%s%s", i ? " " : "", rep.problems[i].error ? "E:" : "", rep.problems[i].code);
	fclose(f);
	return buf;
}

#define ASSERT_CODES(text, runtime, want)                         \
	do {                                                      \
		_cleanup_free_ char *got_ = codes(text, runtime); \
		assert_string_equal(got_, want);                  \
	} while (0)

#define DEV(edits)                                          \
	"{\"cdiVersion\":\"0.5.0\",\"kind\":\"example.com/" \
	"gpu\",\"devices\":[{\"name\":\"d\",\"containerEdits\":" edits "}]}"

static void test_v_prefix_per_runtime(void **state)
{
	const char *v = "{\"cdiVersion\":\"v0.5.0\",\"kind\":\"example.com/gpu\",\"devices\":[{\"name\":\"d\","
			"\"containerEdits\":{\"env\":[\"A=1\"]}}]}";

	ASSERT_CODES(v, NULL, "version-v-prefix");
	ASSERT_CODES(v, "podman-4.3", "E:invalid-version");
	ASSERT_CODES(v, "cdi-0.5", "E:invalid-version");
	ASSERT_CODES(v, "containerd-1.7.13", "version-v-prefix");
	ASSERT_CODES(v, "cdi-1.0", "version-v-prefix");
}

static void test_keys_without_case(void **state)
{
	/* Go's encoding/json: any case names the field; of two, the later wins */
	ASSERT_CODES(DEV("{\"devicenodes\":[{\"PATH\":\"/dev/null\"}]}"), "podman-4.3", "key-case key-case");
	ASSERT_CODES(DEV("{\"env\":[\"=bad\"],\"ENV\":[\"A=1\"]}"), NULL, "key-case");
	ASSERT_CODES(DEV("{\"ENV\":[\"A=1\"],\"env\":[\"=bad\"]}"), NULL, "key-case E:invalid-env");
	ASSERT_CODES(DEV("{\"devicenodez\":[]}"), NULL, "E:unknown-field E:empty-edits");
	/* annotation keys are data, not fields */
	ASSERT_CODES("{\"cdiVersion\":\"0.6.0\",\"kind\":\"example.com/gpu\",\"annotations\":{\"KIND\":\"x\"},"
		     "\"devices\":[{\"name\":\"d\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
		     NULL, "");
}

static void test_go_types_and_values(void **state)
{
	ASSERT_CODES(DEV("{\"deviceNodes\":[{\"path\":\"/dev/null\",\"fileMode\":-1}]}"), NULL, "E:wrong-type");
	ASSERT_CODES(DEV("{\"deviceNodes\":[{\"path\":\"/dev/null\",\"fileMode\":438,\"permissions\":\"rw\"}]}"), NULL,
		     "");
	ASSERT_CODES(DEV("{\"deviceNodes\":[{\"path\":\"/dev/null\",\"permissions\":\"none\"}]}"), NULL,
		     "E:invalid-value");
	/* intelRdt.closID is a resctrl dir name or "/" (the CDI library refuses the spec otherwise) */
#define RDT(clos)                                                                                              \
	"{\"cdiVersion\":\"0.7.0\",\"kind\":\"example.com/gpu\",\"containerEdits\":{\"intelRdt\":{\"closID\":" \
	"\"" clos "\"}},\"devices\":[{\"name\":\"d\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}"
	ASSERT_CODES(RDT("c1"), "cdi-1.0", "");
	ASSERT_CODES(RDT("/"), "cdi-1.0", "");
	ASSERT_CODES(RDT("a/b"), "cdi-1.0", "E:invalid-value");
	ASSERT_CODES(RDT(".."), "cdi-1.0", "E:invalid-value");
	ASSERT_CODES(RDT("a\\nb"), "cdi-1.0", "E:invalid-value");
#undef RDT
	/* NVIDIA nodes without any library: works, but CUDA finds no driver */
	ASSERT_CODES(DEV("{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\"}]}"), NULL, "no-libraries");
	ASSERT_CODES(DEV("{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\"}],\"mounts\":[{\"hostPath\":\"/l/libcuda.so.1\","
			 "\"containerPath\":\"/l/libcuda.so.1\"}]}"),
		     NULL, "");
}

static void test_relative_dir_path(void **state)
{
	_cleanup_free_ char *a = cdi_dir_path("/root", "/etc/cdi"), *b = cdi_dir_path("/root", "specs/x"),
			    *c = cdi_dir_path(NULL, "specs");

	assert_string_equal(a, "/root/etc/cdi");
	assert_string_equal(b, "specs/x");
	assert_string_equal(c, "specs");
}

/* One file in dir/name with kind nvidia.com/gpu and the given device names. */
static void write_spec(const char *dir, const char *name, const char *devs)
{
	assert_int_equal(shf("mkdir -p '%s' && printf '{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\","
			     "\"devices\":[%s]}' > '%s/%s'",
			     dir, devs, dir, name),
			 0);
}

#define DEVICE(n) "{\"name\":\"" n "\",\"containerEdits\":{\"env\":[\"A=1\"]}}"

static void test_conflicts(void **state)
{
	_cleanup_free_ char *tmp = mk_tempdir(), *etc = NULL, *run = NULL;
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	json_auto_t *ours = json_pack("{s:s, s:s, s:[{s:s}, {s:s}]}", "cdiVersion", "0.5.0", "kind", "nvidia.com/gpu",
				      "devices", "name", "0", "name", "all");

	assert_non_null(tmp);
	assert_true(asprintf(&etc, "%s/etc/cdi", tmp) > 0 && asprintf(&run, "%s/var/run/cdi", tmp) > 0);
	write_spec(etc, "nvidia.yaml", DEVICE("0") "," DEVICE("all") "," DEVICE("1"));
	write_spec(etc, "nvidia.com-gpu.json", DEVICE("0")); /* the file replaced: never a conflict */
	write_spec(run, "late.json", DEVICE("all"));
	write_spec(etc, "other.json", DEVICE("7"));
	assert_int_equal(cdi_spec_conflicts(etc, "nvidia.com-gpu.json", ours, &rep), 0);
	assert_int_equal(rep.n_problems, 2);
	assert_string_equal(rep.problems[0].code, "conflict-same-dir");
	assert_non_null(strstr(rep.problems[0].file, "/etc/cdi/nvidia.yaml"));
	assert_string_equal(rep.problems[0].message, "nvidia.com/gpu=0, nvidia.com/gpu=all");
	assert_string_equal(rep.problems[1].code, "conflict-shadowed");
	assert_non_null(strstr(rep.problems[1].file, "/var/run/cdi/late.json"));
	cdi_report_clear(&rep);
	/* written to /var/run/cdi: the /etc/cdi files are below it, a warning each */
	assert_int_equal(cdi_spec_conflicts(run, "x.json", ours, &rep), 0);
	assert_int_equal(rep.n_problems, 3);
	for (size_t i = 0; i < rep.n_problems; i++)
		assert_string_equal(rep.problems[i].code, streq(rep.problems[i].file + strlen(run), "/late.json")
							      ? "conflict-same-dir"
							      : "conflict-shadows");
	rm_tree(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v_prefix_per_runtime),
	    cmocka_unit_test(test_keys_without_case),
	    cmocka_unit_test(test_go_types_and_values),
	    cmocka_unit_test(test_relative_dir_path),
	    cmocka_unit_test(test_conflicts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
