/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-node configs of the daemon verbs (plugin, mps-control-daemon, labels): with
 * --config-file-srcdir the node label chooses the config file of every parse of the kept command
 * line (nodeconfig/, docs/reference/config-manager.md). Shared here so that the three verbs set it
 * up one way.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/node_config.h"
#include "plugin/config.h"
#include "util/log.h"

void cmd_node_config_stop(struct cmd_node_config *c)
{
	nodeconfig_stop(c->nc);
	kapi_close(c->kapi);
	*c = (struct cmd_node_config){0};
}

/* The options of per-node configs checked; 0, or -EINVAL with err. */
static int check(const struct cmd_node_config_args *a, struct nodeconfig_follow_options *f, char *dir, size_t size,
		 struct gerr *err)
{
	const struct nodeconfig_options *o = a->opts;
	int r;

	if (a->config_file && *a->config_file)
		return gerr_set(
		    err, EINVAL,
		    "--config-file (or its env var) %s and --config-file-srcdir %s are both given: the node "
		    "label chooses the config file among the dir's; give one of the two",
		    a->config_file, o->srcdir);
	if (!a->node_name || !*a->node_name)
		return gerr_set(err, EINVAL,
				"--config-file-srcdir needs the node's name: --node-name or env NODE_NAME");
	if (!o->label || !*o->label)
		return gerr_set(err, EINVAL, "--node-label is empty: the label naming the config is needed");
	r = nodeconfig_fallbacks_parse(o->fallbacks, &f->fallbacks, err);
	if (r < 0)
		return r;
	/* absolute, so the path handed to each parse does not depend on the working dir */
	if (o->srcdir[0] == '/')
		snprintf(dir, size, "%s", o->srcdir);
	else if (!getcwd(dir, size) || strlen(dir) + 1 + strlen(o->srcdir) >= size)
		return gerr_set(err, ENAMETOOLONG, "--config-file-srcdir %s: path too long", o->srcdir);
	else
		strcat(strcat(dir, "/"), o->srcdir);
	f->srcdir = dir;
	f->node_name = a->node_name;
	f->label = o->label;
	f->default_config = o->default_config;
	return 0;
}

int cmd_node_config_start(const struct cmd_node_config_args *a, struct cmd_node_config *c, struct gerr *err)
{
	struct nodeconfig_follow_options f = {.component = a->component};
	char dir[PATH_MAX];
	int r;

	*c = (struct cmd_node_config){0};
	if (!a->opts->srcdir || !*a->opts->srcdir)
		return 0;
	r = check(a, &f, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	/* KUBECONFIG="" (the GPU Operator's config-manager env) means in-cluster, as client-go reads it */
	r = kapi_open(
	    &(struct kapi_options){.kubeconfig = a->kubeconfig && *a->kubeconfig ? a->kubeconfig : NULL, .env = a->env},
	    &c->kapi, err);
	if (r < 0)
		return gerr_prefix(err, "per-node configs need the API server: ");
	if (kapi_warning(c->kapi))
		log_warn("Kubernetes API client", "warning=\"%s\"", kapi_warning(c->kapi));
	f.kapi = c->kapi;
	r = nodeconfig_start(&f, &c->nc, err);
	if (r < 0) {
		cmd_node_config_stop(c);
		return r;
	}
	log_info("Following the node label for the config", "component=%s node=%s label=%s dir=%s", a->component,
		 a->node_name, a->opts->label, dir);
	if (a->args)
		loop_argv_set_file(a->args, nodeconfig_file, c->nc);
	return 0;
}

int cmd_node_config_load(struct cmd_node_config *c, int (*load)(void *data, struct gerr *err), void *data,
			 struct gerr *err)
{
	int r = load(data, err);

	/* the label's config does not work and nothing runs yet: as a node without the label, said */
	if (r < 0 && c->nc && nodeconfig_fall_back(c->nc, err)) {
		*err = (struct gerr){0};
		r = load(data, err);
	}
	return r;
}

/* The plugin's config from the kept command line (its file chosen by the node label). */
struct plugin_load {
	const struct loop_argv *args;
	struct plugin_config **cfg;
};

static int plugin_load(void *data, struct gerr *err)
{
	struct plugin_load *l = data;
	struct plugin_config *c = NULL;
	int r = config_load(l->args, &c, err);

	if (r < 0)
		return r;
	config_free(*l->cfg);
	*l->cfg = c;
	return 0;
}

int cmd_node_config_plugin(const char *verb, const char *component, struct loop_argv *args, struct plugin_config **cfg,
			   struct cmd_node_config *nc)
{
	const struct plugin_config *c = *cfg;
	struct gerr err = {0};
	const struct cmd_node_config_args a = {.component = component,
					       .opts = &c->node_config,
					       .node_name = c->node_name,
					       .kubeconfig = c->kubeconfig,
					       .env = &c->kenv,
					       .config_file = c->config_file,
					       .args = args};

	if (cmd_node_config_start(&a, nc, &err) < 0 ||
	    (nc->nc && cmd_node_config_load(nc, plugin_load, &(struct plugin_load){args, cfg}, &err) < 0)) {
		fprintf(stderr, "gpulet %s: %s\n", verb, err.msg);
		return -1;
	}
	return 0;
}
