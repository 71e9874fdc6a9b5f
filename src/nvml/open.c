/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML loader: find libnvidia-ml.so.1 under the driver root, dlopen it, resolve the table, init. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/driver.h"
#include "nvml/nvml.h"
#include "util/fileio.h"

#define NVML_SONAME "libnvidia-ml.so.1"

static const struct {
	const char *symbol;
	size_t offset;
	int required;
} nvml_symbol_table[] = {
#define NVML_ROW(field, sym, args, req) {#sym, offsetof(struct nvml, field), req},
    NVML_SYMBOLS(NVML_ROW)
#undef NVML_ROW
};

static int nvml_resolve(struct nvml *nv, struct gerr *err)
{
	for (size_t i = 0; i < ELEMENTSOF(nvml_symbol_table); i++) {
		void *fn = dlsym(nv->dl, nvml_symbol_table[i].symbol);

		if (!fn && nvml_symbol_table[i].required)
			return gerr_set(err, ENOSYS,
					"%s does not export %s, which gpulet needs: this NVML is too old or is not "
					"NVIDIA's; install a driver of the 450 series or newer",
					nv->path, nvml_symbol_table[i].symbol);
		memcpy((char *)nv + nvml_symbol_table[i].offset, &fn, sizeof(fn));
	}
	*(void **)&nv->error_string = dlsym(nv->dl, "nvmlErrorString");
	return 0;
}

/*
 * Try each driver library directory below the driver root; the first library that dlopens wins.
 * The candidate's symlinks are followed inside the driver root (driver_resolve): on Debian,
 * usr/lib/<triplet>/libnvidia-ml.so.1 points at /etc/alternatives/..., an absolute link that
 * dlopen would follow on this host instead of in the driver root. path: the candidate, for messages.
 */
static void *nvml_dlopen_search(const char *driver_root, char *path, size_t size, char *tried, size_t tsize)
{
	void *dl;

	tried[0] = 0;
	for (size_t i = 0; i < driver_n_lib_dirs; i++) {
		_cleanup_free_ char *rel = NULL, *real = NULL, *host = NULL,
				    *dir = root_path(driver_root, driver_lib_dirs[i]);

		if (!dir || asprintf(&rel, "%s/" NVML_SONAME, driver_lib_dirs[i]) < 0)
			return NULL;
		snprintf(path, size, "%s/%s", dir, NVML_SONAME);
		if (driver_resolve(NULL, driver_root, rel, &real) == 0) {
			host = root_path(driver_root, real);
			if (!host)
				return NULL;
			dl = dlopen(host, RTLD_NOW | RTLD_LOCAL);
			if (dl)
				return dl;
		}
		if (i < 3) {
			size_t l = strlen(tried);

			snprintf(tried + l, tsize - l, "%s%s", l ? ", " : "", dir);
		}
	}
	if (!driver_root || streq(driver_root, "/")) {
		snprintf(path, size, "%s", NVML_SONAME);
		dl = dlopen(NVML_SONAME, RTLD_NOW | RTLD_LOCAL);
		if (dl)
			return dl;
	}
	return NULL;
}

int nvml_open(const char *library, const char *driver_root, struct nvml **ret, struct gerr *err)
{
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	char tried[1024];
	nvmlReturn_t r;
	int k;

	nv = calloc(1, sizeof(*nv));
	if (!nv)
		return gerr_set(err, ENOMEM, "out of memory");
	if (library && *library) {
		snprintf(nv->path, sizeof(nv->path), "%s", library);
		nv->dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
		if (!nv->dl)
			return gerr_set(err, ELIBACC,
					"cannot load the NVML library %s given by --nvml-library/GPULET_NVML_LIBRARY "
					"(%s); point it at the driver's libnvidia-ml.so.1",
					library, dlerror());
	} else {
		nv->dl = nvml_dlopen_search(driver_root, nv->path, sizeof(nv->path), tried, sizeof(tried));
		if (!nv->dl)
			return gerr_set(err, ELIBACC,
					"the NVIDIA driver library " NVML_SONAME " was not found (looked in %s and "
					"the other library directories under driver root %s%s); install the NVIDIA "
					"driver on this node, or set --driver-root to where the driver container "
					"mounts it (often /run/nvidia/driver)",
					tried, driver_root ? driver_root : "/",
					(!driver_root || streq(driver_root, "/")) ? ", and the system loader" : "");
	}
	k = nvml_resolve(nv, err);
	if (k < 0)
		return k;
	r = nv->init();
	if (r != NVML_SUCCESS)
		return gerr_set(
		    err, -nvml_errno(r), "NVML from %s failed to initialize: %s (%s); %s", nv->path,
		    nvml_strerror(nv, r), nvml_return_name(r),
		    r == NVML_ERROR_DRIVER_NOT_LOADED
			? "the kernel module is not loaded: run 'modprobe nvidia' or check dmesg for NVRM errors"
		    : r == NVML_ERROR_LIB_RM_VERSION_MISMATCH
			? "the user-space library and the kernel module differ in version: reboot or reload the driver "
			  "after an upgrade"
		    : r == NVML_ERROR_NO_PERMISSION ? "run as root or give access to /dev/nvidiactl"
						    : "check 'nvidia-smi' on the node and the kernel log");
	nv->initialized = 1;
	*ret = TAKE_PTR(nv);
	return 0;
}

void nvml_close(struct nvml *nv)
{
	if (!nv)
		return;
	if (nv->initialized && nv->shutdown)
		nv->shutdown();
	if (nv->dl)
		dlclose(nv->dl);
	free(nv);
}

int nvml_open_host(const struct host_paths *h, struct nvml **ret, struct gerr *err)
{
	return nvml_open(h->nvml_library, h->nvml_dir, ret, err);
}

/*
 * nvmlSetMemoryLimits_v1_t of nvml.h (R580 and newer; go-nvml v0.13.4-1 pkg/nvml/nvml.h): not in our
 * symbol table, whose rows are checked against the 535 nvml.h that has no such type.
 */
struct nvml_set_memory_limits_v1 {
	const char *name_space; /* the cgroup v2 directory's full path */
	unsigned long long soft_limit;
	unsigned long long hard_limit;
};

int nvml_set_memory_limits(struct nvml *nv, const char *uuid, const char *cgroup, unsigned long long soft,
			   unsigned long long hard, struct gerr *err)
{
	nvmlReturn_t (*set)(nvmlDevice_t, struct nvml_set_memory_limits_v1 *);
	struct nvml_set_memory_limits_v1 lim = {cgroup, soft, hard};
	nvmlDevice_t dev = NULL;
	nvmlReturn_t r;

	*(void **)&set = dlsym(nv->dl, "nvmlDeviceSetMemoryLimits_v1");
	if (!set || !nv->device_get_handle_by_uuid)
		return gerr_set(err, ENOSYS,
				"%s has no nvmlDeviceSetMemoryLimits_v1: this driver cannot limit a container's GPU "
				"memory (a newer driver can); unset the container's GPU memory variables",
				nv->path);
	r = nv->device_get_handle_by_uuid(uuid, &dev);
	if (r != NVML_SUCCESS)
		return gerr_set(err, -nvml_errno(r), "GPU %s: %s (%s)", uuid, nvml_strerror(nv, r),
				nvml_return_name(r));
	r = set(dev, &lim);
	if (r != NVML_SUCCESS)
		return gerr_set(err, -nvml_errno(r), "GPU %s: setting memory limits for cgroup %s: %s (%s)", uuid,
				cgroup, nvml_strerror(nv, r), nvml_return_name(r));
	return 0;
}
