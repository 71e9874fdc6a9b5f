/* SPDX-License-Identifier: Apache-2.0 */
/* GPU health on the Node object: the GPUHealthy condition and events (node_health.h). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kapi/bucket.h"
#include "kapi/kapi.h"
#include "plugin/node_health.h"
#include "util/log.h"
#include "util/macro.h"

#define CONDITION     "GPUHealthy"
#define COMPONENT     "gpulet-device-plugin" /* field manager and the events' source */
#define TIMEOUT_S     10                     /* one request: stop waits for at most that */
#define BACKOFF_MS    1000                   /* after a failure, doubling */
#define BACKOFF_MAXMS 60000
#define EVENT_NS      "default" /* a Node's events (see send_event()) */
#define MAX_FAULTS    256       /* GPUs and MIG instances of one node, with room */
#define MAX_QUEUED    64        /* events waiting for the API server; older ones give way */
/* events: a burst of 10, then one a minute (client-go's recorder spam filter: 25, one per 5 minutes) */
#define EVENT_BURST 10
#define EVENT_QPS   (1.0 / 60)

struct fault {
	char uuid[NODE_UUID_MAX];
	int index, gi, ci;
	enum health_kind kind;
	unsigned xid;
	char reason[256];
};

struct event {
	bool warning;
	char reason[32];
	char message[512];
	time_t at;
};

struct node_health_reporter {
	char *node, *kubeconfig;
	struct kapi_env env;
	pthread_t thread;
	bool thread_up;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	bool stop;
	struct fault faults[MAX_FAULTS];
	size_t n_faults;
	size_t n_gpus;
	bool gpus_known;  /* node_health_gpus() was called: there is something to say */
	uint64_t version; /* the state changed */
	struct event events[MAX_QUEUED];
	size_t n_events;
	unsigned dropped; /* events the rate limit or the queue dropped since the last log line */
	struct kapi_bucket bucket;
	/* the thread's own */
	struct kapi *k;
	bool disabled; /* the client cannot be made: said once */
	char uid[64];  /* the Node's, for the events (empty until it was read) */
	bool node_read;
	bool have_status, status; /* the condition's status on the Node (read once, then ours) */
	char transition[32];      /* its lastTransitionTime */
	uint64_t applied;         /* the version on the Node */
	char last_error[GERR_MAX];
};

static void rfc3339(time_t t, char *buf, size_t size)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* -- the state: faults, the verdict, the events -------------------------------------------- */

/* Each fault's class on the Node: the worst one names the condition's reason (health.h's kinds). */
static const struct {
	enum health_kind kind;
	int rank;
	const char *reason; /* NULL: "XID<n>" */
	const char *words;
} classes[] = {
    {HEALTH_GPU_LOST, 4, "GPULost", "lost (fallen off the bus, or NVML answers GPU_IS_LOST)"},
    {HEALTH_ECC_DBE, 3, "ECCUncorrectable", "uncorrectable (double-bit) ECC error"},
    {HEALTH_XID, 2, NULL, NULL},
    {HEALTH_NVML_ERROR, 1, "NVMLError", "NVML cannot watch it"},
};

static size_t class_of(enum health_kind k)
{
	for (size_t i = 0; i < ELEMENTSOF(classes); i++)
		if (classes[i].kind == k)
			return i;
	return ELEMENTSOF(classes) - 1;
}

static void fault_reason(const struct fault *f, char *buf, size_t size)
{
	const char *r = classes[class_of(f->kind)].reason;

	if (r)
		snprintf(buf, size, "%s", r);
	else
		snprintf(buf, size, "XID%u", f->xid);
}

/* "GPU 3 GPU-..." or "GPU 3 GPU-... MIG 1/0" */
static void fault_where(const struct fault *f, char *buf, size_t size)
{
	int n = f->index >= 0 ? snprintf(buf, size, "GPU %d %s", f->index, f->uuid)
			      : snprintf(buf, size, "GPU %s", f->uuid);

	if (f->gi >= 0 && n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, f->ci >= 0 ? " MIG %d/%d" : " MIG %d", f->gi, f->ci);
}

