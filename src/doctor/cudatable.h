/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Version tables kept as data, each row with its source:
 * - CUDA toolkit → minimum Linux driver (docs/reference/cuda-driver-table.md: CUDA release notes
 *   Table 3 "toolkit-bundled driver" and Table 2 "minor-version compatibility").
 * - driver branch → minimum nvidia-container-toolkit (libraries the toolkit must know to inject).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* "12.4", "12.4.1", "cuda>=12.4" → 12040 (major*1000 + minor*10). -EINVAL when unparsable. */
int cuda_version_parse(const char *s, int *ret);
/* 12040 → "12.4" */
void cuda_version_format(int v, char *buf, size_t size);

/* Compare dotted numeric versions ("550.54.15" vs "535.104.05"): <0, 0, >0. Missing parts are 0. */
int version_cmp(const char *a, const char *b);

struct cuda_row {
	int cuda;               /* 12040 */
	const char *min_driver; /* bundled/GA driver: everything in this CUDA works ("550.54.14") */
	const char *source;
};

struct cuda_compat_row {
	int major;              /* 12 */
	const char *min_driver; /* minor-version compatibility floor ("525.60.13") */
	const char *max_driver; /* exclusive upper bound of the branch family, NULL none */
	const char *source;
};

/* Row for the CUDA major.minor (exact, or the nearest lower minor of the same major). NULL unknown. */
const struct cuda_row *cuda_row_for(int cuda);
const struct cuda_compat_row *cuda_compat_for(int major);
/* Highest CUDA whose bundled driver is <= driver_version (what the driver fully supports), 0 unknown. */
int cuda_max_for_driver(const char *driver_version);

enum cuda_verdict {
	CUDA_OK,             /* the driver supports this CUDA */
	CUDA_MINOR_COMPAT,   /* runs through minor-version compatibility; newer features/PTX JIT may fail */
	CUDA_DRIVER_TOO_OLD, /* "CUDA driver version is insufficient for CUDA runtime version" */
	CUDA_UNKNOWN,
};
/*
 * Does a driver run code built with CUDA `cuda`? driver_cuda is what NVML reports
 * (nvmlSystemGetCudaDriverVersion, 0 unknown), driver_version the driver string ("" unknown).
 * why gets one sentence with the numbers and the table row used.
 */
enum cuda_verdict cuda_check(int cuda, int driver_cuda, const char *driver_version, char *why, size_t size);

struct toolkit_row {
	const char *driver_min;  /* driver branch from which this applies ("535") */
	const char *toolkit_min; /* minimum nvidia-container-toolkit ("1.14.0") */
	const char *what;        /* what an older toolkit misses */
	const char *source;
};
extern const struct toolkit_row toolkit_rows[];
extern const size_t toolkit_n_rows;
/* Strictest row that applies to driver_version and that toolkit_version fails; NULL when fine/unknown. */
const struct toolkit_row *toolkit_too_old(const char *driver_version, const char *toolkit_version);
