/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet plugin: drop-in for nvidia-device-plugin. Same flags, env vars and config file
 * (docs/reference/device-plugin.md §1-2); the daemon itself is src/plugin/daemon.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "plugin/config.h"
#include "plugin/daemon.h"
#include "util/log.h"

static void help(void)
{
	printf("Usage: gpulet plugin [OPTIONS]\n\n"
	       "Serve the kubelet Device Plugin API v1beta1 for the NVIDIA GPUs of this node: one socket per\n"
	       "resource (nvidia-gpu.sock, nvidia-mig-1g.5gb.sock, ...) in the device-plugin dir, registered\n"
	       "with kubelet and re-registered when kubelet restarts. SIGHUP reloads the config; SIGTERM\n"
	       "advertises an empty device list, removes the sockets and exits 0.\n"
	       "Precedence: flag > env var > config file > default.\n\n"
	       "Options:\n");
	config_print_help(stdout);
	printf(
	    "\nExample:\n"
	    "  gpulet plugin --mig-strategy=mixed --device-list-strategy=cdi-cri --config-file=/config/config.yaml\n");
}

int cmd_plugin(int argc, char **argv)
{
	_cleanup_(config_args_freep) struct config_args *args = NULL;
	struct plugin_daemon *daemon = NULL;
	struct plugin_config cfg;
	struct gerr err = {0};
	enum config_action action;

	if (config_parse_args(argc, argv, &args, &action, &err) < 0) {
		fprintf(stderr, "gpulet plugin: %s\n", err.msg);
		return EXIT_USAGE;
	}
	if (action == CONFIG_VERSION)
		cmd_print_version(stdout, "plugin");
	if (action == CONFIG_HELP)
		help();
	if (action != CONFIG_RUN)
		return 0;
	if (config_load(args, &cfg, &err) < 0) {
		fprintf(stderr, "gpulet plugin: %s\n", err.msg);
		return 1;
	}
	if (config_args_print_only(args)) {
		_cleanup_free_ char *json = config_to_json(&cfg);

		printf("%s\n", json ? json : "{}");
		if (cfg.warnings[0])
			fprintf(stderr, "gpulet plugin: warning: %s\n", cfg.warnings);
		return json ? 0 : 1;
	}
	log_set_level_name(cfg.log_level);
	if (plugin_daemon_start(args, &cfg, &daemon) < 0)
		return 1;
	plugin_daemon_run(daemon);
	plugin_daemon_stop(daemon);
	return 0;
}
