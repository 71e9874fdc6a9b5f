/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: what `gpulet entrypoint` reads as the GPU Operator's device-plugin container
 * (src/plugin/operator.h): the first byte picks the entrypoint script, the driver-ready file or
 * /proc/modules; the rest is the file.
 */
#include "fuzz.h"
#include "plugin/operator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct operator_script s;
	struct operator_ready r = {{NULL}};
	char *text;

	if (!size || !(text = fuzz_cstr(data + 1, size - 1)))
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (operator_script_check(text, size - 1, "entrypoint.sh", &s, NULL) == 0 &&
		    (s.modules >> operator_n_modules || (!s.checks_modules && s.modules)))
			__builtin_trap();
		break;
	case 1:
		if (operator_ready_parse(text, size - 1, "driver-ready", &r, NULL) == 0)
			for (size_t i = 0; i < OPERATOR_READY_VARS; i++)
				if (r.value[i] && strpbrk(r.value[i], " \t\n\"'$`\\;&|<>"))
					__builtin_trap();
		operator_ready_clear(&r);
		break;
	default:
		if (operator_modules_loaded(text, ~0u) >> operator_n_modules)
			__builtin_trap();
		break;
	}
	free(text);
	return 0;
}
