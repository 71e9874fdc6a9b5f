/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: kubelet's kubelet_internal_checkpoint JSON (src/kube/checkpoint.h). */
#include "kube/checkpoint.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct checkpoint *c = NULL;
	struct gerr err = {0};

	if (checkpoint_parse((const char *)data, size, "fuzz-checkpoint", &c, &err) < 0)
		return 0;
	(void)checkpoint_find_resource(c, "nvidia.com/gpu");
	checkpoint_free(c);
	return 0;
}
