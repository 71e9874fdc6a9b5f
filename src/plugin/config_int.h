/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the plugin configuration: what config.c (the rows and layers) and config_check.c (the
 * cross-option rules) share; the v1 file is nvconfig/'s. Not for other modules: they use
 * plugin/config.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "plugin/config.h"
#include "util/macro.h"

/* The rules that tie options together (as upstream's validation after loading). */
int config_validate(const struct plugin_config *c, struct gerr *err);
