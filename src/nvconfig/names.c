/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The words of the v1 file: every key of its flags block (api/config/v1/flags.go, imex.go at
 * v0.20.0) and the names of the strategies (docs/reference/device-plugin.md §1, §2, §6).
 */
#include "nvconfig/nvconfig.h"

const char *const nvconfig_keys[24] = {
    NVCONFIG_KEY_MIG_STRATEGY,
    NVCONFIG_KEY_FAIL_ON_INIT_ERROR,
    NVCONFIG_KEY_MPS_ROOT,
    NVCONFIG_KEY_DRIVER_ROOT,
    NVCONFIG_KEY_DEV_ROOT,
    NVCONFIG_KEY_GDRCOPY_ENABLED,
    NVCONFIG_KEY_GDS_ENABLED,
    NVCONFIG_KEY_MOFED_ENABLED,
    NVCONFIG_KEY_USE_NODE_FEATURE_API,
    NVCONFIG_KEY_DISCOVERY_STRATEGY,
    NVCONFIG_KEY_PASS_DEVICE_SPECS,
    NVCONFIG_KEY_DEVICE_LIST_STRATEGY,
    NVCONFIG_KEY_DEVICE_ID_STRATEGY,
    NVCONFIG_KEY_CDI_ANNOTATION_PREFIX,
    NVCONFIG_KEY_NVIDIA_CTK_PATH,
    NVCONFIG_KEY_CTR_DRIVER_ROOT,
    NVCONFIG_KEY_SHARED_DEVICES_ALLOC_POLICY,
    NVCONFIG_KEY_GFD_ONESHOT,
    NVCONFIG_KEY_GFD_NO_TIMESTAMP,
    NVCONFIG_KEY_GFD_SLEEP_INTERVAL,
    NVCONFIG_KEY_GFD_OUTPUT_FILE,
    NVCONFIG_KEY_GFD_MACHINE_TYPE_FILE,
    NVCONFIG_KEY_IMEX_CHANNEL_IDS,
    NVCONFIG_KEY_IMEX_REQUIRED,
};

const struct enum_name mig_strategy_names[3] = {
    {MIG_STRATEGY_NONE, "none"},
    {MIG_STRATEGY_SINGLE, "single"},
    {MIG_STRATEGY_MIXED, "mixed"},
};
const struct enum_name sharing_strategy_names[3] = {
    {SHARING_NONE, "none"},
    {SHARING_TIME_SLICING, "time-slicing"},
    {SHARING_MPS, "mps"},
};
const struct enum_name discovery_strategy_names[4] = {
    {DISCOVERY_AUTO, "auto"}, {DISCOVERY_NVML, "nvml"}, {DISCOVERY_TEGRA, "tegra"}, {DISCOVERY_VFIO, "vfio"}};

const char *mig_strategy_name(enum mig_strategy s)
{
	return enum_to_name(mig_strategy_names, s, "none");
}

int mig_strategy_from_name(const char *name, enum mig_strategy *ret)
{
	return enum_from_name(mig_strategy_names, name, ret);
}

const char *sharing_strategy_name(enum sharing_strategy s)
{
	return enum_to_name(sharing_strategy_names, s, "none");
}

int sharing_strategy_from_name(const char *name, enum sharing_strategy *ret)
{
	return enum_from_name(sharing_strategy_names, name, ret);
}
