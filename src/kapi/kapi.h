/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kapi: gpulet's one client of the Kubernetes API server (docs/reference/kube-api.md has the facts
 * it relies on, with their sources).
 *
 * Where the server is and who we are: a kubeconfig file (--kubeconfig, $KUBECONFIG) or, in a pod,
 * the service account (KUBERNETES_SERVICE_HOST/_PORT, /var/run/secrets/kubernetes.io/serviceaccount).
 * TLS is always verified (only a kubeconfig's insecure-skip-tls-verify turns that off, and then
 * kapi_warning() says so). What a kubeconfig holds that we do not do (exec plugins, auth-provider,
 * basic auth, impersonation, proxies, tls-server-name) is refused, never ignored.
 *
 * Requests are blocking and may be made from any thread; one client is shared by the whole process.
 * All of them, watches included, go through one token bucket (client-go's QPS 5, burst 10 unless
 * told otherwise). The bearer token file is re-read every minute and once more on a 401 (the request
 * is then retried once). 429 and 5xx answers with Retry-After are retried as client-go does.
 *
 * Errors: -errno, and the gerr names the verb, the resource and the object; a 403 also names the
 * RBAC rule that is missing; the server's Status message is quoted. The errno of an answer:
 *   404 NotFound -ENOENT, 409 AlreadyExists -EEXIST, 409 Conflict -ESTALE (re-read, then write again),
 *   410 Gone/Expired -ETIME, 401 -EKEYREJECTED, 403 -EACCES, 400/422 Invalid -EINVAL,
 *   429 -EBUSY (after the retries), 5xx -EIO (503 -EAGAIN, 504 -ETIMEDOUT);
 *   not reachable -ECONNREFUSED/-EHOSTUNREACH/-ETIMEDOUT/-ECONNRESET, TLS refused -EPROTO,
 *   an answer larger than the bound -EMSGSIZE.
 *
 * Watches: an informer (kapi_informer_start) runs LIST then WATCH on its own thread, keeps the
 * objects that match in a cache and queues the keys of the ones that changed. The daemon polls
 * kapi_informer_fd() in its own loop (or takes the notify callback) and drains kapi_informer_next().
 * Bookmarks keep the resourceVersion fresh, a 410 (HTTP or a watch ERROR event) relists and queues
 * what changed meanwhile (deletions included), a broken connection is retried with client-go's
 * backoff and jitter, each watch is ended by the server after 5 to 10 minutes and resumed at once.
 *
 * libcurl is loaded with dlopen on the first kapi_open() (lean start-up, docs/HACKING.md §7): a
 * process that never opens a client never maps it. Callers ignore SIGPIPE (the daemons do).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* -- resources ------------------------------------------------------------------------------- */

/* One kind of object as the API serves it: /api/v1/<resource> or /apis/<group>/<version>/<resource>. */
struct kapi_resource {
	const char *group;    /* "" for the core group */
	const char *version;  /* "v1" */
	const char *resource; /* the plural, lower case: "nodes", "resourceslices" */
	const char *kind;     /* "Node" (messages, apply bodies) */
	bool namespaced;
};

/* The ones gpulet uses; a caller may define others the same way. */
extern const struct kapi_resource kapi_nodes;              /* v1 Node */
extern const struct kapi_resource kapi_pods;               /* v1 Pod */
extern const struct kapi_resource kapi_events;             /* v1 Event (what kubectl describe shows) */
extern const struct kapi_resource kapi_configmaps;         /* v1 ConfigMap */
extern const struct kapi_resource kapi_resourceclaims;     /* resource.k8s.io/v1 ResourceClaim */
extern const struct kapi_resource kapi_resourceslices;     /* resource.k8s.io/v1 ResourceSlice */
extern const struct kapi_resource kapi_nodefeatures;       /* nfd.k8s-sigs.io/v1alpha1 NodeFeature */
extern const struct kapi_resource kapi_selfsubjectreviews; /* authentication.k8s.io/v1: who am I */

/* -- the client ------------------------------------------------------------------------------ */

/*
 * What kubelet puts in every pod's environment about the API server, as the verb's option rows read
 * it (KAPI_ENV_ROWS(), kapi/rows.h): this library reads no env var. NULL or "" fields: unset.
 */
struct kapi_env {
	const char *service_host;  /* KUBERNETES_SERVICE_HOST */
	const char *service_port;  /* KUBERNETES_SERVICE_PORT */
	const char *pod_namespace; /* POD_NAMESPACE (clientcmd's override of the namespace file) */
};

