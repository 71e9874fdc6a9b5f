/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU Operator's device-plugin entrypoint as gpulet reads it (src/plugin/operator.h): the scripts
 * of tests/fixtures/operator/ (the Operator's statements, our words) are accepted with what they ask
 * for, and every way out of that vocabulary is refused with the line; the validator's driver-ready
 * file; /proc/modules as `lsmod | grep -q "^name "` reads it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/operator.h"
#include "util/fileio.h"

static char *fixture(const char *name, size_t *len)
{
	char path[4096];
	char *text = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/operator/%s", getenv("GPULET_SRC") ?: ".", name);
	assert_int_equal(read_file(path, 1 << 20, &text, len, NULL), 0);
	return text;
}

static void test_fixture_scripts(void **state)
{
	struct operator_script s;
	size_t len;
	char *text = fixture("entrypoint-modules.sh", &len);

	(void)state;
	assert_int_equal(operator_script_check(text, len, "e.sh", &s, NULL), 0);
	assert_true(s.checks_modules);
	assert_int_equal(s.modules, 3u);
	free(text);
	text = fixture("entrypoint-bash.sh", &len);
	assert_int_equal(operator_script_check(text, len, "e.sh", &s, NULL), 0);
	assert_false(s.checks_modules);
	free(text);
}

#define HEAD                                                                                         \
	"until [ -f /run/nvidia/validations/driver-ready ]\ndo\n  sleep 5\ndone\nset -o allexport\n" \
	". /run/nvidia/validations/driver-ready\n"

static int check(const char *text, struct gerr *err)
{
	struct operator_script s;

	return operator_script_check(text, strlen(text), "e.sh", &s, err);
}

/* Each refused with the line it is on. */
static void test_refused(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {HEAD "rm -rf /host\nexec nvidia-device-plugin\n", "e.sh:7: 'rm ...' is not a statement"},
	    {HEAD "exec nvidia-device-plugin --fail-on-init-error=false\n", "e.sh:7:"},
	    {HEAD "exec nvidia-device-plugin\necho late\n", "e.sh:8: 'echo' after 'exec"},
	    {HEAD "echo $(id)\nexec nvidia-device-plugin\n", "e.sh:7: '$': no substitution"},
	    {HEAD "echo `id`\nexec nvidia-device-plugin\n", "e.sh:7: '`'"},
	    {HEAD "echo hi > /etc/passwd\nexec nvidia-device-plugin\n", "e.sh:7: 'echo ...'"},
	    {HEAD "echo hi>x\nexec nvidia-device-plugin\n", "e.sh:7:"},
	    {HEAD "echo a && rm x\nexec nvidia-device-plugin\n", "e.sh:7:"},
	    {HEAD "echo \"LD_PRELOAD=x\" >> feature-flags.env\nexec nvidia-device-plugin\n", "e.sh:7:"},
	    {HEAD "extra_modules=\"gdrdrv evil\"\nexec nvidia-device-plugin\n", "e.sh:7:"},
	    {HEAD "echo \"unclosed\nexec nvidia-device-plugin\n", "unclosed quote"},
	    {HEAD ". ./other.env\nexec nvidia-device-plugin\n", "e.sh:7:"},
	    {HEAD "sleep 5; rm x\nexec nvidia-device-plugin\n", "e.sh:7: 'rm ...'"},
	    {HEAD, "does not end with 'exec nvidia-device-plugin'"},
	    /* what the script does must happen in the Operator's order */
	    {"set -o allexport\n. /run/nvidia/validations/driver-ready\nexec nvidia-device-plugin\n",
	     "e.sh:2: the driver-ready file is read before it is waited for"},
	    {"until [ -f /run/nvidia/validations/driver-ready ]\ndo\ndone\n. /run/nvidia/validations/driver-ready\n"
	     "exec nvidia-device-plugin\n",
	     "before 'set -o allexport'"},
	    /* the Operator before v24.6 waited for host-driver-ready and set the roots itself */
	    {"until [ -f /run/nvidia/validations/host-driver-ready ]\ndo\ndone\nexec nvidia-device-plugin\n",
	     "e.sh:1:"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gerr err = {0};

		if (check(cases[i].text, &err) != -EINVAL || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu: got '%s', want '%s'", i, err.msg, cases[i].want);
	}
}

/* One statement per line or several joined with ';', blanks and comments anywhere: the same script. */
static void test_spellings(void **state)
{
	struct operator_script s;
	const char *text = "# comment\n\n  until [ -f \"/run/nvidia/validations/driver-ready\" ]; do sleep 5; done\n"
			   "set -o allexport ; . /run/nvidia/validations/driver-ready\n"
			   "extra_modules='gdrdrv'\n\texec nvidia-device-plugin\n# the end\n";

	(void)state;
	assert_int_equal(operator_script_check(text, strlen(text), "e.sh", &s, NULL), 0);
	assert_true(s.checks_modules);
	assert_int_equal(s.modules, 1u);
}

static void test_ready(void **state)
{
	struct operator_ready r = {{NULL}};
	struct gerr err = {0};
	size_t len;
	char *text = fixture("driver-ready-container", &len);

	(void)state;
	assert_int_equal(operator_ready_parse(text, len, "ready", &r, NULL), 0);
	assert_string_equal(r.value[0], "false");
	assert_string_equal(r.value[1], "/run/nvidia/driver");
	assert_string_equal(r.value[2], "/driver-root");
	assert_string_equal(r.value[4], "/driver-root");
	operator_ready_clear(&r);
	free(text);
	/* the host-driver form, the last line without its newline, a name set twice */
	text = strdup("IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/x\n\nNVIDIA_DRIVER_ROOT=/\nNVIDIA_DEV_ROOT=");
	assert_int_equal(operator_ready_parse(text, strlen(text), "ready", &r, NULL), 0);
	assert_string_equal(r.value[1], "/");
	assert_string_equal(r.value[3], "");
	assert_null(r.value[2]);
	operator_ready_clear(&r);
	free(text);
	/* only the validator's names, only one-word values */
	assert_int_equal(operator_ready_parse("LD_PRELOAD=/x.so\n", 17, "ready", &r, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ready:1: not a NAME=VALUE line"));
	assert_int_equal(operator_ready_parse("IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/a b\n", 43, "ready", &r, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "ready:2: the value of NVIDIA_DRIVER_ROOT"));
	assert_int_equal(operator_ready_parse("NVIDIA_DRIVER_ROOT=$(id)\n", 25, "ready", &r, &err), -EINVAL);
	assert_int_equal(operator_ready_parse("NVIDIA_DRIVER_ROOT=\"/\"\n", 23, "ready", &r, &err), -EINVAL);
	assert_int_equal(operator_ready_parse("garbage\n", 8, "ready", &r, &err), -EINVAL);
	assert_int_equal(operator_ready_parse("NVIDIA_DRIVER_ROOT=/\0x\n", 23, "ready", &r, &err), -EINVAL);
	assert_null(r.value[1]);
}

static void test_modules(void **state)
{
	const char *mods = "nvidia_uvm 1814528 0 - Live 0x0000000000000000\n"
			   "gdrdrv 24576 0 - Live 0x0000000000000000 (OE)\n"
			   "nvidia_fsx 1 0 - Live 0x0\n";

	(void)state;
	assert_int_equal(operator_modules_loaded(mods, 3), 1u);
	assert_int_equal(operator_modules_loaded(mods, 2), 0u); /* nvidia_fsx is not nvidia_fs */
	assert_int_equal(operator_modules_loaded("nvidia_fs 1 0 - Live 0x0", 3), 2u);
	assert_int_equal(operator_modules_loaded("", 3), 0u);
	assert_int_equal(operator_modules_loaded(NULL, 3), 0u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_scripts), cmocka_unit_test(test_refused), cmocka_unit_test(test_spellings),
	    cmocka_unit_test(test_ready),           cmocka_unit_test(test_modules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
