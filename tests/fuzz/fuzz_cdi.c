/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: a CDI spec file, JSON or YAML (src/cdi/cdi.h): read, validate (keys of any case
 * renamed as Go reads them; a 0.5 runtime's version rules), re-serialise.
 */
#include "cdi/cdi.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *spec = NULL;
	struct gerr err = {0};
	struct cdi_report rep = {0};
	struct cdi_validate_options o = {.root = "/nonexistent-fuzz-root",
					 .no_host_paths = true,
					 .runtime_name = "podman-4.3",
					 .runtime_version = "0.5.0"};
	char *out = NULL;

	if (cdi_parse_spec("fuzz.yaml", (const char *)data, size, &spec, &err) < 0)
		return 0;
	(void)cdi_validate_spec("fuzz.yaml", spec, &o, &rep);
	json_decref(cdi_report_to_json(&rep));
	cdi_report_clear(&rep);
	(void)cdi_min_version(spec);
	if (cdi_format_spec(spec, CDI_FORMAT_YAML, &out, &err) >= 0)
		free(out);
	out = NULL;
	if (cdi_format_spec(spec, CDI_FORMAT_JSON, &out, &err) >= 0)
		free(out);
	json_decref(spec);
	return 0;
}
