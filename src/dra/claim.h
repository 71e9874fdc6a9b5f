/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A ResourceClaim (the JSON object the API server returns) read for one node's DRA driver: which
 * devices of this driver and pool it was allocated, and the opaque config each gets
 * (docs/reference/dra.md §4). Pure: the claim in, a list out; every check fails with words.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "dra/devices.h"
#include "dra/gpuconfig.h"
#include "util/err.h"

/* What kubelet asked for: NodePrepareResources' Claim. */
struct dra_claim_ref {
	const char *ns, *name, *uid;
};

/* One allocation result of this driver. */
struct dra_result {
	char *request; /* as allocated: "gpu", or "gpu/sub" for a firstAvailable subrequest */
	char *device;  /* "gpu-0" */
	bool admin;    /* adminAccess: may share the device with another claim */
	size_t group;  /* its config group */
	enum dra_dev_type type;
};

/* The results one config applies to; an MPS daemon and a time slice are per group (NVIDIA's). */
struct dra_group {
	struct dra_sharing sharing;
	char *source; /* "FromClaim config 1", "FromClass config 0", or "no config" */
};

struct dra_claim {
	char *ns, *name, *uid;
	struct dra_result *results;
	size_t n_results;
	struct dra_group *groups;
	size_t n_groups;
};

struct dra_claim_check {
	const char *driver; /* ours: "gpu.nvidia.com" */
	const char *pool;   /* this node's pool: the node name */
	const struct dra_devices *devices;
	const struct dra_gates *gates;
};

/*
 * Read claim for want: the uid, namespace and name must match (a claim deleted and re-created is
 * another claim), it must be allocated, each result of our driver must be from our pool and name a
 * device we publish; configs of our driver are decoded (others skipped, a non-opaque one refused),
 * class ones first, then the claim's, and each result gets the last one that names its request (or
 * names none); a GpuConfig named for a MIG device, or the reverse, is an error. 0 with *ret, or
 * -errno with err saying what is wrong with which claim.
 */
int dra_claim_parse(const json_t *claim, const struct dra_claim_ref *want, const struct dra_claim_check *c,
		    struct dra_claim *ret, struct gerr *err);
void dra_claim_clear(struct dra_claim *c);

/* The request a device answers to kubelet: the main request of "main/sub" (kubeletplugin's stripSubrequestNames) */
void dra_request_main(const char *request, char *buf, size_t size);
