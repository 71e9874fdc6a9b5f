/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GetPreferredAllocation: which `size` devices of a resource kubelet should give a container.
 * Whole GPUs: the best-connected set by topology score (exact search when small, greedy otherwise).
 * Replicas and MIG devices: greedy, distributed (default) or packed over the physical devices.
 * Facts: docs/reference/device-plugin.md §7.
 *
 * Unlike upstream (#2038, #231), the answer never depends on NVML at call time and never fails
 * because a GPU is lost: unhealthy devices are skipped (used only if nothing else is left) and IDs
 * unknown to the resource are ignored.
 */
#pragma once

#include <stddef.h>

#include "util/err.h"
#include "nvml/node.h"
#include "plugin/resources.h"

/* Pair score (go-gpuallocator's scale): 100 per NVLink plus the PCIe path score (60 same board,
 * 50 single switch, 40 multiple switches, 30 host bridge, 20 same NUMA node, 10 across CPUs). */
int alloc_pair_score(const struct node *n, unsigned a, unsigned b);

/*
 * Choose size devices from available (IDs as kubelet sends them), containing every must_include ID.
 * *ret gets a malloc'd array of size pointers to IDs inside r->devices (free only the array).
 * Fails (-EINVAL with a message) only for a request that cannot be met: size larger than the known
 * available devices, more must_include than size, or a must_include ID that is not in the resource.
 */
int alloc_preferred(const struct node *n, const struct resource *r, enum replica_policy policy,
		    const char *const *available, size_t n_available, const char *const *must_include,
		    size_t n_must_include, size_t size, const char ***ret, struct gerr *err);
