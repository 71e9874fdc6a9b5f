/* SPDX-License-Identifier: Apache-2.0 */
/* Registration client: /v1beta1.Registration/Register on kubelet's socket (docs/reference/device-plugin.md §3.1). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

struct plugin_registration {
	const char *endpoint;      /* socket file name relative to the device-plugin dir */
	const char *resource_name; /* "nvidia.com/gpu" */
	bool preferred_allocation;
	/* result: 0, -ECONNREFUSED when kubelet is not (yet) listening, another -errno otherwise */
	int result;
	struct gerr err;
};

/*
 * Register every entry with kubelet listening on kubelet_socket: all calls go out at once on one
 * channel, so n resources cost one round trip. Returns the number of failed entries.
 */
size_t plugin_register(const char *kubelet_socket, struct plugin_registration *regs, size_t n, int timeout_ms);
