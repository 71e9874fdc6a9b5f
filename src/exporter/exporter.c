/* SPDX-License-Identifier: Apache-2.0 */
/* Exporter state, per-GPU sampler threads and the XID event thread (nvml/watch.h); see exporter.h. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "exporter/exporter.h"
#include "util/log.h"
#include "util/thread.h"
#include "nvml/xid.h"

double exp_now_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* More than one compute instance in m's GPU instance (a CI split such as 1c.3g.40gb)? */
static bool gi_is_split(const struct node_gpu *g, const struct node_mig *m)
{
	size_t n = 0;
	for (size_t j = 0; j < g->n_migs; j++)
		n += g->migs[j].gi == m->gi;
	return n > 1;
}

/*
 * gpu, UUID, pci_bus_id, device, modelName [, GPU_I_PROFILE, GPU_I_ID]: dcgm-exporter's set (A2).
 * A GPU instance split into several compute instances would give them all the same labels, which
 * Prometheus rejects as duplicate samples: those get GPU_CI_ID too.
 */
static void device_labels(struct exp_device *d, const struct node_gpu *g, const struct node_mig *m)
{
	char uuid[2 * NODE_UUID_MAX], name[2 * NODE_NAME_MAX], bus[64], profile[64];
	prom_escape(g->uuid, uuid, sizeof(uuid));
	prom_escape(g->name, name, sizeof(name));
	prom_escape(g->pci_bus_id, bus, sizeof(bus));
	int n = snprintf(d->labels, sizeof(d->labels),
			 "gpu=\"%u\",UUID=\"%s\",pci_bus_id=\"%s\",device=\"nvidia%u\",modelName=\"%s\"", g->index,
			 uuid, bus, g->minor, name);
	if (m && n > 0 && (size_t)n < sizeof(d->labels)) {
		prom_escape(m->profile, profile, sizeof(profile));
		int k = snprintf(d->labels + n, sizeof(d->labels) - (size_t)n, ",GPU_I_PROFILE=\"%s\",GPU_I_ID=\"%u\"",
				 profile, m->gi);
		if (k > 0 && (size_t)(n + k) < sizeof(d->labels) && gi_is_split(g, m))
			snprintf(d->labels + n + k, sizeof(d->labels) - (size_t)(n + k), ",GPU_CI_ID=\"%u\"", m->ci);
	}
}

int exporter_init(struct exporter *e, const struct node *n, const char *hostname, struct gerr *err)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->stop_lock, NULL);
	cond_init_monotonic(&e->stop_cond);
	e->started_at = exp_now_monotonic();
	xid_policy_default(&e->xid_policy);

	size_t total = 0;
	for (size_t i = 0; i < n->n_gpus; i++)
		total += 1 + n->gpus[i].n_migs;
	e->gpus = calloc(n->n_gpus ? n->n_gpus : 1, sizeof(*e->gpus));
	e->devs = calloc(total ? total : 1, sizeof(*e->devs));
	if (!e->gpus || !e->devs) {
		exporter_free(e);
		return gerr_set(err, ENOMEM, "exporter: out of memory");
	}
	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct node_gpu *g = &n->gpus[i];
		struct exp_gpu *eg = &e->gpus[i];
		pthread_mutex_init(&eg->lock, NULL);
		e->n_gpus++;
		eg->e = e;
		eg->first_dev = e->n_devs;
		eg->n_devs = 1 + g->n_migs;
		eg->nvml_index = g->index;
		eg->st.lost = g->lost;
		snprintf(eg->uuid, sizeof(eg->uuid), "%s", g->uuid);
		eg->vals = calloc(eg->n_devs, sizeof(*eg->vals));
		if (!eg->vals) {
			exporter_free(e);
			return gerr_set(err, ENOMEM, "exporter: out of memory");
		}
		for (size_t j = 0; j < eg->n_devs; j++) {
			struct exp_device *d = &e->devs[e->n_devs++];
			const struct node_mig *m = j ? &g->migs[j - 1] : NULL;
			d->gpu = (unsigned)i;
			d->mig = m ? (int)m->index : -1;
			snprintf(d->attr_uuid, sizeof(d->attr_uuid), "%s", m ? m->uuid : g->uuid);
			device_labels(d, g, m);
		}
	}
	char host[256] = "", drv[160] = "";
	if (hostname)
		prom_escape(hostname, host, sizeof(host));
	prom_escape(n->driver_version, drv, sizeof(drv));
	snprintf(e->hostname_labels, sizeof(e->hostname_labels), "%s%s%s,DCGM_FI_DRIVER_VERSION=\"%s\"",
		 hostname ? ",Hostname=\"" : "", host, hostname ? "\"" : "", drv);
	return 0;
}

