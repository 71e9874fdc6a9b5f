/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resources the plugin advertises, derived from the node model and the sharing/MIG options:
 * one struct resource per kubelet resource name (one gRPC server each), each holding the devices
 * kubelet sees in ListAndWatch. A device is backed by a physical GPU or a MIG instance, possibly
 * as one of several time-slicing replicas. Facts: docs/reference/device-plugin.md §3.3, §5, §6.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/enumtab.h"
#include "util/err.h"
#include "nvml/node.h"
#include "nvconfig/nvconfig.h"

/* The MIG and sharing strategies and the sharing rules are the shared v1 config's (nvconfig/nvconfig.h). */
enum replica_policy { REPLICA_DISTRIBUTED, REPLICA_PACKED };

/* --shared-devices-allocation-policy distributed|packed (util/enumtab.h); 0, or -EINVAL for another word. */
extern const struct enum_name replica_policy_names[2];
int replica_policy_from_name(const char *name, enum replica_policy *ret);

struct resource_options {
	enum mig_strategy mig_strategy;
	enum sharing_strategy sharing;
	enum replica_policy replica_policy;
	bool rename_by_default;
	bool fail_requests_greater_than_one;
	const struct replica_rule *rules;
	size_t n_rules;
};

struct rdevice {
	char id[160];             /* advertised ID: GPU/MIG UUID, with "::<n>" for a replica */
	char uuid[NODE_UUID_MAX]; /* backing GPU or MIG UUID */
	char index[16];           /* "0" for a GPU, "0:1" for MIG (parent index:mig index) */
	unsigned gpu;             /* index into node->gpus of the physical GPU */
	int mig;                  /* index into node->gpus[gpu].migs, -1 for a whole GPU */
	int replica;              /* -1 when not replicated, else 0..replicas-1 */
	int numa_node;            /* -1 unknown */
	bool healthy;
	char reason[160]; /* why unhealthy, "" when healthy */
};

struct resource {
	char name[128];    /* "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/gpu.shared" */
	char socket[160];  /* "nvidia-gpu.sock": "nvidia-" + name after "nvidia.com/" + ".sock" */
	unsigned replicas; /* 0/1 = not shared */
	struct rdevice *devices;
	size_t n_devices;
};

struct resource_set {
	struct resource *res;
	size_t n;
	/* GPUs lost before NVML gave their UUID: never advertised (an empty ID is no device); the
	 * first few, "GPU 2 (nvmlDeviceGetHandleByIndex: GPU is lost)", for the caller to log */
	unsigned n_left_out;
	char left_out[256];
};

/*
 * Build the resources for a node. Validations of upstream's MIG strategies apply (e.g. single with
 * mixed profiles is an error naming the profiles). Resources with no devices are left out.
 */
int resources_build(const struct node *n, const struct resource_options *o, struct resource_set **ret,
		    struct gerr *err);
void resource_set_free(struct resource_set *s);
DEFINE_CLEANUP_FUNC(struct resource_set, resource_set_free)

const struct resource *resources_find(const struct resource_set *s, const char *name);
const struct rdevice *resource_find_device(const struct resource *r, const char *id);

/*
 * A health event on physical GPU gpu_uuid. gi/ci < 0: the whole GPU -- every device backed by it
 * (all replicas, all MIG instances on it) changes. gi/ci >= 0: only the MIG instance with those ids.
 * Returns the number of devices whose health changed (so the caller knows whom to notify).
 */
int resources_set_health(struct resource_set *s, const struct node *n, const char *gpu_uuid, int gi, int ci,
			 bool healthy, const char *reason);
