/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA's opaque device configs, as a claim or a DeviceClass carries them for driver
 * gpu.nvidia.com (docs/reference/dra.md §6): apiVersion resource.nvidia.com/v1beta1, kind GpuConfig
 * or MigDeviceConfig, with sharing.strategy TimeSlicing (timeSlicingConfig.interval) or MPS
 * (mpsConfig). Decoded strictly, as NVIDIA's StrictDecoder does: an unknown field, a wrong type or a
 * kind gpulet does not serve is an error that names it, never dropped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/err.h"

#define DRA_CONFIG_API_VERSION "resource.nvidia.com/v1beta1"

enum dra_cfg_kind { DRA_CFG_GPU, DRA_CFG_MIG };
enum dra_strategy { DRA_SHARE_NONE, DRA_SHARE_TIME_SLICING, DRA_SHARE_MPS };
/* TimeSliceInterval.Int(): what `nvidia-smi compute-policy --set-timeslice` takes */
enum dra_interval { DRA_TS_DEFAULT = 0, DRA_TS_SHORT = 1, DRA_TS_MEDIUM = 2, DRA_TS_LONG = 3 };

struct dra_pinned {
	char *key;     /* a device UUID, or its index among the group's devices sorted by UUID */
	int64_t bytes; /* the quantity's value */
};

struct dra_sharing {
	enum dra_cfg_kind kind;
	enum dra_strategy strategy;
	enum dra_interval interval; /* TimeSlicing on a GpuConfig */
	int thread_pct;             /* MPS defaultActiveThreadPercentage, -1 unset */
	int64_t pinned;             /* MPS defaultPinnedDeviceMemoryLimit in bytes, -1 unset */
	struct dra_pinned *per_dev; /* MPS defaultPerDevicePinnedMemoryLimit */
	size_t n_per_dev;
};

/*
 * NVIDIA gates both strategies (TimeSlicingSettings, MPSSupport; alpha, off by default). gpulet serves
 * them unless --feature-gates turns one off; then a config asking for it is refused as NVIDIA's is.
 */
struct dra_gates {
	bool time_slicing, mps;
};

/*
 * Decode params (the opaque "parameters" object) into *ret. The kind's defaults are applied
 * (TimeSlicing without a config: interval Default), then it is validated. -EINVAL with err naming
 * the field ("sharing.mpsConfig.defaultActiveThreadPercentage: 120 is over 100") otherwise.
 */
int dra_gpuconfig_parse(const json_t *params, const struct dra_gates *g, struct dra_sharing *ret, struct gerr *err);
void dra_sharing_clear(struct dra_sharing *s);
const char *dra_strategy_name(enum dra_strategy s);
const char *dra_interval_name(enum dra_interval i);
const char *dra_cfg_kind_name(enum dra_cfg_kind k);

/*
 * The MPS pinned-memory limit of each device of a group (uuids sorted, as NVIDIA's UUIDs()): the
 * default for every device, then the per-device entries (by UUID or index). ret_mib[i] is in MiB
 * (0: no limit). -EINVAL with err for a key that names no device of the group or a limit under 1 MiB.
 */
int dra_mps_pinned_mib(const struct dra_sharing *s, const char *const *uuids, size_t n, uint64_t *ret_mib,
		       struct gerr *err);
