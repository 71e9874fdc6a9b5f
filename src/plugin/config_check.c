/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rules that tie plugin options together (each value alone is checked by the option engine's
 * one setter, util/optspec.h), and the warnings of the config file. Sources:
 * docs/reference/device-plugin.md §1-2.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/config_int.h"

int config_warn(struct plugin_config *c, struct gerr *err, const char *fmt, ...)
{
	_cleanup_free_ char *w = NULL;
	size_t need;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&w, fmt, ap);
	va_end(ap);
	if (n < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	/* every warning is kept: the list grows (twice the room each time), "; " between two */
	need = c->warnings_len + 2 + (size_t)n + 1;
	if (need > c->warnings_cap) {
		size_t cap = need > 2 * c->warnings_cap ? need : 2 * c->warnings_cap;
		char *p = realloc(c->warnings, cap);

		if (!p)
			return gerr_set(err, ENOMEM, "out of memory");
		c->warnings = p;
		c->warnings_cap = cap;
	}
	c->warnings_len += (size_t)snprintf(c->warnings + c->warnings_len, c->warnings_cap - c->warnings_len, "%s%s",
					    c->warnings_len ? "; " : "", w);
	return 0;
}

int config_validate(const struct plugin_config *c, struct gerr *err)
{
	/* the file is shared with labels, which takes vfio (GPUs passed through to VMs); the plugin does not */
	if (c->device_discovery_strategy == DISCOVERY_VFIO)
		return gerr_set(err, EINVAL,
				"--device-discovery-strategy=vfio is for labels (GPU Feature Discovery) only; "
				"the device plugin takes auto, nvml or tegra");
	if ((c->device_list_strategy & DLS_CDI_ANY) && c->device_discovery_strategy == DISCOVERY_TEGRA)
		return gerr_set(err, EINVAL,
				"CDI --device-list-strategy options are only supported on NVML-based systems; "
				"use envvar or volume-mounts with --device-discovery-strategy=tegra");
	if (c->sharing == SHARING_MPS && c->mig_strategy == MIG_STRATEGY_MIXED)
		return gerr_set(err, EINVAL, "MPS sharing is not supported with --mig-strategy=mixed");
	if (c->sharing == SHARING_MPS && !c->mps_root[0])
		return gerr_set(err, EINVAL, "using MPS requires --mps-root to be specified (e.g. /run/nvidia/mps)");
	if (c->node_health && !c->node_name[0])
		return gerr_set(err, EINVAL,
				"--node-health needs this node's name: set NODE_NAME (the chart sets it from "
				"spec.nodeName) or --node-name");
	return 0;
}
