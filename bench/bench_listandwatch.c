/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device list a ListAndWatch update carries, for 8 GPUs x 7 MIG instances x 48 time-slicing
 * replicas (2688 devices): building the resource set from the node, flipping the health of one GPU
 * (336 devices) and packing the ListAndWatchResponse the plugin sends (dp_snapshot: protobuf-c, the
 * bytes that go on the wire). Printed as time and as a ratio to a floor measured in the same run:
 * memcpy of as many bytes as the packed response.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "health_testnode.h"
#include "plugin/dp.h"
#include "plugin/resources.h"

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	static const char *const ones[] = {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"};
	struct node *nd = testnode_new(8);
	struct replica_rule rules[] = {{.name = "nvidia.com/gpu", .replicas = 48}};
	struct resource_options o = {
	    .mig_strategy = MIG_STRATEGY_SINGLE, .sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};
	size_t len = 0;
	uint8_t *wire = NULL, *copy;

	for (size_t g = 0; g < 8; g++)
		testnode_mig(nd, g, ones, 7);

	double t0 = bench_now();
	for (int it = 0; it < iters; it++) {
		struct resource_set *s = NULL;
		if (resources_build(nd, &o, &s, NULL) < 0)
			return 1;
		bench_sink += s->res[0].n_devices;
		resource_set_free(s);
	}
	double build = (bench_now() - t0) / iters;

	struct resource_set *s = NULL;
	if (resources_build(nd, &o, &s, NULL) < 0)
		return 1;
	const struct resource *r = &s->res[0];
	t0 = bench_now();
	for (int it = 0; it < iters; it++)
		bench_sink += (size_t)resources_set_health(s, nd, nd->gpus[it % 8].uuid, -1, -1, it & 1, "bench");
	double health = (bench_now() - t0) / iters;

	struct dp_ctx ctx = {.node = nd, .res = r};
	t0 = bench_now();
	for (int it = 0; it < iters; it++) {
		free(wire);
		if (dp_snapshot(&ctx, &wire, &len) < 0)
			return 1;
	}
	double fmt = (bench_now() - t0) / iters;

	copy = malloc(len);
	if (!copy)
		return 1;
	t0 = bench_now();
	for (int it = 0; it < iters; it++) {
		memcpy(copy, wire, len);
		bench_sink += (size_t)copy[(size_t)it % len];
	}
	double floor_s = (bench_now() - t0) / iters;

	printf("ListAndWatch device list: %zu devices (8 GPUs x 7 MIG x 48 replicas), %zu bytes packed\n", r->n_devices,
	       len);
	printf("floor (memcpy of %zu bytes): %.2f us\n", len, floor_s * 1e6);
	printf("%-34s %10s %10s\n", "step", "us", "x floor");
	printf("%-34s %10.1f %10.1f\n", "resources_build", build * 1e6, build / floor_s);
	printf("%-34s %10.1f %10.1f\n", "resources_set_health (one GPU)", health * 1e6, health / floor_s);
	printf("%-34s %10.1f %10.1f\n", "pack ListAndWatchResponse", fmt * 1e6, fmt / floor_s);
	printf("%-34s %10.1f %10.1f\n", "health change + list (per update)", (health + fmt) * 1e6,
	       (health + fmt) / floor_s);
	resource_set_free(s);
	testnode_free(nd);
	free(wire);
	free(copy);
	return 0;
}
