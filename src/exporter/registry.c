/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metric registry: one row per DCGM field gpulet can give from NVML, with dcgm-exporter's
 * name, type and help (etc/default-counters.csv and etc/dcp-metrics-included.csv), where NVML has
 * the value (GPU, MIG instance, or the GPU's value shown on its instances) and the call or GPM
 * metric that samples it. docs/reference/dcgm-exporter.md has the table with units and the NVML
 * source of each row. Rows marked builtin are served without a collectors file: dcgm-exporter's
 * default set, plus the ECC, retired-page and row-remap rows that file ships commented out (the
 * field guide's alerts need them) and FB_TOTAL (the GPU Operator's recording rules read it).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* An NVML call with one unsigned result (NULL: the driver lacks it), times scale. */
static nvmlReturn_t one_uint(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *), nvmlDevice_t dev, double scale, double *ret)
{
	unsigned v;
	nvmlReturn_t r = fn ? fn(dev, &v) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = v * scale;
	return r;
}

/* NVML reports milliwatts; dcgm's field is watts. */
static nvmlReturn_t get_power(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	return one_uint(nv->device_get_power_usage, dev, 1 / 1000.0, ret);
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

/*
 * arg 0: free, 1: used, 2: total, 3: reserved; MiB as dcgm. nvmlDeviceGetMemoryInfo_v2 where the
 * driver has it (as DCGM on r510+: reserved is apart from used), else v1 (no reserved). MIG
 * handles report the instance's memory.
 */
static nvmlReturn_t get_fb(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned long long v[4];
	nvmlReturn_t r;
	if (nv->device_get_memory_info_v2) {
		nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
		r = nv->device_get_memory_info_v2(dev, &m);
		v[0] = m.free, v[1] = m.used, v[2] = m.total, v[3] = m.reserved;
	} else {
		nvmlMemory_t m = {0}; /* read below even when the symbol is missing */
		r = nv->device_get_memory_info ? nv->device_get_memory_info(dev, &m) : NVML_ERROR_FUNCTION_NOT_FOUND;
		if (arg == 3 && r == NVML_SUCCESS)
			r = NVML_ERROR_NOT_SUPPORTED;
		v[0] = m.free, v[1] = m.used, v[2] = m.total, v[3] = 0;
	}
	if (r == NVML_SUCCESS)
		*ret = (double)v[arg] / 1048576.0;
	return r;
}

/*
 * DCGM_FI_DEV_FB_USED_PERCENT as dcgm_fields.h defines it: used / (total - reserved), a ratio
 * 0.0-1.0, from the whole-MiB values DCGM keeps (reserved 0 where NVML has no v2).
 */
static nvmlReturn_t get_fb_used_ratio(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	double used, total, reserved = 0;
	nvmlReturn_t r = get_fb(nv, dev, 1, &used);
	if (r == NVML_SUCCESS)
		r = get_fb(nv, dev, 2, &total);
	if (r == NVML_SUCCESS && get_fb(nv, dev, 3, &reserved) != NVML_SUCCESS)
		reserved = 0;
	if (r != NVML_SUCCESS)
		return r;
	double room = trunc(total) - trunc(reserved);
	if (room <= 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*ret = trunc(used) / room;
	return NVML_SUCCESS;
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

/* Memory temperature: a field value (NVML_FI_DEV_MEMORY_TEMP), HBM boards only. */
static nvmlReturn_t get_field(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	nvmlFieldValue_t f = {.fieldId = (unsigned)arg};
	nvmlReturn_t r =
	    nv->device_get_field_values ? nv->device_get_field_values(dev, 1, &f) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r != NVML_SUCCESS)
		return r;
	if (f.nvmlReturn != NVML_SUCCESS)
		return f.nvmlReturn;
	switch (f.valueType) {
	case NVML_VALUE_TYPE_DOUBLE:
		*ret = f.value.dVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_INT:
		*ret = f.value.uiVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG:
		*ret = (double)f.value.ulVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		*ret = (double)f.value.ullVal;
		break;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		*ret = (double)f.value.sllVal;
		break;
	default:
		return NVML_ERROR_UNKNOWN;
	}
	return NVML_SUCCESS;
}

/*
 * NVLink data counters, RX + TX, in KiB (a counter; EXP_SCOPE_RATE makes it MiB/s), as DCGM reads
 * them: arg -1 all links (scopeId UINT_MAX), else that link. A link the GPU does not have answers
 * INVALID_ARGUMENT in its field: no value, not a failure (docs/reference/dcgm-exporter.md §8).
 */
static nvmlReturn_t get_nvlink(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	double rx, tx;
	unsigned scope = arg < 0 ? 0xffffffffu : (unsigned)arg;
	nvmlFieldValue_t f[2] = {{.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = scope},
				 {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = scope}};
	nvmlReturn_t r =
	    nv->device_get_field_values ? nv->device_get_field_values(dev, 2, f) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r != NVML_SUCCESS)
		return r;
	r = f[0].nvmlReturn != NVML_SUCCESS ? f[0].nvmlReturn : f[1].nvmlReturn;
	if (r == NVML_ERROR_INVALID_ARGUMENT && arg >= 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (r != NVML_SUCCESS)
		return r;
	rx = (double)f[0].value.ullVal;
	tx = (double)f[1].value.ullVal;
	*ret = rx + tx;
	return NVML_SUCCESS;
}

static nvmlReturn_t get_energy(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned long long mj;
	nvmlReturn_t r = nv->device_get_total_energy_consumption ? nv->device_get_total_energy_consumption(dev, &mj)
								 : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = (double)mj;
	return r;
}

static nvmlReturn_t get_replay(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	return one_uint(nv->device_get_pcie_replay_counter, dev, 1, ret);
}

/* arg 0: encoder, 1: decoder utilisation in % */
static nvmlReturn_t get_codec(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned u, period;
	nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *, unsigned *) =
	    arg ? nv->device_get_decoder_utilization : nv->device_get_encoder_utilization;
	nvmlReturn_t r = fn ? fn(dev, &u, &period) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = u;
	return r;
}

/* PCIe throughput: NVML's KiB/s over a 20 ms window -> bytes/s (the GPM value is preferred) */
static nvmlReturn_t get_pcie(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned kib;
	nvmlReturn_t r = nv->device_get_pcie_throughput ? nv->device_get_pcie_throughput(dev, arg, &kib)
							: NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = kib * 1024.0;
	return r;
}

static nvmlReturn_t get_retired_pending(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	nvmlEnableState_t p;
	nvmlReturn_t r = nv->device_get_retired_pages_pending_status
			     ? nv->device_get_retired_pages_pending_status(dev, &p)
			     : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = p == NVML_FEATURE_ENABLED;
	return r;
}

/* P-state: 0 (max performance) .. 15; NVML's 32 (unknown) is no value */
static nvmlReturn_t get_pstate(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	nvmlPstates_t p;
	nvmlReturn_t r = nv->device_get_performance_state ? nv->device_get_performance_state(dev, &p)
							  : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS && (p < 0 || p > 15))
		return NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		*ret = p;
	return r;
}

