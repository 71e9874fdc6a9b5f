/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the cluster says, from the API server instead of --pods/--node/--events dumps
 * (docs/reference/cluster-events.md §7): this node (GET, or an informer on its name), the pods bound
 * to it (fieldSelector spec.nodeName: the API server answers from its watch cache's index) and the
 * GPU Operator's own pod wherever it runs (labelSelector app=gpu-operator: whether the Operator is in
 * the cluster at all), and the events of the pods here that do not run well (one LIST per pod,
 * fieldSelector involvedObject.uid). A file given on the command line wins for its kind. The doctor's
 * server follows the node and the pods with informers (doctor_api_open(follow)): a walk then reads
 * their caches and sends no request but the events of a troubled pod.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "kapi/kapi.h"
#include "util/fileio.h"
#include "util/macro.h"

#define TIMEOUT_S      20 /* one request: a walk must not hang on an API server that does not answer */
#define MAX_EVENT_PODS 32 /* troubled pods whose events one walk asks for */
/* gpu-operator's chart, deployments/gpu-operator/templates/operator.yaml: the operator pod's label */
#define OPERATOR_SELECTOR "app=gpu-operator"

/* What the informers follow; the one-shot requests ask the same. */
enum { INF_NODE, INF_PODS, INF_OPERATOR, _INF_MAX };

struct doctor_api {
	struct kapi *k;
	char node[256];
	struct kapi_informer *inf[_INF_MAX]; /* NULL: not following */
};

void doctor_api_close(struct doctor_api *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < _INF_MAX; i++)
		kapi_informer_stop(a->inf[i]);
	kapi_close(a->k);
	free(a);
}

/* This node's name in the API: --node-name/NODE_NAME, else the node's /etc/hostname, else ours. */
static int node_name(const struct doctor_options *o, char *buf, size_t size)
{
	_cleanup_free_ char *p = NULL, *text = NULL;

	if (o->node_name && o->node_name[0]) {
		snprintf(buf, size, "%s", o->node_name);
		return 0;
	}
	p = root_path(doctor_root(o), "/etc/hostname");
	if (p && read_file(p, 4096, &text, NULL, NULL) >= 0) {
		text[strcspn(text, " \t\r\n")] = '\0';
		if (*text && strlen(text) < size) {
			snprintf(buf, size, "%s", text);
			return 0;
		}
	}
	return gethostname(buf, size - 1) < 0 ? -errno : 0;
}

static bool bound_to(const json_t *pod, const char *node)
{
	const char *n = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));

	return n && streq(n, node);
}

static void selectors(const struct doctor_api *a, size_t i, char *field, size_t size, const char **label)
{
	*label = NULL;
	field[0] = '\0';
	if (i == INF_NODE)
		snprintf(field, size, "metadata.name=%s", a->node);
	else if (i == INF_PODS)
		snprintf(field, size, "spec.nodeName=%s", a->node);
	else
		*label = OPERATOR_SELECTOR;
}

static const struct kapi_resource *resource_of(size_t i)
{
	return i == INF_NODE ? &kapi_nodes : &kapi_pods;
}

