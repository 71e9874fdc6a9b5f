/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpulet cdi-hook` in gpulet: the verb of verb_cdihook.c with NVML for apply-cuda-memory-limits. A file
 * of its own so that the static gpulet-cdi-hook, which links cmd_cdihook_static() alone, pulls neither
 * the NVML loader nor dlopen out of the library (it hands that action to gpulet instead).
 */
#include "cdihook/cdihook.h"
#include "cmd/cmd.h"
#include "nvml/nvml.h"

/* Each GPU's limits for the container's cgroup, through the driver root's libnvidia-ml.so.1. */
static int apply_nvml(const char *driver_root, const char *const *gpus, size_t n, const struct cdihook_memlimits *m,
		      struct gerr *err)
{
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	int r = nvml_open(NULL, driver_root, &nv, err);

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = nvml_set_memory_limits(nv, gpus[i], m->cgroup, m->request, m->limit, err);
	return r;
}

int cmd_cdihook(int argc, char **argv)
{
	return cmd_cdihook_with(argc, argv, apply_nvml);
}
