/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node configs of the daemon verbs (node_config.c). */
#pragma once

#include "kapi/kapi.h"
#include "nodeconfig/nodeconfig.h"
#include "util/err.h"
#include "util/loop.h"

/* What a verb runs per-node configs with: the API client (the process's one) and the follower. */
struct cmd_node_config {
	struct kapi *kapi;
	struct nodeconfig *nc; /* NULL: per-node configs off */
};

struct cmd_node_config_args {
	const char *component;                 /* "gpulet-plugin": logs and Events */
	const struct nodeconfig_options *opts; /* NODECONFIG_OPTS's values */
	const char *node_name, *kubeconfig;    /* the verb's --node-name, --kubeconfig */
	const struct kapi_env *env;            /* the verb's KAPI_ENV_ROWS(): in a pod, where the API server is */
	const char *config_file;               /* the verb's --config-file as parsed: refused together */
	struct loop_argv *args;                /* the kept command line: its config file chosen from now on */
};

/*
 * Per-node configs when --config-file-srcdir is given (c->nc stays NULL otherwise): the options
 * checked, the API client opened, the node followed and its label read, the config file of every
 * parse of args chosen by it. 0, or -errno with err (the verb says it and exits 1).
 */
int cmd_node_config_start(const struct cmd_node_config_args *a, struct cmd_node_config *c, struct gerr *err);
/* The follower stopped, the client closed (after the daemon that borrowed the follower). */
void cmd_node_config_stop(struct cmd_node_config *c);

/*
 * The first config, load(data, err) (a parse of the kept command line); when what the label names
 * fails, there is no running config to keep: said (log, Event) and loaded once more as for a node
 * without the label. 0, or load's -errno with err.
 */
int cmd_node_config_load(struct cmd_node_config *c, int (*load)(void *data, struct gerr *err), void *data,
			 struct gerr *err);

/*
 * The plugin's and mps-control-daemon's per-node configs: cmd_node_config_start() over their rows, then
 * *cfg replaced by the config the label names (cmd_node_config_load()). 0, or -1 with the error said
 * on stderr ("gpulet VERB: ...").
 */
struct plugin_config;
int cmd_node_config_plugin(const char *verb, const char *component, struct loop_argv *args, struct plugin_config **cfg,
			   struct cmd_node_config *nc);
