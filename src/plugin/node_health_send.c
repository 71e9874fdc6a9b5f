/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One round of node health with the API server, in a process of its own (node_health_int.h): the
 * Node read once (its uid, the condition as it is), the condition applied when it changed, the
 * queued events sent. The plugin's side spawns it and waits, bounded; this side sends and answers.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kapi/kapi.h"
#include "plugin/node_health_int.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/spawn.h"

#define COMPONENT "gpulet-device-plugin" /* field manager and the events' source */

/* Refused for good (RBAC, an object the API finds invalid): an event is dropped, not retried forever. */
bool node_health_refused(int r)
{
	return r == -EACCES || r == -EINVAL;
}

/* The first failure of the round is the one the plugin logs. */
static int failed(struct node_health_reply *p, const char *what, int r, const struct gerr *err)
{
	if (!p->failed_r) {
		p->failed_r = r;
		snprintf(p->what, sizeof(p->what), "%s", what);
		snprintf(p->error, sizeof(p->error), "%s", err->msg);
	}
	return r;
}

static int read_node(struct kapi *k, const struct node_health_request *q, struct node_health_known *kn,
		     struct node_health_reply *p)
{
	_cleanup_(json_decrefp) json_t *node = NULL;
	struct gerr err = {0};
	const json_t *c;
	size_t i;
	int r;

	if (kn->node_read)
		return 0;
	r = kapi_get(k, &kapi_nodes, NULL, q->node, &node, &err);
	if (r < 0)
		return failed(p, "reading the Node", r, &err);
	snprintf(kn->uid, sizeof(kn->uid), "%s",
		 json_string_value(json_object_get(json_object_get(node, "metadata"), "uid")) ?: "");
	json_array_foreach (json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *status = json_string_value(json_object_get(c, "status"));
		const char *tt = json_string_value(json_object_get(c, "lastTransitionTime"));

		if (type && streq(type, NODE_HEALTH_CONDITION) && status && tt) {
			kn->have_status = true;
			kn->status = streq(status, "True");
			snprintf(kn->transition, sizeof(kn->transition), "%s", tt);
		}
	}
	kn->node_read = true;
	return 0;
}

/* Server-side apply of our one condition on nodes/NAME/status: kubelet's conditions are kubelet's. */
static int apply_condition(struct kapi *k, const struct node_health_request *q, struct node_health_known *kn,
			   struct node_health_reply *p)
{
	const struct node_health_verdict *v = &q->verdict;
	_cleanup_(json_decrefp) json_t *patch = NULL;
	struct gerr err = {0};
	char now[KAPI_TIME_MAX], transition[sizeof(kn->transition)];
	bool changed = !kn->have_status || kn->status != v->healthy;
	int r;

	kapi_time_format(time(NULL), now, sizeof(now));
	snprintf(transition, sizeof(transition), "%s", changed ? now : kn->transition);
	patch = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}}", "apiVersion", "v1", "kind",
			  "Node", "metadata", "name", q->node, "status", "conditions", "type", NODE_HEALTH_CONDITION,
			  "status", v->healthy ? "True" : "False", "reason", v->reason, "message", v->message,
			  "lastHeartbeatTime", now, "lastTransitionTime", transition);
	if (!patch)
		return -ENOMEM;
	r = kapi_patch(k, &kapi_nodes, NULL, q->node, "status", KAPI_APPLY_FORCE, patch, NULL, &err);
	if (r < 0)
		return failed(p, "applying the " NODE_HEALTH_CONDITION " condition", r, &err);
	p->transition = changed;
	snprintf(kn->transition, sizeof(kn->transition), "%s", transition);
	kn->have_status = true;
	kn->status = v->healthy;
	return 0;
}

/* An Event on the Node (kapi_event_create(): namespace default, where the API takes a cluster-scoped
 * object's events; docs/reference/device-plugin.md §4.2). */
static int send_event(struct kapi *k, const struct node_health_request *q, const struct node_health_known *kn,
		      const struct node_health_event *e, struct node_health_reply *p)
{
	const struct kapi_event ke = {.resource = &kapi_nodes,
				      .name = q->node,
				      .uid = kn->uid,
				      .type = e->warning ? "Warning" : "Normal",
				      .reason = e->reason,
				      .message = e->message,
				      .component = COMPONENT,
				      .host = q->node,
				      .at = e->at};
	struct gerr err = {0};
	int r = kapi_event_create(k, &ke, &err);

	return r < 0 ? failed(p, "creating an Event", r, &err) : 0;
}

static const char *nonempty(const char *s)
{
	return s[0] ? s : NULL;
}

