/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU states only NVML knows (docs/reference/doctor-classes.md §5): a MIG mode change waiting for a GPU
 * reset, MIG on with no GPU instance (nothing to advertise, nothing CUDA can use), MIG instances whose
 * capability minors mig-minors does not give, and memory repair —
 * a row remap pending or failed, retired pages pending — which NVML reports after the kernel log that
 * announced them has rotated away. One row per state: what to look for, what it means, what to do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "nvml/node.h"
#include "nvml/nvml.h"

/* nvmlDeviceGetRetiredPagesPendingStatus: pages retired by ECC wait for a driver reload to leave use. */
static bool retired_pending(const struct doctor_ctx *c, const struct node_gpu *g)
{
	nvmlDevice_t dev;
	nvmlEnableState_t st = NVML_FEATURE_DISABLED;

	return NVML_HAS(c->nv, device_get_handle_by_index) &&
	       NVML_HAS(c->nv, device_get_retired_pages_pending_status) &&
	       c->nv->device_get_handle_by_index(g->index, &dev) == NVML_SUCCESS &&
	       c->nv->device_get_retired_pages_pending_status(dev, &st) == NVML_SUCCESS && st == NVML_FEATURE_ENABLED;
}

static bool mig_pending(const struct doctor_ctx *c, const struct node_gpu *g)
{
	(void)c;
	return g->mig_pending_change;
}

static bool mig_empty(const struct doctor_ctx *c, const struct node_gpu *g)
{
	(void)c;
	return g->mig_enabled && !g->mig_pending_change && g->n_migs == 0;
}

/* A MIG device whose GI or CI access capability minor is unknown: its CDI entry cannot name the cap nodes. */
static bool mig_caps_unknown(const struct doctor_ctx *c, const struct node_gpu *g)
{
	(void)c;
	for (size_t i = 0; i < g->n_migs; i++)
		if (g->migs[i].gi_cap_minor < 0 || g->migs[i].ci_cap_minor < 0)
			return true;
	return false;
}

static bool remap_failed(const struct doctor_ctx *c, const struct node_gpu *g)
{
	(void)c;
	return g->remap_failed;
}

static bool remap_pending(const struct doctor_ctx *c, const struct node_gpu *g)
{
	(void)c;
	return g->remap_pending && !g->remap_failed;
}

static const struct gpu_state {
	const char *id;
	enum doctor_severity severity;
	bool (*in)(const struct doctor_ctx *c, const struct node_gpu *g);
	const char *nvml; /* what NVML said, for the evidence */
	const char *summary;
	const char *fix;
} states[] = {
    {"mig.mode-change-pending", DOCTOR_FAIL, mig_pending, "nvmlDeviceGetMigMode: pending mode differs from current",
     "a MIG mode change waits for a GPU reset: until then the GPU keeps its old mode, and what the device plugin "
     "advertises is not what was asked for",
     "drain the GPU's pods, then reset it: nvidia-smi -r -i <index> (with nothing using it; on NVSwitch systems "
     "stop nvidia-fabricmanager first, or reboot the node); the GPU Operator's mig-manager does this itself"},
    {"mig.no-instances", DOCTOR_FAIL, mig_empty, "MIG enabled, nvmlDeviceGetMigDeviceHandleByIndex finds none",
     "MIG is on but the GPU has no GPU/compute instances: there is nothing to advertise, and CUDA sees no "
     "device on it",
     "create the instances (nvidia-smi mig -cgi <profiles> -C, or the mig-parted config the node's "
     "nvidia.com/mig.config label names), or turn MIG off (nvidia-smi -mig 0 -i <index> and a reset)"},
    {"mig.caps-unknown", DOCTOR_FAIL, mig_caps_unknown,
     "MIG devices, but /proc/driver/nvidia-caps/mig-minors names no access capability for some",
     "MIG devices whose GPU/compute instance access capabilities are unknown: the CDI spec and the device "
     "plugin cannot hand out their /dev/nvidia-caps nodes, so a container would hold a MIG device it cannot "
     "open (gpulet cdi generate leaves them out with a warning)",
     "make /proc/driver/nvidia-caps/mig-minors readable where gpulet runs (mount the host's /proc, or give "
     "--root); if the file lacks the instances, reload nvidia-caps (nvidia-modprobe -f "
     "/proc/driver/nvidia-caps/mig-minors) and recreate the instances"},
    {"gpu.row-remap-failed", DOCTOR_FAIL, remap_failed, "nvmlDeviceGetRemappedRows: failureOccurred",
     "a GPU could not remap a failing memory row: its memory is no longer reliable and it needs service",
     "drain the GPU, take it out of service and have it replaced (NVIDIA's field diagnostics confirm); the "
     "device plugin should keep it unhealthy"},
    {"gpu.row-remap-pending", DOCTOR_WARN, remap_pending, "nvmlDeviceGetRemappedRows: isPending",
     "a GPU memory row remap waits for a GPU reset: until then the faulty row is still in use",
     "drain the GPU's pods and reset it (nvidia-smi -r -i <index>) or reboot the node to apply the remap"},
    {"gpu.retired-pages-pending", DOCTOR_WARN, retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus: enabled",
     "ECC retired GPU memory pages that stay in use until the driver reloads",
     "drain the GPU's pods and reset it (nvidia-smi -r -i <index>) or reboot the node so the pages are retired"},
};

int doctor_check_gpu_state(struct doctor_ctx *c)
{
	if (doctor_need_nvml(c) < 0)
		return 0; /* the nvml check said why */
	for (size_t s = 0; s < ELEMENTSOF(states); s++)
		for (size_t k = 0; k < c->node->n_gpus; k++) {
			const struct node_gpu *g = &c->node->gpus[k];
			struct doctor_finding *f;

			if (g->lost || !states[s].in(c, g))
				continue;
			f = doctor_report_once(c, states[s].id, states[s].severity, LINK_GPU, states[s].fix, "%s",
					       states[s].summary);
			doctor_evidence(f, "GPU %u %s (%s): %s", g->index, g->uuid, g->pci_bus_id, states[s].nvml);
		}
	return 0;
}
