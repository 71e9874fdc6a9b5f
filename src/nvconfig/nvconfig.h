/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA's shared `version: v1` config file, the one the device plugin, its mps-control-daemon and
 * GPU Feature Discovery all read (k8s-device-plugin api/config/v1; docs/reference/device-plugin.md
 * §2): the keys of its flags block and the option rows the readers share, the sharing rules
 * (timeSlicing/mps replicas, renameByDefault, failRequestsGreaterThanOne) with the names of the
 * strategies, and the file walker. Each reader (plugin/config.c, cmd/verb_labels.c) takes from it
 * what it uses: the walker hands the flags block to the reader's own option rows, so precedence
 * stays flag > env var > file > default, and returns the sharing section typed.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/enumtab.h"
#include "util/err.h"
#include "util/optspec.h"
#include "util/warnings.h"

/* ---- the names of the strategies ------------------------------------------------------------- */

enum mig_strategy { MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE, MIG_STRATEGY_MIXED };
enum sharing_strategy { SHARING_NONE, SHARING_TIME_SLICING, SHARING_MPS };
/* flags.deviceDiscoveryStrategy (vfio: GFD only) */
enum discovery_strategy { DISCOVERY_AUTO, DISCOVERY_NVML, DISCOVERY_TEGRA, DISCOVERY_VFIO };

/*
 * The words of each, as upstream's flags and file spell them (util/enumtab.h tables): --mig-strategy
 * none|single|mixed, the sharing strategy none|time-slicing|mps (GFD's sharing-strategy label),
 * auto|nvml|tegra|vfio. *_from_name: 0, or -EINVAL for another word.
 */
extern const struct enum_name mig_strategy_names[3], sharing_strategy_names[3], discovery_strategy_names[4];
const char *mig_strategy_name(enum mig_strategy s);
int mig_strategy_from_name(const char *name, enum mig_strategy *ret);
const char *sharing_strategy_name(enum sharing_strategy s);
int sharing_strategy_from_name(const char *name, enum sharing_strategy *ret);

/* ---- the sharing rules ----------------------------------------------------------------------- */

#define NVCONFIG_MAX_RULES        16
#define NVCONFIG_REPLICAS_MAX     1024 /* bound on time-slicing replicas per device */
#define NVCONFIG_MPS_REPLICAS_MAX 48   /* mps/device.go: 48 for compute capability >= 7.5 */

/*
 * One `sharing.{timeSlicing,mps}.resources[]` entry. The names stay inline: a resource name is at
 * most 63 characters (upstream's NewResourceName, checked where the file is read, longer is an
 * error naming file:line:col), a rename at most that plus ".shared", so both always fit.
 */
struct replica_rule {
	char name[128];    /* resource it applies to: "nvidia.com/gpu", "nvidia.com/mig-1g.5gb" */
	char rename[128];  /* "" = keep name; "<name>.shared" with renameByDefault (a rule's own rename is dropped) */
	unsigned replicas; /* 2..NVCONFIG_REPLICAS_MAX (MPS: ..NVCONFIG_MPS_REPLICAS_MAX) */
			   /* devices: all (upstream also takes a list or a count, and then uses all with a warning) */
};

/* The sharing section in use: upstream's Sharing.SharingStrategy() (MPS wins over time-slicing). */
struct nvconfig_sharing {
	enum sharing_strategy strategy; /* SHARING_NONE: no section (then no rules) */
	bool rename_by_default;
	bool fail_requests_greater_than_one; /* unset: false for time-slicing, true for MPS (as upstream) */
	struct replica_rule rules[NVCONFIG_MAX_RULES];
	size_t n_rules;
};

/* ---- the flags block: its keys, and the rows its readers share ------------------------------- */

/* Every key upstream's v1 file has (api/config/v1/flags.go, imex.go at v0.20.0). */
#define NVCONFIG_KEY_MIG_STRATEGY                "flags.migStrategy"
#define NVCONFIG_KEY_FAIL_ON_INIT_ERROR          "flags.failOnInitError"
#define NVCONFIG_KEY_MPS_ROOT                    "flags.mpsRoot"
#define NVCONFIG_KEY_DRIVER_ROOT                 "flags.nvidiaDriverRoot"
#define NVCONFIG_KEY_DEV_ROOT                    "flags.nvidiaDevRoot"
#define NVCONFIG_KEY_GDRCOPY_ENABLED             "flags.gdrcopyEnabled"
#define NVCONFIG_KEY_GDS_ENABLED                 "flags.gdsEnabled"
#define NVCONFIG_KEY_MOFED_ENABLED               "flags.mofedEnabled"
#define NVCONFIG_KEY_USE_NODE_FEATURE_API        "flags.useNodeFeatureAPI"
#define NVCONFIG_KEY_DISCOVERY_STRATEGY          "flags.deviceDiscoveryStrategy"
#define NVCONFIG_KEY_PASS_DEVICE_SPECS           "flags.plugin.passDeviceSpecs"
#define NVCONFIG_KEY_DEVICE_LIST_STRATEGY        "flags.plugin.deviceListStrategy"
#define NVCONFIG_KEY_DEVICE_ID_STRATEGY          "flags.plugin.deviceIDStrategy"
#define NVCONFIG_KEY_CDI_ANNOTATION_PREFIX       "flags.plugin.cdiAnnotationPrefix"
#define NVCONFIG_KEY_NVIDIA_CTK_PATH             "flags.plugin.nvidiaCTKPath"
#define NVCONFIG_KEY_CTR_DRIVER_ROOT             "flags.plugin.containerDriverRoot"
#define NVCONFIG_KEY_SHARED_DEVICES_ALLOC_POLICY "flags.plugin.sharedDevicesAllocationPolicy"
#define NVCONFIG_KEY_GFD_ONESHOT                 "flags.gfd.oneshot"
#define NVCONFIG_KEY_GFD_NO_TIMESTAMP            "flags.gfd.noTimestamp"
#define NVCONFIG_KEY_GFD_SLEEP_INTERVAL          "flags.gfd.sleepInterval"
#define NVCONFIG_KEY_GFD_OUTPUT_FILE             "flags.gfd.outputFile"
#define NVCONFIG_KEY_GFD_MACHINE_TYPE_FILE       "flags.gfd.machineTypeFile"
#define NVCONFIG_KEY_IMEX_CHANNEL_IDS            "imex.channelIDs"
#define NVCONFIG_KEY_IMEX_REQUIRED               "imex.required"
/* The keys above, all of them: a key one reader has no row for is another reader's, not a typo. */
extern const char *const nvconfig_keys[24];

