/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in libcuda.so.1 for `gpulet probe` tests: the three driver-API entry points probe calls,
 * answering from the environment so a test can play each failure of the field guide:
 *   FAKE_CUDA_INIT             CUresult cuInit returns (default 0 = CUDA_SUCCESS; 35 insufficient
 *                              driver, 100 no device, 999 unknown)
 *   FAKE_CUDA_DRIVER_VERSION   what cuDriverGetVersion reports (default 12040 = CUDA 12.4)
 *   FAKE_CUDA_DEVICES          what cuDeviceGetCount reports (default 1)
 */
#include <stdlib.h>

static int env_int(const char *name, int fallback)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : fallback;
}

__attribute__((visibility("default"))) int cuInit(unsigned flags)
{
	(void)flags;
	return env_int("FAKE_CUDA_INIT", 0);
}

__attribute__((visibility("default"))) int cuDriverGetVersion(int *version)
{
	if (!version)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	*version = env_int("FAKE_CUDA_DRIVER_VERSION", 12040);
	return 0;
}

__attribute__((visibility("default"))) int cuDeviceGetCount(int *count)
{
	if (!count)
		return 1;
	*count = env_int("FAKE_CUDA_DEVICES", 1);
	return 0;
}
