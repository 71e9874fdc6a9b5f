/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVML entry points gpulet resolves. Types only by nvml.h's names, so this table compiles
 * both against our nvml/abi.h and against NVIDIA's nvml.h (tests/realdriver/abi_real.c).
 */
#pragma once

/*
 * Exporter counters (issue 14): the dcgm-exporter default and DCP fields NVML can give
 * (docs/reference/dcgm-exporter.md has the field -> call table). All optional: a driver without
 * one serves the others, and the field is listed as unavailable.
 */
#define NVML_SYMBOLS_EXPORTER(X)                                                                                      \
	X(device_get_field_values, nvmlDeviceGetFieldValues, (nvmlDevice_t, int, nvmlFieldValue_t *), 0)              \
	X(device_get_total_energy_consumption, nvmlDeviceGetTotalEnergyConsumption,                                   \
	  (nvmlDevice_t, unsigned long long *), 0)                                                                    \
	X(device_get_pcie_replay_counter, nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t, unsigned *), 0)              \
	X(device_get_encoder_utilization, nvmlDeviceGetEncoderUtilization, (nvmlDevice_t, unsigned *, unsigned *), 0) \
	X(device_get_decoder_utilization, nvmlDeviceGetDecoderUtilization, (nvmlDevice_t, unsigned *, unsigned *), 0) \
	X(device_get_memory_info_v2, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t, nvmlMemory_v2_t *), 0)                \
	X(device_get_pcie_throughput, nvmlDeviceGetPcieThroughput, (nvmlDevice_t, nvmlPcieUtilCounter_t, unsigned *), \
	  0)                                                                                                          \
	X(device_get_retired_pages_pending_status, nvmlDeviceGetRetiredPagesPendingStatus,                            \
	  (nvmlDevice_t, nvmlEnableState_t *), 0)                                                                     \
	X(gpm_query_device_support, nvmlGpmQueryDeviceSupport, (nvmlDevice_t, nvmlGpmSupport_t *), 0)                 \
	X(gpm_sample_alloc, nvmlGpmSampleAlloc, (nvmlGpmSample_t *), 0)                                               \
	X(gpm_sample_free, nvmlGpmSampleFree, (nvmlGpmSample_t), 0)                                                   \
	X(gpm_sample_get, nvmlGpmSampleGet, (nvmlDevice_t, nvmlGpmSample_t), 0)                                       \
	X(gpm_mig_sample_get, nvmlGpmMigSampleGet, (nvmlDevice_t, unsigned, nvmlGpmSample_t), 0)                      \
	X(gpm_metrics_get, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t *), 0)                                             \
	X(device_get_performance_state, nvmlDeviceGetPerformanceState, (nvmlDevice_t, nvmlPstates_t *), 0)            \
	X(device_get_enforced_power_limit, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t, unsigned *), 0)            \
	X(device_get_current_clocks_throttle_reasons, nvmlDeviceGetCurrentClocksThrottleReasons,                      \
	  (nvmlDevice_t, unsigned long long *), 0)                                                                    \
	X(device_get_serial, nvmlDeviceGetSerial, (nvmlDevice_t, char *, unsigned), 0)                                \
	X(device_get_vbios_version, nvmlDeviceGetVbiosVersion, (nvmlDevice_t, char *, unsigned), 0)                   \
	X(device_get_inforom_image_version, nvmlDeviceGetInforomImageVersion, (nvmlDevice_t, char *, unsigned), 0)    \
	X(device_get_inforom_version, nvmlDeviceGetInforomVersion,                                                    \
	  (nvmlDevice_t, nvmlInforomObject_t, char *, unsigned), 0)                                                   \
	X(device_get_compute_mode, nvmlDeviceGetComputeMode, (nvmlDevice_t, nvmlComputeMode_t *), 0)                  \
	X(device_get_persistence_mode, nvmlDeviceGetPersistenceMode, (nvmlDevice_t, nvmlEnableState_t *), 0)          \
	X(device_get_p2p_status, nvmlDeviceGetP2PStatus,                                                              \
	  (nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t *), 0)                               \
	X(device_get_virtualization_mode, nvmlDeviceGetVirtualizationMode,                                            \
	  (nvmlDevice_t, nvmlGpuVirtualizationMode_t *), 0)                                                           \
	X(device_get_violation_status, nvmlDeviceGetViolationStatus,                                                  \
	  (nvmlDevice_t, nvmlPerfPolicyType_t, nvmlViolationTime_t *), 0)

/*
 * Every NVML entry point gpulet may call: X(field, symbol, return-args, required).
 * `required` ones must resolve or the loader fails; the others degrade one feature when absent
 * (older drivers). The symbol is the versioned export the driver library really has, as an
 * identifier (users stringize it) so a test can compare each row with the prototype in nvml.h.
 */
