/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand-built node models for the health/resources/alloc unit tests, so they run without the fake
 * NVML. Shapes follow docs/reference/device-plugin.md §6 (A100 40GB MIG profiles).
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml/node.h"

/* A node with n GPUs "GPU-<g>", no MIG, no topology (callers fill what they need). */
static inline struct node *testnode_new(size_t n)
{
	struct node *nd = calloc(1, sizeof(*nd));
	nd->n_gpus = n;
	nd->gpus = calloc(n, sizeof(*nd->gpus));
	nd->nvlinks = calloc(n * n, sizeof(*nd->nvlinks));
	nd->pcie_level = calloc(n * n, sizeof(*nd->pcie_level));
	for (size_t g = 0; g < n; g++) {
		struct node_gpu *gpu = &nd->gpus[g];
		gpu->index = (unsigned)g;
		gpu->minor = (unsigned)g;
		snprintf(gpu->uuid, sizeof(gpu->uuid), "GPU-%04zx-test", g);
		snprintf(gpu->name, sizeof(gpu->name), "NVIDIA A100-SXM4-40GB");
		snprintf(gpu->pci_bus_id, sizeof(gpu->pci_bus_id), "00000000:%02zX:00.0", 0x07 + g * 8);
		gpu->memory_total = 40ULL << 30;
		gpu->numa_node = g < n / 2 ? 0 : 1;
		gpu->mig_capable = true;
		for (size_t h = 0; h < n; h++)
			nd->pcie_level[g * n + h] = -1;
	}
	return nd;
}

/* Enable MIG on GPU g with instances of the given profiles ("1g.5gb", ...), gi = ci-less ids 1.. */
static inline void testnode_mig(struct node *nd, size_t g, const char *const *profiles, size_t n)
{
	struct node_gpu *gpu = &nd->gpus[g];
	gpu->mig_enabled = true;
	gpu->n_migs = n;
	gpu->migs = calloc(n, sizeof(*gpu->migs));
	for (size_t m = 0; m < n; m++) {
		struct node_mig *mig = &gpu->migs[m];
		unsigned slices = (unsigned)atoi(profiles[m]);
		const char *c = strchr(profiles[m], 'c');
		mig->gi = (unsigned)(m + 1);
		mig->ci = 0;
		mig->index = (unsigned)m;
		snprintf(mig->uuid, sizeof(mig->uuid), "MIG-%02zx%02zx-test", g, m);
		snprintf(mig->profile, sizeof(mig->profile), "%s", profiles[m]);
		/* "1c.2g.10gb": CI of 1 slice in a GI of 2 */
		mig->ci_slices = slices;
		mig->gi_slices = c && c < strchr(profiles[m], 'g') ? (unsigned)atoi(c + 2) : slices;
		mig->memory_mb = 5 * 1024;
		mig->gi_cap_minor = mig->ci_cap_minor = -1;
	}
}

static inline void testnode_free(struct node *nd)
{
	for (size_t g = 0; g < nd->n_gpus; g++)
		free(nd->gpus[g].migs);
	free(nd->gpus);
	free(nd->nvlinks);
	free(nd->pcie_level);
	free(nd);
}

static inline void testnode_link(struct node *nd, size_t a, size_t b, unsigned links, int level)
{
	nd->nvlinks[a * nd->n_gpus + b] = nd->nvlinks[b * nd->n_gpus + a] = links;
	nd->pcie_level[a * nd->n_gpus + b] = nd->pcie_level[b * nd->n_gpus + a] = level;
}
