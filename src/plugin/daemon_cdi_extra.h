/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `gpulet plugin` hands out beside the GPUs (daemon_cdi_extra.c): the IMEX channel and the
 * gated GDRCopy/GDS/MOFED CDI specs (docs/reference/device-plugin.md §8.1). A unit of the plugin
 * daemon (daemon.c owns it): it reads the config it is given and writes the spec dir.
 */
#pragma once

#include <stdbool.h>

#include "plugin/config.h"
#include "util/err.h"

/* Whether cfg's IMEX channel node is a character device under the dev root; *ret_path its path. */
bool daemon_imex_channel_present(const struct plugin_config *cfg, char **ret_path);
/*
 * upstream internal/imex: *ret is whether cfg's IMEX channel is used (its node exists; absent:
 * a warning). -ENODEV with err when imex.required and it does not exist.
 */
int daemon_imex_select(const struct plugin_config *cfg, bool *ret, struct gerr *err);
/*
 * With a CDI strategy, write the imex-channel spec (imex: the channel is used) and the gated
 * (gdrcopy/gds/mofed) specs; an enabled feature without device nodes is logged. A feature off or
 * absent has no spec: one an earlier run of gpulet wrote is removed (logged). Returns the
 * DP_CDI_EXTRA_* bits written.
 */
unsigned daemon_cdi_write_extra(const struct plugin_config *cfg, bool imex);
