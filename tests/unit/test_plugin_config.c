/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 config file parser (src/plugin/config.c) on good, bad and mutated input: every bad file is
 * an error naming file:line:col and never a crash; mutated files (a deterministic fuzz smoke over a
 * valid config) only ever give 0 or a -errno with a located message.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/config.h"
#include "util/opt.h"

/* The config's warnings as one "; "-joined line (valid until the next call). */
static const char *W(const struct plugin_config *c)
{
	static char *joined;

	free(joined);
	joined = warnings_join(&c->warnings, "; ");
	assert_non_null(joined);
	return joined;
}

static const char *const plugin_envs[] = {
    "MIG_STRATEGY",
    "FAIL_ON_INIT_ERROR",
    "NVIDIA_DRIVER_ROOT",
    "NVIDIA_DEV_ROOT",
    "PASS_DEVICE_SPECS",
    "DEVICE_LIST_STRATEGY",
    "DEVICE_ID_STRATEGY",
    "CONFIG_FILE",
    "KUBELET_SOCKET",
    "DP_DEVICE_PLUGIN_PATH",
    "GPULET_NVML_LIBRARY",
    "GPULET_ROOT",
    "LOG_LEVEL",
    "CDI_ANNOTATION_PREFIX",
    "MPS_ROOT",
    "GPULET_HEALTH_RECOVERY_INTERVAL",
    "GPULET_KERNEL_LOG",
};

/* The config of the defaults alone; the caller frees it. */
static struct plugin_config *defaults(void)
{
	struct plugin_config *c = NULL;

	for (size_t i = 0; i < sizeof(plugin_envs) / sizeof(plugin_envs[0]); i++)
		unsetenv(plugin_envs[i]);
	assert_int_equal(config_load(NULL, &c, NULL), 0);
	return c;
}

/* config_load() again: on success *c is the new config, the old one freed. */
static int reload(struct plugin_config **c)
{
	struct plugin_config *n = NULL;
	int r = config_load(NULL, &n, NULL);

	if (r >= 0) {
		config_free(*c);
		*c = n;
	}
	return r;
}

static const char valid[] = "version: v1\n"
			    "flags:\n"
			    "  migStrategy: mixed\n"
			    "  failOnInitError: false\n"
			    "  plugin:\n"
			    "    passDeviceSpecs: true\n"
			    "    deviceListStrategy: [envvar, cdi-cri]\n"
			    "    deviceIDStrategy: index\n"
			    "sharing:\n"
			    "  timeSlicing:\n"
			    "    renameByDefault: true\n"
			    "    resources:\n"
			    "    - name: nvidia.com/gpu\n"
			    "      replicas: 4\n"
			    "    - name: mig-1g.5gb\n"
			    "      replicas: 2\n"
			    "      rename: small\n";

/* Issue 5 §2: the recovery quiet period and the kernel-log source are configurable, and bounded. */
static void test_health_options(void **state)
{
	_cleanup_(config_freep) struct plugin_config *c = NULL;

	c = defaults();
	assert_int_equal(c->health_recovery, 300 * OPT_NSEC_PER_SEC);
	assert_string_equal(c->kernel_log, "");
	setenv("GPULET_HEALTH_RECOVERY_INTERVAL", "30", 1);
	setenv("GPULET_KERNEL_LOG", "/var/log/kern.log", 1);
	assert_int_equal(reload(&c), 0);
	assert_int_equal(c->health_recovery, 30 * OPT_NSEC_PER_SEC);
	assert_string_equal(c->kernel_log, "/var/log/kern.log");
	setenv("GPULET_HEALTH_RECOVERY_INTERVAL", "2m30s", 1); /* a Go duration, or seconds as before */
	assert_int_equal(reload(&c), 0);
	assert_int_equal(c->health_recovery, 150 * OPT_NSEC_PER_SEC);
	setenv("GPULET_HEALTH_RECOVERY_INTERVAL", "500ms", 1); /* below the 1 s floor */
	assert_true(reload(&c) < 0);
	setenv("GPULET_HEALTH_RECOVERY_INTERVAL", "0", 1);
	assert_true(reload(&c) < 0);
	setenv("GPULET_HEALTH_RECOVERY_INTERVAL", "30", 1);
	setenv("GPULET_KERNEL_LOG", "relative/kern.log", 1);
	assert_true(reload(&c) < 0);
	unsetenv("GPULET_HEALTH_RECOVERY_INTERVAL");
	unsetenv("GPULET_KERNEL_LOG");
}

