/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a resource.Quantity a user writes in an MPS config (src/dra/quantity.h quantity_parse()). */
#include "dra/quantity.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), out[32];
	int64_t v, again;

	if (!text)
		return 0;
	/* what parses and is a count of bytes prints canonically and reads back the same */
	if (quantity_parse(text, &v, NULL) == 0 && v >= 0) {
		quantity_format_binary((uint64_t)v, out, sizeof(out));
		if (quantity_parse(out, &again, NULL) != 0 || again != v)
			__builtin_trap();
	}
	free(text);
	return 0;
}
