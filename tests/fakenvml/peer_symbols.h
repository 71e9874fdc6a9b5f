/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML entry points gpulet never calls but NVIDIA's own tools do (nvidia-ctk cdi generate, GFD,
 * the device plugin), run by tests/oracles against this fake. Only the full variant exports them.
 * X(symbol) per row; the selftest resolves each one.
 */
#pragma once

#define PEER_SYMBOLS(X)                          \
	X(nvmlGpuInstanceGetComputeInstanceById) \
	X(nvmlComputeInstanceGetInfo_v2)         \
	X(nvmlGpuInstanceGetComputeInstanceProfileInfo)
