/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DCGM_EXP_GPU_HEALTH_STATUS: the verdicts of DCGM's health watches, one series per GPU and watch, as
 * dcgm-exporter's gpu_health_collector.go serves them (labels health_watch and health_error_code, the
 * value DCGM's dcgmHealthWatchResults_t: 0 PASS, 10 WARN, 20 FAIL). gpulet runs the checks of DCGM's
 * health module (NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp) whose inputs NVML gives it: the XIDs
 * seen since the exporter started, by DCGM's table of XID to watch; volatile double-bit ECC errors, a
 * row remap failure and pending page retirements (MEM); NVML's recovery action (DRIVER); a GPU fallen
 * off the bus (ALL). The checks it cannot run are listed in docs/reference/dcgm-exporter.md section 9.
 */
#include <string.h>

#include "exporter/exporter.h"

/* dcgm-exporter's order of the watches it serves (gpuHealthChecks), with its names of them. */
const char *const exp_health_watch_names[EXP_HEALTH_WATCHES] = {
    [EXP_HW_PCIE] = "PCIE",   [EXP_HW_NVLINK] = "NVLINK", [EXP_HW_PMU] = "PMU",         [EXP_HW_MCU] = "MCU",
    [EXP_HW_MEM] = "MEM",     [EXP_HW_SM] = "SM",         [EXP_HW_INFOROM] = "INFOROM", [EXP_HW_THERMAL] = "THERMAL",
    [EXP_HW_POWER] = "POWER", [EXP_HW_DRIVER] = "DRIVER", [EXP_HW_ALL] = "ALL",
};

#define PASS 0
#define WARN 10
#define FAIL 20

/* NVML_DEVICE_ARCH_VOLTA: XID 93 (corrupt InfoROM) counts on Volta only, as DCGM's requiredArch */
#define ARCH_VOLTA 5

/*
 * DCGM's XIDs and what each means (BuildXidMappings: the "devastating" ones under ALL, the others
 * under their subsystem). The codes are dcgm-exporter's names of DCGM's failure reasons
 * (healthCheckErrorToStringMap: go-dcgm's older names, CLOCK_THROTTLE_* for CLOCKS_EVENT_*); DCGM's
 * CONTAINED_ERROR (131) is not in that map, which then writes DCGM_FR_UNKNOWN(131).
 */
static const struct {
	unsigned xid;
	enum exp_health_watch watch;
	unsigned char result;
	unsigned arch; /* 0: any */
	const char *code;
} xid_rows[] = {
    {48, EXP_HW_ALL, FAIL, 0, "DCGM_FR_XID_ERROR"},
    {74, EXP_HW_ALL, FAIL, 0, "DCGM_FR_XID_ERROR"},
    {79, EXP_HW_ALL, FAIL, 0, "DCGM_FR_FALLEN_OFF_BUS"},
    {94, EXP_HW_ALL, WARN, 0, "DCGM_FR_UNKNOWN(131)"},
    {95, EXP_HW_ALL, FAIL, 0, "DCGM_FR_UNCONTAINED_ERROR"},
    {119, EXP_HW_ALL, FAIL, 0, "DCGM_FR_XID_ERROR"},
    {120, EXP_HW_ALL, FAIL, 0, "DCGM_FR_XID_ERROR"},
    {140, EXP_HW_ALL, FAIL, 0, "DCGM_FR_XID_ERROR"},
    {31, EXP_HW_MEM, WARN, 0, "DCGM_FR_XID_ERROR"},
    {32, EXP_HW_MEM, WARN, 0, "DCGM_FR_XID_ERROR"},
    {43, EXP_HW_MEM, WARN, 0, "DCGM_FR_XID_ERROR"},
    {63, EXP_HW_MEM, WARN, 0, "DCGM_FR_PENDING_PAGE_RETIREMENTS"},
    {64, EXP_HW_MEM, FAIL, 0, "DCGM_FR_ROW_REMAP_FAILURE"},
    {38, EXP_HW_PCIE, WARN, 0, "DCGM_FR_XID_ERROR"},
    {39, EXP_HW_PCIE, WARN, 0, "DCGM_FR_XID_ERROR"},
    {42, EXP_HW_PCIE, WARN, 0, "DCGM_FR_XID_ERROR"},
    {60, EXP_HW_THERMAL, WARN, 0, "DCGM_FR_CLOCK_THROTTLE_THERMAL"},
    {61, EXP_HW_THERMAL, WARN, 0, "DCGM_FR_XID_ERROR"},
    {62, EXP_HW_THERMAL, WARN, 0, "DCGM_FR_XID_ERROR"},
    {54, EXP_HW_POWER, WARN, 0, "DCGM_FR_XID_ERROR"},
    {56, EXP_HW_POWER, WARN, 0, "DCGM_FR_XID_ERROR"},
    {57, EXP_HW_POWER, WARN, 0, "DCGM_FR_CLOCK_THROTTLE_POWER"},
    {58, EXP_HW_POWER, WARN, 0, "DCGM_FR_XID_ERROR"},
    {78, EXP_HW_POWER, WARN, 0, "DCGM_FR_XID_ERROR"},
    {67, EXP_HW_NVLINK, WARN, 0, "DCGM_FR_XID_ERROR"},
    {73, EXP_HW_NVLINK, WARN, 0, "DCGM_FR_XID_ERROR"},
    {121, EXP_HW_NVLINK, WARN, 0, "DCGM_FR_XID_ERROR"},
    {137, EXP_HW_NVLINK, WARN, 0, "DCGM_FR_XID_ERROR"},
    {93, EXP_HW_INFOROM, WARN, ARCH_VOLTA, "DCGM_FR_CORRUPT_INFOROM"},
};

