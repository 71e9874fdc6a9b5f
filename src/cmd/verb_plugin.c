/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet plugin: drop-in for nvidia-device-plugin. Same flags, env vars and config file
 * (docs/reference/device-plugin.md §1-2); the rows are plugin/config.c's, the daemon is
 * src/plugin/daemon.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/node_config.h"
#include "cmd/options.h"
#include "plugin/config.h"
#include "plugin/daemon.h"
#include "util/log.h"
#include "util/loop.h"

static const struct cmd_verb plugin_verb =
    CMD_VERB("plugin", "[OPTIONS]", NULL,
	     "gpulet plugin --mig-strategy=mixed --device-list-strategy=cdi-cri --config-file=/config/config.yaml",
	     .about = "Serve the kubelet Device Plugin API v1beta1 for the NVIDIA GPUs of this node: one socket per\n"
		      "resource (nvidia-gpu.sock, nvidia-mig-1g.5gb.sock, ...) in the device-plugin dir, registered\n"
		      "with kubelet and re-registered when kubelet restarts. SIGHUP reloads the config; SIGTERM\n"
		      "advertises an empty device list, removes the sockets and exits 0.\n"
		      "Precedence: flag > env var > config file > default.",
	     .cli = &config_cli, .value_exit = 1);

/* Parse, start, serve until a stop signal: the exit code. */
static int run(int argc, char **argv)
{
	_cleanup_(loop_argv_freep) struct loop_argv *args = NULL;
	_cleanup_(config_freep) struct plugin_config *cfg = config_new();
	_cleanup_(cmd_node_config_stop) struct cmd_node_config nc = {0};
	/* declared after args, cfg and nc: stopped first, as it borrows them */
	_cleanup_(plugin_daemon_stopp) struct plugin_daemon *daemon = NULL;
	struct loop_source src;
	int r;

	/* kept before getopt permutes argv: SIGHUP builds the config again from it */
	if (!cfg || loop_argv_new(argc, argv, NULL, &args) < 0) {
		fprintf(stderr, "gpulet plugin: out of memory\n");
		return 1;
	}
	r = cmd_parse(&plugin_verb, argc, argv, cfg);
	if (r != CMD_CONTINUE)
		return r;
	log_set_level(cfg->log_level);
	if (cmd_node_config_plugin("plugin", "gpulet-plugin", args, &cfg, &nc) < 0)
		return 1;
	if (cfg->print_config)
		return cmd_print_plugin_config("plugin", cfg);
	if (nc.nc)
		src = nodeconfig_source(nc.nc);
	if (plugin_daemon_start(args, cfg, nc.nc ? &src : NULL, &daemon) < 0)
		return 1;
	return plugin_daemon_run(daemon) < 0 ? 1 : 0;
}

int cmd_plugin(int argc, char **argv)
{
	return cmd_daemon("plugin", argc, argv, run);
}
