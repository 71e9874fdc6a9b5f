/* SPDX-License-Identifier: Apache-2.0 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/enumtab.h"
#include "util/fileio.h"
#include "nvml/nvml.h"

#define NVML_SONAME "libnvidia-ml.so.1"

/*
 * Directories below the driver root where distributions and the NVIDIA driver container put the
 * library (the same places the NVIDIA device plugin and nvidia-container-toolkit look).
 */
const char *const nvml_search_dirs[] = {
    "usr/lib64",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib",
    "lib",
    NULL,
};

/* NVML return code -> errno and name. Errno chosen so that callers can branch on meaning. */
static const struct {
	nvmlReturn_t value;
	int errnum;
	const char *name;
} nvml_codes[] = {
    {NVML_SUCCESS, 0, "SUCCESS"},
    {NVML_ERROR_UNINITIALIZED, EBADF, "UNINITIALIZED"},
    {NVML_ERROR_INVALID_ARGUMENT, EINVAL, "INVALID_ARGUMENT"},
    {NVML_ERROR_NOT_SUPPORTED, EOPNOTSUPP, "NOT_SUPPORTED"},
    {NVML_ERROR_NO_PERMISSION, EACCES, "NO_PERMISSION"},
    {NVML_ERROR_ALREADY_INITIALIZED, EALREADY, "ALREADY_INITIALIZED"},
    {NVML_ERROR_NOT_FOUND, ENOENT, "NOT_FOUND"},
    {NVML_ERROR_INSUFFICIENT_SIZE, ENOBUFS, "INSUFFICIENT_SIZE"},
    {NVML_ERROR_INSUFFICIENT_POWER, EIO, "INSUFFICIENT_POWER"},
    {NVML_ERROR_DRIVER_NOT_LOADED, ENXIO, "DRIVER_NOT_LOADED"},
    {NVML_ERROR_TIMEOUT, ETIMEDOUT, "TIMEOUT"},
    {NVML_ERROR_IRQ_ISSUE, EIO, "IRQ_ISSUE"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, ELIBACC, "LIBRARY_NOT_FOUND"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, ENOSYS, "FUNCTION_NOT_FOUND"},
    {NVML_ERROR_CORRUPTED_INFOROM, EIO, "CORRUPTED_INFOROM"},
    {NVML_ERROR_GPU_IS_LOST, ENODEV, "GPU_IS_LOST"},
    {NVML_ERROR_RESET_REQUIRED, EIO, "RESET_REQUIRED"},
    {NVML_ERROR_OPERATING_SYSTEM, EPERM, "OPERATING_SYSTEM"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, EPROTO, "LIB_RM_VERSION_MISMATCH"},
    {NVML_ERROR_IN_USE, EBUSY, "IN_USE"},
    {NVML_ERROR_MEMORY, ENOMEM, "MEMORY"},
    {NVML_ERROR_NO_DATA, ENODATA, "NO_DATA"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, EOPNOTSUPP, "VGPU_ECC_NOT_SUPPORTED"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, EAGAIN, "INSUFFICIENT_RESOURCES"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, EOPNOTSUPP, "FREQ_NOT_SUPPORTED"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, EPROTO, "ARGUMENT_VERSION_MISMATCH"},
    {NVML_ERROR_DEPRECATED, EOPNOTSUPP, "DEPRECATED"},
    {NVML_ERROR_NOT_READY, EAGAIN, "NOT_READY"},
    {NVML_ERROR_GPU_NOT_FOUND, ENODEV, "GPU_NOT_FOUND"},
    {NVML_ERROR_INVALID_STATE, EINVAL, "INVALID_STATE"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, EOPNOTSUPP, "RESET_TYPE_NOT_SUPPORTED"},
    {NVML_ERROR_UNKNOWN, EIO, "UNKNOWN"},
};

int nvml_errno(nvmlReturn_t r)
{
	typeof(&nvml_codes[0]) row = enum_row(nvml_codes, r);

	return row ? -row->errnum : -EIO;
}

const char *nvml_return_name(nvmlReturn_t r)
{
	return enum_to_name(nvml_codes, r, "UNKNOWN");
}

int nvml_return_from_name(const char *name, nvmlReturn_t *ret)
{
	return enum_from_name(nvml_codes, name, ret);
}

const char *nvml_strerror(const struct nvml *nv, nvmlReturn_t r)
{
	const char *s = NULL;

	if (nv && nv->error_string)
		s = nv->error_string(r);
	return s ? s : nvml_return_name(r);
}

static const struct {
	const char *symbol;
	size_t offset;
	int required;
} nvml_symbol_table[] = {
#define NVML_ROW(field, sym, args, req) {sym, offsetof(struct nvml, field), req},
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

/* Try each search directory below the driver root; the first library that dlopens wins. */
static void *nvml_dlopen_search(const char *driver_root, char *path, size_t size, char *tried, size_t tsize)
{
	void *dl;

	tried[0] = 0;
	for (size_t i = 0; nvml_search_dirs[i]; i++) {
		_cleanup_free_ char *dir = root_path(driver_root, nvml_search_dirs[i]);

		if (!dir)
			return NULL;
		snprintf(path, size, "%s/%s", dir, NVML_SONAME);
		if (access(path, F_OK) == 0) {
			dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
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