void exporter_free(struct exporter *e)
{
	for (size_t i = 0; i < e->n_gpus; i++) {
		free(e->gpus[i].vals);
		pthread_mutex_destroy(&e->gpus[i].lock);
	}
	nvml_watch_free(e->watch);
	e->watch = NULL;
	free(e->gpus);
	free(e->devs);
	e->gpus = NULL;
	e->devs = NULL;
	e->n_gpus = e->n_devs = 0;
	pthread_cond_destroy(&e->stop_cond);
	pthread_mutex_destroy(&e->stop_lock);
}

static nvmlReturn_t gpu_handle(const struct nvml *nv, const struct exp_gpu *eg, nvmlDevice_t *ret)
{
	if (nv->device_get_handle_by_uuid && eg->uuid[0])
		return nv->device_get_handle_by_uuid(eg->uuid, ret);
	return nv->device_get_handle_by_index(eg->nvml_index, ret);
}

/* Sample one device into v; count real failures (a feature the device lacks is not one). */
static void sample_device(const struct nvml *nv, nvmlDevice_t h, bool mig, struct exp_values *v, uint64_t *errors,
			  bool *lost)
{
	v->valid = 0;
	for (size_t i = 0; i < EXP_METRIC_COUNT; i++) {
		const struct exp_metric_def *m = &exp_metrics[i];
		if (!(m->scope & (mig ? EXP_SCOPE_MIG : EXP_SCOPE_GPU)))
			continue;
		double x;
		nvmlReturn_t r = m->get(nv, h, m->arg, &x);
		if (r == NVML_SUCCESS) {
			v->v[i] = x;
			v->valid |= 1ull << i;
		} else if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND) {
			(*errors)++;
			if (r == NVML_ERROR_GPU_IS_LOST)
				*lost = true;
		}
	}
}

