/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the ABI conformance test compares between our src/nvml/abi.h and NVIDIA's nvml.h: every
 * struct of our subset (size, and offset + size of every field), every constant, and the size of
 * every enum we declare as int. Compiled once against each header (abi_real.c, abi_check.c).
 *
 * The real header is Debian 12's libnvidia-ml-dev, CUDA 11.8's nvml.h (NVML API 11), older than
 * the 535 library beside it (docs/reference/real-driver.md). What our subset takes from newer
 * headers is not in it and is listed in ABI_NEWER_THAN_HEADER instead of being compared.
 */
#pragma once

/* Exporter counters (issue 14): field values, PCIe counters, GPM. */
#define ABI_STRUCTS_EXPORTER(S, F)                   \
	S(nvmlValue_t)                               \
	F(nvmlValue_t, dVal)                         \
	F(nvmlValue_t, uiVal)                        \
	F(nvmlValue_t, ulVal)                        \
	F(nvmlValue_t, ullVal)                       \
	F(nvmlValue_t, sllVal)                       \
	S(nvmlFieldValue_t)                          \
	F(nvmlFieldValue_t, fieldId)                 \
	F(nvmlFieldValue_t, scopeId)                 \
	F(nvmlFieldValue_t, timestamp)               \
	F(nvmlFieldValue_t, latencyUsec)             \
	F(nvmlFieldValue_t, valueType)               \
	F(nvmlFieldValue_t, nvmlReturn)              \
	F(nvmlFieldValue_t, value)                   \
	S(nvmlGpmMetric_t)                           \
	F(nvmlGpmMetric_t, metricId)                 \
	F(nvmlGpmMetric_t, nvmlReturn)               \
	F(nvmlGpmMetric_t, value)                    \
	F(nvmlGpmMetric_t, metricInfo)               \
	F(nvmlGpmMetric_t, metricInfo.shortName)     \
	F(nvmlGpmMetric_t, metricInfo.longName)      \
	F(nvmlGpmMetric_t, metricInfo.unit)          \
	S(nvmlGpmMetricsGet_t)                       \
	F(nvmlGpmMetricsGet_t, version)              \
	F(nvmlGpmMetricsGet_t, numMetrics)           \
	F(nvmlGpmMetricsGet_t, sample1)              \
	F(nvmlGpmMetricsGet_t, sample2)              \
	F(nvmlGpmMetricsGet_t, metrics)              \
	S(nvmlGpmSupport_t)                          \
	F(nvmlGpmSupport_t, version)                 \
	F(nvmlGpmSupport_t, isSupportedDevice)       \
	S(nvmlPcieUtilCounter_t)                     \
	S(nvmlValueType_t)                           \
	S(nvmlPstates_t)                             \
	S(nvmlPerfPolicyType_t)                      \
	S(nvmlViolationTime_t)                       \
	F(nvmlViolationTime_t, referenceTime)        \
	F(nvmlViolationTime_t, violationTime)        \
	S(nvmlProcessUtilizationSample_t)            \
	F(nvmlProcessUtilizationSample_t, pid)       \
	F(nvmlProcessUtilizationSample_t, timeStamp) \
	F(nvmlProcessUtilizationSample_t, smUtil)    \
	F(nvmlProcessUtilizationSample_t, memUtil)   \
	F(nvmlProcessUtilizationSample_t, encUtil)   \
	F(nvmlProcessUtilizationSample_t, decUtil)   \
	S(nvmlInforomObject_t)                       \
	S(nvmlComputeMode_t)                         \
	S(nvmlGpuVirtualizationMode_t)               \
	S(nvmlGpuP2PCapsIndex_t)                     \
	S(nvmlGpuP2PStatus_t)

