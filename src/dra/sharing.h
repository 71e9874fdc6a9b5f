/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A claim group's GpuConfig sharing applied to its devices and undone (docs/reference/dra.md §6.3):
 *   TimeSlicing: `nvidia-smi -i <uuid> -c DEFAULT` and `nvidia-smi compute-policy -i <uuid>
 *                --set-timeslice <0-3>` on each whole GPU, as NVIDIA's driver (NVML has no public
 *                call for the compute time slice); back to Default (0) on undo;
 *   MPS:         one control daemon per group, gpulet's own (plugin/mps.h), pipe, log and a tmpfs
 *                /dev/shm under <plugin dir>/mps/<N>/ (N: the smallest free number, kept in the
 *                record: the daemon's socket paths must stay short), the whole GPUs in EXCLUSIVE_PROCESS, the
 *                limits set; the claim's devices get CUDA_MPS_PIPE_DIRECTORY and the two mounts.
 * What was done is recorded in a JSON object (the checkpoint keeps it), from which undo and the
 * CDI edits are made again after a restart.
 */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "dra/gpuconfig.h"
#include "util/err.h"

struct dra_share_env {
	const char *root;        /* read prefix: tools, dirs, meminfo */
	const char *driver_root; /* host dir the driver (and its tools) is installed under */
	const char *plugin_dir;  /* host path <plugins dir>/<driver>: MPS dirs under its mps/ */
};

/*
 * Apply s for group g of claim uid: gpus are the group's whole GPUs, devs all its devices (GPUs and
 * MIG devices), both sorted by UUID. *ret_done gets the record (also after a failure: what was done
 * before it, for dra_share_undo()); a group without sharing records {"strategy": "none"}.
 */
int dra_share_apply(const struct dra_share_env *e, const char *uid, size_t g, const struct dra_sharing *s,
		    const char *const *gpus, size_t n_gpus, const char *const *devs, size_t n_devs, json_t **ret_done,
		    struct gerr *err);
/* Undo a record: idempotent (a daemon no longer running, a dir already gone: done). */
int dra_share_undo(const struct dra_share_env *e, const json_t *done, struct gerr *err);
/*
 * Keep a record's MPS control daemon running: 0 when it answers (or the record has none), 1 when it
 * was dead (a restart of the plugin's container, an OOM kill) and was started again with the
 * record's limits, -errno with err. devs: the group's devices as dra_share_apply() got them.
 */
int dra_share_revive(const struct dra_share_env *e, const json_t *done, const char *const *devs, size_t n,
		     struct gerr *err);
/* The containerEdits the record gives each device of its group (MPS: env and mounts), a new object or NULL. */
json_t *dra_share_edits(const struct dra_share_env *e, const json_t *done);
