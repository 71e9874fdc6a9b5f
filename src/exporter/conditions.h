/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU health from NVML's current state. The exporter's event-based health (XID, double-bit ECC
 * events) starts over with every exporter restart; these conditions are read again on every sample
 * from what the driver still holds until the GPU is reset, so gpulet_gpu_healthy says the same thing
 * before and after a restart (docs/reference/alerts.md, "Health").
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "nvml/nvml.h"

/* One bit per condition, in the order of exp_health_conds[] (conditions.c). */
enum exp_health_cond {
	EXP_HEALTH_DBE_VOLATILE,      /* uncorrectable ECC errors since the last driver load or GPU reset */
	EXP_HEALTH_ROW_REMAP_PENDING, /* a row remap waits for a GPU reset (Ampere and newer) */
	EXP_HEALTH_ROW_REMAP_FAILURE, /* a row could not be remapped: the GPU needs replacing */
	EXP_HEALTH_COND_COUNT
};

/* What NVML answered for one GPU: known bit i = condition i could be read, bad bit i = it holds. */
struct exp_health {
	uint32_t known, bad;
	/* read with them for DCGM_EXP_GPU_HEALTH_STATUS (health_status.c), not part of gpulet_gpu_healthy:
	 * NVML's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) and whether retired pages are pending;
	 * -1 when NVML does not answer */
	int recovery, retired_pending;
};

/* Read every condition of GPU h now; a call NVML does not support leaves its bit unknown. */
struct exp_health exp_health_read(const struct nvml *nv, nvmlDevice_t h);

/* The condition's name as the metric label condition="..." shows it. */
const char *exp_health_cond_name(enum exp_health_cond c);

struct exp_gpu;
struct exp_gpu_state;
struct exporter;
struct strbuf;

/* Sampler side: read GPU eg's conditions and store them in its state under its lock. */
void exp_health_update(struct exp_gpu *eg, const struct nvml *nv, nvmlDevice_t h);

/* gpulet_gpu_healthy: not lost, no critical XID or DBE event seen, and no condition holds now. */
bool exp_health_ok(const struct exp_gpu_state *st);

/* gpulet_gpu_health_condition{...,condition="..."} 0/1 for every condition NVML could read. */
void exp_health_render(struct strbuf *b, struct exporter *e);