static void test_valid(void **state)
{
	_cleanup_(config_freep) struct plugin_config *c = NULL;
	struct gerr err = {0};

	c = defaults();
	assert_int_equal(c->mig_strategy, MIG_STRATEGY_NONE);
	assert_int_equal(c->device_list_strategy, DLS_ENVVAR);
	assert_int_equal(config_apply_file_text(c, valid, strlen(valid), "c.yaml", &err), 0);
	assert_int_equal(c->mig_strategy, MIG_STRATEGY_MIXED);
	assert_false(c->fail_on_init_error);
	assert_true(c->pass_device_specs);
	assert_int_equal(c->device_list_strategy, DLS_ENVVAR | DLS_CDI_CRI);
	assert_int_equal(c->device_id_strategy, DEVICE_ID_INDEX);
	assert_int_equal(c->sharing.strategy, SHARING_TIME_SLICING);
	assert_int_equal(c->sharing.n_rules, 2);
	assert_string_equal(c->sharing.rules[0].name, "nvidia.com/gpu");
	assert_string_equal(c->sharing.rules[0].rename, "nvidia.com/gpu.shared");
	assert_int_equal(c->sharing.rules[0].replicas, 4);
	assert_string_equal(c->sharing.rules[1].name, "nvidia.com/mig-1g.5gb");
	/* issue 15 §5: a rule's own rename is forced off as upstream's DisableResourceNamingInConfig();
	 * with renameByDefault the name is <name>.shared, with a warning pointing at the key */
	assert_string_equal(c->sharing.rules[1].rename, "nvidia.com/mig-1g.5gb.shared");
	assert_non_null(strstr(W(c), "c.yaml:17:15: sharing.timeSlicing.resources[1].rename: setting 'rename' "
				     "is not supported"));
	assert_false(c->sharing.fail_requests_greater_than_one);
}

/* Without renameByDefault a rename is dropped: the resource keeps its own name. */
static void test_rename_forced_off(void **state)
{
	static const char text[] = "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 2\n"
				   "      rename: foo\n";
	_cleanup_(config_freep) struct plugin_config *c = NULL;
	struct gerr err = {0};

	c = defaults();
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", &err), 0);
	assert_string_equal(c->sharing.rules[0].rename, "");
	assert_non_null(strstr(W(c), "advertised as nvidia.com/gpu"));
}

/* timeSlicing and mps together: mps wins, as upstream's Sharing.SharingStrategy(), with a warning. */
static void test_mps_wins(void **state)
{
	static const char text[] = "sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 8}\n"
				   "  mps:\n    resources:\n    - {name: gpu, replicas: 3}\n";
	_cleanup_(config_freep) struct plugin_config *c = NULL;
	struct gerr err = {0};

	c = defaults();
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", &err), 0);
	assert_int_equal(c->sharing.strategy, SHARING_MPS);
	assert_int_equal(c->sharing.n_rules, 1);
	assert_int_equal(c->sharing.rules[0].replicas, 3);
	assert_true(c->sharing.fail_requests_greater_than_one);
	assert_non_null(strstr(W(c), "using mps (as upstream)"));
}

/* issue 15 §6: the sockets go where kubelet looks for the endpoint, next to its own socket. */
static void test_device_plugin_path_default(void **state)
{
	_cleanup_(config_freep) struct plugin_config *c = NULL;

	c = defaults();
	assert_string_equal(c->device_plugin_path, "/var/lib/kubelet/device-plugins");
	setenv("KUBELET_SOCKET", "/var/snap/k8s/device-plugins/kubelet.sock", 1);
	assert_int_equal(reload(&c), 0);
	assert_string_equal(c->device_plugin_path, "/var/snap/k8s/device-plugins");
	setenv("KUBELET_SOCKET", "/kubelet.sock", 1);
	assert_int_equal(reload(&c), 0);
	assert_string_equal(c->device_plugin_path, "/");
	setenv("KUBELET_SOCKET", "", 1); /* an empty env var is unset, as urfave/cli reads it */
	setenv("DP_DEVICE_PLUGIN_PATH", "/explicit", 1);
	assert_int_equal(reload(&c), 0);
	assert_string_equal(c->device_plugin_path, "/explicit");
	unsetenv("KUBELET_SOCKET");
	unsetenv("DP_DEVICE_PLUGIN_PATH");
}

