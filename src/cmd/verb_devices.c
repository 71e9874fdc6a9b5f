/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet devices: what NVML sees -- GPUs, MIG instances, health -- as a table or JSON. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cmd/options.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "util/hostpaths.h"

static const struct optspec devices_opts[] = {
    CMD_OPT_JSON("print a JSON document instead of the table"),
    CMD_OPTS_NVML,
    {0},
};

static const struct cmd_verb devices_verb =
    CMD_VERB("devices", "[OPTIONS]", devices_opts, "gpulet devices --json | jq '.gpus[].uuid'",
	     .about = "Show the GPUs and MIG instances the driver reports, with their health.");

static void print_table(const struct node *n)
{
	char cuda[16] = "?";

	if (n->cuda_driver_version > 0)
		snprintf(cuda, sizeof(cuda), "%d.%d", n->cuda_driver_version / 1000,
			 (n->cuda_driver_version % 1000) / 10);
	printf("Driver %s  CUDA %s  NVML %s  GPUs %zu\n\n", n->driver_version[0] ? n->driver_version : "?", cuda,
	       n->nvml_version[0] ? n->nvml_version : "?", n->n_gpus);
	if (n->n_gpus == 0) {
		printf("No GPUs: the driver is loaded but reports no devices. Check 'lspci -d 10de:' and the "
		       "kernel log for NVRM errors.\n");
		return;
	}
	printf("%-4s %-40s %-28s %9s %4s %-4s %s\n", "IDX", "UUID", "NAME", "MEMORY", "NUMA", "MIG", "HEALTH");
	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct node_gpu *g = &n->gpus[i];
		char mem[24], numa[8] = "-";

		snprintf(mem, sizeof(mem), "%luMiB", (unsigned long)(g->memory_total / 1048576));
		if (g->numa_node >= 0)
			snprintf(numa, sizeof(numa), "%d", g->numa_node);
		const char *mig = !g->mig_capable ? "n/a" : g->mig_enabled ? "on" : "off";

		printf("%-4u %-40s %-28s %9s %4s %-4s %s\n", g->index, g->uuid[0] ? g->uuid : "?", g->name, mem, numa,
		       mig, node_gpu_health(g));
		if (g->error[0])
			printf("       ! %s\n", g->error);
		if (g->ecc_dbe_volatile)
			printf("       ! %lu uncorrected ECC errors since the driver loaded: drain the node, reset the "
			       "GPU\n",
			       (unsigned long)g->ecc_dbe_volatile);
		if (g->remap_failed)
			printf("       ! memory row remapping failed: the GPU needs service (RMA)\n");
		else if (g->remap_pending)
			printf(
			    "       ! a memory row remap is pending: reset the GPU (nvidia-smi -r -i %u) when idle\n",
			    g->index);
		for (size_t j = 0; j < g->n_migs; j++) {
			const struct node_mig *m = &g->migs[j];

			printf("     %u:%-3u %-40s %-12s gi=%u ci=%u %luMiB\n", g->index, m->index, m->uuid, m->profile,
			       m->gi, m->ci, (unsigned long)m->memory_mb);
		}
	}
}

int cmd_devices(int argc, char **argv)
{
	struct cmd_common o = {0};
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	_cleanup_(node_freep) struct node *n = NULL;
	int r = cmd_parse(&devices_verb, argc, argv, &o);

	if (r != CMD_CONTINUE)
		return r;
	if (cmd_host_paths(&o.nvml, &hp) < 0 || cmd_load_node(hp, &nv, &n) < 0)
		return 1;
	if (!o.json) {
		print_table(n);
		return 0;
	}
	json_t *doc = node_to_json(n);
	bool ok = cmd_print_json("devices", doc);

	json_decref(doc);
	return ok ? 0 : 1;
}