/* A copy that outlives the options it came from (a thread's own): kapi_env_clear() frees it, and only such a copy. */
int kapi_env_copy(struct kapi_env *dst, const struct kapi_env *src);
void kapi_env_clear(struct kapi_env *e);

struct kapi_options {
	const char *kubeconfig;     /* a kubeconfig file (the verb's row reads $KUBECONFIG); NULL: in-cluster */
	const struct kapi_env *env; /* in a pod: where the API server is; NULL: not in a pod */
	const char *context;        /* NULL: the file's current-context */
	const char *sa_dir;         /* in-cluster files; NULL: /var/run/secrets/kubernetes.io/serviceaccount */
	double qps;                 /* requests per second; 0: 5, < 0: no limit (client-go's rest.Config) */
	int burst;                  /* 0: 10 */
	unsigned token_period_s;    /* re-read the token file after this long; 0: 60 */
	unsigned timeout_s;         /* one request (not a watch), connection included; 0: 60 */
	size_t max_response;        /* bytes of one answer or list page; 0: 64 MiB */
	const char *user_agent;     /* NULL: "gpulet/<version>" */
	const char *field_manager;  /* every write's fieldManager; NULL: "gpulet" */
};

struct kapi;

/*
 * Load the configuration (nothing is sent yet) and libcurl. -ENOENT when there is no API server to
 * talk to (no kubeconfig, not in a pod), -EINVAL for a kubeconfig we refuse, -ENOPKG when libcurl
 * (OpenSSL flavour, >= 7.77) cannot be loaded; err says which file, field and what to do.
 */
int kapi_open(const struct kapi_options *o, struct kapi **ret, struct gerr *err);
/*
 * Whether an API server is configured at all, in kapi_open()'s order, without reading anything: a
 * kubeconfig given (kubeconfig non-NULL and not ""; --kubeconfig or $KUBECONFIG), else in a pod
 * (env's KUBERNETES_SERVICE_HOST). A verb whose API use is optional works without one when this is false;
 * when it is true, a kapi_open() that fails is an error to report (a missing kubeconfig file included).
 */
bool kapi_configured(const char *kubeconfig, const struct kapi_env *env);
/* After every informer of this client is stopped. NULL is fine. */
void kapi_close(struct kapi *k);
DEFINE_CLEANUP_FUNC(struct kapi, kapi_close)

const char *kapi_server(const struct kapi *k);    /* "https://10.96.0.1:443" */
const char *kapi_namespace(const struct kapi *k); /* the context's or the pod's namespace, else "default" */
/* The warning the caller must log once (insecure-skip-tls-verify), NULL when none. */
const char *kapi_warning(const struct kapi *k);

/* -- requests -------------------------------------------------------------------------------- */
/*
 * ns: the namespace of a namespaced resource (NULL for a cluster-scoped one; for list, NULL is all
 * namespaces). *ret (may be NULL) gets the server's answer, a new reference, only on success.
 */

int kapi_get(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name, json_t **ret,
	     struct gerr *err);

struct kapi_list_options {
	const char *label_selector; /* "app=x,tier!=y" */
	const char *field_selector; /* "spec.nodeName=node-1" */
	unsigned limit;             /* page size (limit/continue paging); 0: 500 */
};
/*
 * Every page, joined: *ret is the List with all items and the first page's metadata.resourceVersion
 * (a watch starts there). A continue token that expired (410) starts over with one unpaged LIST.
 */
int kapi_list(struct kapi *k, const struct kapi_resource *r, const char *ns, const struct kapi_list_options *o,
	      json_t **ret, struct gerr *err);

/* POST: obj's metadata.name (or generateName) names it. -EEXIST when it exists. */
int kapi_create(struct kapi *k, const struct kapi_resource *r, const char *ns, const json_t *obj, json_t **ret,
		struct gerr *err);
/* PUT of the object (or of its subresource, "status"; NULL for none); metadata.resourceVersion makes it
 * conditional: -ESTALE when the object changed meanwhile. */
int kapi_update(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name,
		const char *subresource, const json_t *obj, json_t **ret, struct gerr *err);

struct kapi_delete_options {
	const char *uid;              /* precondition: delete only this incarnation (-ESTALE otherwise) */
	const char *resource_version; /* precondition */
	const char *propagation;      /* "Foreground", "Background", "Orphan"; NULL: the server's default */
};
/* o may be NULL. -ENOENT when it is gone already. */
int kapi_delete(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name,
		const struct kapi_delete_options *o, struct gerr *err);

