/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GFD's --use-node-feature-api: the labels in one NFD NodeFeature object (nfd.k8s-sigs.io/v1alpha1)
 * named nvidia-features-for-<node> in the pod's namespace, labelled nfd.node.kubernetes.io/node-name
 * and owned by the pod's DaemonSet and the pod, so that the garbage collector removes it with the
 * release; nfd-master turns spec.labels into node labels (docs/reference/gfd-labels.md "NodeFeature").
 *
 * A daemon follows its own object (an informer on that one name): a pass whose labels equal the
 * object's sends nothing, an object deleted or edited behind our back is written again at once, and
 * the informer says when the API does not serve NodeFeatures (the CRD is absent) and when it does
 * again. Library code: it logs at debug at most and reports through its return values.
 */
#pragma once

#include <stdbool.h>

#include "kapi/kapi.h"
#include "labels/labels.h"
#include "util/err.h"

struct nodefeature_options {
	const char *kubeconfig;     /* NULL or "": the pod's service account (the row reads $KUBECONFIG) */
	const struct kapi_env *env; /* in a pod: where the API server is (borrowed) */
	double qps;                 /* --kube-api-qps; 0: client-go's 5 */
	int burst;                  /* --kube-api-burst; 0: 10 */
	const char *ns;             /* --namespace: where the object lives (the pod's) */
	const char *node_name;      /* --node-name: the object's name and its node label */
	const char *pod_name;       /* --pod-name: the owners (the pod and its DaemonSet); NULL or "": none */
	bool follow;                /* watch the object (a daemon); false: one GET before each write (--oneshot) */
};

struct nodefeature;

/* What the API says about NodeFeatures now (a follower's informer). */
enum nodefeature_state {
	NODEFEATURE_WAITING, /* the first LIST has not answered yet */
	NODEFEATURE_SERVED,  /* the API serves them */
	NODEFEATURE_ABSENT,  /* the API does not serve nodefeatures.nfd.k8s-sigs.io: NFD's CRD is not installed */
	NODEFEATURE_FAILING, /* the API does not answer, or refuses (err says why: a 403 names the RBAC rule) */
};

/*
 * The client (libcurl is loaded here) and, when following, the informer on the object. -ENOENT when
 * no API server is configured (no kubeconfig, not in a pod: kapi_configured()); -EINVAL when o lacks
 * the node or the namespace, or the configuration is refused or missing (a kubeconfig that is not
 * there); err says which and what to do.
 */
int nodefeature_open(const struct nodefeature_options *o, struct nodefeature **ret, struct gerr *err);
void nodefeature_close(struct nodefeature *nf);
DEFINE_CLEANUP_FUNC(struct nodefeature, nodefeature_close)

/* The informer's eventfd (poll it; then nodefeature_changed()), -1 when not following. */
int nodefeature_fd(const struct nodefeature *nf);
/* After the fd was readable: true when the object changed by someone else's hand (deleted, edited) or
 * the state changed since the last call: a pass should write it again now. */
bool nodefeature_changed(struct nodefeature *nf);
enum nodefeature_state nodefeature_state(struct nodefeature *nf, struct gerr *why);
const char *nodefeature_state_name(enum nodefeature_state s);

/*
 * Make the object hold exactly s: created when absent, updated when its labels, node label or owners
 * differ, nothing sent when they are equal. 0 (1 when a request changed the object), -EOPNOTSUPP
 * when the API does not serve NodeFeatures (the caller falls back to the feature file), other -errno
 * with err (the API's words; a 403 names the RBAC rule).
 */
int nodefeature_publish(struct nodefeature *nf, const struct label_set *s, struct gerr *err);

/*
 * Why the owners could not be read (the pod's GET failed: GFD then writes the object without owners,
 * and so do we until a later pass reads them), once per new reason: true with why, for one log line.
 */
bool nodefeature_owner_warning(struct nodefeature *nf, struct gerr *why);

/* The object's name, "nvidia-features-for-<node>" (GFD's internal/lm/output.go). */
const char *nodefeature_name(const struct nodefeature *nf);
