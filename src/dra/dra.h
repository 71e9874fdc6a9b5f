/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpulet dra`: the node half of GPU scheduling with Dynamic Resource Allocation, a drop-in for
 * NVIDIA's gpu-kubelet-plugin (docs/reference/dra.md). One owner for what it runs, started, run and
 * stopped symmetrically: the node model and its published devices, the checkpoint, the
 * registration and DRA gRPC servers, the health watcher, the pool in the API server.
 */
#pragma once

#include <signal.h>
#include <stdint.h>

#include <jansson.h>

#include "dra/gpuconfig.h"
#include "nvml/nvml.h"
#include "nvml/xid.h"
#include "util/err.h"

#define DRA_DRIVER_DEFAULT   "gpu.nvidia.com"
#define DRA_REGISTRY_DEFAULT "/var/lib/kubelet/plugins_registry" /* kubeletplugin.KubeletRegistryDir */
#define DRA_PLUGINS_DEFAULT  "/var/lib/kubelet/plugins"          /* kubeletplugin.KubeletPluginsDir */

/*
 * Where NodePrepareResources gets a claim from: the ResourceClaim namespace/name as the API server
 * has it now. The Kubernetes API client fills this (GET /apis/resource.k8s.io/v1/namespaces/NS/
 * resourceclaims/NAME); without one, every Prepare answers that the claim cannot be read.
 */
struct dra_claim_source {
	/* *ret: a new reference to the ResourceClaim object; or -errno with err (not found, forbidden, ...) */
	int (*get)(void *data, const char *ns, const char *name, json_t **ret, struct gerr *err);
	void *data;
};

/*
 * Where the node's ResourceSlices go, and what the API server says back. The API client (dra/api.h)
 * makes the pool's slices in the API server the ones it is given (creates, updates, deletes the
 * others), keeping the generation past the highest it finds there and bumping it when the devices
 * change (dra/pool.h), owning them by the Node (its uid in metadata.ownerReferences). The daemon
 * publishes at start, when its devices change (MIG re-partition, health), and whenever changed()
 * says the pool or the Node changed in the API server (kubelet wipes the node's slices at its start
 * and 30 s after a plugin unregisters). Without one nothing is published.
 */
struct dra_slice_publisher {
	/*
	 * slices: the JSON array of dra_slices_build() (no owner reference, any generation), borrowed. > 0:
	 * writes made, with *ret_generation the pool's generation; 0: it was so already; -errno with err
	 * (-EAGAIN: the API server's state is not known yet): the daemon tries again.
	 */
	int (*publish)(void *data, const json_t *slices, int64_t *ret_generation, struct gerr *err);
	/* After fd woke (fd is drained): true when the pool or the Node changed in the API server. */
	bool (*changed)(void *data);
	/*
	 * The device-plugin resources the Node advertises (an allocatable nvidia.com resource above 0) as
	 * "nvidia.com/gpu=8 ..." in buf: 1, 0 when none, -EAGAIN while the Node is not known yet.
	 */
	int (*device_plugin)(void *data, char *buf, size_t size);
	/* The API server dropped the device taints it was sent (its DRADeviceTaints gate is off). */
	bool (*taints_dropped)(void *data);
	int fd; /* readable when changed() has something to say; -1: never */
	void *data;
};

struct dra_daemon_options {
	const char *driver;       /* DRA driver name: the ResourceSlices' driver, the CDI vendor k8s.<driver> */
	const char *node_name;    /* this node: the pool's name */
	const char *registry_dir; /* host path: kubelet's plugin registration dir */
	const char *plugins_dir;  /* host path: the plugin's dir is <plugins_dir>/<driver> */
	const char *cdi_root;     /* host path the claims' CDI specs go to */
	const char *hook_path;    /* the CDI hook the specs name; NULL: gpulet's own */
	/* the verb's host paths (util/hostpaths.h): .root is the read prefix of every host path above */
	const struct host_paths *host;
	struct dra_gates gates;
	/* unhealthy devices: false, left out of the pool; true, published with NVIDIA's taints (NVMLDeviceHealthCheck)
	 */
	bool taints;
	struct xid_policy xids;   /* which XIDs make a GPU unhealthy (--additional-xids-to-ignore) */
	const char *kernel_log;   /* the health watcher's kernel log; NULL: <root>/dev/kmsg, "": none */
	unsigned health_quiet_ms; /* recovery after an application XID; 0: the watcher's default */
	unsigned mig_poll_ms;     /* MIG layout and lost GPUs polled this often; 0: the watcher's default */
	const struct dra_claim_source *claims;       /* NULL: no API client */
	const struct dra_slice_publisher *publisher; /* NULL: no API client */
};

struct dra_daemon;

/*
 * Load NVML and the node, list the devices to publish, open the checkpoint (undo what was left
 * half-prepared, start the dead MPS daemons of prepared claims again), serve dra.sock and the
 * registration socket, watch the GPUs' health and publish the pool once. stop: the signals that end
 * the loop, blocked by the caller before any thread started (util/loop.h). 0 with *ret serving, or
 * -errno (logged) with everything started so far stopped.
 */
int dra_daemon_start(const struct dra_daemon_options *o, const sigset_t *stop, struct dra_daemon **ret);
/*
 * The loop (util/loop.h) until a stop signal: health events and MIG re-partitions applied, the pool
 * published again when it changes here or in the API server, the sockets served again when removed,
 * the MPS daemons of prepared claims kept running. 0, or -errno when the loop failed.
 */
int dra_daemon_run(struct dra_daemon *d);
/* Stop serving (sockets removed), close NVML, free. NULL is fine. */
void dra_daemon_stop(struct dra_daemon *d);
