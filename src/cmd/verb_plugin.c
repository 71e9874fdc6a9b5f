/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet plugin: drop-in for nvidia-device-plugin. Same flags, env vars and config file
 * (docs/reference/device-plugin.md §1-2); the rows are plugin/config.c's, the daemon is
 * src/plugin/daemon.c.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "plugin/config.h"
#include "plugin/daemon.h"
#include "util/log.h"
#include "util/sig.h"

static const struct cmd_verb plugin_verb =
    CMD_VERB("plugin", "[OPTIONS]", NULL,
	     "gpulet plugin --mig-strategy=mixed --device-list-strategy=cdi-cri --config-file=/config/config.yaml",
	     .about = "Serve the kubelet Device Plugin API v1beta1 for the NVIDIA GPUs of this node: one socket per\n"
		      "resource (nvidia-gpu.sock, nvidia-mig-1g.5gb.sock, ...) in the device-plugin dir, registered\n"
		      "with kubelet and re-registered when kubelet restarts. SIGHUP reloads the config; SIGTERM\n"
		      "advertises an empty device list, removes the sockets and exits 0.\n"
		      "Precedence: flag > env var > config file > default.",
	     .cli = &config_cli, .value_exit = 1);

/*
 * Before anything else: a SIGHUP (config-manager sends one at its first sync) or SIGTERM that
 * comes before the daemon's signalfd exists would otherwise kill the process (default action).
 * Returns 0 or the errno pthread_sigmask() returned.
 */
static int block_stop_signals(sigset_t *old)
{
	sigset_t set;

	sig_daemon_set(&set);
	return pthread_sigmask(SIG_BLOCK, &set, old);
}

/* The mask as it was, after taking the stop signals still pending (they would end us now). */
static void restore_signals(const sigset_t *old)
{
	const struct timespec now = {0};
	sigset_t set;

	sig_daemon_set(&set);
	while (sigtimedwait(&set, NULL, &now) > 0)
		;
	(void)pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Parse, start, serve until a stop signal: the exit code. */
static int run(int argc, char **argv, struct plugin_config *cfg)
{
	_cleanup_(config_args_freep) struct config_args *args = NULL;
	/* declared after args: stopped first, as it borrows args (and cfg, the caller's) */
	_cleanup_(plugin_daemon_stopp) struct plugin_daemon *daemon = NULL;
	int r;

	/* kept before getopt permutes argv: SIGHUP builds the config again from it */
	if (config_args_new(argc, argv, NULL, &args) < 0) {
		fprintf(stderr, "gpulet plugin: out of memory\n");
		return 1;
	}
	r = cmd_parse(&plugin_verb, argc, argv, cfg);
	if (r != CMD_CONTINUE)
		return r;
	if (cfg->print_config)
		return cmd_print_plugin_config("plugin", cfg);
	log_set_level(cfg->log_level);
	if (plugin_daemon_start(args, cfg, &daemon) < 0)
		return 1;
	return plugin_daemon_run(daemon) < 0 ? 1 : 0;
}

int cmd_plugin(int argc, char **argv)
{
	/* the daemon borrows cfg: run() stops it before returning */
	_cleanup_(config_freep) struct plugin_config *cfg = NULL;
	sigset_t old;
	int r;

	r = block_stop_signals(&old);
	if (r != 0) {
		fprintf(stderr, "gpulet plugin: cannot block signals: %s\n", strerror(r));
		return 1;
	}
	cfg = config_new();
	if (!cfg) {
		fprintf(stderr, "gpulet plugin: out of memory\n");
		r = 1;
	} else {
		r = run(argc, argv, cfg);
	}
	restore_signals(&old);
	return r;
}
