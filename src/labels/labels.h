/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU Feature Discovery compatible node labels, written as an NFD local feature file
 * (`key=value` lines). Label names, values and rules: docs/reference/device-plugin.md §9 and
 * monitoring-doctor.md B10/B11.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "util/err.h"
#include "nvml/node.h"
#include "plugin/resources.h"

#define LABELS_DEFAULT_OUTPUT       "/etc/kubernetes/node-feature-discovery/features.d/gfd"
#define LABELS_DEFAULT_MACHINE_FILE "/sys/class/dmi/id/product_name"

struct labels_options {
	enum mig_strategy mig_strategy;
	enum sharing_strategy sharing; /* time-slicing / mps with replicas > 1 */
	unsigned replicas;             /* per GPU; 0 or 1 = not shared */
	bool rename_by_default;        /* shared resource is nvidia.com/gpu.shared: labels follow */
	bool timestamp;                /* nvidia.com/gfd.timestamp */
	time_t now;
	const char *machine; /* DMI product name (raw), NULL = no gpu.machine label */
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

/* Compute the labels; sorted by key. An invalid MIG "single" layout gives GFD's -MIG-INVALID labels. */
int labels_build(const struct node *n, const struct labels_options *o, struct label_set **ret, struct gerr *err);

/* "key=value\n" lines with a header comment; malloc'd. */
int labels_format(const struct label_set *s, char **ret);

const char *labels_get(const struct label_set *s, const char *key);

/* GFD's sanitising of names: drop [^A-Za-z0-9-_. ], then spaces become '-'. */
void labels_sanitize(const char *in, char *out, size_t size);

/* "ampere" for compute capability 8.0, as GFD; "undefined" when unknown. */
const char *labels_gpu_family(int cc_major, int cc_minor);
