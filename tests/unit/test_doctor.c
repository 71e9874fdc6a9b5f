/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor framework's own rules and the version tables it judges with. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"

/* A check may only depend on links whose checks come before it in the table (chain order). */
static void test_requires_point_backwards(void **state)
{
	for (size_t k = 0; k < doctor_n_checks; k++) {
		unsigned earlier = 0;

		for (size_t j = 0; j < k; j++)
			earlier |= L(doctor_checks[j].link);
		if (doctor_checks[k].requires & ~earlier)
			fail_msg("check %s requires a link checked after it", doctor_checks[k].name);
		assert_non_null(doctor_checks[k].run);
		assert_true(strlen(doctor_checks[k].ids) > 0);
	}
}

static void test_only_selection(void **state)
{
	char *only[] = {"cdi.", "runtime", "gpu.ecc-dbe"};

	assert_true(doctor_id_selected("anything", NULL, 0));
	assert_true(doctor_id_selected("cdi.spec-missing", only, 3));
	assert_true(doctor_id_selected("runtime.cdi-disabled", only, 3));
	assert_true(doctor_id_selected("gpu.ecc-dbe", only, 3));
	assert_false(doctor_id_selected("gpu.fallen-off-bus", only, 3));
	assert_false(doctor_id_selected("runtimex.y", only, 3));
}

static void test_version_cmp(void **state)
{
	int v;

	assert_true(version_cmp("550.54.15", "535.104.05") > 0);
	assert_true(version_cmp("535.54.03", "535.104.05") < 0);
	assert_int_equal(version_cmp("1.14.0", "1.14"), 0);
	assert_true(version_cmp("1.11.0", "1.14.0") < 0);
	assert_int_equal(cuda_version_parse("12.4.1", &v), 0);
	assert_int_equal(v, 12040);
	assert_int_equal(cuda_version_parse("cuda>=12.2 brand=tesla,driver>=470", &v), 0);
	assert_int_equal(v, 12020);
	assert_int_equal(cuda_version_parse("latest", &v), -EINVAL);
}

static void test_cuda_verdicts(void **state)
{
	char why[512];

	/* the field guide's case: CUDA 12.2 needs 535, the node has 525 */
	assert_int_equal(cuda_check(12020, 12000, "525.60.13", why, sizeof(why)), CUDA_MINOR_COMPAT);
	assert_int_equal(cuda_check(12020, 12020, "535.54.03", why, sizeof(why)), CUDA_OK);
	/* NVML's CUDA version wins over the table */
	assert_int_equal(cuda_check(12040, 12040, "550.54.15", why, sizeof(why)), CUDA_OK);
	/* driver string only: 550.54.14 is the 12.4 GA driver */
	assert_int_equal(cuda_check(12040, 0, "550.54.14", why, sizeof(why)), CUDA_OK);
	assert_int_equal(cuda_check(12040, 0, "470.82.01", why, sizeof(why)), CUDA_DRIVER_TOO_OLD);
	assert_non_null(strstr(why, "550.54.14"));
	/* a new major never runs on the old branch */
	assert_int_equal(cuda_check(13000, 12090, "575.51.03", why, sizeof(why)), CUDA_DRIVER_TOO_OLD);
	assert_int_equal(cuda_check(12040, 0, "", why, sizeof(why)), CUDA_UNKNOWN);
	assert_int_equal(cuda_max_for_driver("535.104.05"), 12020);
	assert_int_equal(cuda_max_for_driver("300.1"), 0);
}

static void test_toolkit_table(void **state)
{
	/* the field guide's case: driver 550 with toolkit 1.11 */
	assert_non_null(toolkit_too_old("550.54.15", "1.11.0"));
	assert_null(toolkit_too_old("550.54.15", "1.14.6"));
	assert_null(toolkit_too_old("470.82.01", "1.11.0"));
	assert_non_null(toolkit_too_old("525.60.13", "1.12.0"));
	assert_null(toolkit_too_old("", "1.11.0"));
}

