/* SPDX-License-Identifier: Apache-2.0 */
/* Registration client: /v1beta1.Registration/Register on kubelet's socket (reference/device-plugin.md §3.1). */
#pragma once

#include <stdbool.h>

#include "err.h"

/*
 * Register resource_name served at endpoint (socket file name relative to the device-plugin dir)
 * with kubelet listening on kubelet_socket. Returns 0, -ECONNREFUSED when kubelet is not (yet)
 * listening, or another -errno with err naming the gRPC status and kubelet's message.
 */
int plugin_register(const char *kubelet_socket, const char *endpoint, const char *resource_name,
		    bool preferred_allocation, int timeout_ms, struct gerr *err);
