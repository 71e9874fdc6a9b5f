/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvconfig: the v1 file walked for a reader's own rows. What another reader of the file takes passes
 * without a word, a typo is a warning naming its place, the sharing section comes back typed, and an
 * error keeps file:line:col, the key and why (the bare-number hint is added, not formatted over it).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nvconfig/nvconfig.h"

/* A reader with a few of GFD's rows, as gpulet labels has. */
struct gfd {
	bool oneshot;
	int64_t sleep_ns;
	int mig_strategy;
};
static const struct optspec rows[] = {
    {.name = "oneshot", .kind = OPT_BOOL, .key = NVCONFIG_KEY_GFD_ONESHOT, .off = offsetof(struct gfd, oneshot)},
    {.name = "sleep-interval",
     .kind = OPT_DURATION,
     .arg = "D",
     .key = NVCONFIG_KEY_GFD_SLEEP_INTERVAL,
     .def = "60s",
     .off = offsetof(struct gfd, sleep_ns),
     .min = 100,
     .max = 7 * 24 * 3600 * 1000UL},
    NVCONFIG_OPT_MIG_STRATEGY(offsetof(struct gfd, mig_strategy), "mig", "MIG_STRATEGY"),
    {0},
};
static const struct optspec_cli cli = {.rows = rows};

static int walk(const char *text, struct gfd *g, struct nvconfig_file *f, struct gerr *err)
{
	return nvconfig_read(text, strlen(text), "c.yaml", &cli, g, f, err);
}

static void test_readers_keys_and_typos(void **state)
{
	static const char text[] = "version: v1\n"
				   "flags:\n"
				   "  migStrategy: mixed\n"
				   "  nvidiaDriverRoot: /run/nvidia/driver\n" /* the plugin's: no word */
				   "  plugin:\n"
				   "    passDeviceSpecs: true\n"
				   "  gfd:\n"
				   "    oneshot: true\n"
				   "    sleepIntervall: 5s\n" /* a typo: a warning at its place */
				   "imex:\n"
				   "  channelIDs: [0]\n";
	struct nvconfig_file f = {0};
	struct gfd g = {0};
	struct gerr err = {0};

	(void)state;
	assert_int_equal(walk(text, &g, &f, &err), 0);
	assert_int_equal(g.mig_strategy, MIG_STRATEGY_MIXED);
	assert_true(g.oneshot);
	assert_int_equal(f.warnings.n, 1);
	assert_string_equal(f.warnings.items[0], "c.yaml:9:21: unknown key flags.gfd.sleepIntervall (ignored)");
	assert_int_equal(f.sharing.strategy, SHARING_NONE);
	nvconfig_file_clear(&f);
}

static void test_sharing_typed(void **state)
{
	static const char text[] = "sharing:\n"
				   "  mps:\n"
				   "    renameByDefault: true\n"
				   "    resources:\n"
				   "    - name: gpu\n"
				   "      replicas: 4\n"
				   "      rename: other\n";
	struct nvconfig_file f = {0};
	struct gfd g = {0};
	struct gerr err = {0};

	(void)state;
	assert_int_equal(walk(text, &g, &f, &err), 0);
	assert_int_equal(f.sharing.strategy, SHARING_MPS);
	assert_true(f.sharing.rename_by_default && f.sharing.fail_requests_greater_than_one); /* MPS: unset is true */
	assert_int_equal(f.sharing.n_rules, 1);
	assert_string_equal(f.sharing.rules[0].name, "nvidia.com/gpu");
	assert_string_equal(f.sharing.rules[0].rename, "nvidia.com/gpu.shared");
	assert_int_equal(f.sharing.rules[0].replicas, 4);
	assert_int_equal(f.warnings.n, 1);
	assert_non_null(strstr(f.warnings.items[0], "c.yaml:7:15: sharing.mps.resources[0].rename"));
	nvconfig_file_clear(&f);
}

static void test_errors_keep_their_place(void **state)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
	    {"flags:\n  gfd:\n    sleepInterval: 5\n",
	     "c.yaml:3:20: flags.gfd.sleepInterval '5ns' is not valid: want 100ms to 168h0m0s; a bare number is "
	     "nanoseconds here, as upstream; write 60s"},
	    {"flags:\n  migStrategy: 3\n", "c.yaml:2:16: flags.migStrategy: must be a string (quote it), got a number"},
	    {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: \"4\"\n",
	     "c.yaml:5:17: sharing.timeSlicing.resources[0]: replicas must be an integer, not the string \"4\""},
	    {"version: v2\n", "c.yaml:1:10: version: unknown version \"v2\""},
	    {"- a\n", "c.yaml:1:1: (top): expected a mapping with version: v1"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nvconfig_file f = {0};
		struct gfd g = {0};
		struct gerr err = {0};

		assert_true(walk(bad[i].text, &g, &f, &err) < 0);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("%s: got '%s'", bad[i].want, err.msg);
		assert_int_equal(f.warnings.n, 0); /* cleared on failure */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_readers_keys_and_typos),
	    cmocka_unit_test(test_sharing_typed),
	    cmocka_unit_test(test_errors_keep_their_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
