/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet plugin: drop-in for nvidia-device-plugin. Same flags, env vars and config file
 * (docs/reference/device-plugin.md §1-2); the rows are plugin/config.c's, the daemon is
 * src/plugin/daemon.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "plugin/config.h"
#include "plugin/daemon.h"
#include "util/log.h"

static const struct cmd_verb plugin_verb =
    CMD_VERB("plugin", "[OPTIONS]", NULL,
	     "gpulet plugin --mig-strategy=mixed --device-list-strategy=cdi-cri --config-file=/config/config.yaml",
	     .about = "Serve the kubelet Device Plugin API v1beta1 for the NVIDIA GPUs of this node: one socket per\n"
		      "resource (nvidia-gpu.sock, nvidia-mig-1g.5gb.sock, ...) in the device-plugin dir, registered\n"
		      "with kubelet and re-registered when kubelet restarts. SIGHUP reloads the config; SIGTERM\n"
		      "advertises an empty device list, removes the sockets and exits 0.\n"
		      "Precedence: flag > env var > config file > default.",
	     .cli = &config_cli, .value_exit = 1);

/* --print-config: the effective config as JSON, the file's warnings on stderr. */
static int print_config(const struct plugin_config *cfg)
{
	_cleanup_free_ char *json = config_to_json(cfg);

	printf("%s\n", json ? json : "{}");
	if (cfg->warnings[0])
		fprintf(stderr, "gpulet plugin: warning: %s\n", cfg->warnings);
	return json ? 0 : 1;
}

int cmd_plugin(int argc, char **argv)
{
	_cleanup_(config_args_freep) struct config_args *args = NULL;
	_cleanup_(config_freep) struct plugin_config *cfg = config_new();
	struct plugin_daemon *daemon = NULL;
	int r;

	/* kept before getopt permutes argv: SIGHUP builds the config again from it */
	if (!cfg || config_args_new(argc, argv, NULL, &args) < 0) {
		fprintf(stderr, "gpulet plugin: out of memory\n");
		return 1;
	}
	r = cmd_parse(&plugin_verb, argc, argv, cfg);
	if (r != CMD_CONTINUE)
		return r;
	if (cfg->print_config)
		return print_config(cfg);
	log_set_level(cfg->log_level);
	/* the daemon borrows cfg: it is freed (on return) only after the daemon stopped */
	if (plugin_daemon_start(args, cfg, &daemon) < 0)
		return 1;
	plugin_daemon_run(daemon);
	plugin_daemon_stop(daemon);
	return 0;
}