/* The round itself: what it learnt goes into p, the Node's state only once the API server took it. */
static int round_here(const struct node_health_request *q, struct node_health_reply *p)
{
	const struct kapi_env env = {.service_host = nonempty(q->service_host),
				     .service_port = nonempty(q->service_port),
				     .pod_namespace = nonempty(q->pod_namespace)};
	const struct kapi_options ko = {.kubeconfig = nonempty(q->kubeconfig),
					.env = &env,
					.timeout_s = NODE_HEALTH_TIMEOUT_S,
					.field_manager = COMPONENT};
	_cleanup_(kapi_closep) struct kapi *k = NULL;
	struct gerr err = {0};
	int r;

	p->known = q->known;
	r = kapi_open(&ko, &k, &err);
	if (r < 0) {
		/* no API server to talk to, a kubeconfig we refuse, no libcurl: asking again will not help */
		p->disabled = r != -ENOMEM;
		return failed(p, "opening the client", r, &err);
	}
	snprintf(p->warning, sizeof(p->warning), "%s", kapi_warning(k) ?: "");
	r = read_node(k, q, &p->known, p);
	if (r >= 0 && q->apply && (r = apply_condition(k, q, &p->known, p)) >= 0)
		p->applied = true;
	while (r >= 0 && p->n_done < q->n_events) {
		r = send_event(k, q, &p->known, &q->events[p->n_done], p);
		if (r >= 0 || node_health_refused(r)) {
			p->n_done++;
			r = 0;
		}
	}
	return r;
}

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* A request from the plugin: whole, of this very build, every string ended. */
static bool valid(const struct node_health_request *q, size_t len)
{
	bool ok = len == sizeof(*q) && q->magic == NODE_HEALTH_MAGIC && q->size == sizeof(*q) &&
		  q->n_events <= ELEMENTSOF(q->events);

#define ENDED(f) (ok = ok && terminated(f, sizeof(f)))
	ENDED(q->node);
	ENDED(q->kubeconfig);
	ENDED(q->service_host);
	ENDED(q->service_port);
	ENDED(q->pod_namespace);
	ENDED(q->known.uid);
	ENDED(q->known.transition);
	ENDED(q->verdict.reason);
	ENDED(q->verdict.message);
	for (size_t i = 0; ok && i < q->n_events; i++) {
		ENDED(q->events[i].reason);
		ENDED(q->events[i].message);
	}
#undef ENDED
	return ok;
}

int node_health_serve(int in, int out, struct gerr *err)
{
	struct node_health_reply p = {.magic = NODE_HEALTH_MAGIC, .size = sizeof(p)};
	_cleanup_free_ char *q = NULL;
	size_t len = 0, done = 0;
	int r;

	/* one byte more than a request: a longer input is not one */
	r = read_fd(in, "stdin", sizeof(struct node_health_request) + 1, &q, &len, err);
	if (r < 0)
		return r;
	if (!valid((const struct node_health_request *)q, len))
		return gerr_set(err, EINVAL,
				"not a node health request of this gpulet on stdin (%zu bytes): this command is the "
				"plugin's own (--node-health)",
				len);
	p.r = round_here((const struct node_health_request *)q, &p);
	while (done < sizeof(p)) {
		ssize_t n = write(out, (const char *)&p + done, sizeof(p) - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return gerr_set(err, EIO, "writing the reply: %s", strerror(errno));
		done += (size_t)n;
	}
	return 0;
}

int node_health_round(const char *exe, const struct node_health_request *req, struct node_health_reply *ret,
		      int timeout_s, struct gerr *err)
{
	static char *const argv[] = {"gpulet", NODE_HEALTH_VERB, NULL};
	extern char **environ;
	size_t len = 0;
	const struct spawn_opts o = {.path = exe,
				     .argv = argv,
				     .envp = environ,
				     .input = (const char *)req,
				     .input_len = sizeof(*req),
				     .out_len = &len,
				     .stderr_to_out = true, /* its complaint, when it fails */
				     .timeout_ms = timeout_s * 1000};
	_cleanup_free_ char *out = malloc(sizeof(*ret) + 1);
	int r;

	if (!out)
		return gerr_set(err, ENOMEM, "out of memory");
	r = spawn_run(&o, out, sizeof(*ret) + 1);
	if (r == -ETIMEDOUT)
		return gerr_set(err, ETIMEDOUT, "%s %s gave no answer in %d s: killed", exe, NODE_HEALTH_VERB,
				timeout_s);
	if (r < 0)
		return gerr_set(err, -r, "cannot run %s %s: %s", exe, NODE_HEALTH_VERB, strerror(-r));
	if (r != 0 || len != sizeof(*ret))
		return gerr_set(err, EIO, "%s %s exited with %d: %.*s", exe, NODE_HEALTH_VERB, r,
				(int)strcspn(out, "\n"), out);
	memcpy(ret, out, sizeof(*ret));
	if (ret->magic != NODE_HEALTH_MAGIC || ret->size != sizeof(*ret))
		return gerr_set(err, EIO, "%s %s answered in another format", exe, NODE_HEALTH_VERB);
	ret->what[sizeof(ret->what) - 1] = ret->error[sizeof(ret->error) - 1] = '\0';
	ret->warning[sizeof(ret->warning) - 1] = '\0';
	return 0;
}
