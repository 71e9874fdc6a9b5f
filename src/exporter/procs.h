/* SPDX-License-Identifier: Apache-2.0 */
/* Per-process values for FB_USED and GPU_UTIL per pod (procs.c; struct exp_procs is in exporter.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "nvml/nvml.h"

struct exporter;
struct exp_procs;

/*
 * The pod UID in a /proc/<pid>/cgroup text (outside input: bounded, fuzzed by fuzz_cgroupuid): 1 with
 * uid, or 0 when no path names a pod.
 */
int exp_cgroup_pod_uid(const char *text, size_t len, char *uid, size_t size);

/* The processes of device h (a GPU handle, or a MIG device's with gpu false) and their pods. */
void exp_procs_collect(const struct exporter *e, nvmlDevice_t h, bool gpu, struct exp_procs *ret);

/*
 * The value of one pod (by UID) on a device: FB_USED (memory: each process's bytes in whole MiB,
 * summed) or GPU_UTIL (SM utilization, summed); 0 for a pod with no process there. false when uid is
 * unknown ("" or NULL): no value rather than a wrong one.
 */
bool exp_procs_pod_value(const struct exp_procs *p, const char *uid, bool memory, double *ret);
