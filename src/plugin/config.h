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
extern const struct enum_name config_device_id_names[2], config_discovery_names[4];

#define CONFIG_MAX_RULES 16
#define CONFIG_STR       256

/*
 * GPU Feature Discovery's own keys of the same v1 file (flags.gfd.*, flags.useNodeFeatureAPI): the
 * plugin ignores them; `gpulet labels` reads them from plugin_config.gfd[] as written ("" = absent).
 */
enum config_gfd_key {
	CONFIG_GFD_ONESHOT,
	CONFIG_GFD_NO_TIMESTAMP,
	CONFIG_GFD_SLEEP_INTERVAL,
	CONFIG_GFD_OUTPUT_FILE,
	CONFIG_GFD_MACHINE_TYPE_FILE,
	CONFIG_GFD_USE_NODE_FEATURE_API,
	CONFIG_GFD_N,
};
extern const char *const config_gfd_keys[CONFIG_GFD_N];

struct plugin_config {
	/* flags.* shared with GFD */
	enum mig_strategy mig_strategy;
	bool fail_on_init_error;
	char driver_root[PATH_MAX];
	char dev_root[PATH_MAX]; /* "" = same as driver_root */
	char mps_root[PATH_MAX];
	bool gdrcopy_enabled, gds_enabled, mofed_enabled;
	enum discovery_strategy device_discovery_strategy;
	/* flags.plugin.* */
	bool pass_device_specs;
	unsigned device_list_strategy; /* DLS_* bits */
	enum device_id_strategy device_id_strategy;
	char cdi_annotation_prefix[CONFIG_STR];
	char nvidia_cdi_hook_path[PATH_MAX];
	char container_driver_root[PATH_MAX];
	enum replica_policy shared_devices_allocation_policy;
	/* imex.* */
	char imex_channel_ids[32]; /* "" or "0" */
	bool imex_required;
	/* command line / env only */
	char kubelet_socket[PATH_MAX]; /* "" = serve but never register */
	char device_plugin_path[PATH_MAX];
	char config_file[PATH_MAX];
	char cdi_feature_flags[CONFIG_STR];
	char cdi_disable_hooks[CONFIG_STR];
	char nvml_library[PATH_MAX];
	char root[PATH_MAX];
	char log_level[16];
	unsigned rescan_interval;  /* seconds */
	unsigned health_recovery;  /* seconds without a new error before a recoverable GPU is healthy again */
	char kernel_log[PATH_MAX]; /* file followed for NVRM Xid lines; "" = <root>/dev/kmsg */
	/* sharing.* from the file */
	enum sharing_strategy sharing;
	bool rename_by_default;
	bool fail_requests_greater_than_one;
	struct replica_rule rules[CONFIG_MAX_RULES];
	size_t n_rules;
	/* GFD's keys (enum config_gfd_key) as the file writes them, "" = not in the file */
	char gfd[CONFIG_GFD_N][CONFIG_STR];
	/* warnings collected while loading (unknown keys, ignored sections), "; "-separated; a list
	 * that reached the size ends saying so (warnings_full) */
	char warnings[2048];
	bool warnings_full;
};

/* Raw command-line values, collected by cmd_plugin's getopt loop and applied last. */
struct config_args;

/* What the command line asks for besides the options. */
enum config_action { CONFIG_RUN, CONFIG_HELP, CONFIG_VERSION };

/*
 * Parse argv (argv[0] is the verb); *action says --help or --version (which wins). Returns 0, or
 * -EINVAL with err naming the bad flag (exit code 2).
 */
int config_parse_args(int argc, char **argv, struct config_args **ret, enum config_action *action, struct gerr *err);
void config_args_free(struct config_args *a);
/* --print-config: print the effective config as JSON and exit. */
bool config_args_print_only(const struct config_args *a);
DEFINE_CLEANUP_FUNC(struct config_args, config_args_free)
/* Give flag a value when neither the command line nor its env var did (a verb's own default). */
void config_args_default(struct config_args *a, const char *flag, const char *value);

/*
 * Build the effective config: defaults, then the config file (--config-file / CONFIG_FILE, a path
 * as given), then env (getenv), then args. A bad file fails with
 * file:line:col and the key; an out-of-range value names its source.
 */
int config_load(const struct config_args *args, struct plugin_config *ret, struct gerr *err);

/*
 * Defaults, then the v1 file at path (as given): no env vars, no command line, no cross-option
 * validation. For `gpulet labels`, which layers its own flags and env vars (GFD's) on top.
 */
int config_load_file(const char *path, struct plugin_config *ret, struct gerr *err);

/* Load only a YAML/JSON v1 config text into cfg (on top of what is there); name is for messages. */
int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err);

/* The resource_options for resources_build(); rules point into cfg. */
void config_resource_options(const struct plugin_config *cfg, struct resource_options *o);

/* `--help` text: every option with its env var and default. */
void config_print_help(FILE *f);

/* The effective config as one JSON line ("Running with config"). Caller frees. */
char *config_to_json(const struct plugin_config *cfg);

/* dev_root when set, else driver_root. */
const char *config_dev_root(const struct plugin_config *cfg);
