/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plugin configuration: every flag and env var of NVIDIA's k8s-device-plugin v0.20.0 plus the
 * `version: v1` config file, in one option table (config.c). Precedence as upstream:
 * command-line flag > env var > config file > built-in default (docs/reference/device-plugin.md §1-2).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/enumtab.h"
#include "util/err.h"
#include "util/hostpaths.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/optspec.h"
#include "plugin/resources.h"

/* --device-list-strategy values; several may be set at once. */
enum {
	DLS_ENVVAR = 1 << 0,
	DLS_VOLUME_MOUNTS = 1 << 1,
	DLS_CDI_ANNOTATIONS = 1 << 2,
	DLS_CDI_CRI = 1 << 3,
};
#define DLS_CDI_ANY (DLS_CDI_ANNOTATIONS | DLS_CDI_CRI)

/* --device-id-strategy: the IDs (and CDI device names) containers get. */
enum device_id_strategy { DEVICE_ID_UUID, DEVICE_ID_INDEX };
/* --device-discovery-strategy (vfio: labels only). */
enum discovery_strategy { DISCOVERY_AUTO, DISCOVERY_NVML, DISCOVERY_TEGRA, DISCOVERY_VFIO };
extern const struct enum_name config_device_id_names[2], config_discovery_names[4], config_dls_names[4];

/*
 * The keys of the shared v1 file that only GFD reads (upstream api/config/v1/flags.go, v0.20.0;
 * docs/reference/device-plugin.md §2): gpulet labels' rows set them, the plugin's reader passes
 * over them without a warning (config_gfd_keys lists them all).
 */
#define CONFIG_KEY_GFD_ONESHOT           "flags.gfd.oneshot"
#define CONFIG_KEY_GFD_NO_TIMESTAMP      "flags.gfd.noTimestamp"
#define CONFIG_KEY_GFD_SLEEP_INTERVAL    "flags.gfd.sleepInterval"
#define CONFIG_KEY_GFD_OUTPUT_FILE       "flags.gfd.outputFile"
#define CONFIG_KEY_GFD_MACHINE_TYPE_FILE "flags.gfd.machineTypeFile"
#define CONFIG_KEY_USE_NODE_FEATURE_API  "flags.useNodeFeatureAPI"
/* keys both readers take, each with its own row (the plugin's and GFD's defaults and env vars differ) */
#define CONFIG_KEY_MIG_STRATEGY       "flags.migStrategy"
#define CONFIG_KEY_FAIL_ON_INIT_ERROR "flags.failOnInitError"
#define CONFIG_KEY_DISCOVERY_STRATEGY "flags.deviceDiscoveryStrategy"
extern const char *const config_gfd_keys[6];

/*
 * Rows the plugin and labels share, one rule each (util/optspec.h), off_ the owned char * of the
 * verb's options: where the driver root is mounted in the container (an absolute path without
 * '..'), and the v1 config file (a relative path taken from the working directory); env_ the env
 * vars the verb's upstream reads.
 */
