/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rules that tie plugin options together (each value alone is checked by the option engine's
 * one setter, util/optspec.h). Sources: docs/reference/device-plugin.md §1-2.
 */
#include <errno.h>

#include "cdi/cdi.h"
#include "plugin/config_int.h"

int config_validate(const struct plugin_config *c, struct gerr *err)
{
	/* the file is shared with labels, which takes vfio (GPUs passed through to VMs); the plugin does not */
	if (c->device_discovery_strategy == DISCOVERY_VFIO)
		return gerr_set(err, EINVAL,
				"--device-discovery-strategy=vfio is for labels (GPU Feature Discovery) only; "
				"the device plugin takes auto or nvml");
	/* upstream's tegra finds Tegra's integrated GPU through CSV files; gpulet has only NVML: refused, never
	 * NVML in its place (docs/reference/device-plugin.md §1) */
	if (c->device_discovery_strategy == DISCOVERY_TEGRA)
		return gerr_set(err, EOPNOTSUPP,
				"--device-discovery-strategy=tegra is not supported: gpulet finds GPUs through NVML "
				"only (no Tegra CSV discovery); use auto or nvml, or NVIDIA's device plugin on Tegra");
	/* refused when read, with a CDI strategy or without (never accepted and then ignored) */
	if (cdi_features_check(c->cdi_feature_flags, err) < 0)
		return -EOPNOTSUPP;
	if (c->sharing.strategy == SHARING_MPS && c->mig_strategy == MIG_STRATEGY_MIXED)
		return gerr_set(err, EINVAL, "MPS sharing is not supported with --mig-strategy=mixed");
	if (c->sharing.strategy == SHARING_MPS && !c->mps_root[0])
		return gerr_set(err, EINVAL, "using MPS requires --mps-root to be specified (e.g. /run/nvidia/mps)");
	if (c->node_health && !c->node_name[0])
		return gerr_set(err, EINVAL,
				"--node-health needs this node's name: set NODE_NAME (the chart sets it from "
				"spec.nodeName) or --node-name");
	return 0;
}