static void compose(const struct node_health_reporter *nh, struct node_health_verdict *v)
{
	const struct fault *worst = NULL;
	size_t gpus = 0, len;

	memset(v, 0, sizeof(*v));
	v->healthy = nh->n_faults == 0;
	if (v->healthy) {
		snprintf(v->reason, sizeof(v->reason), "GPUsHealthy");
		snprintf(v->message, sizeof(v->message), "all %zu GPUs healthy (gpulet device plugin)", nh->n_gpus);
		return;
	}
	for (size_t i = 0; i < nh->n_faults; i++) {
		bool first = true;

		for (size_t j = 0; j < i; j++)
			first &= !streq(nh->faults[j].uuid, nh->faults[i].uuid);
		gpus += first;
		if (!worst || classes[class_of(nh->faults[i].kind)].rank > classes[class_of(worst->kind)].rank)
			worst = &nh->faults[i];
	}
	fault_reason(worst, v->reason, sizeof(v->reason));
	len =
	    (size_t)snprintf(v->message, sizeof(v->message), "%zu of %zu GPUs unhealthy:", gpus, MAX(gpus, nh->n_gpus));
	for (size_t i = 0; i < nh->n_faults && len < sizeof(v->message); i++) {
		char where[160];

		fault_where(&nh->faults[i], where, sizeof(where));
		len += (size_t)snprintf(v->message + len, sizeof(v->message) - len, "%s %s: %s", i ? ";" : "", where,
					nh->faults[i].reason);
	}
}

void node_health_verdict(struct node_health_reporter *nh, struct node_health_verdict *ret)
{
	pthread_mutex_lock(&nh->lock);
	compose(nh, ret);
	pthread_mutex_unlock(&nh->lock);
}

/* Queue an event (under lock), within the rate limit; the oldest gives way when the queue is full. */
static void queue_event(struct node_health_reporter *nh, bool warning, const char *reason, const char *fmt, ...)
    _printf_(4, 5);
