/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: /proc/driver/nvidia-caps/mig-minors (src/nvml/node.h mig_minors_parse). */
#include "fuzz.h"
#include "nvml/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_minors *m = NULL;
	struct gerr err = {0};
	char *text = fuzz_cstr(data, size);

	if (!text)
		return 0;
	if (mig_minors_parse(text, &m, &err) >= 0) {
		(void)mig_minors_lookup(m, 0, 0, -1);
		(void)mig_minors_lookup(m, 7, 13, 0);
		(void)mig_minors_lookup(m, 31, 14, 7);
		mig_minors_free(m);
	}
	free(text);
	return 0;
}
