/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/cudatable.h"
#include "util/macro.h"

#define RN "CUDA Toolkit Release Notes, Table 3 (docs/reference/cuda-driver-table.md)"

/* Newest first. GA rows: an update's own driver is only needed for that update's fixes. */
static const struct cuda_row cuda_rows[] = {
    {13020, "595.45.04", RN}, {13010, "590.44.01", RN}, {13000, "580.65.06", RN}, {12090, "575.51.03", RN},
    {12080, "570.26", RN},    {12060, "560.28.03", RN}, {12050, "555.42.02", RN}, {12040, "550.54.14", RN},
    {12030, "545.23.06", RN}, {12020, "535.54.03", RN}, {12010, "530.30.02", RN}, {12000, "525.60.13", RN},
    {11080, "520.61.05", RN}, {11070, "515.43.04", RN}, {11060, "510.39.01", RN}, {11050, "495.29.05", RN},
    {11040, "470.42.01", RN}, {11030, "465.19.01", RN}, {11020, "460.27.03", RN}, {11010, "455.23", RN},
    {11000, "450.36.06", RN}, {10020, "440.33", RN},    {10010, "418.39", RN},    {10000, "410.48", RN},
    {9020, "396.26", RN},     {9010, "390.46", RN},     {9000, "384.81", RN},     {8000, "367.48", RN},
    {7050, "352.31", RN},     {7000, "346.46", RN},
};

#define RN2 "CUDA Toolkit Release Notes, Table 2, minor version compatibility (docs/reference/cuda-driver-table.md)"
static const struct cuda_compat_row compat_rows[] = {
    {13, "580", NULL, RN2},
    {12, "525.60.13", "580", RN2},
    {11, "450.80.02", "525", RN2},
};

const struct toolkit_row toolkit_rows[] = {
    /* the field guide's case (driver 550 + toolkit 1.11: libcuda not found in the container) is covered here */
    {"535", "1.14.0", "the Shared Compiler Library libnvidia-gpucomp.so is not injected, so CUDA fails in containers",
     "nvidia-container-toolkit CHANGELOG 1.14.0~rc.2; field guide §2.1 (550 with toolkit 1.11)"},
    {"525", "1.12.1", "only one gsp*.bin GSP firmware file is injected; GPUs needing the others fail to initialise",
     "nvidia-container-toolkit CHANGELOG v1.12.1 (include all gsp*.bin firmware files)"},
};
const size_t toolkit_n_rows = ELEMENTSOF(toolkit_rows);

int cuda_version_parse(const char *s, int *ret)
{
	unsigned long maj, min = 0;
	char *e;

	if (!s)
		return -EINVAL;
	while (*s && (*s < '0' || *s > '9'))
		s++; /* "cuda>=12.4", "v12.4" */
	if (!*s)
		return -EINVAL;
	maj = strtoul(s, &e, 10);
	if (*e == '.')
		min = strtoul(e + 1, &e, 10);
	if (maj == 0 || maj > 99 || min > 99)
		return -EINVAL;
	*ret = (int)(maj * 1000 + min * 10);
	return 0;
}

void cuda_version_format(int v, char *buf, size_t size)
{
	snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		unsigned long x = strtoul(a, (char **)&a, 10), y = strtoul(b, (char **)&b, 10);

		if (x != y)
			return x < y ? -1 : 1;
		while (*a && *a != '.')
			a++;
		while (*b && *b != '.')
			b++;
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
	}
	return 0;
}

const struct cuda_row *cuda_row_for(int cuda)
{
	for (size_t k = 0; k < ELEMENTSOF(cuda_rows); k++)
		if (cuda_rows[k].cuda <= cuda && cuda_rows[k].cuda / 1000 == cuda / 1000)
			return &cuda_rows[k];
	return NULL;
}

const struct cuda_compat_row *cuda_compat_for(int major)
{
	for (size_t k = 0; k < ELEMENTSOF(compat_rows); k++)
		if (compat_rows[k].major == major)
			return &compat_rows[k];
	return NULL;
}

int cuda_max_for_driver(const char *driver_version)
{
	if (!driver_version || !*driver_version)
		return 0;
	for (size_t k = 0; k < ELEMENTSOF(cuda_rows); k++)
		if (version_cmp(cuda_rows[k].min_driver, driver_version) <= 0)
			return cuda_rows[k].cuda;
	return 0;
}

enum cuda_verdict cuda_check(int cuda, int driver_cuda, const char *driver_version, char *why, size_t size)
{
	const struct cuda_row *row = cuda_row_for(cuda);
	const struct cuda_compat_row *cr = cuda_compat_for(cuda / 1000);
	char want[16], have[16];
	bool drv = driver_version && *driver_version;

	cuda_version_format(cuda, want, sizeof(want));
	if (!driver_cuda && drv)
		driver_cuda = cuda_max_for_driver(driver_version);
	cuda_version_format(driver_cuda, have, sizeof(have));
	if (driver_cuda >= cuda) {
		snprintf(why, size, "driver %s supports CUDA %s, the image needs %s", drv ? driver_version : "", have,
			 want);
		return CUDA_OK;
	}
	if (!driver_cuda && !drv) {
		snprintf(why, size, "driver version unknown; CUDA %s needs driver >= %s", want,
			 row ? row->min_driver : "?");
		return CUDA_UNKNOWN;
	}
	if (drv && cr && version_cmp(driver_version, cr->min_driver) >= 0 &&
	    (!cr->max_driver || version_cmp(driver_version, cr->max_driver) < 0 || driver_cuda / 1000 == cuda / 1000)) {
		snprintf(why, size,
			 "driver %s supports CUDA %s; CUDA %s apps run on it only through minor-version compatibility "
			 "(driver >= %s), without newer features or PTX JIT (%s)",
			 driver_version, have, want, cr->min_driver, cr->source);
		return CUDA_MINOR_COMPAT;
	}
	snprintf(why, size, "CUDA %s needs driver >= %s; the driver here is %s (supports CUDA %s) (%s)", want,
		 row ? row->min_driver : "?", drv ? driver_version : "of unknown version", have,
		 row ? row->source : RN);
	return CUDA_DRIVER_TOO_OLD;
}

const struct toolkit_row *toolkit_too_old(const char *driver_version, const char *toolkit_version)
{
	if (!driver_version || !*driver_version || !toolkit_version || !*toolkit_version)
		return NULL;
	for (size_t k = 0; k < toolkit_n_rows; k++)
		if (version_cmp(driver_version, toolkit_rows[k].driver_min) >= 0 &&
		    version_cmp(toolkit_version, toolkit_rows[k].toolkit_min) < 0)
			return &toolkit_rows[k];
	return NULL;
}