/*
 * The rows both readers have, one definition each (util/optspec.h); off_ is where the value goes in
 * the reader's options, the env vars are the reader's upstream's (the plugin's and GFD's differ).
 */
#define NVCONFIG_OPT_MIG_STRATEGY(off_, help_, ...)                                              \
	{                                                                                        \
		.name = "mig-strategy", .kind = OPT_ENUM, .arg = "S", .env = {__VA_ARGS__},      \
		.key = NVCONFIG_KEY_MIG_STRATEGY, .def = "none", .off = (off_), .help = (help_), \
		OPTSPEC_NAMES(mig_strategy_names)                                                \
	}
#define NVCONFIG_OPT_FAIL_ON_INIT_ERROR(off_, help_, ...)                                             \
	{                                                                                             \
		.name = "fail-on-init-error", .kind = OPT_BOOL, .env = {__VA_ARGS__},                 \
		.key = NVCONFIG_KEY_FAIL_ON_INIT_ERROR, .def = "true", .off = (off_), .help = (help_) \
	}
#define NVCONFIG_OPT_DISCOVERY(off_, help_)                                                                  \
	{                                                                                                    \
		.name = "device-discovery-strategy", .kind = OPT_ENUM, .arg = "S",                           \
		.env = {"DEVICE_DISCOVERY_STRATEGY"}, .key = NVCONFIG_KEY_DISCOVERY_STRATEGY, .def = "auto", \
		.off = (off_), .help = (help_), OPTSPEC_NAMES(discovery_strategy_names)                      \
	}
/* where the driver root is mounted in the container (an absolute path without '..') */
#define NVCONFIG_OPT_CTR_DRIVER_ROOT(off_)                                                                        \
	{                                                                                                         \
		.name = "driver-root-ctr-path", .alias = "container-driver-root", .kind = OPT_PATH, .arg = "DIR", \
		.env = {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"}, .key = NVCONFIG_KEY_CTR_DRIVER_ROOT,    \
		.def = "/driver-root", .off = (off_), .max = PATH_MAX - 1,                                        \
		.help = "where the host driver root is mounted in the plugin container"                           \
	}
/* the v1 file itself (a relative path taken from the working directory) */
#define NVCONFIG_OPT_CONFIG_FILE(off_, ...)                                                                  \
	{                                                                                                    \
		.name = "config-file", .kind = OPT_FILE, .arg = "FILE", .env = {__VA_ARGS__}, .off = (off_), \
		.max = PATH_MAX - 1,                                                                         \
		.help = "version: v1 config file (YAML or JSON); a relative path is taken from the working " \
			"directory"                                                                          \
	}

/* ---- the file -------------------------------------------------------------------------------- */

#define NVCONFIG_FILE_MAX (1024 * 1024)

/* What a file gives besides the options: the sharing section, and what was passed over. */
struct nvconfig_file {
	struct nvconfig_sharing sharing;
	/* unknown keys, ignored sections and entries, each "file:line:col: what (ignored)", all of them */
	struct warnings warnings;
};
void nvconfig_file_clear(struct nvconfig_file *f);

/*
 * Walk a v1 text (YAML, or JSON as YAML's flow style; name for messages) into ret (cleared first):
 * each flags.* and imex.* value that a row of cli has goes through the engine's setter into opts
 * with its place ("name:line:col"), typed as upstream's encoding/json takes it; the sharing section
 * is checked as upstream checks it. A value of the wrong type, a bad value, a bad sharing entry:
 * -EINVAL with err saying file:line:col, the key and what is valid; *ret is then cleared.
 */
int nvconfig_read(const char *text, size_t len, const char *name, const struct optspec_cli *cli, void *opts,
		  struct nvconfig_file *ret, struct gerr *err);
/* The same for the file at path (as given; at most NVCONFIG_FILE_MAX bytes). */
int nvconfig_load(const char *path, const struct optspec_cli *cli, void *opts, struct nvconfig_file *ret,
		  struct gerr *err);
