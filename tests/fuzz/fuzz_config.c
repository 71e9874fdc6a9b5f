/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the plugin's `version: v1` YAML/JSON config file (src/plugin/config.h). */
#include "plugin/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(config_freep) struct plugin_config *cfg = config_new();
	_cleanup_free_ char *text = fuzz_cstr(data, size);
	struct gerr err = {0};

	if (!cfg || !text)
		return 0;
	if (config_apply_file_text(cfg, text, size, "fuzz.yaml", &err) >= 0) {
		struct resource_options o;
		char *json = config_to_json(cfg);

		config_resource_options(cfg, &o);
		free(json);
	}
	return 0;
}
