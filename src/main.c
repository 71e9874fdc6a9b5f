/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet: one binary per GPU node. main() dispatches to a verb; only here is exit() called. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
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
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: gpulet COMMAND [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\nRun 'gpulet COMMAND --help' for a command's options.\n"
		   "Example: gpulet devices --json\n");
}

int main(int argc, char **argv)
{
	/* installed or linked as nvidia-cdi-hook, a CDI spec may name gpulet by that name */
	if (argc > 0 && streq(basename(argv[0]), "nvidia-cdi-hook"))
		exit(cmd_cdihook(argc, argv));
	if (argc < 2) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
	if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
		usage(stdout);
		exit(EXIT_SUCCESS);
	}
	if (streq(argv[1], "--version")) {
		printf("gpulet %s\n", GPULET_VERSION);
		exit(EXIT_SUCCESS);
	}
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (streq(argv[1], verbs[i].name))
			exit(verbs[i].run(argc - 1, argv + 1));
	fprintf(stderr, "gpulet: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	exit(EXIT_USAGE);
}
