/* SPDX-License-Identifier: Apache-2.0 */
/* GFD's NodeFeature output (nodefeature.h; the facts: docs/reference/gfd-labels.md "NodeFeature"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kapi/kapi.h"
#include "labels/nodefeature.h"
#include "util/log.h"
#include "util/macro.h"

/* GFD v0.20 internal/lm/output.go: nodeFeatureVendorPrefix, NodeFeatureObjNodeNameLabel */
#define NAME_PREFIX     "nvidia-features-for-"
#define NODE_NAME_LABEL "nfd.node.kubernetes.io/node-name"
/* one request's bound: a pass must not hang on an API server that does not answer */
#define TIMEOUT_S 20

struct nodefeature {
	struct kapi *k;
	struct kapi_informer *inf; /* NULL: not following */
	char *ns, *node, *pod, *name;
	json_t *owners;           /* the ownerReferences we write; NULL: not resolved (yet) */
	bool owners_final;        /* resolved, or failed for good (no pod name, the pod or its RBAC rule missing) */
	json_t *last;             /* the object as our last write left it (the server's answer) */
	char last_rv[64];         /* its resourceVersion: a watch event with another one is someone else's */
	bool changed;             /* the object changed behind us since the last nodefeature_changed() */
	char owner_err[GERR_MAX]; /* why the owners are not known, "" when they are */
	bool owner_err_told;
	enum nodefeature_state seen; /* the state at the last nodefeature_changed() */
};

static const char *const state_names[] = {
    [NODEFEATURE_WAITING] = "waiting",
    [NODEFEATURE_SERVED] = "served",
    [NODEFEATURE_ABSENT] = "absent",
    [NODEFEATURE_FAILING] = "failing",
};

const char *nodefeature_state_name(enum nodefeature_state s)
{
	return s < ELEMENTSOF(state_names) ? state_names[s] : "?";
}

const char *nodefeature_name(const struct nodefeature *nf)
{
	return nf->name;
}

int nodefeature_fd(const struct nodefeature *nf)
{
	return nf->inf ? kapi_informer_fd(nf->inf) : -1;
}

void nodefeature_close(struct nodefeature *nf)
{
	if (!nf)
		return;
	kapi_informer_stop(nf->inf);
	kapi_close(nf->k);
	json_decref(nf->owners);
	json_decref(nf->last);
	free(nf->ns);
	free(nf->node);
	free(nf->pod);
	free(nf->name);
	free(nf);
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	return json_string_value(json_object_get(b ? json_object_get(obj, a) : obj, b ? b : a));
}

/*
 * The owners GFD v0.19+ writes (internal/lm/output.go getOwnerReferences): the pod's DaemonSet as the
 * controller and the pod itself. The object goes when both are gone: with the release (the DaemonSet
 * deleted), not at every rollout (a new pod writes itself in). A pod no DaemonSet owns: none.
 */
static int resolve_owners(struct nodefeature *nf)
{
	struct gerr err = {0};
	_cleanup_(json_decrefp) json_t *pod = NULL;
	const json_t *refs, *ref, *ds = NULL;
	size_t i;
	int r;

	if (nf->owners_final)
		return 0;
	if (!nf->pod) {
		nf->owners_final = true;
		return 0;
	}
	r = kapi_get(nf->k, &kapi_pods, nf->ns, nf->pod, &pod, &err);
	if (r < 0) {
		/* a pod that is not there or may not be read will not become readable by asking again */
		nf->owners_final = r == -ENOENT || r == -EACCES;
		if (!streq(nf->owner_err, err.msg))
			nf->owner_err_told = false;
		snprintf(nf->owner_err, sizeof(nf->owner_err), "%s", err.msg);
		return r;
	}
	nf->owner_err[0] = '\0';
	refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
	json_array_foreach (refs, i, ref)
		if (str_at(ref, "kind", NULL) && streq(str_at(ref, "kind", NULL), "DaemonSet")) {
			ds = ref;
			break;
		}
	nf->owners_final = true;
	if (!ds)
		return 0;
	nf->owners = json_pack("[{s:s*, s:s, s:s*, s:s*, s:b}, {s:s, s:s, s:s, s:s*}]", "apiVersion",
			       str_at(ds, "apiVersion", NULL), "kind", "DaemonSet", "name", str_at(ds, "name", NULL),
			       "uid", str_at(ds, "uid", NULL), "controller", 1, "apiVersion", "v1", "kind", "Pod",
			       "name", nf->pod, "uid", str_at(pod, "metadata", "uid"));
	return nf->owners ? 0 : -ENOMEM;
}

