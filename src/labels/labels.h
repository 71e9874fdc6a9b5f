/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU Feature Discovery compatible node labels, written as an NFD local feature file
 * (`key=value` lines). Label names, values and the rules that pick them are GFD v0.20's
 * (internal/lm); docs/reference/gfd-labels.md lists them and every place where we differ.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "util/err.h"
#include "nvml/node.h"
#include "nvconfig/nvconfig.h"

#define LABELS_DEFAULT_OUTPUT       "/etc/kubernetes/node-feature-discovery/features.d/gfd"
#define LABELS_DEFAULT_MACHINE_FILE "/sys/class/dmi/id/product_name"

/* What the host (not NVML) says, read under --root by labels_read_host(). */
struct labels_host {
	/* DMI product name as read (untrimmed); NULL: no file, or unreadable -> gpu.machine=unknown */
	char *machine;
	/* "compute", "graphics" or "unknown": the PCI class of every GPU (gfd-labels.md "gpu.mode") */
	char gpu_mode[16];
	/* vGPU guest: PCI vendor capabilities of NVIDIA devices; vgpu_known false: the scan failed */
	bool vgpu_known;
	size_t n_vgpu;
	char vgpu_host_driver_version[16], vgpu_host_driver_branch[16]; /* of the last vGPU device */
	/*
	 * The config space of a GPU was read without privilege (64 bytes: no capability list), so NVML's
	 * virtualization mode decided whether it is a vGPU: vgpu.present is known, the host driver's version
	 * and branch are not (vgpu_host_unknown). vgpu_note says so, or why the scan failed, for the log.
	 */
	bool vgpu_host_unknown;
	char vgpu_note[256];
};

struct labels_options {
	enum mig_strategy mig_strategy;
	/* the sharing in use (the v1 file's section, or gpulet's flags): its resources' names and replicas, and
	 * renameByDefault; a rule's `rename` is not used (GFD ignores it) */
	struct nvconfig_sharing sharing;
	bool timestamp; /* nvidia.com/gfd.timestamp */
	time_t now;
	/* The field guide's own labels (field guide: gpu-type=a100, gpu-mig=enabled). NULL/false = off. */
	const char *gpu_type; /* value, or "auto" to derive it from the product name */
	bool gpu_mig;
};

struct label {
	char *key;
	char *value;
};

struct label_set {
	struct label *v;
	size_t n;
};

void label_set_free(struct label_set *s);
DEFINE_CLEANUP_FUNC(struct label_set, label_set_free)

/*
 * Compute the labels; sorted by key. host may be NULL (nothing known about the host). Fails
 * (-EINVAL, err says why) where GFD refuses to label: MPS sharing on a node with a MIG-enabled GPU.
 */
int labels_build(const struct node *n, const struct labels_options *o, const struct labels_host *host,
		 struct label_set **ret, struct gerr *err);

/* "key=value\n" lines with a header comment; malloc'd. */
int labels_format(const struct label_set *s, char **ret);

const char *labels_get(const struct label_set *s, const char *key);

/* GFD's sanitise(): drop [^A-Za-z0-9-_. ], then the blank-separated words joined with '-'. */
void labels_sanitize(const char *in, char *out, size_t size);

/* "ampere" for compute capability 8.0, as GFD; "undefined" when unknown. */
const char *labels_gpu_family(int cc_major, int cc_minor);

/* ---- host facts (machine.c) ---- */

/* Read the DMI file, the GPUs' PCI classes and the vGPU capabilities under root. Never fails. */
void labels_read_host(const char *root, const struct node *n, const char *machine_file, struct labels_host *ret);
void labels_host_clear(struct labels_host *h);

/*
 * One NVIDIA PCI function's config space (sysfs `config`, 256 bytes or more when read with
 * privilege): 1 and the host driver version/branch when its vendor-specific capability is a vGPU
 * one ("VF" signature), 0 when it is not a vGPU, -EINVAL (err says why) when the space is short or
 * the vGPU record is malformed. GFD's internal/vgpu rules (docs/reference/gfd-labels.md "vGPU").
 */
int labels_vgpu_parse(const uint8_t *cfg, size_t len, char *version, size_t vsize, char *branch, size_t bsize,
		      struct gerr *err);
