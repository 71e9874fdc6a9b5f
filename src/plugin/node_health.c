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
#include "kapi/config.h"
#include "kapi/kapi.h"
#include "plugin/node_health_int.h"
#include "util/log.h"
#include "util/macro.h"

#define BACKOFF_MS    1000 /* after a failure, doubling */
#define BACKOFF_MAXMS 60000
#define MAX_FAULTS    256 /* GPUs and MIG instances of one node, with room */
#define MAX_QUEUED    NODE_HEALTH_MAX_EVENTS
#define SELF          "/proc/self/exe" /* the sender: this very gpulet */
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
	struct node_health_event events[MAX_QUEUED];
	size_t n_events;
	unsigned dropped; /* events the rate limit or the queue dropped since the last log line */
	struct kapi_bucket bucket;
	/* the thread's own */
	bool configured;              /* the configuration was checked once */
	bool disabled;                /* the client cannot be made: said once */
	bool warned;                  /* the client's warning was said */
	struct node_health_known kn;  /* the Node as the sender found it */
	uint64_t applied;             /* the version on the Node */
	struct node_health_request q; /* the next round's */
	char last_error[GERR_MAX];
};

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
	struct node_health_event *e;
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
	*e = (struct node_health_event){.warning = warning, .at = time(NULL)};
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

/* One log line per new failure, not one per retry. */
static void failed(struct node_health_reporter *nh, const char *what, int r, const char *msg)
{
	if (streq(nh->last_error, msg))
		return;
	snprintf(nh->last_error, sizeof(nh->last_error), "%s", msg);
	log_warn(node_health_refused(r) ? "Cannot report GPU health on the Node; not sent"
					: "Cannot report GPU health on the Node; retrying",
		 "node=%s what=\"%s\" error=\"%s\"", nh->node, what, msg);
}

static void disable(struct node_health_reporter *nh, const char *msg)
{
	log_error("--node-health: no client for the API server; GPU health stays on this node", "node=%s error=\"%s\"",
		  nh->node, msg);
	nh->disabled = true;
}

/* Is there an API server to talk to at all? Checked here, once, without a client (nothing is loaded). */
static int check_config(struct node_health_reporter *nh)
{
	struct kapi_config *cfg = NULL;
	struct gerr err = {0};
	int r;

	if (nh->configured)
		return 0;
	r = kapi_config_load(nh->kubeconfig, NULL, NULL, &nh->env, &cfg, &err);
	kapi_config_free(cfg);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		disable(nh, err.msg);
		return r;
	}
	nh->configured = true;
	return 0;
}

#define COPY_FIELD(dst, src) snprintf((dst), sizeof(dst), "%s", (src) ?: "")

/* The strings of a request that cannot change, once: a name or path too long for it is refused. */
static int fill_request(struct node_health_reporter *nh)
{
	struct node_health_request *q = &nh->q;

	if (q->magic)
		return 0;
	if (strlen(nh->node) >= sizeof(q->node) ||
	    (nh->kubeconfig && strlen(nh->kubeconfig) >= sizeof(q->kubeconfig)) ||
	    (nh->env.service_host && strlen(nh->env.service_host) >= sizeof(q->service_host)) ||
	    (nh->env.service_port && strlen(nh->env.service_port) >= sizeof(q->service_port)) ||
	    (nh->env.pod_namespace && strlen(nh->env.pod_namespace) >= sizeof(q->pod_namespace))) {
		disable(nh, "the node name, kubeconfig path or API server address is too long");
		return -ENAMETOOLONG;
	}
	COPY_FIELD(q->node, nh->node);
	COPY_FIELD(q->kubeconfig, nh->kubeconfig);
	COPY_FIELD(q->service_host, nh->env.service_host);
	COPY_FIELD(q->service_port, nh->env.service_port);
	COPY_FIELD(q->pod_namespace, nh->env.pod_namespace);
	q->magic = NODE_HEALTH_MAGIC;
	q->size = sizeof(*q);
	return 0;
}

/* One round with the lock released, in a child (node_health_int.h): the condition (when it changed)
 * and the queued events; what the API server took is taken off. */
static int report(struct node_health_reporter *nh, uint64_t version, const struct node_health_verdict *v,
		  struct node_health_event *ev, size_t *n_ev)
{
	struct node_health_request *q = &nh->q;
	struct node_health_reply p = {0};
	struct gerr err = {0};
	int r = check_config(nh);

	if (r >= 0)
		r = fill_request(nh);
	if (r < 0)
		return r;
	q->known = nh->kn;
	q->apply = version != nh->applied;
	q->verdict = *v;
	q->n_events = *n_ev;
	memcpy(q->events, ev, sizeof(ev[0]) * *n_ev);
	r = node_health_round(SELF, q, &p, NODE_HEALTH_TIMEOUT_S * (int)(2 + *n_ev) + 5, &err);
	if (r < 0) {
		failed(nh, "running the sender", r, err.msg);
		return r;
	}
	if (p.disabled) {
		disable(nh, p.error);
		return p.r;
	}
	if (p.warning[0] && !nh->warned) {
		log_warn("Kubernetes client", "warning=\"%s\"", p.warning);
		nh->warned = true;
	}
	if (p.failed_r)
		failed(nh, p.what, p.failed_r, p.error);
	nh->kn = p.known;
	nh->kn.uid[sizeof(nh->kn.uid) - 1] = nh->kn.transition[sizeof(nh->kn.transition) - 1] = '\0';
	if (p.applied) {
		nh->applied = version;
		if (p.transition)
			log_emit(v->healthy ? LOG_LVL_INFO : LOG_LVL_WARN, "Node condition set",
				 "node=%s condition=" NODE_HEALTH_CONDITION " status=%s reason=%s message=\"%s\"",
				 nh->node, v->healthy ? "True" : "False", v->reason, v->message);
	}
	p.n_done = MIN(p.n_done, *n_ev);
	memmove(ev, ev + p.n_done, sizeof(ev[0]) * (*n_ev - p.n_done));
	*n_ev -= p.n_done;
	if (p.r >= 0)
		nh->last_error[0] = '\0';
	return p.r;
}

static void *run(void *arg)
{
	struct node_health_reporter *nh = arg;
	struct node_health_event ev[MAX_QUEUED];
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
	pthread_cond_destroy(&nh->cond);
	pthread_mutex_destroy(&nh->lock);
	free(nh->node);
	free(nh->kubeconfig);
	kapi_env_clear(&nh->env);
	free(nh);
}
