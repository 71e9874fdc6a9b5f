/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet: one binary per GPU node. main() dispatches to a verb; only here is exit() called. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "cmd/tree.h"
#include "util/macro.h"

/* The verbs that read the command tree (cmd/tree.h) get gpulet itself. */
static int help(int argc, char **argv);
static int version(int argc, char **argv);
static int completion(int argc, char **argv);
static int manpages(int argc, char **argv);

static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* NULL: a hidden verb (not listed, completed or given a man page) */
} verbs[] = {
    {"plugin", cmd_plugin, "serve the kubelet Device Plugin API (replaces nvidia-device-plugin)"},
    {"devices", cmd_devices, "show the GPUs and MIG instances NVML sees"},
    {"cdi", cmd_cdi, "generate, list and validate CDI specs"},
    {"doctor", cmd_doctor, "walk driver -> runtime -> CDI -> plugin -> kubelet and name the broken link"},
    {"lint", cmd_lint, "check GPU Pod/Deployment/Job YAML"},
    {"versions", cmd_versions, "the version ledger with compatibility verdicts"},
    {"exporter", cmd_exporter, "Prometheus /metrics with pod attribution (replaces dcgm-exporter)"},
    {"labels", cmd_labels, "NFD feature file with GFD-compatible labels"},
    {"probe", cmd_probe, "inside a container: is the GPU really usable here?"},
    {"mps-control-daemon", cmd_mps_control_daemon,
     "start and supervise NVIDIA MPS control daemons (replaces mps-control-daemon)"},
    {"cdi-hook", cmd_cdihook, "the OCI hook CDI specs name (nvidia-cdi-hook's actions)"},
    {"dra", cmd_dra, "the kubelet plugin of a DRA driver for GPUs (replaces NVIDIA's gpu-kubelet-plugin)"},
    {"entrypoint", cmd_entrypoint, "the image's entrypoint: runs what NVIDIA's manifests start (GPU Operator)"},
    {"config-manager", cmd_config_manager,
     "point a config file at the config the node label names (replaces NVIDIA's config-manager)"},
    {"help", help, "the help of gpulet or of a command (gpulet help cdi generate)"},
    {"version", version, "gpulet's version and the upstream version each command matches"},
    {"completion", completion, "the bash or zsh completion script (source <(gpulet completion bash))"},
    {"manpages", manpages, NULL},
    {"plugin-node-health", cmd_plugin_node_health, NULL}, /* the plugin's (plugin/node_health_int.h) */
};

/*
 * Invoked under an upstream program's name (a link in the image, as the upstream chart's
 * `command:` lines and config-manager's PROCESS_TO_SIGNAL expect), gpulet runs the verb that
 * replaces it with the same arguments and environment (docs/reference/device-plugin.md §10).
 */
static const struct cmd_alias programs[] = {
    {"nvidia-device-plugin", "plugin", false},
    {"gpu-feature-discovery", "labels", false},
    {"mps-control-daemon", "mps-control-daemon", false},
    {"nvidia-cdi-hook", "cdi-hook", false},
    {"gpu-kubelet-plugin", "dra", false}, /* NVIDIA's DRA driver's kubelet plugin (docs/reference/dra.md §9) */
    /* the GPU Operator's and NVIDIA's charts' containers on gpulet's image (docs/reference/operator.md):
     * dcgm-exporter's name for the exporter; /bin/sh and /bin/bash for the Operator's device-plugin
     * entrypoint only (no shell: cmd/verb_entrypoint.c); config-manager (docs/reference/config-manager.md) */
    {"dcgm-exporter", "exporter", false},
    {"sh", "entrypoint", true},
    {"bash", "entrypoint", true},
    {"config-manager", "config-manager", false},
};

static void usage(FILE *f);
static const struct cmd_menu menu =
    CMD_MENU("gpulet", "command", verbs, usage, .summary_off = offsetof(struct verb, summary));

static void usage(FILE *f)
{
	fprintf(f, "Usage: gpulet COMMAND [OPTIONS]\n\nCommands:\n");
	cmd_menu_list(&menu, f);
	fprintf(f, "\nRun 'gpulet help COMMAND' or 'gpulet COMMAND --help' for a command's options; -v: the version.\n"
		   "Invoked as ");
	for (size_t i = 0; i < ELEMENTSOF(programs); i++)
		fprintf(f, "%s%s", i ? ", " : "", programs[i].program);
	fprintf(f, " (a link to gpulet),\nit runs the command that replaces that program.\n"
		   "Example: gpulet devices --json\n");
}

/* Run `gpulet ARGV...`: argv[0] is the verb. */
static int run(int argc, char **argv)
{
	int rc;
	const struct verb *v = cmd_menu_pick(&menu, argc, argv, &rc);

	return v ? v->run(argc, argv) : rc;
}

static const struct cmd_program program = {
    .menu = &menu,
    .run = run,
    .aliases = programs,
    .n_aliases = ELEMENTSOF(programs),
    .summary = "make NVIDIA GPUs on Kubernetes nodes work and explain themselves",
    .about = "One binary per GPU node in place of NVIDIA's device plugin, GPU Feature Discovery, nvidia-ctk's CDI\n"
	     "generator and hook, dcgm-exporter and DRA driver, taking their flags, config files, CDI names,\n"
	     "labels and metric names, plus a doctor that walks the chain driver -> toolkit -> containerd ->\n"
	     "CDI -> plugin -> kubelet -> pod and names the broken link.",
};

static int help(int argc, char **argv)
{
	return cmd_help_verb(&program, argc, argv);
}

static int version(int argc, char **argv)
{
	return cmd_version_verb(&program, argc, argv);
}

static int completion(int argc, char **argv)
{
	return cmd_completion(&program, argc, argv);
}

static int manpages(int argc, char **argv)
{
	return cmd_manpages(&program, argc, argv);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The verb for argv[0]'s file name, or NULL when it is not an upstream program's name. */
static const char *program_verb(const char *argv0)
{
	for (size_t i = 0; i < ELEMENTSOF(programs); i++)
		if (streq(base_name(argv0), programs[i].program))
			return programs[i].verb;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *as = argc > 0 ? program_verb(argv[0]) : NULL;

	if (as) {
		argv[0] = (char *)as; /* the verb sees itself as argv[0], as under `gpulet VERB` */
		exit(cmd_exit(run(argc, argv)));
	}
	exit(cmd_exit(run(argc - 1, argv + 1)));
}
