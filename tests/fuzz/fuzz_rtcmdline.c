/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a process's /proc/PID/cmdline as the doctor reads it to find the runtime
 * (src/doctor/runtime_find.h rt_from_cmdline): NUL-separated args, any bytes, any flag shapes. */
#include "doctor/runtime_find.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct runtime_found rt; /* large: off the stack */
	char *text = fuzz_cstr(data, size);

	if (!text)
		return 0;
	memset(&rt, 0, sizeof(rt));
	(void)rt_from_cmdline(&rt, "1", text, size);
	free(text);
	return 0;
}
