/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node model: what NVML and the host say this node has. Built once by node_load() and then
 * read-only; a change (MIG re-partition, GPU lost) is a new snapshot, compared with node_equal_layout().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"
#include "nvml/nvml.h"

#define NODE_UUID_MAX 96
#define NODE_NAME_MAX 96

struct node_mig {
	unsigned gi;    /* GPU instance id */
	unsigned ci;    /* compute instance id */
	unsigned index; /* MIG device index on the parent (nvmlDeviceGetMigDeviceHandleByIndex) */
	char uuid[NODE_UUID_MAX];
	char profile[32]; /* k8s-style name, e.g. "1g.5gb", "1c.2g.10gb" */
	unsigned gi_slices;
	unsigned ci_slices;
	uint64_t memory_mb;
	int gi_cap_minor; /* /dev/nvidia-caps/nvidia-cap<N> for this GI access, -1 unknown */
	int ci_cap_minor; /* same for the CI access */
	/* labels: the rest of nvmlDeviceGetAttributes_v2 (GFD's mig-<profile>.multiprocessors, .engines.*) */
	unsigned multiprocessors;
	unsigned engines_copy, engines_decoder, engines_encoder, engines_jpeg, engines_ofa;
	/* dra: nvmlGpuInstanceGetInfo, the GI's profile id and memory-slice placement (NVIDIA's DRA device name) */
	bool gi_info_known;
	unsigned gi_profile_id;
	unsigned placement_start, placement_size;
};

enum node_health {
	NODE_HEALTHY = 0,
	NODE_UNHEALTHY,
};

struct node_gpu {
	unsigned index;
	unsigned minor; /* /dev/nvidia<minor> */
	char uuid[NODE_UUID_MAX];
	char name[NODE_NAME_MAX]; /* e.g. "NVIDIA A100-SXM4-40GB" */
	char pci_bus_id[32];      /* NVML form, "00000000:07:00.0" */
	uint32_t pci_device_id;   /* (device << 16) | vendor */
	uint64_t memory_total;    /* bytes */
	int cc_major, cc_minor;   /* CUDA compute capability, -1 unknown */
	unsigned arch;            /* NVML_DEVICE_ARCH_*, 0 unknown */
	int brand;                /* NVML_BRAND_*, -1 unknown (dra: the brand attribute) */
	int numa_node;            /* from sysfs under --root, -1 unknown */
	bool mig_capable;
	bool mig_enabled;        /* current MIG mode */
	bool mig_pending_change; /* pending mode != current */
	struct node_mig *migs;
	size_t n_migs;
	bool lost;                 /* NVML answered GPU_IS_LOST while loading */
	uint64_t ecc_dbe_volatile; /* uncorrected ECC errors since the driver loaded */
	bool remap_pending;        /* a memory row remap waits for a GPU reset */
	bool remap_failed;         /* row remapping failed: the GPU needs service */
	char error[256];           /* why a partially read GPU is incomplete, "" if complete */
	/* labels: nvmlDeviceGetGpuFabricInfo (GFD's gpu.clique); fabric_known false when not answered */
	bool fabric_known;
	unsigned char fabric_state; /* NVML_GPU_FABRIC_STATE_* */
	int fabric_status;          /* nvmlReturn_t, meaningful when the state is COMPLETED */
	unsigned fabric_clique;
	unsigned char fabric_cluster_uuid[16];
	/* labels: nvmlDeviceGetVirtualizationMode (NVML_GPU_VIRTUALIZATION_MODE_*; 2 = a vGPU in a guest), -1 unknown
	 */
	int virt_mode;
};

struct node {
	char driver_version[80]; /* "550.54.15" */
	char nvml_version[80];
	int cuda_driver_version; /* 12040 = 12.4; 0 unknown */
	struct node_gpu *gpus;
	size_t n_gpus;
	/*
	 * Pairwise topology, n_gpus x n_gpus row-major: number of NVLink links between i and j, and
	 * the NVML common-ancestor level (NVML_TOPOLOGY_*; -1 unknown). Diagonal unused.
	 */
	unsigned *nvlinks;
	int *pcie_level;
};

/*
 * Read the node through an opened NVML. root is the --root prefix for sysfs and procfs lookups
 * (NUMA node, /proc/driver/nvidia-caps/mig-minors). One bad GPU does not fail the load: it is
 * kept with lost/error set. Returns -errno only when nothing can be read at all.
 */
int node_load(struct nvml *nv, const char *root, struct node **ret, struct gerr *err);
void node_free(struct node *n);
DEFINE_CLEANUP_FUNC(struct node, node_free)

/* Lookups by uuid (GPU or MIG). Return NULL when absent. */
const struct node_gpu *node_find_gpu(const struct node *n, const char *uuid);
const struct node_mig *node_find_mig(const struct node *n, const char *uuid, const struct node_gpu **ret_parent);

/* True when GPUs, MIG modes and MIG instances are the same (uuids, profiles): no re-advertise needed. */
bool node_equal_layout(const struct node *a, const struct node *b);

/*
 * /proc/driver/nvidia-caps/mig-minors: lines "gpu<G>/gi<I>/access <minor>" and
 * "gpu<G>/gi<I>/ci<C>/access <minor>". Look up the minor for (gpu minor, gi, ci) where ci < 0
 * means the GI access line. Returns the minor or -ENOENT.
 */
struct mig_minors;
int mig_minors_parse(const char *text, struct mig_minors **ret, struct gerr *err);
int mig_minors_lookup(const struct mig_minors *m, unsigned gpu, unsigned gi, int ci);
void mig_minors_free(struct mig_minors *m);
DEFINE_CLEANUP_FUNC(struct mig_minors, mig_minors_free)

/* "1g.5gb" from GI/CI slices and memory, following go-nvlib's naming rule. */
void node_mig_profile_name(unsigned gi_slices, unsigned ci_slices, uint64_t mig_memory_mb, uint64_t gpu_memory_bytes,
			   char *buf, size_t size);

/*
 * "lost" (off the bus), "unhealthy" (uncorrected ECC errors since load, row remap pending or
 * failed: needs a reset or service), "degraded" (some NVML queries failed), or "healthy".
 */
const char *node_gpu_health(const struct node_gpu *g);

/* labels: "0000:07:00.0", the sysfs name of NVML's "00000000:07:00.0" (lowercase, 4-digit domain). */
void node_pci_sysfs_id(const char *nvml_bus_id, char *buf, size_t size);

/* JSON document of the node (jansson json_t *), stable keys; used by `devices --json` and others. */
struct json_t;
struct json_t *node_to_json(const struct node *n);
