/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metric registry: one row per metric, dcgm-exporter's field name and type, its help text,
 * where NVML has the value (GPU, MIG instance) and the call that samples it. Names and types come
 * from dcgm-exporter etc/default-counters.csv (docs/reference/monitoring-doctor.md A1); the ECC,
 * retired-page and row-remap rows are the ones that file ships commented out, turned on here
 * because the field guide's alerts need them. FB_TOTAL is not in dcgm's file but the GPU Operator's
 * recording rules read it (A6).
 */
#include "exporter/exporter.h"

/* NVML_CLOCK_* (arg) in MHz */
static nvmlReturn_t get_clock(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned mhz;
	nvmlReturn_t r =
	    nv->device_get_clock_info ? nv->device_get_clock_info(dev, arg, &mhz) : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = mhz;
	return r;
}

static nvmlReturn_t get_temp(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned c;
	nvmlReturn_t r = nv->device_get_temperature ? nv->device_get_temperature(dev, NVML_TEMPERATURE_GPU, &c)
						    : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = c;
	return r;
}

/* NVML reports milliwatts; dcgm's field is watts. */
static nvmlReturn_t get_power(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned mw;
	nvmlReturn_t r = nv->device_get_power_usage ? nv->device_get_power_usage(dev, &mw) : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = mw / 1000.0;
	return r;
}

/* arg 0: gpu %, 1: memory (copy engine) % */
static nvmlReturn_t get_util(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	nvmlUtilization_t u;
	nvmlReturn_t r =
	    nv->device_get_utilization_rates ? nv->device_get_utilization_rates(dev, &u) : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = arg ? u.memory : u.gpu;
	return r;
}

/* arg 0: free, 1: used, 2: total; MiB as dcgm (MIG handles report the instance's memory) */
static nvmlReturn_t get_fb(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	nvmlMemory_t m;
	nvmlReturn_t r = nv->device_get_memory_info ? nv->device_get_memory_info(dev, &m) : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = (double)(arg == 0 ? m.free : arg == 1 ? m.used : m.total) / 1048576.0;
	return r;
}

/* arg: (error type << 1) | counter type */
static nvmlReturn_t get_ecc(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned long long n;
	nvmlReturn_t r = nv->device_get_total_ecc_errors ? nv->device_get_total_ecc_errors(dev, arg >> 1, arg & 1, &n)
							 : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = (double)n;
	return r;
}

/* arg: NVML_PAGE_RETIREMENT_CAUSE_*; a NULL address array asks for the count only */
static nvmlReturn_t get_retired(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned count = 0;
	nvmlReturn_t r = nv->device_get_retired_pages ? nv->device_get_retired_pages(dev, arg, &count, NULL)
						      : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
		*ret = count;
		return NVML_SUCCESS;
	}
	return r;
}

/* arg 0: correctable rows, 1: uncorrectable rows, 2: remap failure (0/1); Ampere and newer */
static nvmlReturn_t get_remap(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned corr, unc, pending, failure;
	nvmlReturn_t r = nv->device_get_remapped_rows
			     ? nv->device_get_remapped_rows(dev, &corr, &unc, &pending, &failure)
			     : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = arg == 0 ? corr : arg == 1 ? unc : failure;
	return r;
}

#define ECC(type, counter) (((type) << 1) | (counter))
#define G                  EXP_SCOPE_GPU
#define GM                 (EXP_SCOPE_GPU | EXP_SCOPE_MIG)

const struct exp_metric_def exp_metrics[EXP_METRIC_COUNT] = {
    [EXP_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", G, get_clock, NVML_CLOCK_SM},
    [EXP_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", G, get_clock,
		       NVML_CLOCK_MEM},
    [EXP_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", G, get_temp, 0},
    [EXP_POWER_USAGE] = {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", G, get_power, 0},
    /* MIG handles answer NOT_SUPPORTED on real drivers (dcgm-exporter #3, #50): then no series */
    [EXP_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", GM, get_util, 0},
    [EXP_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", GM, get_util, 1},
    [EXP_FB_FREE] = {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", GM, get_fb, 0},
    [EXP_FB_USED] = {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", GM, get_fb, 1},
    [EXP_FB_TOTAL] = {"DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).", GM, get_fb, 2},
    [EXP_ECC_SBE_VOL] = {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
			 G, get_ecc, ECC(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC)},
    [EXP_ECC_DBE_VOL] = {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
			 G, get_ecc, ECC(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC)},
    [EXP_ECC_SBE_AGG] = {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter",
			 "Total number of single-bit persistent ECC errors.", G, get_ecc,
			 ECC(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC)},
    [EXP_ECC_DBE_AGG] = {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter",
			 "Total number of double-bit persistent ECC errors.", G, get_ecc,
			 ECC(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC)},
    [EXP_RETIRED_SBE] = {"DCGM_FI_DEV_RETIRED_SBE", "counter",
			 "Total number of retired pages due to single-bit errors.", G, get_retired,
			 NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS},
    [EXP_RETIRED_DBE] = {"DCGM_FI_DEV_RETIRED_DBE", "counter",
			 "Total number of retired pages due to double-bit errors.", G, get_retired,
			 NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR},
    [EXP_CORRECTABLE_REMAPPED_ROWS] = {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
				       "Number of remapped rows for correctable errors.", G, get_remap, 0},
    [EXP_UNCORRECTABLE_REMAPPED_ROWS] = {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
					 "Number of remapped rows for uncorrectable errors.", G, get_remap, 1},
    [EXP_ROW_REMAP_FAILURE] = {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed.", G,
			       get_remap, 2},
};
