/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommand entry points and the option plumbing they share. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#define EXIT_USAGE 2

/*
 * Each verb: its options through the one option engine (cmd_parse() over its rows, util/optspec.h),
 * then call the library, print, return the exit code.
 */
int cmd_devices(int argc, char **argv);
int cmd_plugin(int argc, char **argv);
/* The hidden verb of plugin/node_health_int.h: one round of --node-health with the API server. */
int cmd_plugin_node_health(int argc, char **argv);
int cmd_mps_control_daemon(int argc, char **argv);
int cmd_cdi(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_lint(int argc, char **argv);
int cmd_versions(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_labels(int argc, char **argv);
int cmd_cdihook(int argc, char **argv);
/* cmd_cdihook() without NVML, for the static gpulet-cdi-hook: an action that needs NVML runs in the gpulet beside it.
 */
int cmd_cdihook_static(int argc, char **argv);
/* Both: apply sets a GPU memory limit through NVML (verb_cdihook_nvml.c), NULL hands that to gpulet. */
struct cdihook_memlimits;
struct gerr;
int cmd_cdihook_with(int argc, char **argv,
		     int (*apply)(const char *driver_root, const char *const *gpus, size_t n,
				  const struct cdihook_memlimits *m, struct gerr *err));
int cmd_dra(int argc, char **argv);
int cmd_entrypoint(int argc, char **argv);
int cmd_config_manager(int argc, char **argv);

/* --print-config of the plugin and mps-control-daemon: the effective config as JSON, its warnings on stderr. */
struct plugin_config;
int cmd_print_plugin_config(const char *verb, const struct plugin_config *cfg);

/*
 * Block SIGTERM and SIGINT (set gets them) in this thread and every thread it starts, so that a
 * daemon verb's main thread takes them with sigwait/sigtimedwait.
 */
void cmd_block_stop_signals(sigset_t *set);

/*
 * A daemon verb: its signals (sig_daemon_set()) blocked before anything else, so a SIGHUP
 * (config-manager sends one at its first sync) or SIGTERM that comes before the daemon's loop exists
 * waits for it instead of killing the process; run(argc, argv); then the signals still pending taken
 * and the mask set back (sig_restore()). run's exit code, or 1 when the signals cannot be blocked.
 */
int cmd_daemon(const char *verb, int argc, char **argv, int (*run)(int argc, char **argv));

/* Where the host is: --root, --driver-root, --dev-root, --nvml-library (NULL = not given). */
struct cmd_nvml_opts {
	const char *library;     /* env GPULET_NVML_LIBRARY */
	const char *driver_root; /* env NVIDIA_DRIVER_ROOT, default "/" */
	const char *dev_root;    /* cdi generate's --dev-root; default: the driver root */
	const char *root;        /* host root prefix for sysfs/procfs/dev, default "/" */
};

struct host_paths;
struct nvml;
struct node;
/*
 * These options resolved once into the host paths every consumer takes (util/hostpaths.h); on failure
 * the reason on stderr and -1.
 */
int cmd_host_paths(const struct cmd_nvml_opts *o, struct host_paths **ret);
/*
 * Open NVML and read the node; on failure print the one-sentence reason to stderr and return -1.
 * The caller owns *ret_nv (nvml_close) and *ret_node (node_free).
 */
int cmd_load_node(const struct host_paths *hp, struct nvml **ret_nv, struct node **ret_node);
