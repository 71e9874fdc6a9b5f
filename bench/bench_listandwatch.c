/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device list a ListAndWatch update carries, for 8 GPUs x 7 MIG instances x 48 time-slicing
 * replicas (2688 devices): building the resource set from the node, flipping the health of one GPU
 * (336 devices) and formatting the list the way a response is assembled (ID, health, NUMA node per
 * device). Printed as time and as a ratio to a floor measured in the same run: memcpy of the same
 * number of bytes as the formatted list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "health_testnode.h"
#include "resources.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile size_t sink;

static size_t format_list(const struct resource *r, char *buf, size_t size)
{
	size_t off = 0;
	for (size_t i = 0; i < r->n_devices && off < size; i++) {
		const struct rdevice *d = &r->devices[i];
		off += (size_t)snprintf(buf + off, size - off, "%s %s %d\n", d->id,
					d->healthy ? "Healthy" : "Unhealthy", d->numa_node);
	}
	return off;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	static const char *const ones[] = {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"};
	struct node *nd = testnode_new(8);
	struct replica_rule rules[] = {{.name = "nvidia.com/gpu", .replicas = 48}};
	struct resource_options o = {
	    .mig_strategy = MIG_STRATEGY_SINGLE, .sharing = SHARING_TIME_SLICING, .rules = rules, .n_rules = 1};
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap), *copy = malloc(cap);

	for (size_t g = 0; g < 8; g++)
		testnode_mig(nd, g, ones, 7);

	double t0 = now_s();
	for (int it = 0; it < iters; it++) {
		struct resource_set *s = NULL;
		if (resources_build(nd, &o, &s, NULL) < 0)
			return 1;
		sink += s->res[0].n_devices;
		resource_set_free(s);
	}
	double build = (now_s() - t0) / iters;

	struct resource_set *s = NULL;
	if (resources_build(nd, &o, &s, NULL) < 0)
		return 1;
	const struct resource *r = &s->res[0];
	t0 = now_s();
	for (int it = 0; it < iters; it++)
		sink += (size_t)resources_set_health(s, nd, nd->gpus[it % 8].uuid, -1, -1, it & 1, "bench");
	double health = (now_s() - t0) / iters;

	t0 = now_s();
	for (int it = 0; it < iters; it++)
		len = format_list(r, buf, cap);
	double fmt = (now_s() - t0) / iters;

	t0 = now_s();
	for (int it = 0; it < iters; it++) {
		memcpy(copy, buf, len);
		sink += (size_t)copy[it % len];
	}
	double floor_s = (now_s() - t0) / iters;

	printf("ListAndWatch device list: %zu devices (8 GPUs x 7 MIG x 48 replicas), %zu bytes formatted\n",
	       r->n_devices, len);
	printf("floor (memcpy of %zu bytes): %.2f us\n", len, floor_s * 1e6);
	printf("%-34s %10s %10s\n", "step", "us", "x floor");
	printf("%-34s %10.1f %10.1f\n", "resources_build", build * 1e6, build / floor_s);
	printf("%-34s %10.1f %10.1f\n", "resources_set_health (one GPU)", health * 1e6, health / floor_s);
	printf("%-34s %10.1f %10.1f\n", "format the list", fmt * 1e6, fmt / floor_s);
	printf("%-34s %10.1f %10.1f\n", "health change + list (per update)", (health + fmt) * 1e6,
	       (health + fmt) / floor_s);
	resource_set_free(s);
	testnode_free(nd);
	free(buf);
	free(copy);
	return 0;
}
