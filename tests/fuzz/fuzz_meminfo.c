/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: /proc/meminfo as mps-control-daemon mount-shm reads it (src/plugin/mps.h mps_shm_size). */
#include <string.h>

#include "fuzz.h"
#include "plugin/mps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	char out[64];

	if (!text)
		return 0;
	mps_shm_size(text, out, sizeof(out));
	/* always a tmpfs size: digits and at most one unit letter */
	if (strspn(out, "0123456789") == 0 || strlen(out) > strspn(out, "0123456789") + 1)
		__builtin_trap();
	free(text);
	return 0;
}
