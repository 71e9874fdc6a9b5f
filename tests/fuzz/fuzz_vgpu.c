/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a PCI function's config space, read for GFD's vGPU labels (src/labels/labels.h labels_vgpu_parse). */
#include "fuzz.h"
#include "labels/labels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char version[16], branch[16];
	struct gerr err = {0};

	(void)labels_vgpu_parse(data, size, version, sizeof(version), branch, sizeof(branch), &err);
	return 0;
}