/* Findings are referenced by id: doctor_report_once grows the one finding of an id. */
static void test_report_once(void **state)
{
	struct doctor_options o = {0};
	struct doctor_ctx c = {.o = &o};
	struct doctor_finding *f;

	(void)state;
	f = doctor_report_once(&c, "cdi.stale-devices", DOCTOR_FAIL, LINK_CDI, "regenerate", "stale %d", 1);
	doctor_evidence(f, "first");
	doctor_report(&c, "cdi.warning", DOCTOR_WARN, LINK_CDI, "", "warn");
	f = doctor_report_once(&c, "cdi.stale-devices", DOCTOR_FAIL, LINK_CDI, "other", "stale %d", 2);
	doctor_evidence(f, "second");
	assert_int_equal(c.n_findings, 2);
	f = doctor_find(&c, "cdi.stale-devices");
	assert_non_null(f);
	assert_string_equal(f->summary, "stale 1");
	assert_string_equal(f->fix, "regenerate");
	assert_int_equal(f->n_evidence, 2);
	assert_string_equal(f->evidence[1], "second");
	assert_null(doctor_find(&c, "cdi.spec-invalid"));
	assert_true(c.failed_links & L(LINK_CDI));
	assert_string_equal(doctor_link_name(LINK_CDI), "cdi");
	assert_string_equal(doctor_link_name(_LINK_MAX), "?");
	assert_string_equal(doctor_severity_name(DOCTOR_WARN), "warn");
	doctor_ctx_done(&c);
}

/* A fix command: every word quoted for a POSIX shell when it needs it (file names on the node are outside
 * input), node paths as the node sees them, the same command below --root for where the doctor ran. */
static void test_fix_run_quoting(void **state)
{
	struct host_paths hp = {.root = "/host", .driver_root = "/", .nvml_library = "/opt/lib/libnvidia-ml.so.1"};
	struct host_paths node = {.root = "/", .driver_root = "/"};
	struct doctor_options o = {.host = &hp};
	struct doctor_ctx c = {.o = &o};
	struct doctor_finding *f;

	(void)state;
	f = doctor_report(&c, "cdi.stale-devices", DOCTOR_FAIL, LINK_CDI, "regenerate", "stale");
	assert_int_equal(
	    doctor_fix_run(&c, f,
			   (const struct doctor_fix_arg[]){
			       FIX_W("gpulet"), FIX_W("cdi"), FIX_W("generate"), FIX_ROOTOPTS, FIX_W("--output"),
			       FIX_P("/etc/cdi/a b;rm -rf ~'x'.json"), FIX_AND, FIX_W("ln"), FIX_W("-sfn"),
			       FIX_W("../nvidia0"), FIX_P("/dev/char/195:0"), FIX_DONE}),
	    0);
	assert_string_equal(
	    f->run, "gpulet cdi generate --output '/etc/cdi/a b;rm -rf ~'\\''x'\\''.json' && ln -sfn ../nvidia0 "
		    "/dev/char/195:0");
	assert_string_equal(f->run_here,
			    "gpulet cdi generate --root /host --nvml-library /opt/lib/libnvidia-ml.so.1 --output "
			    "'/host/etc/cdi/a b;rm -rf ~'\\''x'\\''.json' && ln -sfn ../nvidia0 /host/dev/char/195:0");
	assert_string_equal(doctor_node_path(&c, "/host/etc/cdi/x.json"), "/etc/cdi/x.json");
	assert_string_equal(doctor_node_path(&c, "/hostile/x"), "/hostile/x");
	doctor_ctx_done(&c);

	/* the doctor on the node itself: one form, no --root */
	o = (struct doctor_options){.host = &node};
	c = (struct doctor_ctx){.o = &o};
	f = doctor_report(&c, "devnode.char-links-missing", DOCTOR_WARN, LINK_DEVNODE, "links", "links");
	assert_int_equal(
	    doctor_fix_run(&c, f,
			   (const struct doctor_fix_arg[]){FIX_W("mkdir"), FIX_W("-p"), FIX_P("/dev/char"), FIX_DONE}),
	    0);
	assert_string_equal(f->run, "mkdir -p /dev/char");
	assert_null(f->run_here);
	doctor_ctx_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_requires_point_backwards),
	    cmocka_unit_test(test_only_selection),
	    cmocka_unit_test(test_version_cmp),
	    cmocka_unit_test(test_cuda_verdicts),
	    cmocka_unit_test(test_toolkit_table),
	    cmocka_unit_test(test_report_once),
	    cmocka_unit_test(test_fix_run_quoting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
