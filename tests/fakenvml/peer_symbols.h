/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML entry points outside gpulet's symbol table (src/nvml/symbols.h): calls NVIDIA's own tools make
 * (nvidia-ctk cdi generate, GFD, the device plugin, run by tests/oracles against this fake), and
 * nvmlDeviceSetMemoryLimits_v1, which both hooks' apply-cuda-memory-limits resolve by name (gpulet:
 * nvml_set_memory_limits()). Only the full variant exports them.
 * X(symbol) per row; the selftest resolves each one.
 */
#pragma once

#define PEER_SYMBOLS(X)                                 \
	X(nvmlGpuInstanceGetComputeInstanceById)        \
	X(nvmlComputeInstanceGetInfo_v2)                \
	X(nvmlGpuInstanceGetComputeInstanceProfileInfo) \
	X(nvmlDeviceSetMemoryLimits_v1)
