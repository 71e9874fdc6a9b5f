/* SPDX-License-Identifier: Apache-2.0 */
/* NVML return codes: errno, names, texts (one table). The loader is in open.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/enumtab.h"
#include "util/fileio.h"
#include "nvml/nvml.h"

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