static const struct {
	const char *text;
	const char *msg; /* expected in the error */
} bad[] = {
    {"flags: [", "c.yaml:2:1:"},
    {"version: v9\n", "c.yaml:1:10: version"},
    {"flags:\n  migStrategy: both\n", "c.yaml:2:16: flags.migStrategy"},
    {"flags:\n  plugin:\n    deviceListStrategy: {a: b}\n", "c.yaml:3:25: flags.plugin.deviceListStrategy"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: two\n", "c.yaml:5:17:"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 1025\n", "from 2 to 1024"},
    {"sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 49\n", "from 2 to 48"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: \"bad name!\"\n      replicas: 2\n", "invalid character"},
    {"sharing:\n  timeSlicing:\n    resources: {}\n", "sharing.timeSlicing.resources"},
    {"- a\n- b\n", "expected a mapping"},
    {"flags:\n  nvidiaDriverRoot: x\n", "absolute path"},
    /* '..' would climb out of --root (reliability review) */
    {"flags:\n  nvidiaDriverRoot: /../../../etc\n", "c.yaml:2:21: flags.nvidiaDriverRoot: driver-root: path must "
						    "not contain '..'"},
    {"flags:\n  nvidiaDevRoot: /run/nvidia/..\n", "c.yaml:2:18: flags.nvidiaDevRoot"},
    {"flags:\n  mpsRoot: /run/nvidia/../../tmp\n", "must not contain '..'"},
    /* a long name cut before its '/' once left no '/' to find (fuzz crash-resource-name-truncated-slash) */
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"
     "gpu"
     "\n      replicas: 2\n",
     "127 characters, at most 63"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/\n      replicas: 2\n", "nothing after"},
/* issue 23 item 9: what upstream's api/config/v1 unmarshalling refuses (§2) */
#define TS "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
    {TS "      replicas: \"4\"\n", "c.yaml:5:17: sharing.timeSlicing.resources[0]: replicas must be an integer, not "
				   "the string \"4\""},
    {TS "      replicas: 4.5\n", "got \"4.5\""},
    {TS "      replicas: -1\n", "c.yaml:5:17: sharing.timeSlicing.resources[0]: replicas must be an integer from 2 to "
				"1024, got \"-1\""},
    {TS "      replicas: true\n", "got true"},
    {TS "      replicas: 2\n      devices: some\n", "c.yaml:6:16: sharing.timeSlicing.resources[0].devices: \"some\""},
    {TS "      replicas: 2\n      devices: 0\n", "a count of devices must be > 0"},
    {TS "      replicas: 2\n      devices:\n", "found nothing"},
    {TS "      replicas: 2\n      devices: [0, GPU-x]\n",
     "c.yaml:6:20: sharing.timeSlicing.resources[0].devices: item 1"},
    {TS "      replicas: 2\n      devices: {all: true}\n", "found another type"},
    {TS "      replicas: 2\n      rename: \"\"\n", "resources[0].rename: must be a resource name"},
    {TS "      replicas: 2\n    - name: nvidia.com/gpu\n      replicas: 4\n",
     "c.yaml:6:13: sharing.timeSlicing.resources[1].name: nvidia.com/gpu is already listed at c.yaml:4:13"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: example.com/gpu\n      replicas: 2\n",
     "only nvidia.com/ names"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: Gpu\n      replicas: 2\n", "invalid character 'G'"},
    {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu-\n      replicas: 2\n", "invalid character '-'"},
    {"sharing:\n  timeSlicing:\n    renameByDefault: \"true\"\n    resources:\n    - {name: gpu, replicas: 2}\n",
     "c.yaml:3:22: sharing.timeSlicing.renameByDefault: must be true or false"},
    {"resources:\n  gpus:\n  - pattern: \"*\"\n", "c.yaml:3:5: resources.gpus[0]: 'name' is required"},
    {"resources:\n  mig:\n  - name: mig-1g.5gb\n", "resources.mig[0]: 'pattern' is required"},
    {"resources:\n  gpus:\n  - {pattern: \"*\", name: \"a b\"}\n", "resources.gpus[0].name"},
    {"resources:\n  gpus: gpu\n", "c.yaml:2:9: resources.gpus: expected a list"},
    {"resources: [gpu]\n", "c.yaml:1:12: resources: expected a mapping"},
#undef TS
};

/* What upstream accepts stays accepted: device lists (then ignored, as upstream), 4.0, `mps:` null. */
/* A section with nothing under it ("sharing:", "plugin:") is no section, as upstream's JSON decoding of null. */
static void test_null_sections(void **state)
{
	static const char *const texts[] = {"version: v1\nsharing: null\n", "version: v1\nflags:\n",
					    "flags:\n  plugin:\n  gfd:\n", "imex: null\nresources: null\n"};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
		_cleanup_(config_freep) struct plugin_config *c = defaults();
		struct gerr err = {0};

		if (config_apply_file_text(c, texts[i], strlen(texts[i]), "c.yaml", &err) < 0)
			fail_msg("%s: %s", texts[i], err.msg);
		assert_int_equal(c->sharing.strategy, SHARING_NONE);
		assert_int_equal(c->warnings.n, 0);
	}
}

static void test_sharing_accepted(void **state)
{
	static const char text[] =
	    "resources:\n  gpus:\n  - {pattern: \"*\", name: gpu}\n"
	    "sharing:\n  mps:\n  timeSlicing:\n    renameByDefault: yes\n    resources:\n"
	    "    - name: gpu\n      replicas: 4.0\n      devices: [0, \"1:0\", "
	    "GPU-b1028956-cfa2-0990-bf4a-5da9abb51763, MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3/0, 0]\n"
	    "    - {name: nvidia.com/mig-1g.5gb, replicas: 2, devices: 2, rename: x}\n";
	_cleanup_(config_freep) struct plugin_config *c = NULL;
	struct gerr err = {0};

	c = defaults();
	if (config_apply_file_text(c, text, strlen(text), "c.yaml", &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(c->sharing.strategy, SHARING_TIME_SLICING);
	assert_int_equal(c->sharing.n_rules, 2);
	assert_int_equal(c->sharing.rules[0].replicas, 4);
	assert_string_equal(c->sharing.rules[1].rename, "nvidia.com/mig-1g.5gb.shared");
	assert_non_null(strstr(W(c), "c.yaml:11:16: sharing.timeSlicing.resources[0].devices: only \"all\""));
	assert_non_null(strstr(W(c), "resources[1].devices: only \"all\""));
	assert_non_null(strstr(W(c), "c.yaml:2:3: resources: customizing resource names is not supported"));
}

/* Names with dots that are not a '..' component stay valid. */
static void test_dots_not_dotdot(void **state)
{
	static const char text[] = "flags:\n  nvidiaDriverRoot: /run/a..b/..c/d../.x\n";
	_cleanup_(config_freep) struct plugin_config *c = NULL;
	struct gerr err = {0};

	c = defaults();
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", &err), 0);
	assert_string_equal(c->driver_root, "/run/a..b/..c/d../.x");
}

static void test_bad(void **state)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_(config_freep) struct plugin_config *c = NULL;
		struct gerr err = {0};

		c = defaults();
		assert_int_equal(config_apply_file_text(c, bad[i].text, strlen(bad[i].text), "c.yaml", &err), -EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i].msg);
	}
}

