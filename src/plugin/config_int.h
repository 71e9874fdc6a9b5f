/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the plugin configuration: what config.c (the rows and layers), config_check.c (the
 * cross-option rules, warnings) and config_file.c (the v1 file) share. Not for other modules: they
 * use plugin/config.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "plugin/config.h"
#include "util/macro.h"

#define REPLICAS_MAX     1024 /* bound on time-slicing replicas per device */
#define MPS_REPLICAS_MAX 48   /* mps/device.go: 48 for compute capability >= 7.5 */

/* Append a warning (unknown key, ignored section) to c->warnings. 0, or -ENOMEM with err set. */
int config_warn(struct plugin_config *c, struct gerr *err, const char *fmt, ...) _printf_(3, 4);

/* The rules that tie options together (as upstream's validation after loading). */
int config_validate(const struct plugin_config *c, struct gerr *err);
