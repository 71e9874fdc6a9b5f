/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GetPreferredAllocation for whole GPUs on an 8-GPU node (exact search over all subsets), printed as
 * time per call and as a ratio to a floor measured in the same run: resolving the same request's IDs
 * by a plain strcmp scan of the resource's devices, the least any implementation has to do.
 * Topology: DGX-1-like hybrid cube mesh (NVLink 1 or 2 links on some pairs, PCIe levels by board half),
 * so the scores differ and the search cannot stop early.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/alloc.h"
#include "bench.h"
#include "health_testnode.h"

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	static const unsigned mesh[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
					   {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
					   {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
	struct node *nd = testnode_new(8);
	struct resource_options o = {0};
	struct resource_set *s = NULL;
	const char *avail[8];

	for (unsigned a = 0; a < 8; a++)
		for (unsigned b = a + 1; b < 8; b++)
			testnode_link(nd, a, b, 0,
				      (a < 4) == (b < 4) ? NVML_TOPOLOGY_HOSTBRIDGE : NVML_TOPOLOGY_SYSTEM);
	for (size_t i = 0; i < ELEMENTSOF(mesh); i++)
		testnode_link(nd, mesh[i][0], mesh[i][1], mesh[i][2],
			      (mesh[i][0] < 4) == (mesh[i][1] < 4) ? NVML_TOPOLOGY_HOSTBRIDGE : NVML_TOPOLOGY_SYSTEM);
	if (resources_build(nd, &o, &s, NULL) < 0)
		return 1;
	const struct resource *r = &s->res[0];
	for (int i = 0; i < 8; i++)
		avail[i] = r->devices[7 - i].id;

	/* floor: resolve 8 IDs by scanning the device list */
	double t0 = bench_now();
	for (int it = 0; it < iters; it++)
		for (int i = 0; i < 8; i++)
			for (size_t d = 0; d < r->n_devices; d++)
				if (strcmp(r->devices[d].id, avail[i]) == 0) {
					bench_sink += d;
					break;
				}
	double floor_s = (bench_now() - t0) / iters;

	printf("GetPreferredAllocation, 8 whole GPUs, exact search (floor: resolving the 8 IDs = %.3f us)\n",
	       floor_s * 1e6);
	printf("%-6s %12s %10s %14s\n", "size", "us/call", "x floor", "x 1 ms budget");
	double worst = 0;
	for (size_t size = 1; size <= 8; size++) {
		t0 = bench_now();
		for (int it = 0; it < iters; it++) {
			const char **out = NULL;
			if (alloc_preferred(nd, r, REPLICA_DISTRIBUTED, avail, 8, NULL, 0, size, &out, NULL) < 0)
				return 1;
			bench_sink += (size_t)out[0];
			free(out);
		}
		double per = (bench_now() - t0) / iters;
		worst = per > worst ? per : worst;
		printf("%-6zu %12.3f %10.1f %14.5f\n", size, per * 1e6, per / floor_s, per / 1e-3);
	}
	printf("worst size: %.3f us per call = %.4f of the 1 ms budget\n", worst * 1e6, worst / 1e-3);
	resource_set_free(s);
	testnode_free(nd);
	return 0;
}