/* milliwatts -> watts, as DCGM_FI_DEV_POWER_USAGE */
static nvmlReturn_t get_power_limit(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	return one_uint(nv->device_get_enforced_power_limit, dev, 1 / 1000.0, ret);
}

/* The clocks event (throttle) reason bitmask: NVML's and DCGM's bits are the same */
static nvmlReturn_t get_clock_reasons(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	unsigned long long m;
	nvmlReturn_t r = nv->device_get_current_clocks_throttle_reasons
			     ? nv->device_get_current_clocks_throttle_reasons(dev, &m)
			     : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = (double)m;
	return r;
}

/* arg: NVML_PERF_POLICY_*; ns held below application clocks since boot */
static nvmlReturn_t get_violation(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret)
{
	nvmlViolationTime_t t;
	nvmlReturn_t r = nv->device_get_violation_status ? nv->device_get_violation_status(dev, arg, &t)
							 : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		*ret = (double)t.violationTime;
	return r;
}

#define ECC(type, counter) (((type) << 1) | (counter))
#define G                  EXP_SCOPE_GPU
#define GI                 (EXP_SCOPE_GPU | EXP_SCOPE_INHERIT)
#define GM                 (EXP_SCOPE_GPU | EXP_SCOPE_MIG)
#define PCT                0.01      /* GPM percent -> DCGM ratio */
#define MIBS               1048576.0 /* GPM MiB/s -> DCGM bytes/s */

