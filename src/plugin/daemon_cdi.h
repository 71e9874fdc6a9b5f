/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI spec upkeep of `gpulet plugin` (daemon_cdi.c): the gpu class spec the CDI device-list
 * strategies' names refer to (docs/reference/device-plugin.md §8). A unit of the plugin daemon
 * (daemon.c owns it).
 */
#pragma once

#include "nvml/node.h"
#include "plugin/config.h"
#include "plugin/dp.h"

/*
 * With a CDI strategy in cfg, write node's spec (nothing without one, or without a node). names
 * gets the device names the file now on disk defines (none when it could not be written), which
 * is all Allocate hands out. Returns 0 when written or not needed, -errno (logged) otherwise.
 */
int daemon_cdi_write_spec(const struct plugin_config *cfg, const struct node *node, struct dp_cdi_names *names);
void daemon_cdi_names_clear(struct dp_cdi_names *c);

/* Where the plugin writes its specs: --cdi-spec-dir, else /var/run/cdi below --root. NULL on ENOMEM. */
char *daemon_cdi_dir(const struct plugin_config *cfg);
