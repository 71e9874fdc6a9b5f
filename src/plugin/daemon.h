/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin daemon: one gRPC server per resource in the device-plugin dir, registration with
 * kubelet, and the loop that reacts to kubelet restarts (inotify on kubelet.sock), SIGHUP
 * (reload), SIGTERM/SIGINT/SIGQUIT (empty device list, sockets removed, exit 0).
 * Facts: docs/reference/device-plugin.md §3.1-3.2.
 */
#pragma once

#include "plugin/config.h"

/* Runs until a stop signal; returns the process exit code (0 clean stop, 1 fatal init error). */
int plugin_daemon_run(const struct config_args *args, const struct plugin_config *cfg);
