/* SPDX-License-Identifier: Apache-2.0 */
/* `gpulet mps-control-daemon` (mps_daemon.c): upstream's mps-control-daemon, and its mount-shm. */
#pragma once

#include <stddef.h>

#include "plugin/config.h"
#include "util/err.h"

/* Start, supervise and stop the MPS control daemons until SIGTERM; the exit code (0). */
int mps_daemon_run(const struct config_args *args, const struct plugin_config *cfg);

/* Mount a tmpfs at <mps-root>/shm, half of MemTotal, as upstream's init container. opts gets the size. */
int mps_mount_shm(const struct plugin_config *cfg, char *opts, size_t size, struct gerr *err);
