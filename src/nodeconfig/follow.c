/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node label followed live (nodeconfig.h): an informer on the node, the choice each reload of a
 * daemon reads, a Warning Event on the node when a config is refused. The label is read as upstream's
 * config-manager reads it (continuouslySyncConfigChanges(): unset and "" are the same, a deleted node
 * has none); docs/reference/config-manager.md §3.
 *
 * A daemon's run loop piece: it logs (docs/HACKING.md §1).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodeconfig/nodeconfig.h"
#include "util/log.h"

#define SYNC_TIMEOUT_S 60
#define WAIT_STEP_MS   200

struct nodeconfig {
	struct kapi *kapi;
	char *node, *component, *srcdir, *key, *default_config;
	struct nodeconfig_fallbacks fallbacks;
	struct kapi_informer *inf;
	char *value;    /* the label now; NULL: none */
	char *uid;      /* the node's, for Events */
	char *read;     /* the label the last choice read ("" for none) */
	bool pass_over; /* nodeconfig_fall_back(): the next choice as for a node without the label */
	char *chosen;   /* the last choice's config name */
	char *running;  /* the config the daemon runs with (its last choice that loaded) */
	bool started;   /* a config loaded once */
};

void nodeconfig_stop(struct nodeconfig *nc)
{
	if (!nc)
		return;
	kapi_informer_stop(nc->inf);
	free(nc->node);
	free(nc->component);
	free(nc->srcdir);
	free(nc->key);
	free(nc->default_config);
	free(nc->value);
	free(nc->uid);
	free(nc->read);
	free(nc->chosen);
	free(nc->running);
	free(nc);
}

/* Replace *p by a copy of v (NULL: none); false when out of memory. */
static bool set_str(char **p, const char *v)
{
	char *c = NULL;

	if (v && !(c = strdup(v)))
		return false;
	free(*p);
	*p = c;
	return true;
}

/* The node as the informer has it now (obj NULL: gone): its label and uid. */
static void take_node(struct nodeconfig *nc, const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *v = json_string_value(json_object_get(json_object_get(md, "labels"), nc->key));
	const char *uid = json_string_value(json_object_get(md, "uid"));

	if (!set_str(&nc->value, v) || (uid && !set_str(&nc->uid, uid)))
		log_error("out of memory reading the node's labels", NULL);
}

/* Every change queued: the last state of the node wins. */
static void drain(struct nodeconfig *nc)
{
	char *key;
	json_t *obj;

	while (kapi_informer_next(nc->inf, &key, &obj) == 1) {
		take_node(nc, obj);
		free(key);
		json_decref(obj);
	}
}

static bool stop_pending(void)
{
	sigset_t pending;

	if (sigpending(&pending) < 0)
		return false;
	return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1 ||
	       sigismember(&pending, SIGQUIT) == 1;
}

/* Until the first LIST is in the informer's cache (the label is known), or the time is up. */
static int wait_synced(struct nodeconfig *nc, unsigned timeout_s, struct gerr *err)
{
	long long deadline = loop_now_ms() + (long long)timeout_s * 1000;
	struct kapi_informer_status st;

	for (;;) {
		struct pollfd p = {.fd = kapi_informer_fd(nc->inf), .events = POLLIN};

		kapi_informer_status(nc->inf, &st);
		if (st.synced)
			return 0;
		if (stop_pending())
			return gerr_set(err, EINTR, "stopped while waiting for node %s", nc->node);
		if (loop_now_ms() >= deadline)
			return gerr_set(
			    err, ETIMEDOUT,
			    "node %s was not read from the API server within %us (it follows the label %s)%s%s",
			    nc->node, timeout_s, nc->key, st.error ? ": " : "", st.error ? st.message : "");
		(void)poll(&p, 1, WAIT_STEP_MS);
	}
}

int nodeconfig_start(const struct nodeconfig_follow_options *o, struct nodeconfig **ret, struct gerr *err)
{
	_cleanup_(nodeconfig_stopp) struct nodeconfig *nc = calloc(1, sizeof(*nc));
	char selector[320];
	json_t *node;
	int r;

	if (!nc || !(nc->node = strdup(o->node_name)) || !(nc->component = strdup(o->component)) ||
	    !(nc->srcdir = strdup(o->srcdir)) || !(nc->key = strdup(o->label)) ||
	    !(nc->default_config = strdup(o->default_config ? o->default_config : "")))
		return gerr_set(err, ENOMEM, "out of memory");
	nc->kapi = o->kapi;
	nc->fallbacks = o->fallbacks;
	snprintf(selector, sizeof(selector), "metadata.name=%s", o->node_name);
	r = kapi_informer_start(o->kapi,
				&(struct kapi_informer_options){.resource = &kapi_nodes, .field_selector = selector},
				&nc->inf, err);
	if (r < 0)
		return r;
	r = wait_synced(nc, o->sync_timeout_s ? o->sync_timeout_s : SYNC_TIMEOUT_S, err);
	if (r < 0)
		return r;
	node = kapi_informer_get(nc->inf, nc->node);
	if (!node)
		return gerr_set(err, ENOENT, "node %s does not exist (NODE_NAME must name this pod's node)", nc->node);
	take_node(nc, node);
	json_decref(node);
	*ret = TAKE_PTR(nc);
	return 0;
}

