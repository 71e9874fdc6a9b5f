/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: mountinfo lines as the hook's jail reads them (src/cdihook/mountinfo.h mountinfo_next). */
#include "cdihook/mountinfo.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), *point, *type;
	int r;

	if (!text)
		return 0;
	for (char *cursor = text; (r = mountinfo_next(&cursor, &point, &type)) != 0;) {
		/* the cursor only moves forward inside the text; what it returns lies inside it */
		if (cursor < text || cursor > text + size)
			__builtin_trap();
		if (r > 0 && (point < text || point >= text + size || type < text || type >= text + size ||
			      strlen(point) > size || strlen(type) > size))
			__builtin_trap();
	}
	free(text);
	return 0;
}