static void test_unknown_keys_warn(void **state)
{
	static const char text[] = "version: v1\nflags:\n  frobnicate: 1\nimex:\n  channelIDs: [0]\n";
	_cleanup_(config_freep) struct plugin_config *c = NULL;

	c = defaults();
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", NULL), 0);
	assert_non_null(strstr(W(c), "c.yaml:3:15: unknown key flags.frobnicate"));
	assert_string_equal(c->imex_channel_ids, "0");
}

/* issue 21 item 2: every warning is kept, however many (the list was cut at 2048 bytes before). */
static void test_many_warnings_all_kept(void **state)
{
	char text[16384] = "version: v1\nflags:\n";
	_cleanup_(config_freep) struct plugin_config *c = NULL;
	size_t l = strlen(text);

	for (int i = 0; i < 200; i++)
		l += (size_t)snprintf(text + l, sizeof(text) - l, "  unknownKeyNumber%03d: 1\n", i);
	c = defaults();
	assert_int_equal(config_apply_file_text(c, text, l, "c.yaml", NULL), 0);
	assert_non_null(strstr(W(c), "unknown key flags.unknownKeyNumber000"));
	assert_non_null(strstr(W(c), "c.yaml:202:24: unknown key flags.unknownKeyNumber199 (ignored)"));
	assert_null(strstr(W(c), "left out"));
	assert_int_equal(c->warnings.n, 200);
}

