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
#include "cmd/node_config.h"
#include "cmd/options.h"
#include "plugin/config.h"
#include "plugin/mps.h"
#include "plugin/mps_daemon.h"
#include "util/log.h"
#include "util/loop.h"

static void notes(FILE *f)
{
	fprintf(f, "\nThe options are the plugin's; upstream's daemon reads --config-file and --mig-strategy.\n");
}

static const struct cmd_verb mps_verb =
    CMD_VERB("mps-control-daemon", "[mount-shm] [OPTIONS]", NULL,
	     "gpulet mps-control-daemon --config-file=/config/config.yaml --mps-root=/run/nvidia/mps",
	     .about = "Start NVIDIA's nvidia-cuda-mps-control -d for every resource the config shares with MPS\n"
		      "(sharing.mps), with upstream's limits: set_default_active_thread_percentage 100/replicas and\n"
		      "set_default_device_pinned_mem_limit <index> <memory/replicas>M per GPU; pipe and log dirs in\n"
		      "<mps-root>/<resource>/{pipe,log}; <mps-root>/.ready once all run. The daemons are asked every\n"
		      "5 s whether they answer; one that does not removes .ready (the plugin then advertises no MPS\n"
		      "devices) and all are started again. A failed start is retried every 30 s under the config\n"
		      "in use. SIGHUP reads the config again and restarts under it; one that does not load is\n"
		      "refused, said, and the running daemons kept. SIGTERM stops the daemons and exits 0.\n"
		      "mount-shm mounts a tmpfs (half of MemTotal) at <mps-root>/shm, as upstream's init container.\n"
		      "The MPS root is /mps (upstream's container mount) unless --mps-root or MPS_ROOT is given.",
	     .notes = notes, .cli = &config_cli, .value_exit = 1);

/* Parse, then mount-shm or supervise until a stop signal: the exit code. */
/* Whether --mps-root's env var (MPS_ROOT, read by its row's rule: urfave/cli, so even "") gives the root. */
static bool mps_root_in_env(void)
{
	const char *name;

	return optspec_env(optspec_by_name(config_cli.rows, "mps-root"), config_cli.env, &name) != NULL;
}

static int run(int argc, char **argv)
{
	bool shm = argc > 1 && streq(argv[1], "mount-shm");
	static const char *const mps_default[] = {"--mps-root=" MPS_CONTAINER_ROOT, NULL};
	_cleanup_(loop_argv_freep) struct loop_argv *args = NULL;
	_cleanup_free_ char **v = NULL;
	_cleanup_(config_freep) struct plugin_config *cfg = config_new();
	_cleanup_(cmd_node_config_stop) struct cmd_node_config nc = {0};
	/* declared last: stopped first, as it borrows args, cfg and nc */
	_cleanup_(mps_daemon_stopp) struct mps_daemon *daemon = NULL;
	struct loop_source src;
	struct gerr err = {0};
	char opts[96];
	int n, r;

	/* upstream's /mps unless a flag or MPS_ROOT says otherwise */
	if (!cfg || loop_argv_new(argc - shm, argv + shm, mps_root_in_env() ? NULL : mps_default, &args) < 0 ||
	    !(v = loop_argv_vector(args, &n))) {
		fprintf(stderr, "gpulet mps-control-daemon: out of memory\n");
		return 1;
	}
	r = cmd_parse(&mps_verb, n, v, cfg);
	if (r != CMD_CONTINUE)
		return r;
	log_set_level(cfg->log_level);
	/* per-node configs: the daemons', not mount-shm's (an init container's tmpfs needs no config) */
	if (!shm && cmd_node_config_plugin("mps-control-daemon", "gpulet-mps-control-daemon", args, &cfg, &nc) < 0)
		return 1;
	if (cfg->print_config) /* the config the daemons would run under; nothing is started */
		return cmd_print_plugin_config("mps-control-daemon", cfg);
	if (shm) {
		if (mps_mount_shm(cfg, opts, sizeof(opts), &err) < 0) {
			fprintf(stderr, "gpulet mps-control-daemon mount-shm: %s\n", err.msg);
			return 1;
		}
		printf("mounted tmpfs on %s/shm (%s)\n", cfg->mps_root, opts);
		return 0;
	}
	if (nc.nc)
		src = nodeconfig_source(nc.nc);
	if (mps_daemon_start(args, cfg, nc.nc ? &src : NULL, &daemon) < 0)
		return 1;
	return mps_daemon_run(daemon) < 0 ? 1 : 0;
}

int cmd_mps_control_daemon(int argc, char **argv)
{
	return cmd_daemon("mps-control-daemon", argc, argv, run);
}