#define CONFIG_OPT_CTR_DRIVER_ROOT(off_)                                                                             \
	{                                                                                                            \
		.name = "driver-root-ctr-path", .alias = "container-driver-root", .kind = OPT_PATH, .arg = "DIR",    \
		.env = {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"}, .key = "flags.plugin.containerDriverRoot", \
		.def = "/driver-root", .off = (off_), .max = PATH_MAX - 1,                                           \
		.help = "where the host driver root is mounted in the plugin container"                              \
	}
#define CONFIG_OPT_CONFIG_FILE(off_, ...)                                                                    \
	{                                                                                                    \
		.name = "config-file", .kind = OPT_FILE, .arg = "FILE", .env = {__VA_ARGS__}, .off = (off_), \
		.max = PATH_MAX - 1,                                                                         \
		.help = "version: v1 config file (YAML or JSON); a relative path is taken from the working " \
			"directory"                                                                          \
	}

#define CONFIG_MAX_RULES 16
#define CONFIG_STR_MAX   255 /* the most characters of a text option that is not a path */

/*
 * Ownership: every text field is a heap string owned by the struct, never NULL in a struct that
 * config_new() or config_load() returned; "" means the option is absent. config_free() releases
 * them all with the struct. A struct is only ever handled by pointer (never copied: two copies
 * would own the same strings); to change a running config, load a new one and swap the pointers.
 */
struct plugin_config {
	/* flags.* shared with GFD */
	enum mig_strategy mig_strategy;
	bool fail_on_init_error;
	char *driver_root;
	char *dev_root; /* "" = same as driver_root */
	char *mps_root;
	bool gdrcopy_enabled, gds_enabled, mofed_enabled;
	enum discovery_strategy device_discovery_strategy;
	/* flags.plugin.* */
	bool pass_device_specs;
	unsigned device_list_strategy; /* DLS_* bits */
	enum device_id_strategy device_id_strategy;
	char *cdi_annotation_prefix;
	char *nvidia_cdi_hook_path;
	char *container_driver_root;
	enum replica_policy shared_devices_allocation_policy;
	/* imex.* */
	char *imex_channel_ids; /* "" or "0" */
	bool imex_required;
	/* command line / env only */
	char *kubelet_socket; /* "" = serve but never register */
	char *device_plugin_path;
	char *config_file;
	char *cdi_feature_flags;
	char *cdi_disable_hooks;
	char *nvml_library;
	char *root;
	enum log_level log_level;
	bool print_config;       /* --print-config: print the effective config as JSON and exit */
	int64_t rescan_interval; /* ns */
	int64_t health_recovery; /* ns without a new error before a recoverable GPU is healthy again */
	char *kernel_log;        /* file followed for NVRM Xid lines; "" = <root>/dev/kmsg */
	char *cdi_spec_dir;      /* where specs are written, as this process sees it; "" = <root>/var/run/cdi */
	/* sharing.* from the file */
	enum sharing_strategy sharing;
	bool rename_by_default;
	bool fail_requests_greater_than_one;
	struct replica_rule rules[CONFIG_MAX_RULES]; /* more in a file: an error naming the entry */
	size_t n_rules;
	/* warnings collected while loading (unknown keys, ignored sections), "; "-separated, all of them:
	 * the file is at most 1 MiB, so is the list within a bound; warnings_len is strlen(warnings) */
	char *warnings;
	size_t warnings_len, warnings_cap;
	/* root, driver root, dev root, container driver root and NVML library resolved once, after every layer
	 * (util/hostpaths.h): what every part of the plugin reads and writes host paths with; owned */
	struct host_paths *host;
};

/* A config with every number zero and every text "" (what the layers start from); NULL: out of memory. */
struct plugin_config *config_new(void);
/* Release c and every string it owns. NULL is fine. */
void config_free(struct plugin_config *c);
DEFINE_CLEANUP_FUNC(struct plugin_config, config_free)

/*
 * How the plugin's (and upstream's mps-control-daemon's) flags, env vars and v1 file are read: the
 * option rows for the one engine (util/optspec.h), the file layer, the rules after every layer.
 */
extern const struct optspec_cli config_cli;

/*
 * Build the effective config, a new one in *ret (the caller frees it with config_free()):
 * defaults, then the config file (--config-file / CONFIG_FILE, a path as given), then env, then
 * args (the command line kept for SIGHUP, util/loop.h; NULL: none). A bad file fails with file:line:col and the key; a
 * bad value (too long included) names its source. *ret is set only on success.
 */
int config_load(const struct loop_argv *args, struct plugin_config **ret, struct gerr *err);

/*
 * The v1 file at path (as given) for another reader of it (gpulet labels, GFD's keys): option keys set
 * cli's rows in opts, the sharing section and the warnings go to cfg (one from config_new()). A key of
 * the plugin's rows that cli has none for is not a warning.
 */
int config_load_file_to(const struct optspec_cli *cli, void *opts, const char *path, struct plugin_config *cfg,
			struct gerr *err);

/* Load only a YAML/JSON v1 config text into cfg (one from config_new() or config_load(), on top of
 * what is there); name is for messages. */
int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err);
/* The same with the option keys going to cli's rows in opts. */
int config_apply_file_to(const struct optspec_cli *cli, void *opts, struct plugin_config *cfg, const char *text,
			 size_t len, const char *name, struct gerr *err);

/* The resource_options for resources_build(); rules point into cfg. */
void config_resource_options(const struct plugin_config *cfg, struct resource_options *o);

/* The effective config as one JSON line ("Running with config"). Caller frees. */
char *config_to_json(const struct plugin_config *cfg);
