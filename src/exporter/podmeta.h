/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What PodResources does not say about the pods holding GPUs: each pod's UID and Kubernetes labels,
 * from a watch of the pods on this node (kapi/: one informer, fieldSelector spec.nodeName, so only
 * this node's pods travel). dcgm-exporter's --kubernetes-enable-pod-labels, --kubernetes-enable-pod-uid
 * and --kubernetes-pod-label-allowlist-regex, and the pod UIDs its per-process values under
 * --kubernetes-virtual-gpus need (docs/reference/dcgm-exporter.md section 9).
 *
 * The informer's changes are drained on the daemon's loop (exp_podmeta_fd, exp_podmeta_update), which
 * rebuilds a small table; scrapes read the table under its lock (exp_podmeta_lock) and never wait on
 * the API server.
 */
#pragma once

#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

struct kapi_env; /* kapi/kapi.h */

/* The label allowlist: pod label keys kept (n == 0: every key, as upstream's empty list). */
struct exp_allowlist {
	regex_t *re;
	size_t n;
};

/*
 * Compile upstream's Go (RE2) patterns, matched unanchored like Go's MatchString, with POSIX extended
 * regular expressions where the two read a pattern the same way; what RE2 reads differently (\d, (?i),
 * lazy repeats, an escape inside brackets, an empty pattern) is refused naming the pattern, never
 * matched another way. -EINVAL with err.
 */
int exp_allowlist_compile(const char *const *patterns, size_t n, struct exp_allowlist *ret, struct gerr *err);
void exp_allowlist_free(struct exp_allowlist *a);
bool exp_allowlist_match(const struct exp_allowlist *a, const char *key);

/*
 * A pod label key as a Prometheus label name: every character but [a-zA-Z0-9_] becomes '_' (upstream's
 * utils.SanitizeLabelName); a leading digit gets a '_' before it (a name Prometheus accepts). false when
 * it does not fit or names a label gpulet writes itself (such a pod label is left out).
 */
bool exp_pod_label_name(const char *key, char *out, size_t size);

/* What the daemon asks for (-k given: upstream ignores these flags without it). */
struct exp_kube_options {
	bool pod_labels;            /* --kubernetes-enable-pod-labels */
	bool pod_uid;               /* --kubernetes-enable-pod-uid */
	bool per_process;           /* --kubernetes-virtual-gpus: FB_USED and GPU_UTIL per pod need each pod's UID */
	const char *node_name;      /* NODE_NAME: the node whose pods are watched */
	const char *kubeconfig;     /* --kubeconfig ($KUBECONFIG); NULL: in-cluster */
	const struct kapi_env *env; /* kubelet's in-pod environment (borrowed from the verb's options) */
	struct exp_allowlist allowlist;
};

/* One pod of this node as the table keeps it. */
struct exp_pod {
	char *ns, *name, *uid;
	char *labels; /* ,name="value"... of the allowed labels (escaped), or "" */
};

struct exp_podmeta {
	pthread_mutex_t lock;
	struct exp_pod *pods; /* sorted by (ns, name) */
	size_t n;
	/* private */
	struct kapi *api;
	struct kapi_informer *inf;
	const struct exp_allowlist *allow;
	bool labels;
	int last_error; /* the informer's error last logged (the daemon's) */
};

/*
 * Open the API client (o->kubeconfig, else in-cluster through o->env) and start the informer. -ENOENT (no API server to
 * talk to), or what kapi_open/kapi_informer_start say, with err.
 */
int exp_podmeta_start(struct exp_podmeta *pm, const struct exp_kube_options *o, struct gerr *err);
int exp_podmeta_fd(const struct exp_podmeta *pm);
const char *exp_podmeta_server(const struct exp_podmeta *pm);  /* for the log line */
const char *exp_podmeta_warning(const struct exp_podmeta *pm); /* kapi_warning(): log it once, or NULL */
/*
 * Drain the informer's changes and rebuild the table (on the daemon's loop). *ret_error: the watch's
 * last failure (errno, 0 none) and msg its words (the RBAC rule on a 403), for the daemon to log.
 * 0 or -ENOMEM.
 */
int exp_podmeta_update(struct exp_podmeta *pm, int *ret_error, char *msg, size_t size);
/* Under pm->lock: the pod, or NULL. */
const struct exp_pod *exp_podmeta_find(const struct exp_podmeta *pm, const char *ns, const char *name);
/* The pod whose UID is uid, or NULL (under pm->lock). */
const struct exp_pod *exp_podmeta_by_uid(const struct exp_podmeta *pm, const char *uid);
void exp_podmeta_stop(struct exp_podmeta *pm);

/* Build the table from a list of Pod objects (exposed for tests): 0 or -ENOMEM. */
int exp_podmeta_set(struct exp_podmeta *pm, const json_t *pods);
