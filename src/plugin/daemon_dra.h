/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device plugin's side of one rule: a GPU is never advertised by both the device plugin and a DRA
 * driver on one node (docs/reference/dra.md §13). While a DRA driver for NVIDIA GPUs is registered
 * with this node's kubelet (a live <kubelet dir>/plugins_registry/gpu.nvidia.com[-<uid>]-reg.sock:
 * gpulet dra's or NVIDIA's gpu-kubelet-plugin), the plugin advertises nothing; it advertises again
 * only once that registration has been gone longer than kubelet takes to wipe the driver's
 * ResourceSlices (30 s), so a restarting DRA driver never has its GPUs taken over. A unit of the
 * plugin daemon (daemon.c owns it); the DRA driver's own half is in dra/daemon.c (it withholds its
 * pool while a device plugin advertises nvidia.com resources).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The DRA driver name whose registration the plugin yields to: NVIDIA's, which gpulet dra keeps. */
#define DAEMON_DRA_DRIVER "gpu.nvidia.com"
/* kubelet wipes a gone driver's slices after 30 s (pkg/kubelet/cm/dra/manager.go defaultWipingDelay) */
#define DAEMON_DRA_GONE_MS (35 * 1000)

struct daemon_dra {
	bool yielding;     /* advertising nothing for the DRA driver */
	long long gone_ms; /* when its registration was first seen gone while yielding, 0: not gone */
	char socket[4096]; /* the registration socket found */
};

/*
 * Whether the plugin must advertise nothing now (now: loop_now_ms()); kubelet's plugins_registry is
 * the dir beside device_plugin_path (--device-plugin-path). Logs once each time that changes: the
 * registration found, or that it is gone and the plugin takes the GPUs back.
 */
bool daemon_dra_yield(struct daemon_dra *g, const char *device_plugin_path, long long now);