#define ABI_CONSTANTS_EXPORTER(C)                        \
	C(NVML_PCIE_UTIL_TX_BYTES)                       \
	C(NVML_PCIE_UTIL_RX_BYTES)                       \
	C(NVML_VALUE_TYPE_DOUBLE)                        \
	C(NVML_VALUE_TYPE_UNSIGNED_INT)                  \
	C(NVML_VALUE_TYPE_UNSIGNED_LONG)                 \
	C(NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)            \
	C(NVML_VALUE_TYPE_SIGNED_LONG_LONG)              \
	C(NVML_FI_DEV_MEMORY_TEMP)                       \
	C(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)         \
	C(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)         \
	C(NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL) \
	C(NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL) \
	C(NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL)   \
	C(NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL) \
	C(NVML_DEVICE_SERIAL_BUFFER_SIZE)                \
	C(NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE)         \
	C(NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE)       \
	C(NVML_PERF_POLICY_POWER)                        \
	C(NVML_PERF_POLICY_THERMAL)                      \
	C(NVML_PERF_POLICY_SYNC_BOOST)                   \
	C(NVML_PERF_POLICY_BOARD_LIMIT)                  \
	C(NVML_PERF_POLICY_LOW_UTILIZATION)              \
	C(NVML_PERF_POLICY_RELIABILITY)                  \
	C(NVML_P2P_CAPS_INDEX_NVLINK)                    \
	C(NVML_P2P_STATUS_OK)                            \
	C(NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED)          \
	C(NVML_P2P_STATUS_GPU_NOT_SUPPORTED)             \
	C(NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED)    \
	C(NVML_P2P_STATUS_DISABLED_BY_REGKEY)            \
	C(NVML_P2P_STATUS_NOT_SUPPORTED)                 \
	C(NVML_P2P_STATUS_UNKNOWN)                       \
	C(NVML_INFOROM_OEM)                              \
	C(NVML_INFOROM_ECC)                              \
	C(NVML_INFOROM_POWER)                            \
	C(NVML_GPU_VIRTUALIZATION_MODE_NONE)             \
	C(NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH)      \
	C(NVML_GPU_VIRTUALIZATION_MODE_VGPU)             \
	C(NVML_COMPUTEMODE_DEFAULT)                      \
	C(NVML_COMPUTEMODE_EXCLUSIVE_THREAD)             \
	C(NVML_COMPUTEMODE_PROHIBITED)                   \
	C(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)            \
	C(NVML_BRAND_UNKNOWN)                            \
	C(NVML_BRAND_QUADRO)                             \
	C(NVML_BRAND_TESLA)                              \
	C(NVML_BRAND_NVS)                                \
	C(NVML_BRAND_GRID)                               \
	C(NVML_BRAND_GEFORCE)                            \
	C(NVML_BRAND_TITAN)                              \
	C(NVML_BRAND_NVIDIA_VAPPS)                       \
	C(NVML_BRAND_NVIDIA_VPC)                         \
	C(NVML_BRAND_NVIDIA_VCS)                         \
	C(NVML_BRAND_NVIDIA_VWS)                         \
	C(NVML_BRAND_NVIDIA_CLOUD_GAMING)                \
	C(NVML_BRAND_QUADRO_RTX)                         \
	C(NVML_BRAND_NVIDIA_RTX)                         \
	C(NVML_BRAND_NVIDIA)                             \
	C(NVML_BRAND_GEFORCE_RTX)                        \
	C(NVML_BRAND_TITAN_RTX)                          \
	C(NVML_GPM_METRIC_GRAPHICS_UTIL)                 \
	C(NVML_GPM_METRIC_SM_UTIL)                       \
	C(NVML_GPM_METRIC_SM_OCCUPANCY)                  \
	C(NVML_GPM_METRIC_INTEGER_UTIL)                  \
	C(NVML_GPM_METRIC_ANY_TENSOR_UTIL)               \
	C(NVML_GPM_METRIC_DFMA_TENSOR_UTIL)              \
	C(NVML_GPM_METRIC_HMMA_TENSOR_UTIL)              \
	C(NVML_GPM_METRIC_IMMA_TENSOR_UTIL)              \
	C(NVML_GPM_METRIC_DRAM_BW_UTIL)                  \
	C(NVML_GPM_METRIC_FP64_UTIL)                     \
	C(NVML_GPM_METRIC_FP32_UTIL)                     \
	C(NVML_GPM_METRIC_FP16_UTIL)                     \
	C(NVML_GPM_METRIC_PCIE_TX_PER_SEC)               \
	C(NVML_GPM_METRIC_PCIE_RX_PER_SEC)               \
	C(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC)       \
	C(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC)       \
	C(NVML_GPM_METRIC_MAX)                           \
	C(NVML_GPM_METRICS_GET_VERSION)                  \
	C(NVML_GPM_SUPPORT_VERSION)

