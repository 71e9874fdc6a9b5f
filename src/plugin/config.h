/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plugin configuration: every flag and env var of NVIDIA's k8s-device-plugin v0.20.0, in one option
 * table (config.c), and what the plugin takes from the shared `version: v1` file (nvconfig/): its
 * keys through the same rows, its sharing rules. Precedence as upstream: command-line flag > env
 * var > config file > built-in default (docs/reference/device-plugin.md §1-2).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kapi/kapi.h"
#include "util/enumtab.h"
#include "util/err.h"
#include "util/hostpaths.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/optspec.h"
#include "util/warnings.h"
#include "nvml/xid.h"
#include "nvconfig/nvconfig.h"
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
extern const struct enum_name config_device_id_names[2], config_dls_names[4];

#define CONFIG_STR_MAX 255 /* the most characters of a text option that is not a path */

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
	unsigned cdi_feature_flags; /* enum cdi_feature bits */
	unsigned cdi_disable_hooks; /* enum cdi_hook bits */
	char *nvml_library;
	char *root;
	enum log_level log_level;
	bool print_config;       /* --print-config: print the effective config as JSON and exit */
	int64_t rescan_interval; /* ns */
	int64_t health_recovery; /* ns without a new error before a recoverable GPU is healthy again */
	char *kernel_log;        /* file followed for NVRM Xid lines; "" = <root>/dev/kmsg */
	/* env only (DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS) and the XID policy they make */
	char *xid_disable, *xid_enable;
	struct xid_policy xid_policy;
	/* sharing.* from the file (the section in use; strategy none without one) */
	struct nvconfig_sharing sharing;
	/* warnings collected while loading (the file's unknown keys and ignored sections, malformed XIDs), all */
	struct warnings warnings;
	bool node_health;     /* GPU health on the Node object: condition and events (plugin/node_health.h) */
	char *node_name;      /* this node (NODE_NAME), for --node-health */
	char *kubeconfig;     /* "": the pod's service account (the row reads $KUBECONFIG too) */
	struct kapi_env kenv; /* kubelet's in-pod environment (KAPI_ENV_ROWS()) */
	char *cdi_spec_dir;   /* where specs are written, as this process sees it; "" = <root>/var/run/cdi */
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

/* Load only a YAML/JSON v1 config text into cfg (one from config_new() or config_load(), on top of
 * what is there); name is for messages. */
int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err);

/* The resource_options for resources_build(); rules point into cfg. */
void config_resource_options(const struct plugin_config *cfg, struct resource_options *o);

/* The effective config as one JSON line ("Running with config"). Caller frees. */
char *config_to_json(const struct plugin_config *cfg);
