/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compute processes of a device for FB_USED and GPU_UTIL per pod under --kubernetes-virtual-gpus,
 * as dcgm-exporter's per-process values (internal/pkg/transformation/process_metrics.go, pidmapper.go;
 * docs/reference/dcgm-exporter.md section 9): NVML's running processes (their used memory) and their
 * SM utilization, each process mapped to its pod through the pod UID in its cgroup path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/exporter.h"
#include "exporter/procs.h"
#include "util/fileio.h"

#define PROCS_MAX   1024  /* processes per device asked for (a node runs far fewer on one GPU) */
#define CGROUP_MAX  65536 /* /proc/<pid>/cgroup: one line per hierarchy */
#define POD_UID_MIN 32    /* upstream's floor: a UID has 32 hex digits */
#define POD_UID_HEX "0123456789abcdef-_"

int exp_cgroup_pod_uid(const char *text, size_t len, char *uid, size_t size)
{
	/*
	 * Each line is "hierarchy:controllers:path". In every path, the first "pod" followed by hex digits,
	 * '-' and '_' (the systemd driver writes the UID with '_') names the pod: upstream's regexp
	 * pod([a-f0-9_-]+), '_' then read as '-', at least 32 characters (pidmapper.go extractPodUID).
	 */
	for (size_t i = 0; i + 3 < len; i++) {
		size_t n = 0, o = 0;

		if (memcmp(text + i, "pod", 3) != 0)
			continue;
		while (i + 3 + n < len && text[i + 3 + n] && strchr(POD_UID_HEX, text[i + 3 + n]))
			n++;
		if (n < POD_UID_MIN || n + 1 > size)
			continue;
		for (size_t k = 0; k < n; k++)
			uid[o++] = text[i + 3 + k] == '_' ? '-' : text[i + 3 + k];
		uid[o] = '\0';
		return 1;
	}
	return 0;
}

/* The pod UID of pid from /proc/<pid>/cgroup under root; "" when it is in no pod or gone. */
static void pid_pod_uid(const char *root, uint32_t pid, char *uid, size_t size)
{
	_cleanup_free_ char *rel = NULL, *path = NULL, *text = NULL;
	size_t len = 0;

	uid[0] = '\0';
	if (asprintf(&rel, "/proc/%u/cgroup", pid) < 0 || !(path = root_path(root, rel)) ||
	    read_file(path, CGROUP_MAX, &text, &len, NULL) < 0)
		return;
	if (!exp_cgroup_pod_uid(text, len, uid, size))
		uid[0] = '\0';
}

void exp_procs_free(struct exp_procs *p)
{
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* The processes NVML lists on h (GetComputeRunningProcesses: their used memory). */
static int running(const struct nvml *nv, nvmlDevice_t h, struct exp_procs *ret)
{
	nvmlProcessInfo_t *info;
	unsigned count = 0;
	nvmlReturn_t r;

	if (!nv->device_get_compute_running_processes)
		return 0;
	r = nv->device_get_compute_running_processes(h, &count, NULL);
	if (r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED)
		return 0; /* none (SUCCESS with 0), or the device cannot say */
	if (r != NVML_ERROR_INSUFFICIENT_SIZE)
		return -EIO;
	count = MIN(count + 8, (unsigned)PROCS_MAX); /* room for processes started since */
	info = calloc(count, sizeof(*info));
	ret->v = calloc(count, sizeof(*ret->v));
	if (!info || !ret->v) {
		free(info);
		return -ENOMEM;
	}
	r = nv->device_get_compute_running_processes(h, &count, info);
	if (r == NVML_SUCCESS)
		for (unsigned i = 0; i < count; i++)
			ret->v[ret->n++] = (struct exp_proc){.pid = info[i].pid, .mem_bytes = info[i].usedGpuMemory};
	free(info);
	return r == NVML_SUCCESS ? 0 : -EIO;
}

/* The newest SM utilization sample of each process (GetProcessUtilization since 0, as upstream asks). */
static void utilization(const struct nvml *nv, nvmlDevice_t h, struct exp_procs *p)
{
	nvmlProcessUtilizationSample_t *s;
	unsigned count = 0;

	if (!nv->device_get_process_utilization ||
	    nv->device_get_process_utilization(h, NULL, &count, 0) != NVML_ERROR_INSUFFICIENT_SIZE || !count)
		return; /* NOT_FOUND: no samples; NOT_SUPPORTED: the GPU cannot say */
	count = MIN(count, (unsigned)PROCS_MAX);
	s = calloc(count, sizeof(*s));
	if (!s || nv->device_get_process_utilization(h, s, &count, 0) != NVML_SUCCESS) {
		free(s);
		return;
	}
	for (size_t i = 0; i < p->n; i++) {
		unsigned long long newest = 0;

		for (unsigned k = 0; k < count; k++)
			if (s[k].pid == p->v[i].pid && s[k].timeStamp >= newest) {
				newest = s[k].timeStamp;
				p->v[i].sm_util = s[k].smUtil;
			}
	}
	free(s);
}

void exp_procs_collect(const struct exporter *e, nvmlDevice_t h, bool gpu, struct exp_procs *ret)
{
	*ret = (struct exp_procs){0};
	if (running(e->nv, h, ret) < 0) {
		exp_procs_free(ret);
		return;
	}
	if (gpu)
		utilization(e->nv, h, ret); /* per-process utilization is a whole-GPU query (not on MIG) */
	for (size_t i = 0; i < ret->n; i++)
		pid_pod_uid(e->root, ret->v[i].pid, ret->v[i].uid, sizeof(ret->v[i].uid));
}

bool exp_procs_pod_value(const struct exp_procs *p, const char *uid, bool memory, double *ret)
{
	uint64_t sum = 0;

	if (!uid || !*uid)
		return false;
	/* per process, then summed: bytes to whole MiB each, as process_metrics.go getValueForMetric */
	for (size_t i = 0; p && i < p->n; i++)
		if (streq(p->v[i].uid, uid))
			sum += memory ? p->v[i].mem_bytes / (1024 * 1024) : p->v[i].sm_util;
	*ret = (double)sum;
	return true;
}
