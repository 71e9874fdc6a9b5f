/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet config-manager: NVIDIA's config-manager (k8s-device-plugin cmd/config-manager/main.go), the
 * init container and sidecar its chart and the GPU Operator add next to the plugin, GFD and the MPS
 * daemon: the node label names one of CONFIG_FILE_SRCDIR's configs, CONFIG_FILE_DST becomes a
 * symlink to it and PROCESS_TO_SIGNAL gets SIGNAL. Same flags and env vars; differences in
 * docs/reference/config-manager.md. The rule and the actions are in src/nodeconfig/.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/node_config.h"
#include "cmd/options.h"
#include "kapi/rows.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/sig.h"

struct cm_opts {
	struct cmd_common c;
	bool oneshot, send_signal;
	const char *kubeconfig, *node_name, *dst, *process;
	unsigned signal;
	struct nodeconfig_options nco;
	struct kapi_env kenv; /* kubelet's in-pod environment */
};

#define CM_F(field) offsetof(struct cm_opts, field)

/* cmd/config-manager/main.go v0.20.0, in its order; the choice's rows are the daemons' (NODECONFIG_OPTS) */
static const struct optspec cm_opts[] = {
    CMD_ROW("oneshot", 0, OPT_BOOL, NULL, "check and update the config only once and then exit", .env = {"ONESHOT"},
	    .def = "false", .off = CM_F(oneshot)),
    CMD_ROW("kubeconfig", 0, OPT_ARGV, "FILE", "kubeconfig file (\"\": the pod's service account)",
	    .env = {"KUBECONFIG"}, .off = CM_F(kubeconfig)),
    KAPI_ENV_ROWS(CM_F(kenv)),
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME", "the node whose label is followed", .env = {"NODE_NAME"},
	    .off = CM_F(node_name)),
    NODECONFIG_OPTS(CM_F(nco)),
    CMD_ROW("config-file-dst", 0, OPT_ARGV, "FILE", "made a symlink to the chosen config (/dev/null: the empty one)",
	    .env = {"CONFIG_FILE_DST"}, .off = CM_F(dst)),
    CMD_ROW("send-signal", 0, OPT_BOOL, NULL, "signal --process-to-signal once the config changed",
	    .env = {"SEND_SIGNAL"}, .def = "true", .off = CM_F(send_signal)),
    CMD_ROW("signal", 0, OPT_UINT, "N", "the signal's number", .env = {"SIGNAL"}, .def = "1", .off = CM_F(signal),
	    .min = 1, .max = 64),
    CMD_ROW("process-to-signal", 0, OPT_ARGV, "NAME",
	    "the process signalled: the first whose command line starts with NAME (or its base name) and whose "
	    "comm or executable has that name; never pid 1",
	    .env = {"PROCESS_TO_SIGNAL"}, .def = "nvidia-device-plugin", .off = CM_F(process)),
    CMD_OPT_LOG_LEVEL,
    {0},
};

static const struct cmd_verb cm_verb = CMD_VERB(
    "config-manager", "[OPTIONS]", cm_opts,
    "NODE_NAME=node-1 CONFIG_FILE_SRCDIR=/available-configs CONFIG_FILE_DST=/config/config.yaml "
    "FALLBACK_STRATEGIES=named,single gpulet config-manager --oneshot",
    .about = "Upstream's config-manager, for the GPU Operator's pods: follow the node label\n"
	     "nvidia.com/device-plugin.config, choose that config among --config-file-srcdir's (without the\n"
	     "label: --default-config, else the fallback strategies), point --config-file-dst at it and signal\n"
	     "--process-to-signal (SIGHUP). --oneshot (the init container) does it once. A label naming a\n"
	     "config that does not exist keeps the config in place and says so in a Warning Event on the node\n"
	     "(with none in place yet, the config of a node without the label is used). gpulet's plugin,\n"
	     "mps-control-daemon and labels follow the label themselves with --config-file-srcdir.",
    .footer = "Exit status: 0; 1 when a value is missing or the API server cannot be read (or, with --oneshot,\n"
	      "no config can be chosen); 2 usage.",
    .urfave = true);

struct cm {
	const struct cm_opts *o;
	const char *srcdir;
	struct nodeconfig *nc;
	bool updated_once; /* a step put a config in place */
};

/* The symlink's target for a choice: the config's file, or /dev/null for the empty config. */
static int target(const struct cm *cm, const char *name, char *buf, size_t size)
{
	if (!*name)
		return snprintf(buf, size, "/dev/null") < (int)size ? 0 : -ENAMETOOLONG;
	return snprintf(buf, size, "%s/%s", cm->srcdir, name) < (int)size ? 0 : -ENAMETOOLONG;
}

/* Warning on the node and in the log: the label's config is not put in place. */
static void refused(struct cm *cm, const struct gerr *err)
{
	char msg[GERR_MAX + 256];

	log_error("Config not updated, keeping the one in place", "dst=%s error=\"%s\"", cm->o->dst, err->msg);
	snprintf(msg, sizeof(msg), "gpulet-config-manager: %s not updated, keeping the config in place: %s", cm->o->dst,
		 err->msg);
	nodeconfig_event(cm->nc, "ConfigNotApplied", msg);
}

