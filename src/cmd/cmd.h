/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommand entry points and the option plumbing they share. */
#pragma once

#include <signal.h>
#include <stdbool.h>

#define EXIT_USAGE 2

/*
 * Each verb: its options through the one option engine (cmd_parse() over its rows, util/optspec.h),
 * then call the library, print, return the exit code.
 */
int cmd_devices(int argc, char **argv);
int cmd_plugin(int argc, char **argv);
int cmd_mps_control_daemon(int argc, char **argv);
int cmd_cdi(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_lint(int argc, char **argv);
int cmd_versions(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_labels(int argc, char **argv);
int cmd_cdihook(int argc, char **argv);

/* --print-config of the plugin and mps-control-daemon: the effective config as JSON, its warnings on stderr. */
struct plugin_config;
int cmd_print_plugin_config(const char *verb, const struct plugin_config *cfg);

/*
 * Block SIGTERM and SIGINT (set gets them) in this thread and every thread it starts, so that a
 * daemon verb's main thread takes them with sigwait/sigtimedwait.
 */
void cmd_block_stop_signals(sigset_t *set);

/* Where to find NVML and the host: --nvml-library, --driver-root, --root (NULL = env/default). */
struct cmd_nvml_opts {
	const char *library;     /* env GPULET_NVML_LIBRARY */
	const char *driver_root; /* env NVIDIA_DRIVER_ROOT, default "/" */
	const char *root;        /* host root prefix for sysfs/procfs/dev, default "/" */
};

/*
 * Open NVML and read the node; on failure print the one-sentence reason to stderr and return -1.
 * The caller owns *ret_nv (nvml_close) and *ret_node (node_free).
 */
struct nvml;
struct node;
struct gerr;
/* NVML for these options: library from --nvml-library/env, searched under <root>/<driver-root>. */
int cmd_open_nvml(const struct cmd_nvml_opts *o, struct nvml **ret, struct gerr *err);
int cmd_load_node(const struct cmd_nvml_opts *o, struct nvml **ret_nv, struct node **ret_node);
