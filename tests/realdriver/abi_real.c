/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ABI rows and prototypes as NVIDIA's nvml.h defines them (compiled with -I<real root>/usr/include
 * by abi.sh; see abi_rows.h). Our symbol table (src/nvml/symbols.h) is expanded here against their
 * types: every row must name a function nvml.h declares with exactly our parameter list, where
 * their enums stand for our ints (abi_rows.h compares the enum sizes).
 */
#include <stddef.h>

#include <nvml.h>

#include "abi_rows.h"

/* Not in CUDA 11.8's nvml.h; the prototype of NVML 12's header (docs/reference/nvml-abi.md). */
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node);

/* labels: not in CUDA 11.8's nvml.h either; type and prototype as NVML 12's header has them. */
#ifndef NVML_GPU_FABRIC_UUID_LEN
#define NVML_GPU_FABRIC_UUID_LEN 16
typedef unsigned char nvmlGpuFabricState_t;
typedef struct {
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *gpuFabricInfo);
#endif

#include "nvml/symbols.h"

const struct abi_row abi_real_rows[] = {ABI_ROWS};
const unsigned abi_real_n_rows = sizeof(abi_real_rows) / sizeof(abi_real_rows[0]);

#define PROTO(field, sym, args, req) {#sym, __builtin_types_compatible_p(__typeof__(&sym), nvmlReturn_t(*) args)},
const struct abi_proto abi_real_protos[] = {NVML_SYMBOLS(PROTO)};
const unsigned abi_real_n_protos = sizeof(abi_real_protos) / sizeof(abi_real_protos[0]);