int doctor_api_open(const struct doctor_options *o, bool follow, struct doctor_api **ret, struct gerr *err)
{
	const struct kapi_options ko = {.kubeconfig = o->kubeconfig && o->kubeconfig[0] ? o->kubeconfig : NULL,
					.env = o->kenv,
					.timeout_s = TIMEOUT_S};
	_cleanup_(doctor_api_closep) struct doctor_api *a = NULL;
	int r;

	if (!kapi_configured(ko.kubeconfig, ko.env))
		return gerr_set(err, ENOENT, "no Kubernetes API server configured: not in a pod, no --kubeconfig");
	a = calloc(1, sizeof(*a));
	if (!a)
		return gerr_set(err, ENOMEM, "out of memory");
	r = node_name(o, a->node, sizeof(a->node));
	if (r < 0)
		return gerr_set(err, -r, "this node's name: set NODE_NAME or --node-name");
	r = kapi_open(&ko, &a->k, err);
	if (r < 0)
		return r == -ENOENT ? -EINVAL : r; /* configured, and what it names is missing */
	for (size_t i = 0; follow && i < _INF_MAX; i++) {
		char field[320];
		struct kapi_informer_options io = {.resource = resource_of(i), .field_selector = field};

		selectors(a, i, field, sizeof(field), &io.label_selector);
		if (!field[0])
			io.field_selector = NULL;
		r = kapi_informer_start(a->k, &io, &a->inf[i], err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(a);
	return 0;
}

int doctor_api_fd(const struct doctor_api *a, size_t i)
{
	return i < _INF_MAX && a->inf[i] ? kapi_informer_fd(a->inf[i]) : -1;
}

size_t doctor_api_n_fds(void)
{
	return _INF_MAX;
}

bool doctor_api_changed(struct doctor_api *a)
{
	bool any = false;
	char *key;
	json_t *obj;

	for (size_t i = 0; i < _INF_MAX; i++)
		while (a->inf[i] && kapi_informer_next(a->inf[i], &key, &obj) == 1) {
			/* a GPU pod's or the node's change is worth a walk; other pods come and go */
			any |= i == INF_NODE || !obj || doctor_pod_requests_gpu(obj);
			free(key);
			json_decref(obj);
		}
	return any;
}

/* One kind of object: the informer's cache (once synced), or a request. A list's items, or the one node. */
static int fetch(struct doctor_api *a, size_t i, json_t **ret, struct gerr *err)
{
	struct kapi_informer_status st;
	char field[320];
	const char *label;
	json_t *list = NULL;
	int r;

	if (a->inf[i])
		kapi_informer_status(a->inf[i], &st);
	/* an informer whose first LIST has not answered yet: ask this once */
	if (a->inf[i] && st.synced) {
		list = kapi_informer_list(a->inf[i]);
		if (!list)
			return -ENOMEM;
		if (i != INF_NODE) {
			*ret = list;
			return 0;
		}
		*ret = json_incref(json_array_get(list, 0));
		json_decref(list);
		return *ret ? 0 : gerr_set(err, ENOENT, "nodes \"%s\" not found", a->node);
	}
	if (i == INF_NODE)
		return kapi_get(a->k, &kapi_nodes, NULL, a->node, ret, err);
	selectors(a, i, field, sizeof(field), &label);
	r = kapi_list(a->k, &kapi_pods, NULL,
		      &(struct kapi_list_options){.field_selector = field[0] ? field : NULL, .label_selector = label},
		      &list, err);
	if (r < 0)
		return r;
	*ret = json_incref(json_object_get(list, "items"));
	json_decref(list);
	return *ret ? 0 : gerr_set(err, EPROTO, "a pod list without items");
}

/* The pods here and the Operator's (once each: it may run here too). */
static int load_pods(struct doctor_api *a, json_t **ret, struct gerr *err)
{
	_cleanup_(json_decrefp) json_t *here = NULL, *op = NULL;
	size_t i;
	json_t *p;
	int r = fetch(a, INF_PODS, &here, err);

	if (r >= 0)
		r = fetch(a, INF_OPERATOR, &op, err);
	if (r < 0)
		return r;
	json_array_foreach (op, i, p)
		if (!bound_to(p, a->node))
			json_array_append(here, p);
	*ret = TAKE_PTR(here);
	return 0;
}

/* The events of the pods here that do not run well: what check_events.c weighs. */
static int load_events(struct doctor_api *a, const json_t *pods, json_t **ret, struct gerr *err)
{
	_cleanup_(json_decrefp) json_t *events = json_array();
	size_t i, asked = 0;
	json_t *pod;

	if (!events)
		return -ENOMEM;
	json_array_foreach (pods, i, pod) {
		const json_t *meta = json_object_get(pod, "metadata");
		const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
		const char *uid = json_string_value(json_object_get(meta, "uid"));
		const char *ns = json_string_value(json_object_get(meta, "namespace"));
		_cleanup_(json_decrefp) json_t *list = NULL;
		char field[128], why[256];
		int r;

		if (!uid || !ns || !bound_to(pod, a->node) ||
		    (phase && (streq(phase, "Running") || streq(phase, "Succeeded")) &&
		     cluster_pod_healthy(pod, why, sizeof(why))))
			continue;
		if (asked++ == MAX_EVENT_PODS)
			break;
		snprintf(field, sizeof(field), "involvedObject.uid=%s", uid);
		r = kapi_list(a->k, &kapi_events, ns, &(struct kapi_list_options){.field_selector = field}, &list, err);
		if (r < 0)
			return r;
		json_array_extend(events, json_object_get(list, "items"));
	}
	*ret = TAKE_PTR(events);
	return 0;
}

static void api_failed(struct doctor_ctx *c, const char *what, const struct gerr *err)
{
	doctor_evidence(
	    doctor_report_once(c, "input.api-failed", DOCTOR_WARN, LINK_ALLOC,
			       "give the doctor's ServiceAccount read access to nodes, pods and events "
			       "(the chart's doctor.readCluster does), or dump them: kubectl get pods -A -o json "
			       "> pods.json, and --pods/--node/--events",
			       "the API server did not give what the cluster says about this node; "
			       "those facts are not checked"),
	    "%s: %s", what, err->msg);
}

int doctor_api_load(struct doctor_ctx *c)
{
	const struct doctor_options *o = c->o;
	struct doctor_api *a = o->api;
	struct gerr err = {0};
	int r;

	if (o->pods_file && o->node_file && o->events_file)
		return 0;
	if (!a) {
		r = doctor_api_open(o, false, &c->api, &err);
		if (r == -ENOENT)
			return 0; /* no API server configured: the files alone, as before */
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			api_failed(c, "connecting", &err);
			return 0;
		}
		a = c->api;
	}
	if (!o->node_file && (r = fetch(a, INF_NODE, &c->node_obj, &err)) < 0) {
		if (r == -ENOMEM)
			return r;
		api_failed(c, "reading this node", &err);
	}
	if (!o->pods_file && (r = load_pods(a, &c->pods, &err)) < 0) {
		if (r == -ENOMEM)
			return r;
		api_failed(c, "listing the pods on this node", &err);
	}
	if (!o->events_file && c->pods && (r = load_events(a, c->pods, &c->events, &err)) < 0) {
		if (r == -ENOMEM)
			return r;
		api_failed(c, "listing the events of the pods here", &err);
	}
	return 0;
}