void exporter_sample_gpu(struct exporter *e, size_t gi)
{
	struct exp_gpu *eg = &e->gpus[gi];
	const struct nvml *nv = e->nv;
	struct exp_values vals[eg->n_devs];
	uint64_t errors = 0;
	bool lost = false;
	nvmlDevice_t h;

	memset(vals, 0, sizeof(vals));
	nvmlReturn_t r = gpu_handle(nv, eg, &h);
	if (r == NVML_SUCCESS) {
		sample_device(nv, h, false, &vals[0], &errors, &lost);
		exp_health_update(eg, nv, h);
		for (size_t j = 1; j < eg->n_devs; j++) {
			const struct exp_device *d = &e->devs[eg->first_dev + j];
			nvmlDevice_t mh;
			nvmlReturn_t mr = nv->device_get_mig_device_handle_by_index
					      ? nv->device_get_mig_device_handle_by_index(h, (unsigned)d->mig, &mh)
					      : NVML_ERROR_NOT_SUPPORTED;
			char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
			if (mr == NVML_SUCCESS)
				mr = nv->device_get_uuid(mh, uuid, sizeof(uuid));
			if (mr == NVML_SUCCESS && !streq(uuid, d->attr_uuid)) {
				/* MIG re-partitioned: this index is another instance now; never mislabel it */
				if (!atomic_exchange(&e->layout_changed, true))
					log_warn("MIG layout changed",
						 "uuid=%s index=%u mig_index=%d expected=%s found=%s", eg->uuid,
						 eg->nvml_index, d->mig, d->attr_uuid, uuid);
				continue;
			}
			if (mr == NVML_SUCCESS)
				sample_device(nv, mh, true, &vals[j], &errors, &lost);
			else
				errors++;
		}
	} else {
		errors++;
		lost = r == NVML_ERROR_GPU_IS_LOST;
	}

	pthread_mutex_lock(&eg->lock);
	bool was_lost = eg->st.lost;
	/* a GPU that cannot even be opened keeps its last values, marked by their age */
	if (r == NVML_SUCCESS) {
		memcpy(eg->vals, vals, sizeof(vals));
		eg->st.sampled_at = exp_now_monotonic();
	}
	eg->st.nvml_errors += errors;
	eg->st.lost |= lost; /* sticky like the plugin's health: a lost GPU needs a reset */
	pthread_mutex_unlock(&eg->lock);
	if (lost && !was_lost)
		log_warn("GPU is lost, marking unhealthy device", "uuid=%s index=%u", eg->uuid, eg->nvml_index);
}

void exporter_record_xid(struct exporter *e, size_t gi, unsigned xid)
{
	struct exp_gpu *eg = &e->gpus[gi];
	/* the device plugin's policy, DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS included */
	bool critical = xid_policy_is_critical(&e->xid_policy, xid);
	pthread_mutex_lock(&eg->lock);
	struct exp_gpu_state *st = &eg->st;
	st->last_xid = xid;
	size_t k;
	for (k = 0; k < st->n_xids && st->xids[k].code != xid; k++)
		;
	if (k == st->n_xids && k < EXP_XID_CODES) {
		st->xids[k].code = xid;
		st->xids[k].count = 0;
		st->n_xids++;
	}
	if (k < st->n_xids)
		st->xids[k].count++;
	st->xid_unhealthy |= critical;
	pthread_mutex_unlock(&eg->lock);
	log_warn(critical ? "XID error, marking unhealthy device" : "XID error (application), device stays healthy",
		 "uuid=%s index=%u xid=%u", eg->uuid, eg->nvml_index, xid);
}

/* Sleep until the next interval or until stop; returns false when stopping. */
static bool wait_interval(struct exporter *e, int ms)
{
	struct timespec ts = deadline_after_ms(CLOCK_MONOTONIC, ms);
	pthread_mutex_lock(&e->stop_lock);
	int r = 0;
	while (!atomic_load(&e->stop) && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&e->stop_cond, &e->stop_lock, &ts);
	pthread_mutex_unlock(&e->stop_lock);
	return !atomic_load(&e->stop);
}

static void *sampler_thread(void *arg)
{
	struct exp_gpu *eg = arg;
	struct exporter *e = eg->e;
	do
		exporter_sample_gpu(e, (size_t)(eg - e->gpus));
	while (wait_interval(e, e->interval_ms));
	return NULL;
}

/* On the event thread: XIDs and double-bit ECC, as the plugin's health checker (device-plugin.md §4). */
static void on_nvml_event(const struct nvml_watch_event *ev, void *userdata)
{
	struct exporter *e = userdata;
	struct exp_gpu *eg = &e->gpus[ev->gpu];

	switch (ev->kind) {
	case NVML_WATCH_WAIT_ERROR:
		/* the watcher waits again: XIDs are counted again as soon as NVML answers */
		if (ev->first)
			log_warn("NVML event wait failed; waiting for events again", "error=\"%s\"", ev->message);
		break;
	case NVML_WATCH_XID:
		exporter_record_xid(e, ev->gpu, ev->xid);
		break;
	case NVML_WATCH_ECC_DBE:
		pthread_mutex_lock(&eg->lock);
		eg->st.dbe = true;
		pthread_mutex_unlock(&eg->lock);
		log_warn("double-bit ECC error, marking unhealthy device", "uuid=%s index=%u", eg->uuid,
			 eg->nvml_index);
		break;
	default:
		break;
	}
}

