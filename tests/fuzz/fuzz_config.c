/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the plugin's `version: v1` YAML/JSON config file (src/plugin/config.h). */
#include "plugin/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* static: struct plugin_config is ~40 KiB of PATH_MAX buffers */
	static struct plugin_config cfg;
	struct gerr err = {0};
	char *text = fuzz_cstr(data, size);

	if (!text)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	if (config_apply_file_text(&cfg, text, size, "fuzz.yaml", &err) >= 0) {
		struct resource_options o;
		char *json = config_to_json(&cfg);

		config_resource_options(&cfg, &o);
		free(json);
	}
	free(text);
	return 0;
}
