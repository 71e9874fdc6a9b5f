/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a device plugin's Allocate returned for one container, as kubelet keeps it in
 * kubelet_internal_checkpoint: PodDeviceEntries[].AllocResp is the base64 (Go encoding/json of a
 * []byte) of a protobuf v1beta1.ContainerAllocateResponse (proto/deviceplugin.proto). Which fields
 * are set tells who injects the GPU (docs/reference/device-plugin.md §1, docs/reference/cluster-events.md §1).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

enum allocresp_mode {
	ALLOCRESP_NONE,          /* nothing that names a device: an empty response */
	ALLOCRESP_ENVVAR,        /* NVIDIA_VISIBLE_DEVICES=<ids>: only a runtime hook injects */
	ALLOCRESP_VOLUME_MOUNTS, /* NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices + mounts */
	ALLOCRESP_CDI_ANNOTATIONS,
	ALLOCRESP_CDI_CRI, /* cdi_devices: kubelet passes CDI names to the runtime's CRI */
};

struct allocresp {
	enum allocresp_mode mode; /* the strongest one seen: a CDI name wins over an env var */
	bool envvar, volume_mounts, cdi_annotations, cdi_cri;
	char example[160]; /* one value that shows it: "nvidia.com/gpu=0", "GPU-…" */
};

/* Decode one AllocResp (base64 text). -EINVAL with err on bad base64 or protobuf. */
int allocresp_decode(const char *b64, struct allocresp *ret, struct gerr *err);
const char *allocresp_mode_name(enum allocresp_mode m);
