/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: NVIDIA's `version: v1` YAML/JSON config file (src/nvconfig/nvconfig.h), walked for
 * the plugin's rows (src/plugin/config.h) and for rows of GFD's kinds (a duration whose bare number
 * is nanoseconds, a switch, a path), as gpulet labels reads it.
 */
#include <stdbool.h>
#include <stdint.h>

#include "nvconfig/nvconfig.h"
#include "plugin/config.h"
#include "fuzz.h"

struct gfd_opts {
	bool oneshot;
	int64_t sleep_ns;
	char *output;
	int mig_strategy;
};

static const struct enum_name sleep_words[] = {{-1, "infinite"}};
static const struct optspec gfd_rows[] = {
    {.name = "oneshot", .kind = OPT_BOOL, .key = NVCONFIG_KEY_GFD_ONESHOT, .off = offsetof(struct gfd_opts, oneshot)},
    {.name = "sleep-interval",
     .kind = OPT_DURATION,
     .arg = "D",
     .key = NVCONFIG_KEY_GFD_SLEEP_INTERVAL,
     .off = offsetof(struct gfd_opts, sleep_ns),
     .min = 100,
     .max = 7 * 24 * 3600 * 1000UL,
     OPTSPEC_NAMES(sleep_words)},
    {.name = "output-file",
     .kind = OPT_STR,
     .arg = "F",
     .key = NVCONFIG_KEY_GFD_OUTPUT_FILE,
     .off = offsetof(struct gfd_opts, output),
     .max = 4096},
    NVCONFIG_OPT_MIG_STRATEGY(offsetof(struct gfd_opts, mig_strategy), "mig", "MIG_STRATEGY"),
    {0},
};
static const struct optspec_cli gfd_cli = {.rows = gfd_rows};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(config_freep) struct plugin_config *cfg = config_new();
	_cleanup_free_ char *text = fuzz_cstr(data, size);
	struct nvconfig_file f = {0};
	struct gfd_opts g = {0};
	struct gerr err = {0};

	if (!cfg || !text)
		return 0;
	if (config_apply_file_text(cfg, text, size, "fuzz.yaml", &err) >= 0) {
		struct resource_options o;
		char *json = config_to_json(cfg);

		config_resource_options(cfg, &o);
		free(json);
	}
	(void)nvconfig_read(text, size, "fuzz.yaml", &gfd_cli, &g, &f, &err);
	nvconfig_file_clear(&f);
	optspec_free(gfd_rows, &g);
	return 0;
}
