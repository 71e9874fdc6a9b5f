/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet mps-control-daemon: drop-in for upstream's mps-control-daemon (its --config-file and
 * --mig-strategy, and every plugin flag), and its `mount-shm` subcommand for the init container.
 * The work is in src/plugin/mps_daemon.c; facts in docs/reference/device-plugin.md §5.1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "plugin/config.h"
#include "plugin/mps.h"
#include "plugin/mps_daemon.h"
#include "util/log.h"

static void help(void)
{
	printf("Usage: gpulet mps-control-daemon [OPTIONS]\n"
	       "       gpulet mps-control-daemon mount-shm [--mps-root=DIR] [--root=DIR]\n\n"
	       "Start NVIDIA's nvidia-cuda-mps-control -d for every resource the config shares with MPS\n"
	       "(sharing.mps), with upstream's limits: set_default_active_thread_percentage 100/replicas and\n"
	       "set_default_device_pinned_mem_limit <index> <memory/replicas>M per GPU; pipe and log dirs in\n"
	       "<mps-root>/<resource>/{pipe,log}; <mps-root>/.ready once all run. The daemons are asked every\n"
	       "5 s whether they answer; one that does not removes .ready (the plugin then advertises no MPS\n"
	       "devices) and all are started again. A failed start is retried every 30 s. SIGHUP restarts,\n"
	       "SIGTERM stops the daemons and exits 0.\n"
	       "mount-shm mounts a tmpfs (half of MemTotal) at <mps-root>/shm, as upstream's init container.\n"
	       "The MPS root is /mps (upstream's container mount) unless --mps-root or MPS_ROOT is given.\n\n"
	       "Options (the plugin's; upstream's daemon reads --config-file and --mig-strategy):\n");
	config_print_help(stdout);
	printf("\nExample:\n"
	       "  gpulet mps-control-daemon --config-file=/config/config.yaml --mps-root=/run/nvidia/mps\n");
}

int cmd_mps_control_daemon(int argc, char **argv)
{
	_cleanup_(config_args_freep) struct config_args *args = NULL;
	bool shm = argc > 1 && streq(argv[1], "mount-shm");
	struct mps_daemon *daemon = NULL;
	enum config_action action;
	struct plugin_config cfg;
	struct gerr err = {0};
	char opts[96];

	if (config_parse_args(argc - shm, argv + shm, &args, &action, &err) < 0) {
		fprintf(stderr, "gpulet mps-control-daemon: %s\n", err.msg);
		return EXIT_USAGE;
	}
	if (action == CONFIG_VERSION)
		cmd_print_version(stdout, "mps-control-daemon");
	if (action == CONFIG_HELP)
		help();
	if (action != CONFIG_RUN)
		return 0;
	config_args_default(args, "mps-root", MPS_CONTAINER_ROOT);
	if (config_load(args, &cfg, &err) < 0) {
		fprintf(stderr, "gpulet mps-control-daemon: %s\n", err.msg);
		return 1;
	}
	log_set_level_name(cfg.log_level);
	if (shm) {
		if (mps_mount_shm(&cfg, opts, sizeof(opts), &err) < 0) {
			fprintf(stderr, "gpulet mps-control-daemon mount-shm: %s\n", err.msg);
			return 1;
		}
		printf("mounted tmpfs on %s/shm (%s)\n", cfg.mps_root, opts);
		return 0;
	}
	if (mps_daemon_start(args, &cfg, &daemon) < 0)
		return 1;
	mps_daemon_run(daemon);
	mps_daemon_stop(daemon);
	return 0;
}