/* Registration runs here, not in exporter_start: an NVML call that hangs must not hold up the start. */
static void *event_thread(void *arg)
{
	struct exporter *e = arg;
	size_t registered = 0;

	for (size_t i = 0; i < e->n_gpus && !atomic_load(&e->stop); i++) {
		struct gerr err = {0};

		if (nvml_watch_register(e->watch, i, &err) == 0)
			registered++;
		else
			log_warn("cannot watch NVML events; XIDs of this GPU are not counted",
				 "uuid=%s index=%u error=\"%s\"", e->gpus[i].uuid, e->gpus[i].nvml_index, err.msg);
	}
	log_info("Watching NVML events", "gpus=%zu registered=%zu", e->n_gpus, registered);
	nvml_watch_run(e->watch, 1000, on_nvml_event, e);
	return NULL;
}

/* The NVML event watcher of every GPU, and its thread; without one the XID metrics stay 0. */
static void start_events(struct exporter *e)
{
	struct gerr err = {0};

	if (e->n_gpus == 0)
		return;
	if (nvml_watch_new(e->nv, NVML_WATCH_XID_TYPES, e->n_gpus, &e->watch, &err) < 0) {
		log_warn("cannot watch NVML events; XIDs are not counted", "error=\"%s\"", err.msg);
		return;
	}
	for (size_t i = 0; i < e->n_gpus; i++)
		nvml_watch_set_gpu(e->watch, i, e->gpus[i].nvml_index, e->gpus[i].uuid);
	if (pthread_create(&e->event_thread, NULL, event_thread, e) == 0)
		e->event_running = true;
}

int exporter_start(struct exporter *e, struct nvml *nv, int interval_ms, struct gerr *err)
{
	e->nv = nv;
	e->interval_ms = interval_ms > 0 ? interval_ms : 5000;
	for (size_t i = 0; i < e->n_gpus; i++) {
		struct exp_gpu *eg = &e->gpus[i];
		int r = pthread_create(&eg->thread, NULL, sampler_thread, eg);
		if (r != 0) {
			exporter_stop(e, 1000);
			return gerr_set(err, r, "exporter: cannot start the sampler of GPU %s: %s", eg->uuid,
					strerror(r));
		}
		eg->thread_running = true;
	}
	start_events(e);
	return 0;
}

static int join_or_leave(pthread_t t, int timeout_ms, const char *what)
{
	struct timespec ts = deadline_after_ms(CLOCK_REALTIME, timeout_ms);
	if (pthread_timedjoin_np(t, NULL, &ts) != 0) {
		/* stuck inside NVML: it cannot be interrupted; the process exits without it */
		log_warn("a thread is stuck in an NVML call; leaving it", "thread=%s", what);
		pthread_detach(t);
		return 1;
	}
	return 0;
}

int exporter_stop(struct exporter *e, int timeout_ms)
{
	int left = 0;
	pthread_mutex_lock(&e->stop_lock);
	atomic_store(&e->stop, true);
	pthread_cond_broadcast(&e->stop_cond);
	pthread_mutex_unlock(&e->stop_lock);
	if (e->watch)
		nvml_watch_interrupt(e->watch);
	for (size_t i = 0; i < e->n_gpus; i++)
		if (e->gpus[i].thread_running) {
			left += join_or_leave(e->gpus[i].thread, timeout_ms, e->gpus[i].uuid);
			e->gpus[i].thread_running = false;
		}
	if (e->event_running) {
		left += join_or_leave(e->event_thread, timeout_ms, "events");
		e->event_running = false;
	}
	return left;
}
