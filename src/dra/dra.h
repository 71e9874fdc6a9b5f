/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpulet dra`: the node half of GPU scheduling with Dynamic Resource Allocation, a drop-in for
 * NVIDIA's gpu-kubelet-plugin (docs/reference/dra.md). One owner for what it runs, started, run and
 * stopped symmetrically: the node model and its published devices, the checkpoint, the
 * registration and DRA gRPC servers.
 */
#pragma once

#include <signal.h>

#include <jansson.h>

#include "dra/gpuconfig.h"
#include "nvml/nvml.h"
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
 * Where the node's ResourceSlices go: the API client makes the pool's slices in the API server these
 * (creates, updates, deletes the others), keeping the generation past the highest it finds there
 * (dra_slices_next_generation()) and owning them by the Node (its uid in metadata.ownerReferences),
 * and publishes them again when kubelet wipes them. Called once at start now; without one nothing
 * is published.
 */
struct dra_slice_publisher {
	/* slices: the JSON array of dra_slices_build() (generation 1, no owner reference yet), borrowed */
	int (*publish)(void *data, const json_t *slices, struct gerr *err);
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
	const struct dra_claim_source *claims;       /* NULL: no API client */
	const struct dra_slice_publisher *publisher; /* NULL: no API client */
};

struct dra_daemon;

/*
 * Load NVML and the node, list the devices to publish, open the checkpoint (undo what was left
 * half-prepared), then serve dra.sock and the registration socket. 0 with *ret serving, or -errno
 * (logged) with everything started so far stopped.
 */
int dra_daemon_start(const struct dra_daemon_options *o, struct dra_daemon **ret);
/* Serve until a stop signal of stop (blocked by the caller in every thread) arrives. */
void dra_daemon_run(struct dra_daemon *d, const sigset_t *stop);
/* Stop serving (sockets removed), close NVML, free. NULL is fine. */
void dra_daemon_stop(struct dra_daemon *d);