enum kapi_patch {
	KAPI_MERGE_PATCH,     /* application/merge-patch+json (RFC 7386: a list is replaced whole) */
	KAPI_STRATEGIC_PATCH, /* application/strategic-merge-patch+json (built-in kinds: conditions merge by type) */
	KAPI_JSON_PATCH,      /* application/json-patch+json (RFC 6902; patch is an array) */
	KAPI_APPLY,           /* server-side apply, application/apply-patch+yaml: patch is the fields we own */
	KAPI_APPLY_FORCE,     /* the same, taking over fields another manager owns (what controllers use) */
};
/*
 * PATCH the object (or its subresource; NULL for none) with the client's field manager. For a Node
 * condition use KAPI_APPLY(_FORCE) or KAPI_STRATEGIC_PATCH on "status": a merge patch would replace
 * kubelet's conditions.
 */
int kapi_patch(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name, const char *subresource,
	       enum kapi_patch type, const json_t *patch, json_t **ret, struct gerr *err);

/* -- informers: LIST + WATCH on a thread, a cache, a queue of changed keys -------------------- */

struct kapi_informer_options {
	const struct kapi_resource *resource;
	const char *ns;               /* NULL: cluster-scoped, or all namespaces */
	const char *label_selector;   /* may be NULL */
	const char *field_selector;   /* "metadata.name=node-1" for one object */
	size_t max_event;             /* one watch event, bytes; larger is an error (reconnect); 0: 4 MiB */
	unsigned min_watch_timeout_s; /* each watch asks the server to end it after [t, 2t); 0: 300 */
	/* called on the informer's thread after it queued a change or its status changed (may be NULL);
	 * it must not block or call back into the informer */
	void (*notify)(void *userdata);
	void *userdata;
};

struct kapi_informer;

/* Starts the thread (the first LIST happens there). The strings are copied. */
int kapi_informer_start(struct kapi *k, const struct kapi_informer_options *o, struct kapi_informer **ret,
			struct gerr *err);
/* Stops and joins the thread (at once, even in the middle of a request), frees everything. NULL is fine. */
void kapi_informer_stop(struct kapi_informer *inf);
DEFINE_CLEANUP_FUNC(struct kapi_informer, kapi_informer_stop)

/*
 * An eventfd, readable while changes are queued or the status changed since the last
 * kapi_informer_next() that returned 0 (that call also makes it unreadable): poll it, then call
 * kapi_informer_next() until it returns 0.
 */
int kapi_informer_fd(const struct kapi_informer *inf);

/*
 * The next changed key ("ns/name", or "name" when cluster-scoped) in the order they changed, each key
 * once however often it changed: 1 with *ret_key (to free) and *ret_obj (the object now, a new
 * reference, read-only; NULL when it was deleted), or 0 when none is queued.
 */
int kapi_informer_next(struct kapi_informer *inf, char **ret_key, json_t **ret_obj);

/* The cached object of a key (a new reference, read-only), NULL when there is none. */
json_t *kapi_informer_get(struct kapi_informer *inf, const char *key);
/* Every cached object (a new array of new references). NULL only when out of memory. */
json_t *kapi_informer_list(struct kapi_informer *inf);

struct kapi_informer_status {
	bool synced;               /* the first LIST is in the cache */
	char resource_version[64]; /* where the watch resumes */
	uint64_t lists;            /* LISTs done (the first, and each relist) */
	uint64_t expired;          /* 410s seen (HTTP or watch ERROR events): each one relists */
	uint64_t watches;          /* WATCH requests made */
	uint64_t events;           /* ADDED, MODIFIED, DELETED received */
	uint64_t bookmarks;        /* BOOKMARK events received */
	uint64_t failures;         /* LIST or WATCH failures (each followed by a backoff) */
	int error;                 /* the last failure's errno; 0 again once a LIST or a watch event came */
	char message[GERR_MAX];    /* its words (the RBAC rule on a 403) */
};
void kapi_informer_status(struct kapi_informer *inf, struct kapi_informer_status *ret);

/* -- what the client sent and received (benchmarks, metrics) -------------------------------- */

struct kapi_stats {
	uint64_t requests;    /* HTTP requests sent (retries included, watches included) */
	uint64_t bytes_out;   /* request headers and bodies */
	uint64_t bytes_in;    /* response headers and bodies (watch streams included) */
	uint64_t throttled;   /* requests the token bucket delayed */
	uint64_t retries;     /* after a 401 (token re-read), Retry-After, or a reset GET */
	uint64_t token_reads; /* times the token file was read */
};
void kapi_stats(const struct kapi *k, struct kapi_stats *ret);
