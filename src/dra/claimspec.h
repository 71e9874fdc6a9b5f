/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One transient CDI spec per prepared claim, named as NVIDIA's driver names it
 * (docs/reference/dra.md §8): file <cdi root>/k8s.<driver>-claim_<claim uid>.yaml, kind
 * k8s.<driver>/claim, one device "<claim uid>-<device name>" per allocated device, so the ids kubelet
 * gets are "k8s.gpu.nvidia.com/claim=<uid>-gpu-0". Built from the node's full spec (cdi_generate(),
 * the same edits `gpulet cdi generate` writes), kept to the claim's devices.
 */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "nvml/node.h"
#include "util/err.h"

struct dra_cdi_options {
	const char *driver;            /* "gpu.nvidia.com" */
	const struct host_paths *host; /* read prefix, driver and dev roots (util/hostpaths.h) */
	const char *hook_path;         /* --nvidia-cdi-hook-path; NULL: gpulet's own */
	const char *cdi_root;          /* host dir the spec goes to (under root) */
};

struct dra_spec_device {
	const char *uuid;    /* the GPU or MIG device (GPU-..., MIG-...) */
	const char *name;    /* its DRA device name, "gpu-0" */
	const json_t *edits; /* more containerEdits for it (MPS: env, mounts), or NULL */
};

/* "k8s.gpu.nvidia.com-claim_<uid>.yaml" (cdi's GenerateTransientSpecName()) and the spec's kind. */
int dra_cdi_spec_file(const char *driver, const char *uid, char *buf, size_t size);
int dra_cdi_kind(const char *driver, char *buf, size_t size);
/* "k8s.gpu.nvidia.com/claim=<uid>-gpu-0" */
int dra_cdi_device_id(const char *driver, const char *uid, const char *device, char *buf, size_t size);

/*
 * Write the claim's spec atomically (unchanged bytes: not rewritten). A device the node's spec cannot
 * give (its node is missing) fails the whole spec: -ENODEV with err naming it.
 */
int dra_cdi_write(const struct node *n, const struct dra_cdi_options *o, const char *uid,
		  const struct dra_spec_device *devs, size_t n_devs, struct gerr *err);
/* Remove the claim's spec if it is there and ours: 1 removed, 0 none, -errno with err. */
int dra_cdi_remove(const struct dra_cdi_options *o, const char *uid, struct gerr *err);