#define NVML_SYMBOLS(X)                                                                                                \
	X(init, nvmlInit_v2, (void), 1)                                                                                \
	X(shutdown, nvmlShutdown, (void), 1)                                                                           \
	X(system_get_driver_version, nvmlSystemGetDriverVersion, (char *, unsigned), 1)                                \
	X(system_get_nvml_version, nvmlSystemGetNVMLVersion, (char *, unsigned), 0)                                    \
	X(system_get_cuda_driver_version, nvmlSystemGetCudaDriverVersion, (int *), 0)                                  \
	X(device_get_count, nvmlDeviceGetCount_v2, (unsigned *), 1)                                                    \
	X(device_get_handle_by_index, nvmlDeviceGetHandleByIndex_v2, (unsigned, nvmlDevice_t *), 1)                    \
	X(device_get_handle_by_uuid, nvmlDeviceGetHandleByUUID, (const char *, nvmlDevice_t *), 0)                     \
	X(device_get_uuid, nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned), 1)                                     \
	X(device_get_name, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned), 1)                                     \
	X(device_get_minor_number, nvmlDeviceGetMinorNumber, (nvmlDevice_t, unsigned *), 1)                            \
	X(device_get_index, nvmlDeviceGetIndex, (nvmlDevice_t, unsigned *), 0)                                         \
	X(device_get_pci_info, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t, nvmlPciInfo_t *), 0)                            \
	X(device_get_memory_info, nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *), 0)                          \
	X(device_get_cuda_compute_capability, nvmlDeviceGetCudaComputeCapability, (nvmlDevice_t, int *, int *), 0)     \
	X(device_get_architecture, nvmlDeviceGetArchitecture, (nvmlDevice_t, unsigned *), 0)                           \
	X(device_get_brand, nvmlDeviceGetBrand, (nvmlDevice_t, nvmlBrandType_t *), 0)                                  \
	X(device_get_numa_node_id, nvmlDeviceGetNumaNodeId, (nvmlDevice_t, unsigned *), 0)                             \
	X(device_get_mig_mode, nvmlDeviceGetMigMode, (nvmlDevice_t, unsigned *, unsigned *), 0)                        \
	X(device_get_max_mig_device_count, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t, unsigned *), 0)              \
	X(device_get_mig_device_handle_by_index, nvmlDeviceGetMigDeviceHandleByIndex,                                  \
	  (nvmlDevice_t, unsigned, nvmlDevice_t *), 0)                                                                 \
	X(device_is_mig_device_handle, nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t, unsigned *), 0)                     \
	X(device_get_gpu_instance_id, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t, unsigned *), 0)                       \
	X(device_get_compute_instance_id, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t, unsigned *), 0)               \
	X(device_get_device_handle_from_mig_device_handle, nvmlDeviceGetDeviceHandleFromMigDeviceHandle,               \
	  (nvmlDevice_t, nvmlDevice_t *), 0)                                                                           \
	X(device_get_attributes, nvmlDeviceGetAttributes_v2, (nvmlDevice_t, nvmlDeviceAttributes_t *), 0)              \
	X(device_get_gpu_instance_profile_info, nvmlDeviceGetGpuInstanceProfileInfo,                                   \
	  (nvmlDevice_t, unsigned, nvmlGpuInstanceProfileInfo_t *), 0)                                                 \
	X(device_get_gpu_instance_by_id, nvmlDeviceGetGpuInstanceById, (nvmlDevice_t, unsigned, nvmlGpuInstance_t *),  \
	  0)                                                                                                           \
	X(gpu_instance_get_info, nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *), 0)              \
	X(event_set_create, nvmlEventSetCreate, (nvmlEventSet_t *), 0)                                                 \
	X(device_register_events, nvmlDeviceRegisterEvents, (nvmlDevice_t, unsigned long long, nvmlEventSet_t), 0)     \
	X(device_get_supported_event_types, nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t, unsigned long long *), 0) \
	X(event_set_wait, nvmlEventSetWait_v2, (nvmlEventSet_t, nvmlEventData_t *, unsigned), 0)                       \
	X(event_set_free, nvmlEventSetFree, (nvmlEventSet_t), 0)                                                       \
	X(device_get_total_ecc_errors, nvmlDeviceGetTotalEccErrors,                                                    \
	  (nvmlDevice_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t, unsigned long long *), 0)                        \
	X(device_get_utilization_rates, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *), 0)         \
	X(device_get_temperature, nvmlDeviceGetTemperature, (nvmlDevice_t, nvmlTemperatureSensors_t, unsigned *), 0)   \
	X(device_get_power_usage, nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned *), 0)                              \
	X(device_get_clock_info, nvmlDeviceGetClockInfo, (nvmlDevice_t, nvmlClockType_t, unsigned *), 0)               \
	X(device_get_retired_pages, nvmlDeviceGetRetiredPages,                                                         \
	  (nvmlDevice_t, nvmlPageRetirementCause_t, unsigned *, unsigned long long *), 0)                              \
	X(device_get_remapped_rows, nvmlDeviceGetRemappedRows,                                                         \
	  (nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *), 0)                                           \
	X(device_get_topology_common_ancestor, nvmlDeviceGetTopologyCommonAncestor,                                    \
	  (nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *), 0)                                                   \
	X(device_get_nvlink_state, nvmlDeviceGetNvLinkState, (nvmlDevice_t, unsigned, nvmlEnableState_t *), 0)         \
	X(device_get_nvlink_remote_pci_info, nvmlDeviceGetNvLinkRemotePciInfo_v2,                                      \
	  (nvmlDevice_t, unsigned, nvmlPciInfo_t *), 0)                                                                \
	X(device_get_compute_running_processes, nvmlDeviceGetComputeRunningProcesses_v3,                               \
	  (nvmlDevice_t, unsigned *, nvmlProcessInfo_t *), 0)                                                          \
	/* exporter: GPU_UTIL per pod under --kubernetes-virtual-gpus (procs.c) */                                     \
	X(device_get_process_utilization, nvmlDeviceGetProcessUtilization,                                             \
	  (nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned *, unsigned long long), 0)                         \
	/* labels: fabric clique (nvidia.com/gpu.clique) */                                                            \
	X(device_get_gpu_fabric_info, nvmlDeviceGetGpuFabricInfo, (nvmlDevice_t, nvmlGpuFabricInfo_t *), 0)            \
	NVML_SYMBOLS_EXPORTER(X)

/* One row of a {name, required} table: struct nvml_symbol t[] = {NVML_SYMBOLS(NVML_SYMBOL_ROW)}. */
struct nvml_symbol {
	const char *name;
	int required;
};
#define NVML_SYMBOL_ROW(field, sym, args, req) {#sym, req},