/* issue 21 item 2: an over-long value is an error naming where it came from, never cut to fit. */
static void test_too_long_is_an_error(void **state)
{
	char text[600] = "flags:\n  plugin:\n    cdiAnnotationPrefix: ", path[PATH_MAX + 8] = "/";
	_cleanup_(config_freep) struct plugin_config *c = defaults();
	struct gerr err = {0};
	size_t l = strlen(text);

	memset(text + l, 'a', 256);
	snprintf(text + l + 256, sizeof(text) - l - 256, "\n");
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "c.yaml:3:26: flags.plugin.cdiAnnotationPrefix: cdi-annotation-prefix: "
					"longer than 255 characters"));
	assert_string_equal(c->cdi_annotation_prefix, "cdi.k8s.io/");
	text[l + 255] = '\n';
	text[l + 256] = '\0';
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", &err), 0);
	assert_int_equal(strlen(c->cdi_annotation_prefix), 255);
	memset(path + 1, 'p', PATH_MAX - 1);
	setenv("GPULET_KERNEL_LOG", path, 1);
	assert_true(config_load(NULL, &(struct plugin_config *){NULL}, &err) < 0);
	assert_non_null(strstr(err.msg, "env GPULET_KERNEL_LOG: kernel-log: longer than 4095 characters"));
	unsetenv("GPULET_KERNEL_LOG");
}

/* Deterministic mutation smoke: flip, insert and delete bytes of the valid file. */
/*
 * The file is read by parse/yaml, typed as sigs.k8s.io/yaml types it for the upstream plugin
 * (api/config/v1 is unmarshalled through it): YAML 1.1 booleans, null keeps the default, and a
 * JSON file (YAML's flow style) is the same config.
 */
static void test_yaml_typing(void **state)
{
	static const char text[] = "version: v1\nflags:\n  failOnInitError: no\n  migStrategy: ~\n"
				   "  plugin:\n    passDeviceSpecs: yes\n";
	static const char json[] = "{\"version\": \"v1\", \"flags\": {\"migStrategy\": \"mixed\", "
				   "\"plugin\": {\"deviceListStrategy\": [\"envvar\", \"cdi-cri\"]}}}";
	_cleanup_(config_freep) struct plugin_config *c = NULL;

	c = defaults();
	assert_int_equal(config_apply_file_text(c, text, strlen(text), "c.yaml", NULL), 0);
	assert_false(c->fail_on_init_error);
	assert_true(c->pass_device_specs);
	assert_int_equal(c->mig_strategy, MIG_STRATEGY_NONE);
	config_free(c);
	c = defaults();
	assert_int_equal(config_apply_file_text(c, json, strlen(json), "c.json", NULL), 0);
	assert_int_equal(c->mig_strategy, MIG_STRATEGY_MIXED);
	assert_int_equal(c->device_list_strategy, DLS_ENVVAR | DLS_CDI_CRI);
}

static void test_mutations(void **state)
{
	uint32_t seed = 12345;
	char buf[sizeof(valid) + 64];

	for (int iter = 0; iter < 4000; iter++) {
		_cleanup_(config_freep) struct plugin_config *c = NULL;
		struct gerr err = {0};
		size_t len = strlen(valid);
		int r;

		memcpy(buf, valid, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			size_t pos;

			seed = seed * 1103515245u + 12345u;
			pos = (seed >> 8) % len;
			switch ((seed >> 4) % 3) {
			case 0:
				buf[pos] = (char)(seed >> 16);
				break;
			case 1:
				if (len + 1 < sizeof(buf)) {
					memmove(buf + pos + 1, buf + pos, len - pos);
					buf[pos] = "\n :-[]{}\"'#&*!|>%@`0\t"[(seed >> 16) % 21];
					len++;
				}
				break;
			default:
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
			}
		}
		c = defaults();
		r = config_apply_file_text(c, buf, len, "m.yaml", &err);
		if (r < 0)
			assert_non_null(strstr(err.msg, "m.yaml:"));
		assert_true(c->sharing.n_rules <= NVCONFIG_MAX_RULES);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid),
	    cmocka_unit_test(test_rename_forced_off),
	    cmocka_unit_test(test_mps_wins),
	    cmocka_unit_test(test_device_plugin_path_default),
	    cmocka_unit_test(test_health_options),
	    cmocka_unit_test(test_bad),
	    cmocka_unit_test(test_null_sections),
	    cmocka_unit_test(test_sharing_accepted),
	    cmocka_unit_test(test_dots_not_dotdot),
	    cmocka_unit_test(test_unknown_keys_warn),
	    cmocka_unit_test(test_yaml_typing),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_many_warnings_all_kept),
	    cmocka_unit_test(test_too_long_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
