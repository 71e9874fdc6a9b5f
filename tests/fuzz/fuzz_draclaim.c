/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: a ResourceClaim as the API server returns it to `gpulet dra`, with the opaque
 * GpuConfig/MigDeviceConfig parameters users write (src/dra/claim.h dra_claim_parse(), which calls
 * dra_gpuconfig_parse()), read for driver gpu.nvidia.com on node-a with a GPU and two MIG devices.
 */
#include <jansson.h>

#include "dra/claim.h"
#include "fuzz.h"

static struct node_mig migs[2] = {
    {.gi = 1, .index = 0, .uuid = "MIG-a", .profile = "1g.5gb", .gi_info_known = true, .gi_profile_id = 19},
    {.gi = 2,
     .index = 1,
     .uuid = "MIG-b",
     .profile = "1g.5gb",
     .gi_info_known = true,
     .gi_profile_id = 19,
     .placement_start = 1,
     .placement_size = 1},
};
static struct node_gpu gpus[2] = {
    {.index = 0, .minor = 0, .uuid = "GPU-a", .cc_major = 8},
    {.index = 1, .minor = 1, .uuid = "GPU-b", .mig_enabled = true, .migs = migs, .n_migs = 2},
};
static const struct node node = {.gpus = gpus, .n_gpus = 2};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dra_devices devs;
	static bool built;
	struct dra_gates gates = {true, true};
	struct dra_claim_check chk = {.driver = "gpu.nvidia.com", .pool = "node-a", .devices = &devs, .gates = &gates};
	json_t *claim = json_loadb((const char *)data, size, 0, NULL);
	const json_t *meta = json_object_get(claim, "metadata");
	struct dra_claim_ref ref = {json_string_value(json_object_get(meta, "namespace")) ?: "ns",
				    json_string_value(json_object_get(meta, "name")) ?: "n",
				    json_string_value(json_object_get(meta, "uid")) ?: "u"};
	struct dra_claim c = {0};
	struct gerr err = {0};

	if (!built && dra_devices_build(&node, "/nonexistent", &devs, NULL) == 0)
		built = true;
	if (claim && built && dra_claim_parse(claim, &ref, &chk, &c, &err) == 0) {
		/* every result names a device of ours and a group that exists */
		for (size_t i = 0; i < c.n_results; i++)
			if (!dra_devices_find(&devs, c.results[i].device) || c.results[i].group >= c.n_groups)
				__builtin_trap();
		dra_claim_clear(&c);
	}
	json_decref(claim);
	return 0;
}
