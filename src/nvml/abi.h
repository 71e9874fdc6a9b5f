/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Our own subset of the NVML ABI (x86_64/aarch64 LP64), written from the NVML reference layout
 * tables (docs/reference/nvml-abi.md). gpulet never includes nvml.h and has no build-time
 * dependency on CUDA. Layouts are pinned with static asserts below; the fake NVML in tests/fakenvml
 * is built from this same header, so a layout mistake would show in both -- the asserts carry the
 * sizes measured against NVIDIA's header, which is the independent check.
 */
#pragma once

#include <stddef.h>

/*
 * NVML's enums are C enums in nvml.h; we use int, which has their size on every ABI NVML ships for
 * (tests/realdriver/abi checks each against the real header). The parameter types keep nvml.h's
 * names so the prototypes below read like NVIDIA's and compile against either header.
 */
typedef int nvmlReturn_t;
typedef int nvmlBrandType_t;
typedef int nvmlMemoryErrorType_t;
typedef int nvmlEccCounterType_t;
typedef int nvmlTemperatureSensors_t;
typedef int nvmlClockType_t;
typedef int nvmlPageRetirementCause_t;
typedef int nvmlGpuTopologyLevel_t;
typedef int nvmlEnableState_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
	NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE         96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE         96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE  80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE      32
#define NVML_DEVICE_SERIAL_BUFFER_SIZE          30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE   32
#define NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE 16
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE   16
#define NVML_NVLINK_MAX_LINKS                   36

#define NVML_DEVICE_MIG_DISABLE                 0
#define NVML_DEVICE_MIG_ENABLE                  1
#define NVML_FEATURE_DISABLED                   0
#define NVML_FEATURE_ENABLED                    1

/* Event type bits (nvml.h "Event Types"). */
#define nvmlEventTypeSingleBitEccError 0x0001ULL
#define nvmlEventTypeDoubleBitEccError 0x0002ULL
#define nvmlEventTypeXidCriticalError  0x0008ULL
#define nvmlEventMigConfigChange       0x0100ULL

/* Topology levels (nvmlGpuTopologyLevel_t). */
enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20,
	NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40,
	NVML_TOPOLOGY_SYSTEM = 50,
};

enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum {
	NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
	NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
};
enum { NVML_NVLINK_DEVICE_TYPE_GPU = 0, NVML_NVLINK_DEVICE_TYPE_SWITCH = 2 };

/* GPU instance profile indexes, the argument of nvmlDeviceGetGpuInstanceProfileInfo. */
enum {
	NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0,
	NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1,
	NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2,
	NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3,
	NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4,
	NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5,
	NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6,
	NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
	NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8,
	NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x9,
	NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12,
};

typedef struct {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 0x02000028u

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

typedef struct {
	unsigned int multiprocessorCount;
	unsigned int sharedCopyEngineCount;
	unsigned int sharedDecoderCount;
	unsigned int sharedEncoderCount;
	unsigned int sharedJpegCount;
	unsigned int sharedOfaCount;
	unsigned int gpuInstanceSliceCount;
	unsigned int computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct {
	unsigned int id;
	unsigned int isP2pSupported;
	unsigned int sliceCount;
	unsigned int instanceCount;
	unsigned int multiprocessorCount;
	unsigned int copyEngineCount;
	unsigned int decoderCount;
	unsigned int encoderCount;
	unsigned int jpegCount;
	unsigned int ofaCount;
	unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
	unsigned int start;
	unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct {
	nvmlDevice_t device;
	unsigned int id;
	unsigned int profileId;
	nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
	nvmlDevice_t device;
	nvmlGpuInstance_t gpuInstance;
	unsigned int id;
	unsigned int profileId;
	nvmlGpuInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvmlDeviceGetProcessUtilization: one sample of one process (exporter: GPU_UTIL per pod) */
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp; /* CPU time stamp, microseconds */
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
	unsigned int version;
	int sensorType;
	int temperature;
} nvmlTemperature_t;
#define nvmlTemperature_v1 0x0100000cu

/* Sizes measured against NVIDIA's nvml.h (docs/reference/nvml-abi.md). */
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t layout");
_Static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24, "nvmlEventData_t.gpuInstanceId");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40, "nvmlDeviceAttributes_t layout");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "nvmlGpuInstanceProfileInfo_t layout");
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24, "nvmlGpuInstanceInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32, "nvmlComputeInstanceInfo_t layout");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t layout");
_Static_assert(sizeof(nvmlTemperature_t) == 12, "nvmlTemperature_t layout");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t layout");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "nvmlProcessUtilizationSample_t.smUtil");

