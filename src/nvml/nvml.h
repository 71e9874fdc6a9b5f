/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML loaded with dlopen (open.c). gpulet has no build-time NVML dependency: the symbol table is in
 * nvml/abi.h, each entry is resolved by its versioned name, and optional entries that an older
 * driver lacks are left NULL (callers check with NVML_HAS()).
 */
#pragma once

#include <limits.h>

#include "util/err.h"
#include "util/hostpaths.h"
#include "nvml/abi.h"

struct nvml {
	void *dl;
	char path[PATH_MAX]; /* what was loaded, for messages */
	int initialized;
#define NVML_FIELD(field, sym, args, req) nvmlReturn_t(*field) args;
	NVML_SYMBOLS(NVML_FIELD)
#undef NVML_FIELD
	const char *(*error_string)(nvmlReturn_t);
};

#define NVML_HAS(nv, field) ((nv)->field != NULL)

/*
 * THE way gpulet opens NVML (every verb, doctor, the plugin): the host's paths as the verb resolved
 * them (util/hostpaths.h), then nvml_open(h->nvml_library, h->nvml_dir).
 */
int nvml_open_host(const struct host_paths *h, struct nvml **ret, struct gerr *err);

/*
 * Find and load libnvidia-ml.so.1 and call nvmlInit_v2.
 * library: explicit path, or NULL to search.
 * driver_root: where the driver is installed, as read from here ("/" or e.g. /run/nvidia/driver);
 * searched in driver_lib_dirs (host/driver.h) below it, then by the system loader when
 * driver_root is "/". On failure err says what is missing, where gpulet looked and what to do.
 */
int nvml_open(const char *library, const char *driver_root, struct nvml **ret, struct gerr *err);
void nvml_close(struct nvml *nv);
DEFINE_CLEANUP_FUNC(struct nvml, nvml_close)

/*
 * nvmlDeviceSetMemoryLimits_v1 on the GPU uuid for the cgroup v2 dir cgroup (full path): soft and hard
 * limits in bytes (hard ULLONG_MAX: none). Resolved at the call: -ENOSYS with err when the driver lacks it.
 */
int nvml_set_memory_limits(struct nvml *nv, const char *uuid, const char *cgroup, unsigned long long soft,
			   unsigned long long hard, struct gerr *err);

/* Map an NVML return code to a negative errno (one table for the whole program). */
int nvml_errno(nvmlReturn_t r);

/* NVML's own text for a code when the library has nvmlErrorString, else our name for it. */
const char *nvml_strerror(const struct nvml *nv, nvmlReturn_t r);

/* Stable symbolic name, e.g. "GPU_IS_LOST"; used in logs and the fake's fixture format. */
const char *nvml_return_name(nvmlReturn_t r);
/* Reverse of nvml_return_name; returns -EINVAL for an unknown name. */
int nvml_return_from_name(const char *name, nvmlReturn_t *ret);