int nodefeature_open(const struct nodefeature_options *o, struct nodefeature **ret, struct gerr *err)
{
	_cleanup_(nodefeature_closep) struct nodefeature *nf = NULL;
	const struct kapi_options ko = {.kubeconfig = o->kubeconfig && o->kubeconfig[0] ? o->kubeconfig : NULL,
					.env = o->env,
					.qps = o->qps,
					.burst = o->burst,
					.timeout_s = TIMEOUT_S,
					.field_manager = "gpulet-labels"};
	int r;

	nf = calloc(1, sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	/* first: without an API server (-ENOENT) the file is used, whatever the node and namespace say */
	if (!kapi_configured(ko.kubeconfig, ko.env))
		return gerr_set(err, ENOENT, "no Kubernetes API server configured: not in a pod, no --kubeconfig");
	r = kapi_open(&ko, &nf->k, err);
	if (r < 0)
		return r == -ENOENT ? -EINVAL : r; /* configured, and what it names is missing */
	if (!o->node_name || !o->node_name[0])
		return gerr_set(
		    err, EINVAL,
		    "the NodeFeature API needs this node's name: set NODE_NAME (the chart sets it from "
		    "spec.nodeName) or --node-name, or give --use-node-feature-api=false for the feature file");
	if (!o->ns || !o->ns[0])
		return gerr_set(err, EINVAL,
				"the NodeFeature API needs the pod's namespace: set NAMESPACE or --namespace");
	if (!(nf->ns = strdup(o->ns)) || !(nf->node = strdup(o->node_name)) ||
	    (o->pod_name && o->pod_name[0] && !(nf->pod = strdup(o->pod_name))) ||
	    asprintf(&nf->name, NAME_PREFIX "%s", o->node_name) < 0) {
		nf->name = NULL;
		return -ENOMEM;
	}
	/* resolved again at the next write when the API did not answer; the caller hears of it there */
	if (resolve_owners(nf) == -ENOMEM)
		return -ENOMEM;
	if (o->follow) {
		char field[320];
		const struct kapi_informer_options io = {
		    .resource = &kapi_nodefeatures, .ns = nf->ns, .field_selector = field};

		snprintf(field, sizeof(field), "metadata.name=%s", nf->name);
		r = kapi_informer_start(nf->k, &io, &nf->inf, err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(nf);
	return 0;
}

enum nodefeature_state nodefeature_state(struct nodefeature *nf, struct gerr *why)
{
	struct kapi_informer_status st;

	if (!nf->inf)
		return NODEFEATURE_SERVED; /* not known before a request: publish finds out */
	kapi_informer_status(nf->inf, &st);
	if (st.synced && !st.error)
		return NODEFEATURE_SERVED;
	if (why && st.error)
		gerr_set(why, st.error, "%s", st.message);
	/* a LIST of a namespace's nodefeatures answers 404 only when the resource itself is not served */
	if (st.error == ENOENT)
		return NODEFEATURE_ABSENT;
	if (st.error)
		return NODEFEATURE_FAILING;
	return st.synced ? NODEFEATURE_SERVED : NODEFEATURE_WAITING;
}

bool nodefeature_changed(struct nodefeature *nf)
{
	enum nodefeature_state s;
	char *key;
	json_t *obj;
	bool changed;

	if (!nf->inf)
		return false;
	while (kapi_informer_next(nf->inf, &key, &obj) == 1) {
		const char *rv = str_at(obj, "metadata", "resourceVersion");

		/* our own write comes back with the resourceVersion its answer had */
		if (!obj || !rv || !streq(rv, nf->last_rv)) {
			nf->changed = true;
			json_decref(nf->last);
			nf->last = NULL;
			nf->last_rv[0] = '\0';
		}
		free(key);
		json_decref(obj);
	}
	s = nodefeature_state(nf, NULL);
	changed = nf->changed || s != nf->seen;
	nf->changed = false;
	nf->seen = s;
	return changed;
}

/* The labels as spec.labels: every key and value as labels_build() made them. */
static json_t *labels_json(const struct label_set *s)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < s->n; i++)
		if (json_object_set_new(o, s->v[i].key, json_string(s->v[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/* The fields we own on obj (a new object, or a copy of the current one): GFD's Update sets the same. */
static int own_fields(struct nodefeature *nf, json_t *obj, json_t *labels)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *spec =
	    json_pack("{s:{s:{}, s:{}, s:{}}, s:O}", "features", "flags", "attributes", "instances", "labels", labels);

	if (!spec || json_object_set_new(obj, "spec", spec) < 0 ||
	    json_object_set_new(meta, "labels", json_pack("{s:s}", NODE_NAME_LABEL, nf->node)) < 0)
		return -ENOMEM;
	if (nf->owners)
		return json_object_set(meta, "ownerReferences", nf->owners) < 0 ? -ENOMEM : 0;
	json_object_del(meta, "ownerReferences");
	return 0;
}

/* Does cur already hold what we would write? */
static bool holds(const struct nodefeature *nf, const json_t *cur, const json_t *labels)
{
	const json_t *meta = json_object_get(cur, "metadata");
	const json_t *spec = json_object_get(cur, "spec");
	const json_t *owners = json_object_get(meta, "ownerReferences");
	const char *node = str_at(json_object_get(meta, "labels"), NODE_NAME_LABEL, NULL);

	return json_equal(json_object_get(spec, "labels"), (json_t *)labels) && json_object_get(spec, "features") &&
	       node && streq(node, nf->node) && json_object_size(json_object_get(meta, "labels")) == 1 &&
	       (nf->owners ? json_equal((json_t *)owners, nf->owners) : !json_array_size(owners));
}

/* The object as it is now: what our last write left (nothing changed it since), the informer's
 * copy, or a GET. NULL in *ret when there is none; -EOPNOTSUPP when the API serves no NodeFeatures. */
static int current(struct nodefeature *nf, json_t **ret, struct gerr *err)
{
	int r;

	*ret = NULL;
	if (nf->last) {
		*ret = json_incref(nf->last);
		return 0;
	}
	if (nf->inf) {
		switch (nodefeature_state(nf, err)) {
		case NODEFEATURE_ABSENT:
			return -EOPNOTSUPP;
		case NODEFEATURE_SERVED: {
			char key[512];

			snprintf(key, sizeof(key), "%s/%s", nf->ns, nf->name);
			*ret = kapi_informer_get(nf->inf, key);
			return 0;
		}
		default:
			break; /* not known yet: ask */
		}
	}
	r = kapi_get(nf->k, &kapi_nodefeatures, nf->ns, nf->name, ret, err);
	return r == -ENOENT ? 0 : r;
}

static void remember(struct nodefeature *nf, json_t *answer)
{
	const char *rv = str_at(answer, "metadata", "resourceVersion");

	json_decref(nf->last);
	nf->last = answer;
	snprintf(nf->last_rv, sizeof(nf->last_rv), "%s", rv ? rv : "");
}

static int write_object(struct nodefeature *nf, json_t *cur, json_t *labels, struct gerr *err)
{
	_cleanup_(json_decrefp) json_t *obj = NULL;
	json_t *answer = NULL;
	int r;

	if (cur) {
		obj = json_deep_copy(cur);
		json_object_del(obj, "status");
	} else {
		obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "nfd.k8s-sigs.io/v1alpha1", "kind",
				"NodeFeature", "metadata", "name", nf->name, "namespace", nf->ns);
	}
	if (!obj || own_fields(nf, obj, labels) < 0)
		return -ENOMEM;
	if (cur)
		r = kapi_update(nf->k, &kapi_nodefeatures, nf->ns, nf->name, NULL, obj, &answer, err);
	else
		r = kapi_create(nf->k, &kapi_nodefeatures, nf->ns, obj, &answer, err);
	/* a create that finds no such resource: the API does not serve NodeFeatures (a missing object
	 * would have been made) */
	if (r == -ENOENT && !cur)
		return -EOPNOTSUPP;
	if (r < 0)
		return r;
	remember(nf, answer);
	return 1;
}

int nodefeature_publish(struct nodefeature *nf, const struct label_set *s, struct gerr *err)
{
	_cleanup_(json_decrefp) json_t *labels = labels_json(s);
	_cleanup_(json_decrefp) json_t *cur = NULL;
	int r;

	if (!labels)
		return -ENOMEM;
	if (!nf->owners_final && resolve_owners(nf) == -ENOMEM)
		return -ENOMEM;
	r = current(nf, &cur, err);
	for (int attempt = 0;; attempt++) {
		if (r < 0)
			return r;
		if (cur && holds(nf, cur, labels)) {
			if (attempt)
				remember(nf, json_incref(cur));
			return 0;
		}
		r = write_object(nf, cur, labels, err);
		/* someone wrote it between our read and our write (-EEXIST: made meanwhile, -ESTALE: changed):
		 * read it again, once, as a controller does */
		if ((r != -EEXIST && r != -ESTALE) || attempt > 0)
			return r;
		json_decref(cur);
		cur = NULL;
		r = kapi_get(nf->k, &kapi_nodefeatures, nf->ns, nf->name, &cur, err);
		if (r == -ENOENT)
			r = 0;
	}
}

bool nodefeature_owner_warning(struct nodefeature *nf, struct gerr *why)
{
	if (!nf->owner_err[0] || nf->owner_err_told)
		return false;
	nf->owner_err_told = true;
	gerr_set(why, EINVAL, "%s", nf->owner_err);
	return true;
}