static void queue_event(struct node_health_reporter *nh, bool warning, const char *reason, const char *fmt, ...)
{
	struct timespec ts;
	struct event *e;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (kapi_bucket_take(&nh->bucket, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) > 0) {
		nh->bucket.tokens += 1; /* not sent: its slot is given back */
		nh->dropped++;
		return;
	}
	if (nh->n_events == MAX_QUEUED) {
		memmove(nh->events, nh->events + 1, sizeof(nh->events[0]) * (MAX_QUEUED - 1));
		nh->n_events--;
		nh->dropped++;
	}
	e = &nh->events[nh->n_events++];
	*e = (struct event){.warning = warning, .at = time(NULL)};
	snprintf(e->reason, sizeof(e->reason), "%s", reason);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

static bool same_place(const struct fault *f, const struct node_health_fault *n)
{
	return streq(f->uuid, n->uuid) && f->gi == n->gi && f->ci == n->ci;
}

/* A recovery of the whole GPU (gi -1) clears its MIG instances' faults too; one of an instance, that instance. */
static bool recovered_by(const struct fault *f, const struct node_health_fault *n)
{
	return streq(f->uuid, n->uuid) && (n->gi < 0 || (f->gi == n->gi && (n->ci < 0 || f->ci == n->ci)));
}

void node_health_note(struct node_health_reporter *nh, const struct node_health_fault *n)
{
	bool changed = false;
	char where[160];

	if (!nh || !n->uuid || !n->uuid[0])
		return;
	pthread_mutex_lock(&nh->lock);
	if (n->healthy) {
		for (size_t i = 0; i < nh->n_faults;) {
			if (!recovered_by(&nh->faults[i], n)) {
				i++;
				continue;
			}
			fault_where(&nh->faults[i], where, sizeof(where));
			queue_event(nh, false, "GPUHealthy", "%s is healthy again (was: %s)", where,
				    nh->faults[i].reason);
			nh->faults[i] = nh->faults[--nh->n_faults];
			changed = true;
		}
	} else {
		struct fault *f = NULL;

		for (size_t i = 0; i < nh->n_faults && !f; i++)
			if (same_place(&nh->faults[i], n))
				f = &nh->faults[i];
		if (!f && nh->n_faults < MAX_FAULTS)
			f = &nh->faults[nh->n_faults++];
		if (f && (f->kind != n->kind || f->xid != n->xid || !streq(f->uuid, n->uuid))) {
			*f =
			    (struct fault){.index = n->index, .gi = n->gi, .ci = n->ci, .kind = n->kind, .xid = n->xid};
			snprintf(f->uuid, sizeof(f->uuid), "%s", n->uuid);
			snprintf(f->reason, sizeof(f->reason), "%s", n->reason ? n->reason : "");
			fault_where(f, where, sizeof(where));
			queue_event(nh, true, "GPUUnhealthy", "%s is unhealthy: %s", where, f->reason);
			changed = true;
		}
	}
	if (changed) {
		nh->version++;
		pthread_cond_signal(&nh->cond);
	}
	pthread_mutex_unlock(&nh->lock);
}

/* Is the MIG instance of f still in n? (A whole-GPU fault stays even when the GPU is gone: a GPU that
 * fell off the bus must keep the Node unhealthy.) */
static bool still_there(const struct fault *f, const struct node *n)
{
	if (f->gi < 0)
		return true;
	for (size_t i = 0; i < n->n_gpus; i++) {
		if (!streq(n->gpus[i].uuid, f->uuid))
			continue;
		for (size_t m = 0; m < n->gpus[i].n_migs; m++)
			if ((int)n->gpus[i].migs[m].gi == f->gi && (f->ci < 0 || (int)n->gpus[i].migs[m].ci == f->ci))
				return true;
	}
	return false;
}

void node_health_gpus(struct node_health_reporter *nh, const struct node *n)
{
	if (!nh)
		return;
	pthread_mutex_lock(&nh->lock);
	for (size_t i = 0; i < nh->n_faults;)
		if (still_there(&nh->faults[i], n))
			i++;
		else
			nh->faults[i] = nh->faults[--nh->n_faults];
	if (!nh->gpus_known || nh->n_gpus != n->n_gpus)
		nh->version++;
	nh->n_gpus = n->n_gpus;
	nh->gpus_known = true;
	pthread_cond_signal(&nh->cond);
	pthread_mutex_unlock(&nh->lock);
}

/* -- the thread: the client, the Node, the condition, the events ----------------------------- */

/* Refused for good (RBAC, an object the API finds invalid): an event is dropped, not retried forever. */
static bool refused(int r)
{
	return r == -EACCES || r == -EINVAL;
}

/* One log line per new failure, not one per retry. */
static void failed(struct node_health_reporter *nh, const char *what, int r, const struct gerr *err)
{
	if (streq(nh->last_error, err->msg))
		return;
	snprintf(nh->last_error, sizeof(nh->last_error), "%s", err->msg);
	log_warn(refused(r) ? "Cannot report GPU health on the Node; not sent"
			    : "Cannot report GPU health on the Node; retrying",
		 "node=%s what=\"%s\" error=\"%s\"", nh->node, what, err->msg);
}

static int open_client(struct node_health_reporter *nh)
{
	const struct kapi_options ko = {
	    .kubeconfig = nh->kubeconfig, .env = &nh->env, .timeout_s = TIMEOUT_S, .field_manager = COMPONENT};
	struct gerr err = {0};
	int r;

	if (nh->k)
		return 0;
	r = kapi_open(&ko, &nh->k, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		/* no API server to talk to, a kubeconfig we refuse, no libcurl: asking again will not help */
		log_error("--node-health: no client for the API server; GPU health stays on this node",
			  "node=%s error=\"%s\"", nh->node, err.msg);
		nh->disabled = true;
		return r;
	}
	if (kapi_warning(nh->k))
		log_warn("Kubernetes client", "warning=\"%s\"", kapi_warning(nh->k));
	return 0;
}

/* The Node's uid (the events name it) and the condition as it is (its transition time is kept while
 * the status stays): once. */
static int read_node(struct node_health_reporter *nh)
{
	_cleanup_(json_decrefp) json_t *node = NULL;
	struct gerr err = {0};
	const json_t *c;
	size_t i;
	int r;

	if (nh->node_read)
		return 0;
	r = kapi_get(nh->k, &kapi_nodes, NULL, nh->node, &node, &err);
	if (r < 0) {
		failed(nh, "reading the Node", r, &err);
		return r;
	}
	snprintf(nh->uid, sizeof(nh->uid), "%s",
		 json_string_value(json_object_get(json_object_get(node, "metadata"), "uid")) ?: "");
	json_array_foreach (json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *status = json_string_value(json_object_get(c, "status"));
		const char *tt = json_string_value(json_object_get(c, "lastTransitionTime"));

		if (type && streq(type, CONDITION) && status && tt) {
			nh->have_status = true;
			nh->status = streq(status, "True");
			snprintf(nh->transition, sizeof(nh->transition), "%s", tt);
		}
	}
	nh->node_read = true;
	return 0;
}

/* Server-side apply of our one condition on nodes/NAME/status: kubelet's conditions are kubelet's. */
static int apply_condition(struct node_health_reporter *nh, const struct node_health_verdict *v)
{
	_cleanup_(json_decrefp) json_t *patch = NULL;
	struct gerr err = {0};
	char now[32];
	int r;

	rfc3339(time(NULL), now, sizeof(now));
	if (!nh->have_status || nh->status != v->healthy)
		snprintf(nh->transition, sizeof(nh->transition), "%s", now);
	patch = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}}", "apiVersion", "v1", "kind",
			  "Node", "metadata", "name", nh->node, "status", "conditions", "type", CONDITION, "status",
			  v->healthy ? "True" : "False", "reason", v->reason, "message", v->message,
			  "lastHeartbeatTime", now, "lastTransitionTime", nh->transition);
	if (!patch)
		return -ENOMEM;
	r = kapi_patch(nh->k, &kapi_nodes, NULL, nh->node, "status", KAPI_APPLY_FORCE, patch, NULL, &err);
	if (r < 0) {
		failed(nh, "applying the " CONDITION " condition", r, &err);
		return r;
	}
	if (!nh->have_status || nh->status != v->healthy)
		log_emit(v->healthy ? LOG_LVL_INFO : LOG_LVL_WARN, "Node condition set",
			 "node=%s condition=" CONDITION " status=%s reason=%s message=\"%s\"", nh->node,
			 v->healthy ? "True" : "False", v->reason, v->message);
	nh->have_status = true;
	nh->status = v->healthy;
	return 0;
}

