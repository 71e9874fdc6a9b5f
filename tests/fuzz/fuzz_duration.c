/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: option values as Go reads them, durations and booleans (src/util/opt.h). */
#include "fuzz.h"
#include "util/opt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	int64_t ns;
	bool b;

	if (!text)
		return 0;
	opt_parse_duration(text, &ns);
	opt_parse_bool(text, &b);
	free(text);
	return 0;
}