/*
 * ---- labels: GPU fabric (NVLink domain) membership, for GFD's nvidia.com/gpu.clique ----
 * nvmlDeviceGetGpuFabricInfo and its struct arrived with NVML 12 (R525+); the 535 library exports
 * it, CUDA 11.8's nvml.h does not declare it. Layout from NVML 12's nvml.h (docs/reference/gfd-labels.md).
 */
#define NVML_GPU_FABRIC_UUID_LEN            16
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED   1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS   2
#define NVML_GPU_FABRIC_STATE_COMPLETED     3
typedef unsigned char nvmlGpuFabricState_t;

typedef struct {
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status; /* meaningful once state is COMPLETED */
	unsigned int cliqueId;
	nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

_Static_assert(sizeof(nvmlGpuFabricInfo_t) == 28, "nvmlGpuFabricInfo_t layout");
_Static_assert(offsetof(nvmlGpuFabricInfo_t, cliqueId) == 20, "nvmlGpuFabricInfo_t.cliqueId");
_Static_assert(offsetof(nvmlGpuFabricInfo_t, state) == 24, "nvmlGpuFabricInfo_t.state");
/* ---- end labels block ---- */

/*
 * ---- Exporter counters (issue 14): field values, energy, PCIe, codec utilisation, GPM ----------
 * Layouts as in NVIDIA's nvml.h (CUDA 11.8 and later; tests/realdriver compares every one).
 */
typedef int nvmlPcieUtilCounter_t;
typedef int nvmlValueType_t;
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum {
	NVML_VALUE_TYPE_DOUBLE = 0,
	NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
	NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
};
/* nvmlDeviceGetFieldValues field ids (nvml.h NVML_FI_*). */
#define NVML_FI_DEV_MEMORY_TEMP               82
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB since boot; scopeId = link, UINT_MAX = all */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION   230 /* uiVal: nvmlDeviceGpuRecoveryAction_t; newer drivers only */
#define NVML_GPU_RECOVERY_ACTION_NONE         0

/* Clock events and violations (issue 24): nvmlDeviceGetViolationStatus's policies and result. */
typedef int nvmlPstates_t; /* 0 (max performance) .. 15, 32 unknown */
typedef int nvmlPerfPolicyType_t;
enum {
	NVML_PERF_POLICY_POWER = 0,
	NVML_PERF_POLICY_THERMAL = 1,
	NVML_PERF_POLICY_SYNC_BOOST = 2,
	NVML_PERF_POLICY_BOARD_LIMIT = 3,
	NVML_PERF_POLICY_LOW_UTILIZATION = 4,
	NVML_PERF_POLICY_RELIABILITY = 5,
};
typedef struct nvmlViolationTime_st {
	unsigned long long referenceTime; /* CPU timestamp, us */
	unsigned long long violationTime; /* ns held below application clocks since boot */
} nvmlViolationTime_t;
#define NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL 38 /* all links */
#define NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL 45
#define NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL   52
#define NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL 59

/* DCGM_EXP_P2P_STATUS (issue 24): nvmlDeviceGetP2PStatus over NVLink; DCGM's statuses are NVML's. */
typedef int nvmlGpuP2PCapsIndex_t;
typedef int nvmlGpuP2PStatus_t;
#define NVML_P2P_CAPS_INDEX_NVLINK 2
enum {
	NVML_P2P_STATUS_OK = 0,
	NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED = 1, /* sic, nvml.h's spelling */
	NVML_P2P_STATUS_GPU_NOT_SUPPORTED = 2,
	NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED = 3,
	NVML_P2P_STATUS_DISABLED_BY_REGKEY = 4,
	NVML_P2P_STATUS_NOT_SUPPORTED = 5,
	NVML_P2P_STATUS_UNKNOWN = 6,
};

/* Static label fields (issue 24): the enums DCGM turns into its label values. */
typedef int nvmlInforomObject_t;
typedef int nvmlComputeMode_t;
typedef int nvmlGpuVirtualizationMode_t; /* NONE 0, PASSTHROUGH 1, VGPU 2, HOST_VGPU 3, HOST_VSGA 4 */
enum {
	NVML_GPU_VIRTUALIZATION_MODE_NONE = 0,
	NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH = 1,
	NVML_GPU_VIRTUALIZATION_MODE_VGPU = 2, /* a vGPU, seen from the guest (labels' vgpu.present) */
};
enum {
	NVML_INFOROM_OEM = 0,
	NVML_INFOROM_ECC = 1,
	NVML_INFOROM_POWER = 2,
};
enum {
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
enum {
	NVML_BRAND_UNKNOWN = 0,
	NVML_BRAND_QUADRO = 1,
	NVML_BRAND_TESLA = 2,
	NVML_BRAND_NVS = 3,
	NVML_BRAND_GRID = 4,
	NVML_BRAND_GEFORCE = 5,
	NVML_BRAND_TITAN = 6,
	NVML_BRAND_NVIDIA_VAPPS = 7,
	NVML_BRAND_NVIDIA_VPC = 8,
	NVML_BRAND_NVIDIA_VCS = 9,
	NVML_BRAND_NVIDIA_VWS = 10,
	NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
	NVML_BRAND_QUADRO_RTX = 12,
	NVML_BRAND_NVIDIA_RTX = 13,
	NVML_BRAND_NVIDIA = 14,
	NVML_BRAND_GEFORCE_RTX = 15,
	NVML_BRAND_TITAN_RTX = 16,
};

typedef union nvmlValue_st {
	double dVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
	unsigned int fieldId;
	unsigned int scopeId;
	long long timestamp;
	long long latencyUsec;
	nvmlValueType_t valueType;
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

/* GPM (GPU performance monitoring, Hopper and newer): two samples make one metric reading. */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
enum {
	NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
	NVML_GPM_METRIC_SM_UTIL = 2,
	NVML_GPM_METRIC_SM_OCCUPANCY = 3,
	NVML_GPM_METRIC_INTEGER_UTIL = 4,
	NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
	NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
	NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
	NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
	NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
	NVML_GPM_METRIC_FP64_UTIL = 11,
	NVML_GPM_METRIC_FP32_UTIL = 12,
	NVML_GPM_METRIC_FP16_UTIL = 13,
	NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20, /* MiB/s */
	NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
	NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
	NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
	/* the array bound of nvmlGpmMetricsGet_t version 1 (the 520-535 drivers' header) */
	NVML_GPM_METRIC_MAX = 98,
};
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION     1

typedef struct {
	unsigned int metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct {
		char *shortName;
		char *longName;
		char *unit;
	} metricInfo;
} nvmlGpmMetric_t;

typedef struct {
	unsigned int version;
	unsigned int numMetrics;
	nvmlGpmSample_t sample1;
	nvmlGpmSample_t sample2;
	nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct {
	unsigned int version;
	unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t layout");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "nvmlGpmMetricsGet_t.metrics");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t layout");
/* ---- end of the exporter counters block ---------------------------------------------------- */

#include "nvml/symbols.h"