#define ABI_STRUCTS(S, F)                                                                \
	S(nvmlPciInfo_t)                                                                 \
	F(nvmlPciInfo_t, busIdLegacy)                                                    \
	F(nvmlPciInfo_t, domain)                                                         \
	F(nvmlPciInfo_t, bus)                                                            \
	F(nvmlPciInfo_t, device)                                                         \
	F(nvmlPciInfo_t, pciDeviceId)                                                    \
	F(nvmlPciInfo_t, pciSubSystemId)                                                 \
	F(nvmlPciInfo_t, busId)                                                          \
	S(nvmlMemory_t)                                                                  \
	F(nvmlMemory_t, total)                                                           \
	F(nvmlMemory_t, free)                                                            \
	F(nvmlMemory_t, used)                                                            \
	S(nvmlMemory_v2_t)                                                               \
	F(nvmlMemory_v2_t, version)                                                      \
	F(nvmlMemory_v2_t, total)                                                        \
	F(nvmlMemory_v2_t, reserved)                                                     \
	F(nvmlMemory_v2_t, free)                                                         \
	F(nvmlMemory_v2_t, used)                                                         \
	S(nvmlEventData_t)                                                               \
	F(nvmlEventData_t, device)                                                       \
	F(nvmlEventData_t, eventType)                                                    \
	F(nvmlEventData_t, eventData)                                                    \
	F(nvmlEventData_t, gpuInstanceId)                                                \
	F(nvmlEventData_t, computeInstanceId)                                            \
	S(nvmlUtilization_t)                                                             \
	F(nvmlUtilization_t, gpu)                                                        \
	F(nvmlUtilization_t, memory)                                                     \
	S(nvmlDeviceAttributes_t)                                                        \
	F(nvmlDeviceAttributes_t, multiprocessorCount)                                   \
	F(nvmlDeviceAttributes_t, sharedCopyEngineCount)                                 \
	F(nvmlDeviceAttributes_t, sharedDecoderCount)                                    \
	F(nvmlDeviceAttributes_t, sharedEncoderCount)                                    \
	F(nvmlDeviceAttributes_t, sharedJpegCount)                                       \
	F(nvmlDeviceAttributes_t, sharedOfaCount)                                        \
	F(nvmlDeviceAttributes_t, gpuInstanceSliceCount)                                 \
	F(nvmlDeviceAttributes_t, computeInstanceSliceCount)                             \
	F(nvmlDeviceAttributes_t, memorySizeMB)                                          \
	S(nvmlGpuInstanceProfileInfo_t)                                                  \
	F(nvmlGpuInstanceProfileInfo_t, id)                                              \
	F(nvmlGpuInstanceProfileInfo_t, isP2pSupported)                                  \
	F(nvmlGpuInstanceProfileInfo_t, sliceCount)                                      \
	F(nvmlGpuInstanceProfileInfo_t, instanceCount)                                   \
	F(nvmlGpuInstanceProfileInfo_t, multiprocessorCount)                             \
	F(nvmlGpuInstanceProfileInfo_t, copyEngineCount)                                 \
	F(nvmlGpuInstanceProfileInfo_t, decoderCount)                                    \
	F(nvmlGpuInstanceProfileInfo_t, encoderCount)                                    \
	F(nvmlGpuInstanceProfileInfo_t, jpegCount)                                       \
	F(nvmlGpuInstanceProfileInfo_t, ofaCount)                                        \
	F(nvmlGpuInstanceProfileInfo_t, memorySizeMB)                                    \
	S(nvmlGpuInstancePlacement_t)                                                    \
	F(nvmlGpuInstancePlacement_t, start)                                             \
	F(nvmlGpuInstancePlacement_t, size)                                              \
	S(nvmlGpuInstanceInfo_t)                                                         \
	F(nvmlGpuInstanceInfo_t, device)                                                 \
	F(nvmlGpuInstanceInfo_t, id)                                                     \
	F(nvmlGpuInstanceInfo_t, profileId)                                              \
	F(nvmlGpuInstanceInfo_t, placement)                                              \
	S(nvmlComputeInstanceInfo_t)                                                     \
	F(nvmlComputeInstanceInfo_t, device)                                             \
	F(nvmlComputeInstanceInfo_t, gpuInstance)                                        \
	F(nvmlComputeInstanceInfo_t, id)                                                 \
	F(nvmlComputeInstanceInfo_t, profileId)                                          \
	F(nvmlComputeInstanceInfo_t, placement)                                          \
	S(nvmlProcessInfo_t)                                                             \
	F(nvmlProcessInfo_t, pid)                                                        \
	F(nvmlProcessInfo_t, usedGpuMemory)                                              \
	F(nvmlProcessInfo_t, gpuInstanceId)                                              \
	F(nvmlProcessInfo_t, computeInstanceId)                                          \
	/* enums: ours are int (src/nvml/abi.h), theirs C enums; the sizes must agree */ \
	S(nvmlReturn_t)                                                                  \
	S(nvmlBrandType_t)                                                               \
	S(nvmlMemoryErrorType_t)                                                         \
	S(nvmlEccCounterType_t)                                                          \
	S(nvmlTemperatureSensors_t)                                                      \
	S(nvmlClockType_t)                                                               \
	S(nvmlPageRetirementCause_t)                                                     \
	S(nvmlGpuTopologyLevel_t)                                                        \
	S(nvmlEnableState_t)                                                             \
	ABI_STRUCTS_EXPORTER(S, F)