/*
 * An Event on the Node, as client-go's recorder makes one (NAME.<hex>, namespace default: the API takes
 * the event of a cluster-scoped object only there, or in kube-system with an eventTime; docs/reference/
 * device-plugin.md §4.2).
 */
static int send_event(struct node_health_reporter *nh, const struct event *e)
{
	_cleanup_(json_decrefp) json_t *ev = NULL;
	struct gerr err = {0};
	struct timespec ts;
	char name[300], at[32];
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "%s.%llx", nh->node,
		 (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	rfc3339(e->at, at, sizeof(at));
	ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, "
		       "s:s, s:s}",
		       "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", EVENT_NS,
		       "involvedObject", "apiVersion", "v1", "kind", "Node", "name", nh->node, "uid", nh->uid, "reason",
		       e->reason, "message", e->message, "type", e->warning ? "Warning" : "Normal", "source",
		       "component", COMPONENT, "host", nh->node, "firstTimestamp", at, "lastTimestamp", at, "count", 1,
		       "reportingComponent", COMPONENT, "reportingInstance", nh->node);
	if (!ev)
		return -ENOMEM;
	r = kapi_create(nh->k, &kapi_events, EVENT_NS, ev, NULL, &err);
	if (r < 0)
		failed(nh, "creating an Event", r, &err);
	return r;
}

/* One round with the lock released: the condition (when it changed) and the queued events. */
static int report(struct node_health_reporter *nh, uint64_t version, const struct node_health_verdict *v,
		  struct event *ev, size_t *n_ev)
{
	int r = open_client(nh);