/* upstream's updateConfig(): choose, link, signal. 0, or -errno (said) when nothing could be done. */
static int step(struct cm *cm)
{
	_cleanup_free_ char *name = NULL;
	struct gerr err = {0};
	char src[PATH_MAX];
	struct stat st;
	pid_t pid;
	int r;

	r = nodeconfig_current(cm->nc, &name, NULL, &err);
	/* nothing in place yet (the init container's first step): as a node without the label, said */
	if (r < 0 && !cm->updated_once && lstat(cm->o->dst, &st) < 0 && nodeconfig_fall_back(cm->nc, &err)) {
		err = (struct gerr){0};
		r = nodeconfig_current(cm->nc, &name, NULL, &err);
	}
	if (r < 0) {
		refused(cm, &err);
		return r;
	}
	if (target(cm, name, src, sizeof(src)) < 0) {
		gerr_set(&err, ENAMETOOLONG, "%s/%s: path too long", cm->srcdir, name);
		refused(cm, &err);
		return -ENAMETOOLONG;
	}
	r = nodeconfig_link(cm->o->dst, src, &err);
	if (r < 0) {
		refused(cm, &err);
		return r;
	}
	cm->updated_once = true;
	if (r == 0) {
		log_info("Already configured. Skipping update...", "dst=%s config=%s", cm->o->dst, src);
		return 0;
	}
	log_info("Successfully updated to config", "dst=%s config=%s", cm->o->dst, src);
	if (!cm->o->send_signal)
		return 0;
	r = nodeconfig_signal("/proc", cm->o->process, (int)cm->o->signal, &pid, &err);
	if (r < 0) {
		/* the config is in place: a process started later reads it; one that runs is told at its next change */
		log_error("Cannot send the signal", "signal=%u process=%s error=\"%s\"", cm->o->signal, cm->o->process,
			  err.msg);
		return r;
	}
	log_info("Successfully sent signal", "signal=%u process=%s pid=%d", cm->o->signal, cm->o->process, (int)pid);
	return 0;
}

/* The sidecar: the label changed, step again (a failure is said and waits for the next change). */
static int on_node(void *data)
{
	struct cm *cm = data;

	if (nodeconfig_changed(cm->nc)) {
		log_info("Label change detected", "label=\"%s=%s\"", cm->o->nco.label,
			 nodeconfig_label(cm->nc) ? nodeconfig_label(cm->nc) : "");
		(void)step(cm);
	}
	return 0;
}

static const struct loop_ops cm_loop_ops = {0};

/* Follow the node until a stop signal (the sidecar). */
static int follow(struct cm *cm)
{
	_cleanup_(loop_freep) struct loop *l = NULL;
	struct gerr err = {0};
	sigset_t stop;

	sig_stop_set(&stop);
	if (loop_new(&stop, &cm_loop_ops, cm, &l, &err) < 0 || loop_add_fd(l, nodeconfig_fd(cm->nc), on_node, cm) < 0) {
		log_error("Cannot wait for the node's changes", "error=\"%s\"", err.msg);
		return 1;
	}
	log_info("Waiting for change to label", "label=%s", cm->o->nco.label);
	return loop_run(l) < 0 ? 1 : 0;
}

/* upstream's validateFlags(): the values it cannot do without; 0 or the exit code (1, as upstream's). */
static int validate(const struct cm_opts *o)
{
	const struct {
		const char *flag, *value;
	} needed[] = {{"node-name", o->node_name},
		      {"node-label", o->nco.label},
		      {"config-file-srcdir", o->nco.srcdir},
		      {"config-file-dst", o->dst}};

	for (size_t i = 0; i < ELEMENTSOF(needed); i++)
		if (!needed[i].value || !needed[i].value[0]) {
			fprintf(stderr, "gpulet config-manager: invalid <%s>: must not be empty string\n",
				needed[i].flag);
			return 1;
		}
	return 0;
}

int cmd_config_manager(int argc, char **argv)
{
	struct cm_opts o = {0};
	_cleanup_(cmd_node_config_stop) struct cmd_node_config nc = {0};
	struct gerr err = {0};
	struct cm cm = {.o = &o};
	sigset_t stop;
	int r = cmd_parse(&cm_verb, argc, argv, &o);

	if (r != CMD_CONTINUE)
		return r;
	if ((r = validate(&o)) != 0)
		return r;
	/* a stop signal while the node is read ends the wait instead of the process */
	cmd_block_stop_signals(&stop);
	r = cmd_node_config_start(&(struct cmd_node_config_args){.component = "gpulet-config-manager",
								 .opts = &o.nco,
								 .node_name = o.node_name,
								 .kubeconfig = o.kubeconfig,
								 .env = &o.kenv},
				  &nc, &err);
	if (r < 0) {
		fprintf(stderr, "gpulet config-manager: %s\n", err.msg);
		return r == -EINTR ? 0 : 1;
	}
	cm.nc = nc.nc;
	cm.srcdir = nodeconfig_srcdir(nc.nc);
	r = step(&cm);
	if (o.oneshot)
		return r < 0 ? 1 : 0;
	return follow(&cm);
}
