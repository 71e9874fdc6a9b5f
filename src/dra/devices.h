/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The devices this node's DRA driver publishes and the ResourceSlices that carry them, with
 * NVIDIA's names (docs/reference/dra.md §5): a GPU without MIG mode is one device "gpu-<minor>", a
 * GPU with MIG mode on publishes its existing MIG devices instead,
 * "gpu-<minor>-mig-<profile>-<GI profile id>-<placement start>". Pure: the node model in, JSON out.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "nvml/node.h"
#include "util/err.h"

#define DRA_DEVICE_NAME_MAX 64 /* a DNS label: 63 characters */

enum dra_dev_type { DRA_DEV_GPU, DRA_DEV_MIG };

struct dra_device {
	char name[DRA_DEVICE_NAME_MAX];
	enum dra_dev_type type;
	const struct node_gpu *gpu; /* the GPU, or the MIG device's parent */
	const struct node_mig *mig; /* NULL for a whole GPU */
	char pcie_root[64];         /* resource.kubernetes.io/pcieRoot ("pci0000:00"), "" when sysfs does not say */
	/* health as the watcher last said (dra_devices_set_health()); a new device starts healthy */
	bool unhealthy;
	const char *taint_key; /* DRA_TAINT_XID or DRA_TAINT_LOST when unhealthy */
	char taint_value[16];  /* the XID number, "" for none */
	char health_reason[256];
	long long health_since; /* Unix seconds of the last change, 0: never changed */
};

/* NVIDIA's taint keys for an unhealthy device (docs/reference/dra.md §12.2), under the driver's name. */
#define DRA_TAINT_XID  "xid"
#define DRA_TAINT_LOST "gpu-lost"

/* The published devices of one node snapshot (pointers into it: it must outlive them). */
struct dra_devices {
	const struct node *node;
	struct dra_device *v;
	size_t n;
	json_t
	    *left_out; /* an array of strings: each GPU or MIG device not published, and why (the daemon logs them) */
};

/*
 * The name gpulet's DRA driver publishes GPU g (m NULL) or its MIG device m under, into buf (size
 * DRA_DEVICE_NAME_MAX): the one naming rule, shared by the exporter that maps PodResources' dynamic
 * resources back to a device. false: m has no name (NVML did not give its GI profile and placement).
 */
bool dra_device_name(const struct node_gpu *g, const struct node_mig *m, char *buf, size_t size);

/*
 * The devices of n: lost GPUs and GPUs with uncorrectable memory errors are left out (a workload
 * would fail there), and so is a MIG device whose GPU-instance placement NVML does not say (its
 * NVIDIA name needs it). root is the --root prefix for sysfs (the PCIe root). -ENOMEM only.
 */
int dra_devices_build(const struct node *n, const char *root, struct dra_devices *ret, struct gerr *err);
void dra_devices_clear(struct dra_devices *d);
const struct dra_device *dra_devices_find(const struct dra_devices *d, const char *name);
/* The device's NVML UUID (GPU-... or MIG-...). */
const char *dra_device_uuid(const struct dra_device *d);

/*
 * The watcher's word on GPU uuid: gi < 0 the GPU and all its MIG devices, else MIG devices of GPU instance
 * gi (ci < 0: each of its compute instances), as dra_device_matches() says. taint_key and value say why for a taint
 * (key NULL: the kind's default), reason in words. Returns how many devices changed state.
 */
bool dra_device_matches(const struct dra_device *v, const char *uuid, int gi, int ci);
size_t dra_devices_set_health(struct dra_devices *d, const char *uuid, int gi, int ci, bool healthy,
			      const char *taint_key, const char *taint_value, const char *reason, long long now);

/* "pci0000:00" for bus id "0000:07:00.0" from <root>/sys/bus/pci/devices, as k8s' deviceattribute. */
int dra_pcie_root(const char *root, const char *bus_id, char *buf, size_t size);

struct dra_slice_options {
	const char *driver;    /* "gpu.nvidia.com" */
	const char *node_name; /* the pool's name and spec.nodeName */
	const char *node_uid;  /* the Node's uid for the owner reference; NULL: none (not known yet) */
	int64_t generation;    /* the pool's generation */
	/*
	 * An unhealthy device: false, left out of the pool (the scheduler cannot pick it); true, published
	 * with a NoSchedule taint <driver>/<taint_key>=<value> (NVIDIA's NVMLDeviceHealthCheck; the API
	 * server keeps taints only with its DRADeviceTaints gate on).
	 */
	bool taints;
	bool withhold; /* publish the pool without devices (the device plugin advertises this node's GPUs) */
};

/*
 * The ResourceSlice objects (resource.k8s.io/v1) of the node's one pool: at most 128 devices each
 * (resourceSliceCount says how many), generateName "<node>-<driver>-", owned by the Node when its uid is
 * known; unhealthy devices as taints says. *ret is a new JSON array. A device the API would refuse (more than 32
 * attributes and capacities) is -EINVAL with err naming it.
 */
int dra_slices_build(const struct dra_devices *d, const struct dra_slice_options *o, json_t **ret, struct gerr *err);

/* The generation to publish next: prev unchanged when the devices of a and b are the same, else prev + 1. */
int64_t dra_slices_next_generation(const json_t *published, const json_t *wanted, int64_t prev);