#define ABI_CONSTANTS(C)                                             \
	C(NVML_SUCCESS)                                              \
	C(NVML_ERROR_UNINITIALIZED)                                  \
	C(NVML_ERROR_INVALID_ARGUMENT)                               \
	C(NVML_ERROR_NOT_SUPPORTED)                                  \
	C(NVML_ERROR_NO_PERMISSION)                                  \
	C(NVML_ERROR_ALREADY_INITIALIZED)                            \
	C(NVML_ERROR_NOT_FOUND)                                      \
	C(NVML_ERROR_INSUFFICIENT_SIZE)                              \
	C(NVML_ERROR_INSUFFICIENT_POWER)                             \
	C(NVML_ERROR_DRIVER_NOT_LOADED)                              \
	C(NVML_ERROR_TIMEOUT)                                        \
	C(NVML_ERROR_IRQ_ISSUE)                                      \
	C(NVML_ERROR_LIBRARY_NOT_FOUND)                              \
	C(NVML_ERROR_FUNCTION_NOT_FOUND)                             \
	C(NVML_ERROR_CORRUPTED_INFOROM)                              \
	C(NVML_ERROR_GPU_IS_LOST)                                    \
	C(NVML_ERROR_RESET_REQUIRED)                                 \
	C(NVML_ERROR_OPERATING_SYSTEM)                               \
	C(NVML_ERROR_LIB_RM_VERSION_MISMATCH)                        \
	C(NVML_ERROR_IN_USE)                                         \
	C(NVML_ERROR_MEMORY)                                         \
	C(NVML_ERROR_NO_DATA)                                        \
	C(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED)                         \
	C(NVML_ERROR_INSUFFICIENT_RESOURCES)                         \
	C(NVML_ERROR_FREQ_NOT_SUPPORTED)                             \
	C(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)                      \
	C(NVML_ERROR_UNKNOWN)                                        \
	C(NVML_DEVICE_UUID_V2_BUFFER_SIZE)                           \
	C(NVML_DEVICE_NAME_V2_BUFFER_SIZE)                           \
	C(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)                    \
	C(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE)                        \
	C(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE)                     \
	C(NVML_DEVICE_MIG_DISABLE)                                   \
	C(NVML_DEVICE_MIG_ENABLE)                                    \
	C(NVML_FEATURE_DISABLED)                                     \
	C(NVML_FEATURE_ENABLED)                                      \
	C(nvmlEventTypeSingleBitEccError)                            \
	C(nvmlEventTypeDoubleBitEccError)                            \
	C(nvmlEventTypeXidCriticalError)                             \
	C(nvmlEventMigConfigChange)                                  \
	C(NVML_TOPOLOGY_INTERNAL)                                    \
	C(NVML_TOPOLOGY_SINGLE)                                      \
	C(NVML_TOPOLOGY_MULTIPLE)                                    \
	C(NVML_TOPOLOGY_HOSTBRIDGE)                                  \
	C(NVML_TOPOLOGY_NODE)                                        \
	C(NVML_TOPOLOGY_SYSTEM)                                      \
	C(NVML_MEMORY_ERROR_TYPE_CORRECTED)                          \
	C(NVML_MEMORY_ERROR_TYPE_UNCORRECTED)                        \
	C(NVML_VOLATILE_ECC)                                         \
	C(NVML_AGGREGATE_ECC)                                        \
	C(NVML_TEMPERATURE_GPU)                                      \
	C(NVML_CLOCK_GRAPHICS)                                       \
	C(NVML_CLOCK_SM)                                             \
	C(NVML_CLOCK_MEM)                                            \
	C(NVML_CLOCK_VIDEO)                                          \
	C(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS) \
	C(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)           \
	C(NVML_NVLINK_DEVICE_TYPE_GPU)                               \
	C(NVML_NVLINK_DEVICE_TYPE_SWITCH)                            \
	C(NVML_GPU_INSTANCE_PROFILE_1_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_2_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_3_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_4_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_7_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_8_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_6_SLICE)                         \
	C(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1)                    \
	C(nvmlMemory_v2)                                             \
	ABI_CONSTANTS_EXPORTER(C)

