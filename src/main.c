/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet: one binary per GPU node. main() dispatches to a verb; only here is exit() called. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "util/macro.h"

static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
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
};

/*
 * Invoked under an upstream program's name (a link in the image, as the upstream chart's
 * `command:` lines and config-manager's PROCESS_TO_SIGNAL expect), gpulet runs the verb that
 * replaces it with the same arguments and environment (docs/reference/device-plugin.md §10).
 */
static const struct {
	const char *program, *verb;
} programs[] = {
    {"nvidia-device-plugin", "plugin"},
    {"gpu-feature-discovery", "labels"},
    {"mps-control-daemon", "mps-control-daemon"},
    {"nvidia-cdi-hook", "cdi-hook"},
    {"gpu-kubelet-plugin", "dra"}, /* NVIDIA's DRA driver's kubelet plugin (docs/reference/dra.md §9) */
    /* the GPU Operator's and NVIDIA's charts' containers on gpulet's image (docs/reference/operator.md):
     * dcgm-exporter's name for the exporter; /bin/sh and /bin/bash for the Operator's device-plugin
     * entrypoint only, and config-manager, refused: no shell, no config-manager (cmd/verb_entrypoint.c) */
    {"dcgm-exporter", "exporter"},
    {"sh", "entrypoint"},
    {"bash", "entrypoint"},
    {"config-manager", "entrypoint"},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: gpulet COMMAND [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\nRun 'gpulet COMMAND --help' for a command's options.\n"
		   "Invoked as ");
	for (size_t i = 0; i < ELEMENTSOF(programs); i++)
		fprintf(f, "%s%s", i ? ", " : "", programs[i].program);
	fprintf(f, " (a link to gpulet),\nit runs the command that replaces that program.\n"
		   "Example: gpulet devices --json\n");
}

static bool is_version_flag(const char *a)
{
	return streq(a, "--version") || streq(a, "-version");
}

/*
 * --version first, for every verb (a verb that dispatches to sub-verbs, like cdi, has no option
 * table); anywhere else each verb's option table takes it (cmd_parse()), as upstream's CLI does.
 */
static bool wants_version(int argc, char **argv)
{
	return argc > 1 && is_version_flag(argv[1]);
}

/* Run verb v with args (args[0] is the verb name). */
static int run_verb(const struct verb *v, int argc, char **args)
{
	if (wants_version(argc, args)) {
		cmd_print_version(stdout, v->name);
		return EXIT_SUCCESS;
	}
	return v->run(argc, args);
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

static const struct cmd_menu menu = CMD_MENU("gpulet", "command", verbs, usage);

int main(int argc, char **argv)
{
	const char *as = argc > 0 ? program_verb(argv[0]) : NULL;
	const struct verb *v;
	int rc;

	if (as) {
		/* programs[] names only verbs of verbs[] */
		v = cmd_menu_pick(&menu, 1, (char **)&as, &rc);
		argv[0] = (char *)as; /* the verb sees itself as argv[0], as under `gpulet VERB` */
		exit(v ? run_verb(v, argc, argv) : rc);
	}
	if (argc > 1 && is_version_flag(argv[1])) {
		cmd_print_version(stdout, NULL);
		exit(EXIT_SUCCESS);
	}
	v = cmd_menu_pick(&menu, argc - 1, argv + 1, &rc);
	exit(v ? run_verb(v, argc - 1, argv + 1) : rc);
}
