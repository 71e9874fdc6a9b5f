/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's device-manager checkpoint, /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint:
 * {"Data":{"PodDeviceEntries":[{"PodUID","ContainerName","ResourceName","DeviceIDs","AllocResp"}],
 *          "RegisteredDevices":{"nvidia.com/gpu":["GPU-…"]}},"Checksum":N}
 * DeviceIDs is a map NUMA node → IDs since Kubernetes 1.20 and a plain list before
 * (kubernetes pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go and checkpointv1.go).
 * The checksum is not verified: it hashes Go's in-memory layout, which we cannot reproduce.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct checkpoint_entry {
	char *pod_uid;
	char *container;
	char *resource;
	char **device_ids; /* flattened over NUMA nodes */
	size_t n_ids;
};

struct checkpoint_registered {
	char *resource;
	char **device_ids;
	size_t n_ids;
};

struct checkpoint {
	struct checkpoint_entry *entries;
	size_t n_entries;
	struct checkpoint_registered *registered;
	size_t n_registered;
	uint64_t checksum;
	int format; /* 2: NUMA map DeviceIDs, 1: list DeviceIDs (pre-1.20) */
};

int checkpoint_parse(const char *text, size_t len, const char *name, struct checkpoint **ret, struct gerr *err);
int checkpoint_load(const char *path, struct checkpoint **ret, struct gerr *err);
void checkpoint_free(struct checkpoint *c);
DEFINE_CLEANUP_FUNC(struct checkpoint, checkpoint_free)

/* Registered devices of one resource, NULL when the resource is not registered. */
const struct checkpoint_registered *checkpoint_find_resource(const struct checkpoint *c, const char *resource);