#define NVLINK_LINK(n)                                                                                                 \
	[EXP_NVLINK_BANDWIDTH_L0 + (n)] = {"DCGM_FI_DEV_NVLINK_BANDWIDTH_L" #n,                                        \
					   "counter",                                                                  \
					   "The number of bytes of active NVLink rx or tx data including both header " \
					   "and payload.",                                                             \
					   GI | EXP_SCOPE_RATE,                                                        \
					   get_nvlink,                                                                 \
					   (n)},
#define NVLINK_LINKS(X) \
	X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17)
_Static_assert(EXP_NVLINK_LINKS == 18, "NVLINK_LINKS names every per-link row");

/* name, type, help as dcgm-exporter's CSV; scope; getter, arg; GPM metric, scale; builtin */
const struct exp_metric_def exp_metrics[EXP_METRIC_COUNT] = {
    [EXP_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", GI, get_clock, NVML_CLOCK_SM,
		      .builtin = true},
    [EXP_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", GI, get_clock,
		       NVML_CLOCK_MEM, .builtin = true},
    [EXP_MEMORY_TEMP] = {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", GI, get_field,
			 NVML_FI_DEV_MEMORY_TEMP, .builtin = true},
    [EXP_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", GI, get_temp, 0, .builtin = true},
    [EXP_POWER_USAGE] = {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", GI, get_power, 0, .builtin = true,
			 .fp = true},
    [EXP_TOTAL_ENERGY] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
			  "Total energy consumption since boot (in mJ).", GI, get_energy, 0, .builtin = true},
    [EXP_PCIE_REPLAY] = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", GI, get_replay,
			 0, .builtin = true},
    /* MIG handles answer NOT_SUPPORTED on real drivers (dcgm-exporter #3, #50): no instance series */
    [EXP_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", GM, get_util, 0, .builtin = true},
    [EXP_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", GM, get_util, 1,
			   .builtin = true},
    [EXP_ENC_UTIL] = {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", GM, get_codec, 0,
		      .builtin = true},
    [EXP_DEC_UTIL] = {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", GM, get_codec, 1,
		      .builtin = true},
    [EXP_FB_FREE] = {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", GM, get_fb, 0,
		     .builtin = true},
    [EXP_FB_USED] = {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", GM, get_fb, 1,
		     .builtin = true},
    [EXP_FB_RESERVED] = {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", GM, get_fb, 3,
			 .builtin = true},
    [EXP_FB_TOTAL] = {"DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).", GM, get_fb, 2,
		      .builtin = true},
    [EXP_ECC_SBE_VOL] = {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
			 GI, get_ecc, ECC(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), .builtin = true},
    [EXP_ECC_DBE_VOL] = {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
			 GI, get_ecc, ECC(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), .builtin = true},
    [EXP_ECC_SBE_AGG] = {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter",
			 "Total number of single-bit persistent ECC errors.", GI, get_ecc,
			 ECC(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), .builtin = true},
    [EXP_ECC_DBE_AGG] = {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter",
			 "Total number of double-bit persistent ECC errors.", GI, get_ecc,
			 ECC(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), .builtin = true},
    [EXP_RETIRED_SBE] = {"DCGM_FI_DEV_RETIRED_SBE", "counter",
			 "Total number of retired pages due to single-bit errors.", GI, get_retired,
			 NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, .builtin = true},
    [EXP_RETIRED_DBE] = {"DCGM_FI_DEV_RETIRED_DBE", "counter",
			 "Total number of retired pages due to double-bit errors.", GI, get_retired,
			 NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, .builtin = true},
    [EXP_RETIRED_PENDING] = {"DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.", GI,
			     get_retired_pending, 0, .builtin = true},
    /* DCGM publishes the growth of the RX+TX KiB counters per second / 1000, typed counter in the CSV */
    [EXP_NVLINK_BANDWIDTH_TOTAL] = {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
				    "Total number of NVLink bandwidth counters for all lanes.", GI | EXP_SCOPE_RATE,
				    get_nvlink, -1, .builtin = true},
    [EXP_UNCORRECTABLE_REMAPPED_ROWS] = {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
					 "Number of remapped rows for uncorrectable errors", GI, get_remap, 1,
					 .builtin = true},
    [EXP_CORRECTABLE_REMAPPED_ROWS] = {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
				       "Number of remapped rows for correctable errors", GI, get_remap, 0,
				       .builtin = true},
    [EXP_ROW_REMAP_FAILURE] = {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", GI,
			       get_remap, 2, .builtin = true},
    /* DCP fields from NVML's GPM (Hopper and newer); per MIG instance through nvmlGpmMigSampleGet */
    [EXP_PROF_GR_ENGINE_ACTIVE] = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
				   "Ratio of time the graphics engine is active.", GM, NULL, 0,
				   NVML_GPM_METRIC_GRAPHICS_UTIL, PCT, true, .fp = true},
    [EXP_PROF_SM_ACTIVE] = {"DCGM_FI_PROF_SM_ACTIVE", "gauge",
			    "The ratio of cycles an SM has at least 1 warp assigned.", GM, NULL, 0,
			    NVML_GPM_METRIC_SM_UTIL, PCT, false, .fp = true},
    [EXP_PROF_SM_OCCUPANCY] = {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.",
			       GM, NULL, 0, NVML_GPM_METRIC_SM_OCCUPANCY, PCT, false, .fp = true},
    [EXP_PROF_PIPE_TENSOR_ACTIVE] = {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
				     "Ratio of cycles the tensor (HMMA) pipe is active.", GM, NULL, 0,
				     NVML_GPM_METRIC_ANY_TENSOR_UTIL, PCT, true, .fp = true},
    [EXP_PROF_DRAM_ACTIVE] = {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
			      "Ratio of cycles the device memory interface is active sending or receiving data.", GM,
			      NULL, 0, NVML_GPM_METRIC_DRAM_BW_UTIL, PCT, true, .fp = true},
    [EXP_PROF_PIPE_FP64_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge",
				   "Ratio of cycles the fp64 pipes are active.", GM, NULL, 0, NVML_GPM_METRIC_FP64_UTIL,
				   PCT, false, .fp = true},
    [EXP_PROF_PIPE_FP32_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge",
				   "Ratio of cycles the fp32 pipes are active.", GM, NULL, 0, NVML_GPM_METRIC_FP32_UTIL,
				   PCT, false, .fp = true},
    [EXP_PROF_PIPE_FP16_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge",
				   "Ratio of cycles the fp16 pipes are active.", GM, NULL, 0, NVML_GPM_METRIC_FP16_UTIL,
				   PCT, false, .fp = true},
    /* PCIe: GPM where the GPU has it, else nvmlDeviceGetPcieThroughput; a device-wide value */
    [EXP_PROF_PCIE_TX_BYTES] = {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
				"The rate of data transmitted over the PCIe bus - including both protocol headers and "
				"data payloads - in bytes per second.",
				GI, get_pcie, NVML_PCIE_UTIL_TX_BYTES, NVML_GPM_METRIC_PCIE_TX_PER_SEC, MIBS, true},
    [EXP_PROF_PCIE_RX_BYTES] = {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
				"The rate of data received over the PCIe bus - including both protocol headers and "
				"data payloads - in bytes per second.",
				GI, get_pcie, NVML_PCIE_UTIL_RX_BYTES, NVML_GPM_METRIC_PCIE_RX_PER_SEC, MIBS, true},
    [EXP_PROF_NVLINK_TX_BYTES] = {"DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge",
				  "The rate of data transmitted over NVLink, not including protocol headers, in bytes "
				  "per second.",
				  GI, NULL, 0, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, MIBS, false},
    [EXP_PROF_NVLINK_RX_BYTES] = {"DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge",
				  "The rate of data received over NVLink, not including protocol headers, in bytes per "
				  "second.",
				  GI, NULL, 0, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, MIBS, false},
    /* issue 24; help as dcgm-exporter's CSVs where they list the field, else ours */
    [EXP_CLOCKS_EVENT_REASONS] = {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge",
				  "Current clock event (throttle) reasons, a bitmask.", GI, get_clock_reasons, 0},
    [EXP_PSTATE] = {"DCGM_FI_DEV_PSTATE", "gauge", "Performance state (P-state) 0-15, 0 the highest.", GI, get_pstate,
		    0},
    [EXP_ENFORCED_POWER_LIMIT] = {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Enforced power limit (in W).", GI,
				  get_power_limit, 0, .fp = true},
    [EXP_POWER_VIOLATION] = {"DCGM_FI_DEV_POWER_VIOLATION", "counter",
			     "Throttling duration due to power constraints (in ns).", GI, get_violation,
			     NVML_PERF_POLICY_POWER},
    [EXP_THERMAL_VIOLATION] = {"DCGM_FI_DEV_THERMAL_VIOLATION", "counter",
			       "Throttling duration due to thermal constraints (in ns).", GI, get_violation,
			       NVML_PERF_POLICY_THERMAL},
    [EXP_SYNC_BOOST_VIOLATION] = {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter",
				  "Throttling duration due to sync-boost constraints (in ns).", GI, get_violation,
				  NVML_PERF_POLICY_SYNC_BOOST},
    [EXP_BOARD_LIMIT_VIOLATION] = {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter",
				   "Throttling duration due to board limit constraints (in ns).", GI, get_violation,
				   NVML_PERF_POLICY_BOARD_LIMIT},
    [EXP_LOW_UTIL_VIOLATION] = {"DCGM_FI_DEV_LOW_UTIL_VIOLATION", "counter",
				"Throttling duration due to low utilization (in ns).", GI, get_violation,
				NVML_PERF_POLICY_LOW_UTILIZATION},
    [EXP_RELIABILITY_VIOLATION] = {"DCGM_FI_DEV_RELIABILITY_VIOLATION", "counter",
				   "Throttling duration due to reliability constraints (in ns).", GI, get_violation,
				   NVML_PERF_POLICY_RELIABILITY},
    [EXP_NVLINK_CRC_FLIT_ERRORS] = {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
				    "Total number of NVLink flow-control CRC errors.", GI, get_field,
				    NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL},
    [EXP_NVLINK_CRC_DATA_ERRORS] = {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter",
				    "Total number of NVLink data CRC errors.", GI, get_field,
				    NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL},
    [EXP_NVLINK_REPLAY_ERRORS] = {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter",
				  "Total number of NVLink retries.", GI, get_field,
				  NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL},
    [EXP_NVLINK_RECOVERY_ERRORS] = {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter",
				    "Total number of NVLink recovery errors.", GI, get_field,
				    NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL},
    [EXP_FB_USED_PERCENT] = {"DCGM_FI_DEV_FB_USED_PERCENT", "gauge",
			     "Ratio of framebuffer memory used, used / (total - reserved), 0.0-1.0.", GM,
			     get_fb_used_ratio, 0, .fp = true},
    /* per link: the growth of that link's RX+TX KiB per second / 1000, as the total (DCGM's cache manager) */
    NVLINK_LINKS(NVLINK_LINK)};

/* Legacy DCGM names a collectors file may use for a row; the series keep the file's name. */
static const struct {
	const char *alias;
	int metric;
} exp_aliases[] = {
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", EXP_CLOCKS_EVENT_REASONS},
};

/* DCGM 4's name of a per-link row: DCGM_FI_DEV_NVLINK_THROUGHPUT_L<n> (BANDWIDTH_L<n> is its old one). */
static int nvlink_throughput_alias(const char *name)
{
	for (int k = 0; k < EXP_NVLINK_LINKS; k++) {
		char alias[48];
		snprintf(alias, sizeof(alias), "DCGM_FI_DEV_NVLINK_THROUGHPUT_L%d", k);
		if (streq(alias, name))
			return EXP_NVLINK_BANDWIDTH_L0 + k;
	}
	return -1;
}

int exp_metric_by_name(const char *name)
{
	for (int i = 0; i < EXP_METRIC_COUNT; i++)
		if (streq(exp_metrics[i].name, name))
			return i;
	for (size_t k = 0; k < ELEMENTSOF(exp_aliases); k++)
		if (streq(exp_aliases[k].alias, name))
			return exp_aliases[k].metric;
	return nvlink_throughput_alias(name);
}
