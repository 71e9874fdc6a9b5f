/* SPDX-License-Identifier: Apache-2.0 */
/* What verbs share besides their options: the stop signals, opening NVML and the node model. */
#include <stdio.h>
#include <stdlib.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "cmd/cmd.h"
#include "util/fileio.h"
#include "util/sig.h"
#include "nvml/node.h"
#include "plugin/config.h"

void cmd_block_stop_signals(sigset_t *set)
{
	sig_stop_set(set);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

int cmd_open_nvml(const struct cmd_nvml_opts *o, struct nvml **ret, struct gerr *err)
{
	return nvml_open_host(
	    &(struct nvml_host){.root = o->root, .library = o->library, .driver_root = o->driver_root}, ret, err);
}

int cmd_load_node(const struct cmd_nvml_opts *o, struct nvml **ret_nv, struct node **ret_node)
{
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	struct gerr err = {0};
	struct node *n = NULL;

	if (cmd_open_nvml(o, &nv, &err) < 0 || node_load(nv, o->root, &n, &err) < 0) {
		fprintf(stderr, "gpulet: %s\n", err.msg);
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