/* MonitorGpuRecoveryAction: NVML's nvmlDeviceGpuRecoveryAction_t 1..4 (0 none: healthy). */
static const struct {
	unsigned char result;
	const char *code;
} recovery_rows[] = {
    [1] = {FAIL, "DCGM_FR_GPU_RECOVERY_RESET"},
    [2] = {FAIL, "DCGM_FR_GPU_RECOVERY_REBOOT"},
    [3] = {WARN, "DCGM_FR_GPU_RECOVERY_DRAIN_P2P"},
    [4] = {FAIL, "DCGM_FR_GPU_RECOVERY_DRAIN_RESET"},
};

/* One incident: the worse one stays (a FAIL is not hidden behind a later WARN of the same watch). */
static void incident(struct exp_health_verdict *v, enum exp_health_watch w, unsigned result, const char *code)
{
	if (result > v[w].result) {
		v[w].result = result;
		v[w].code = code;
	}
}

void exp_health_verdicts(const struct exp_gpu_state *st, unsigned arch, struct exp_health_verdict *ret)
{
	for (size_t w = 0; w < EXP_HEALTH_WATCHES; w++)
		ret[w] = (struct exp_health_verdict){.result = PASS, .code = "DCGM_FR_OK"};
	/* DCGM stops watching a GPU that fell off the bus; NVML's GPU_IS_LOST is that state (XID 79) */
	if (st->lost)
		incident(ret, EXP_HW_ALL, FAIL, "DCGM_FR_FALLEN_OFF_BUS");
	for (size_t k = 0; k < st->n_xids; k++)
		for (size_t i = 0; i < ELEMENTSOF(xid_rows); i++)
			if (xid_rows[i].xid == st->xids[k].code && (!xid_rows[i].arch || xid_rows[i].arch == arch))
				incident(ret, xid_rows[i].watch, xid_rows[i].result, xid_rows[i].code);
	/* MonitorMemVolatileDbes, MonitorMemRowRemapFailures, MonitorMemRetiredPending */
	if (st->health.bad & (1u << EXP_HEALTH_DBE_VOLATILE))
		incident(ret, EXP_HW_MEM, FAIL, "DCGM_FR_VOLATILE_DBE_DETECTED");
	if (st->health.bad & (1u << EXP_HEALTH_ROW_REMAP_FAILURE))
		incident(ret, EXP_HW_MEM, FAIL, "DCGM_FR_ROW_REMAP_FAILURE");
	if (st->health.retired_pending == 1)
		incident(ret, EXP_HW_MEM, WARN, "DCGM_FR_PENDING_PAGE_RETIREMENTS");
	if (st->health.recovery > 0 && (size_t)st->health.recovery < ELEMENTSOF(recovery_rows))
		incident(ret, EXP_HW_DRIVER, recovery_rows[st->health.recovery].result,
			 recovery_rows[st->health.recovery].code);
}