	if (r >= 0)
		r = read_node(nh);
	if (r >= 0 && version != nh->applied && (r = apply_condition(nh, v)) >= 0)
		nh->applied = version;
	while (r >= 0 && *n_ev) {
		r = send_event(nh, &ev[0]);
		if (r >= 0 || refused(r)) {
			memmove(ev, ev + 1, sizeof(ev[0]) * --*n_ev);
			r = refused(r) ? 0 : r;
		}
	}
	if (r >= 0)
		nh->last_error[0] = '\0';
	return r;
}

static void *run(void *arg)
{
	struct node_health_reporter *nh = arg;
	struct event ev[MAX_QUEUED];
	size_t n_ev = 0;
	long long backoff = 0;
	struct timespec due = {0};

	pthread_mutex_lock(&nh->lock);
	for (;;) {
		struct node_health_verdict v;
		uint64_t version;
		int r;

		while (!nh->stop &&
		       (nh->disabled || !nh->gpus_known || (nh->version == nh->applied && !nh->n_events && !n_ev))) {
			pthread_cond_wait(&nh->cond, &nh->lock);
		}
		while (!nh->stop && backoff && pthread_cond_timedwait(&nh->cond, &nh->lock, &due) != ETIMEDOUT)
			;
		if (nh->stop)
			break;
		if (nh->dropped) {
			log_warn("Node events not sent: over the rate limit", "node=%s dropped=%u", nh->node,
				 nh->dropped);
			nh->dropped = 0;
		}
		/* take the new events after the ones still unsent, within the bound */
		while (nh->n_events) {
			if (n_ev == MAX_QUEUED) {
				memmove(ev, ev + 1, sizeof(ev[0]) * (MAX_QUEUED - 1));
				n_ev--;
			}
			ev[n_ev++] = nh->events[0];
			memmove(nh->events, nh->events + 1, sizeof(nh->events[0]) * --nh->n_events);
		}
		compose(nh, &v);
		version = nh->version;
		pthread_mutex_unlock(&nh->lock);
		r = report(nh, version, &v, ev, &n_ev);
		pthread_mutex_lock(&nh->lock);
		if (r >= 0 || nh->disabled) {
			backoff = 0;
			continue;
		}
		backoff = backoff ? MIN(backoff * 2, BACKOFF_MAXMS) : BACKOFF_MS;
		clock_gettime(CLOCK_MONOTONIC, &due);
		due.tv_sec += backoff / 1000;
		due.tv_nsec += (backoff % 1000) * 1000000;
		if (due.tv_nsec >= 1000000000) {
			due.tv_sec++;
			due.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_unlock(&nh->lock);
	return NULL;
}

int node_health_start(const struct node_health_options *o, struct node_health_reporter **ret, struct gerr *err)
{
	_cleanup_(node_health_stopp) struct node_health_reporter *nh = calloc(1, sizeof(*nh));
	pthread_condattr_t ca;
	struct timespec ts;
	int r;

	if (!nh)
		return gerr_set(err, ENOMEM, "out of memory");
	pthread_mutex_init(&nh->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&nh->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!(nh->node = strdup(o->node_name)) ||
	    (o->kubeconfig && o->kubeconfig[0] && !(nh->kubeconfig = strdup(o->kubeconfig))) ||
	    kapi_env_copy(&nh->env, o->env) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	kapi_bucket_init(&nh->bucket, EVENT_QPS, EVENT_BURST, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	r = pthread_create(&nh->thread, NULL, run, nh);
	if (r != 0)
		return gerr_set(err, r, "cannot start the node health thread: %s", strerror(r));
	nh->thread_up = true;
	*ret = TAKE_PTR(nh);
	return 0;
}

void node_health_stop(struct node_health_reporter *nh)
{
	if (!nh)
		return;
	if (nh->thread_up) {
		pthread_mutex_lock(&nh->lock);
		nh->stop = true;
		pthread_cond_signal(&nh->cond);
		pthread_mutex_unlock(&nh->lock);
		pthread_join(nh->thread, NULL);
	}
	kapi_close(nh->k);
	pthread_cond_destroy(&nh->cond);
	pthread_mutex_destroy(&nh->lock);
	free(nh->node);
	free(nh->kubeconfig);
	kapi_env_clear(&nh->env);
	free(nh);
}
