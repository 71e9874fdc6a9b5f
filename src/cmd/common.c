/* SPDX-License-Identifier: Apache-2.0 */
/* What verbs share besides their options: the stop signals, the host paths, opening NVML + the node model. */
#include <stdio.h>
#include <stdlib.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "util/hostpaths.h"
#include "util/sig.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "plugin/config.h"

void cmd_block_stop_signals(sigset_t *set)
{
	sig_stop_set(set);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

int cmd_daemon(const char *verb, int argc, char **argv, int (*run)(int argc, char **argv))
{
	sigset_t set, old;
	int r;

	sig_daemon_set(&set);
	r = sig_block(&set, &old);
	if (r != 0) {
		fprintf(stderr, "gpulet %s: cannot block signals: %s\n", verb, strerror(r));
		return 1;
	}
	r = run(argc, argv);
	sig_restore(&set, &old);
	return r;
}

int cmd_host_paths(const struct cmd_nvml_opts *o, struct host_paths **ret)
{
	struct gerr err = {0};
	int r = host_paths_new(
	    &(struct host_paths_options){
		.root = o->root, .driver_root = o->driver_root, .dev_root = o->dev_root, .nvml_library = o->library},
	    ret, &err);

	if (r < 0)
		cmd_fail(NULL, "%s", err.msg);
	return r < 0 ? -1 : 0;
}

int cmd_load_node(const struct host_paths *hp, struct nvml **ret_nv, struct node **ret_node)
{
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	struct gerr err = {0};
	struct node *n = NULL;

	if (nvml_open_host(hp, &nv, &err) < 0 || node_load(nv, hp->root, &n, &err) < 0) {
		cmd_fail(NULL, "%s", err.msg);
		return -1;
	}
	*ret_nv = TAKE_PTR(nv);
	*ret_node = n;
	return 0;
}

int cmd_print_plugin_config(const char *verb, const struct plugin_config *cfg)
{
	_cleanup_free_ char *json = config_to_json(cfg), *warnings = warnings_join(&cfg->warnings, "; ");

	printf("%s\n", json ? json : "{}");
	if (cfg->warnings.n)
		fprintf(stderr, "gpulet %s: warning: %s\n", verb, warnings ? warnings : "(out of memory)");
	return json && warnings ? 0 : 1;
}
