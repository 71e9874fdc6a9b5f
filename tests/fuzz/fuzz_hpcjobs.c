/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: one HPC job mapping file (src/exporter/hpc.h exp_hpc_parse), written by another program. */
#include "fuzz.h"
#include "exporter/hpc.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct exp_hpc_entry e = {0};

	(void)exp_hpc_parse((const char *)data, size, &e);
	for (size_t k = 0; k < e.n; k++)
		free(e.jobs[k]);
	free(e.jobs);
	return 0;
}