/*
 * In our subset but not in CUDA 11.8's nvml.h (added by later NVML headers; values and layouts in
 * docs/reference/nvml-abi.md). Printed by the test, not compared. Two bounds grew with newer GPUs
 * and differ by header version: NVML_GPU_INSTANCE_PROFILE_COUNT (0x8 in 11.8; ours is a loop bound
 * of the fake only) and NVML_NVLINK_MAX_LINKS (18 in 11.8, 36 in ours; node.c stops at the first
 * link the driver refuses, so a 535 driver answers INVALID_ARGUMENT at link 18 and the loop ends).
 */
#define ABI_NEWER_THAN_HEADER                                                                                 \
	"NVML_ERROR_DEPRECATED NVML_ERROR_NOT_READY NVML_ERROR_GPU_NOT_FOUND NVML_ERROR_INVALID_STATE "       \
	"NVML_ERROR_RESET_TYPE_NOT_SUPPORTED NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 "                         \
	"NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 NVML_GPU_INSTANCE_PROFILE_COUNT NVML_NVLINK_MAX_LINKS "       \
	"nvmlTemperature_t "                                                                                  \
	"nvmlTemperature_v1 nvmlDeviceGetNumaNodeId nvmlGpmMigSampleGet (prototypes declared in abi_real.c) " \
	"nvmlGpuFabricInfo_t nvmlDeviceGetGpuFabricInfo (labels; declared in abi_real.c)"

struct abi_row {
	const char *what;
	long long value;
};

#define ABI_ROW_S(T) {"sizeof(" #T ")", (long long)sizeof(T)},
#define ABI_ROW_F(T, f)                                          \
	{"offsetof(" #T ", " #f ")", (long long)offsetof(T, f)}, \
	    {"sizeof(" #T "." #f ")", (long long)sizeof(((T *)0)->f)},
#define ABI_ROW_C(c) {#c, (long long)(c)},
#define ABI_ROWS     ABI_STRUCTS(ABI_ROW_S, ABI_ROW_F) ABI_CONSTANTS(ABI_ROW_C)

/* abi_real.c: the rows and, per NVML_SYMBOLS entry, whether our prototype is nvml.h's. */
struct abi_proto {
	const char *symbol;
	int same;
};
extern const struct abi_row abi_real_rows[];
extern const unsigned abi_real_n_rows;
extern const struct abi_proto abi_real_protos[];
extern const unsigned abi_real_n_protos;