int nodeconfig_fd(const struct nodeconfig *nc)
{
	return kapi_informer_fd(nc->inf);
}

const char *nodeconfig_label(const struct nodeconfig *nc)
{
	return nc->value;
}

const char *nodeconfig_srcdir(const struct nodeconfig *nc)
{
	return nc->srcdir;
}

bool nodeconfig_changed(struct nodeconfig *nc)
{
	drain(nc);
	return !streq(nc->value ? nc->value : "", nc->read ? nc->read : "");
}

int nodeconfig_current(struct nodeconfig *nc, char **ret_name, enum nodeconfig_why *ret_why, struct gerr *err)
{
	_cleanup_(nodeconfig_names_clear) struct nodeconfig_names names = {0};
	const char *label;
	enum nodeconfig_why why;
	const char *name;
	char *copy;
	int r;

	drain(nc);
	label = nc->pass_over ? NULL : nc->value;
	nc->pass_over = false;
	/* what the label says now is what a later change is measured against, whether it works or not */
	if (!set_str(&nc->read, nc->value ? nc->value : ""))
		return gerr_set(err, ENOMEM, "out of memory");
	r = nodeconfig_list(nc->srcdir, &names, err);
	if (r >= 0)
		r = nodeconfig_choose(&names, label, nc->default_config, &nc->fallbacks, &name, &why, err);
	if (r < 0)
		return r;
	if (!(copy = strdup(name)) || !set_str(&nc->chosen, name)) {
		free(copy);
		return gerr_set(err, ENOMEM, "out of memory");
	}
	log_info("Config chosen", "component=%s node=%s label=\"%s=%s\" config=\"%s\" by=%s", nc->component, nc->node,
		 nc->key, nc->value ? nc->value : "", name, nodeconfig_why_name(why));
	*ret_name = copy;
	if (ret_why)
		*ret_why = why;
	return 0;
}

int nodeconfig_file(void *data, char **ret_path, struct gerr *err)
{
	struct nodeconfig *nc = data;
	_cleanup_free_ char *name = NULL;
	int r = nodeconfig_current(nc, &name, NULL, err);

	if (r < 0)
		return r;
	/* the empty config: no file at all (upstream links /dev/null, which reads as no settings) */
	if (!*name)
		return (*ret_path = strdup("")) ? 0 : gerr_set(err, ENOMEM, "out of memory");
	if (asprintf(ret_path, "%s/%s", nc->srcdir, name) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	return 0;
}

void nodeconfig_event(struct nodeconfig *nc, const char *reason, const char *message)
{
	struct gerr err = {0};
	const struct kapi_event e = {.resource = &kapi_nodes,
				     .name = nc->node,
				     .uid = nc->uid,
				     .type = "Warning",
				     .reason = reason,
				     .message = message,
				     .component = nc->component,
				     .host = nc->node};

	if (kapi_event_create(nc->kapi, &e, &err) < 0)
		log_warn("Cannot tell the node in an Event", "reason=%s error=\"%s\"", reason, err.msg);
}

/* A config's name in words: "" is the empty config. */
static const char *shown(const char *name)
{
	return !name ? "(none yet)" : *name ? name : "(the empty config)";
}

/* The config the daemon loaded is the last one chosen. */
static void applied(struct nodeconfig *nc)
{
	nc->started = true;
	if (!set_str(&nc->running, nc->chosen))
		log_error("out of memory", NULL);
}

bool nodeconfig_fall_back(struct nodeconfig *nc, const struct gerr *why)
{
	char msg[GERR_MAX + 256];

	if (nc->started || !nc->read || !*nc->read)
		return false;
	snprintf(msg, sizeof(msg),
		 "%s: config \"%s\" named by the node label %s cannot be used, starting with the config of a node "
		 "without the label instead: %s",
		 nc->component, nc->read, nc->key, why->msg);
	log_error("Config named by the node label cannot be used, starting without it", "label=\"%s=%s\" error=\"%s\"",
		  nc->key, nc->read, why->msg);
	nodeconfig_event(nc, "ConfigNotApplied", msg);
	nc->pass_over = true;
	return true;
}

/* The daemon's loop: the label changed, reload through the one reload path. */
static int on_node(void *data, struct loop *l)
{
	struct nodeconfig *nc = data;
	struct gerr err = {0};
	char cause[320], msg[GERR_MAX + 512];

	if (!nodeconfig_changed(nc))
		return 0;
	snprintf(cause, sizeof(cause), "node label %s=%s", nc->key, nc->value ? nc->value : "");
	log_info("Node config label changed", "component=%s label=\"%s=%s\" running=\"%s\"", nc->component, nc->key,
		 nc->value ? nc->value : "", shown(nc->running));
	if (loop_reload(l, cause, &err) >= 0) {
		applied(nc);
		return 0;
	}
	snprintf(msg, sizeof(msg), "%s: config for %s not applied, keeping the running config \"%s\": %s",
		 nc->component, cause, shown(nc->running), err.msg);
	nodeconfig_event(nc, "ConfigNotApplied", msg);
	return 0;
}

struct loop_source nodeconfig_source(struct nodeconfig *nc)
{
	/* the first config loaded before the loop started is the one running */
	if (!nc->started)
		applied(nc);
	return (struct loop_source){.fd = nodeconfig_fd(nc), .fn = on_node, .data = nc};
}
