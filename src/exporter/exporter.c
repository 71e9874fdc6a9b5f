/* SPDX-License-Identifier: Apache-2.0 */
/* Exporter state, per-GPU sampler threads and the XID event thread (nvml/watch.h); see exporter.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "exporter/exporter.h"
#include "exporter/procs.h"
#include "dra/dra.h"
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
	char uuid[2 * NODE_UUID_MAX + 16] = "", name[2 * NODE_NAME_MAX], bus[64], bus_label[96] = "", profile[64];
	if (g->uuid[0]) {
		strcpy(uuid, ",UUID=\"");
		prom_escape(g->uuid, uuid + strlen(uuid), sizeof(uuid) - strlen(uuid) - 1);
		strcat(uuid, "\"");
	}
	prom_escape(g->name, name, sizeof(name));
	prom_escape(g->pci_bus_id, bus, sizeof(bus));
	if (bus[0])
		snprintf(bus_label, sizeof(bus_label), ",pci_bus_id=\"%s\"", bus);
	/*
	 * device is nvidia<gpu index> as dcgm-exporter writes it (not the /dev minor); a GPU lost
	 * before start has no UUID or bus id: those labels are left out rather than empty
	 */
	int n = snprintf(d->labels, sizeof(d->labels), "gpu=\"%u\"%s%s,device=\"nvidia%u\",modelName=\"%s\"", g->index,
			 uuid, bus_label, g->index, name);
	if (m && n > 0 && (size_t)n < sizeof(d->labels)) {
		prom_escape(m->profile, profile, sizeof(profile));
		int k = snprintf(d->labels + n, sizeof(d->labels) - (size_t)n, ",GPU_I_PROFILE=\"%s\",GPU_I_ID=\"%u\"",
				 profile, m->gi);
		if (k > 0 && (size_t)n + (size_t)k < sizeof(d->labels) && gi_is_split(g, m))
			snprintf(d->labels + n + k, sizeof(d->labels) - (size_t)n - (size_t)k, ",GPU_CI_ID=\"%u\"",
				 m->ci);
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
		eg->arch = g->arch;
		eg->st.lost = g->lost;
		snprintf(eg->uuid, sizeof(eg->uuid), "%s", g->uuid);
		eg->vals = calloc(eg->n_devs, sizeof(*eg->vals));
		eg->next = calloc(eg->n_devs, sizeof(*eg->next));
		if (!eg->vals || !eg->next) {
			exporter_free(e);
			return gerr_set(err, ENOMEM, "exporter: out of memory");
		}
		for (size_t j = 0; j < eg->n_devs; j++) {
			struct exp_device *d = &e->devs[e->n_devs++];
			const struct node_mig *m = j ? &g->migs[j - 1] : NULL;
			d->gpu = (unsigned)i;
			d->mig = m ? (int)m->index : -1;
			d->gi = m ? m->gi : 0;
			snprintf(d->attr_uuid, sizeof(d->attr_uuid), "%s", m ? m->uuid : g->uuid);
			if (m)
				snprintf(d->attr_name, sizeof(d->attr_name), "nvidia%u/gi%u", g->index, m->gi);
			else
				snprintf(d->attr_name, sizeof(d->attr_name), "nvidia%u", g->index);
			device_labels(d, g, m);
			if (!dra_device_name(g, m, d->attr_dra_name, sizeof(d->attr_dra_name)))
				d->attr_dra_name[0] = '\0';
		}
	}
	char host[256] = "", drv[160] = "";
	if (hostname)
		prom_escape(hostname, host, sizeof(host));
	prom_escape(n->driver_version, drv, sizeof(drv));
	snprintf(e->host_labels, sizeof(e->host_labels), "%s%s%s", hostname ? ",Hostname=\"" : "", host,
		 hostname ? "\"" : "");
	snprintf(e->driver_labels, sizeof(e->driver_labels), ",DCGM_FI_DRIVER_VERSION=\"%s\"", drv);
	exporter_configure(e, NULL);
	return 0;
}

/*
 * dcgm-exporter's -d: f (default) serves a GPU's MIG instances when it has some, else the GPU;
 * g only GPUs; i only instances. mig_parent (gpulet's option) keeps a MIG GPU's own series too.
 */
static bool device_shown(const struct exporter *e, const struct exp_device *d, enum exp_devices mode, bool parent)
{
	bool has_migs = e->gpus[d->gpu].n_devs > 1;
	switch (mode) {
	case EXP_DEVICES_GPUS:
		return d->mig < 0;
	case EXP_DEVICES_INSTANCES:
		return d->mig >= 0 || (parent && has_migs);
	default:
		return d->mig >= 0 || !has_migs || parent;
	}
}

void exporter_configure(struct exporter *e, const struct exp_config *cfg)
{
	const struct exp_collectors *c = cfg ? cfg->collectors : NULL;

	memset(&e->enabled, 0, sizeof(e->enabled));
	e->xid_enabled = e->driver_label = c == NULL;
	e->xid_count_enabled = e->clock_count_enabled = e->p2p_enabled = false;
	e->clock_window_ms = cfg && cfg->clock_window_ms ? cfg->clock_window_ms : 300000;
	e->label_fields = 0;
	e->xid_window_ms = cfg && cfg->xid_window_ms ? cfg->xid_window_ms : 300000;
	e->xid_type = "gauge";
	e->xid_help = "Value of the last XID error encountered.";
	e->n_unavailable_names = 0;
	free(e->unavailable_names);
	e->unavailable_names = NULL;
	for (int i = 0; i < EXP_METRIC_COUNT; i++) {
		e->name[i] = exp_metrics[i].name;
		e->type[i] = exp_metrics[i].type;
		e->help[i] = exp_metrics[i].help;
		if (!c && exp_metrics[i].builtin)
			exp_mask_set(&e->enabled, (size_t)i);
	}
	if (c && c->n)
		e->unavailable_names = calloc(c->n, sizeof(*e->unavailable_names));
	for (size_t k = 0; c && k < c->n; k++) {
		const struct exp_counter *ct = &c->v[k];
		/* a label-typed numeric field, or one listed twice: exporter_collectors_warnings() says so */
		bool label = streq(ct->type, "label");
		if (ct->kind == EXP_COUNTER_METRIC && !label && !exp_mask_has(&e->enabled, (size_t)ct->metric)) {
			exp_mask_set(&e->enabled, (size_t)ct->metric);
			/* histogram and summary need buckets/quantiles: served as gauge */
			e->type[ct->metric] = streq(ct->type, "counter") ? "counter" : "gauge";
			e->help[ct->metric] = ct->help;
			e->name[ct->metric] = ct->name;
		} else if (ct->kind == EXP_COUNTER_XID && !e->xid_enabled) {
			e->xid_enabled = true;
			e->xid_type = streq(ct->type, "counter") ? "counter" : "gauge";
			e->xid_help = ct->help;
		} else if (ct->kind == EXP_COUNTER_CLOCK_COUNT && !e->clock_count_enabled) {
			e->clock_count_enabled = true;
			e->clock_count_type = streq(ct->type, "gauge") ? "gauge" : "counter";
			e->clock_count_help = ct->help;
		} else if (ct->kind == EXP_COUNTER_P2P_STATUS && !e->p2p_enabled) {
			e->p2p_enabled = true;
			e->p2p_type = streq(ct->type, "gauge") ? "gauge" : "counter";
			e->p2p_help = ct->help;
		} else if (ct->kind == EXP_COUNTER_GPU_HEALTH && !e->health_status_enabled) {
			e->health_status_enabled = true;
			e->health_status_type = streq(ct->type, "counter") ? "counter" : "gauge";
			e->health_status_help = ct->help;
		} else if (ct->kind == EXP_COUNTER_XID_COUNT && !e->xid_count_enabled) {
			e->xid_count_enabled = true;
			e->xid_count_type = streq(ct->type, "gauge") ? "gauge" : "counter";
			e->xid_count_help = ct->help;
		} else if (label && ct->kind == EXP_COUNTER_UNAVAILABLE && exp_label_field_index(ct->name) >= 0) {
			e->label_fields |= 1u << exp_label_field_index(ct->name);
		} else if (ct->kind == EXP_COUNTER_DRIVER) {
			e->driver_label = true;
		} else if ((ct->kind == EXP_COUNTER_UNAVAILABLE || (label && ct->kind == EXP_COUNTER_METRIC)) &&
			   e->unavailable_names) {
			e->unavailable_names[e->n_unavailable_names++] = ct->name;
		}
	}
	if (e->p2p_enabled && e->n_gpus > EXP_P2P_PEERS)
		log_warn("DCGM_EXP_P2P_STATUS: more GPUs than reported; peers past the limit have no series",
			 "gpus=%zu limit=%d", e->n_gpus, EXP_P2P_PEERS);
	snprintf(e->hostname_labels, sizeof(e->hostname_labels), "%s%s", e->host_labels,
		 e->driver_label ? e->driver_labels : "");
	e->old_namespace = cfg && cfg->old_namespace;
	e->gpu_id_device_name = cfg && cfg->gpu_id_device_name;
	/*
	 * the key PodResources' dynamic resources name a device by when gpulet's DRA driver on this node
	 * (pool = node name) allocated it
	 */
	for (size_t i = 0; i < e->n_devs; i++) {
		struct exp_device *d = &e->devs[i];
		if (!cfg || !cfg->dra || !cfg->dra_pool || !*cfg->dra_pool || !d->attr_dra_name[0] ||
		    podres_dra_key(d->attr_dra, sizeof(d->attr_dra), DRA_DRIVER_DEFAULT, cfg->dra_pool,
				   d->attr_dra_name) < 0)
			d->attr_dra[0] = '\0';
	}
	for (size_t i = 0; i < e->n_devs; i++) {
		e->devs[i].shown =
		    device_shown(e, &e->devs[i], cfg ? cfg->devices : EXP_DEVICES_FLEX, cfg && cfg->mig_parent);
		/* -o: dcgm-exporter 1.x spells the label uuid; same length, so rewritten in place */
		char *u = strstr(e->devs[i].labels, e->old_namespace ? ",UUID=\"" : ",uuid=\"");
		for (int k = 1; u && k <= 4; k++)
			u[k] = (char)(e->old_namespace ? tolower((unsigned char)u[k]) : toupper((unsigned char)u[k]));
	}
}

void exporter_free(struct exporter *e)
{
	for (size_t i = 0; e->gpus && i < e->n_gpus; i++) { /* also on an exporter_init() that failed */
		struct exp_gpu *eg = &e->gpus[i];
		for (size_t j = 0; eg->gpm && j < eg->n_devs; j++)
			for (int k = 0; k < 2; k++)
				if (eg->gpm[j].s[k] && e->nv && e->nv->gpm_sample_free)
					e->nv->gpm_sample_free(eg->gpm[j].s[k]);
		free(eg->gpm);
		for (size_t j = 0; eg->procs && j < eg->n_devs; j++)
			exp_procs_free(&eg->procs[j]);
		free(eg->procs);
		free(eg->vals);
		free(eg->next);
		pthread_mutex_destroy(&eg->lock);
	}
	free(e->unavailable_names);
	e->unavailable_names = NULL;
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

/* A feature the device lacks is no failure: no sample, no error count (as dcgm-exporter's blanks). */
static bool not_there(nvmlReturn_t r)
{
	return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NO_DATA;
}

/* What one sampling round of one GPU collects. */
struct sample_round {
	uint64_t errors;
	bool lost;
	struct exp_mask seen;
	double now;
};

static void count_failure(struct sample_round *sr, nvmlReturn_t r)
{
	if (not_there(r))
		return;
	sr->errors++;
	sr->lost |= r == NVML_ERROR_GPU_IS_LOST;
}

/* Does this GPU have GPM (asked once)? Then allocate two samples per device. */
static bool gpm_ready(struct exporter *e, struct exp_gpu *eg, nvmlDevice_t h)
{
	const struct nvml *nv = e->nv;
	struct exp_mask gpm_rows = {0};

	for (size_t i = 0; i < EXP_METRIC_COUNT; i++)
		if (exp_metrics[i].gpm)
			exp_mask_set(&gpm_rows, i);
	if (!exp_mask_any(&e->enabled, &gpm_rows, NULL))
		return false;
	if (eg->gpm_support == 0) {
		nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
		bool api = nv->gpm_query_device_support && nv->gpm_sample_alloc && nv->gpm_sample_get &&
			   nv->gpm_metrics_get && nv->gpm_sample_free;
		nvmlReturn_t r = api ? nv->gpm_query_device_support(h, &sup) : NVML_ERROR_FUNCTION_NOT_FOUND;
		if (r != NVML_SUCCESS && !not_there(r))
			return false; /* ask again next round */
		eg->gpm_support = r == NVML_SUCCESS && sup.isSupportedDevice ? 1 : -1;
		if (eg->gpm_support > 0 && !(eg->gpm = calloc(eg->n_devs, sizeof(*eg->gpm))))
			eg->gpm_support = -1;
		for (size_t j = 0; eg->gpm_support > 0 && j < eg->n_devs; j++)
			for (int k = 0; k < 2; k++)
				if (nv->gpm_sample_alloc(&eg->gpm[j].s[k]) != NVML_SUCCESS)
					eg->gpm_support = -1;
		if (eg->gpm_support < 0)
			log_debug("GPM not supported: DCGM_FI_PROF_* fields from GPM are not served for this GPU",
				  "uuid=%s index=%u", eg->uuid, eg->nvml_index);
	}
	return eg->gpm_support > 0;
}

/* GPM: take this round's sample of device j and read the metrics against the last one. */
static void sample_gpm(struct exporter *e, struct exp_gpu *eg, size_t j, nvmlDevice_t parent, struct exp_values *v,
		       struct sample_round *sr)
{
	const struct nvml *nv = e->nv;
	struct exp_gpm *g = &eg->gpm[j];
	const struct exp_device *d = &e->devs[eg->first_dev + j];
	nvmlReturn_t r = d->mig < 0               ? nv->gpm_sample_get(parent, g->s[g->cur])
			 : nv->gpm_mig_sample_get ? nv->gpm_mig_sample_get(parent, d->gi, g->s[g->cur])
						  : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r != NVML_SUCCESS) {
		count_failure(sr, r);
		g->have_prev = false;
		return;
	}
	if (g->have_prev) {
		/* about 4 KiB: NVML's version 1 layout */
		nvmlGpmMetricsGet_t mg = {
		    .version = NVML_GPM_METRICS_GET_VERSION, .sample1 = g->s[g->cur ^ 1], .sample2 = g->s[g->cur]};
		int rows[EXP_METRIC_COUNT];
		for (int i = 0; i < EXP_METRIC_COUNT; i++)
			if (exp_metrics[i].gpm && exp_mask_has(&e->enabled, (size_t)i) &&
			    (exp_metrics[i].scope & (d->mig < 0 ? EXP_SCOPE_GPU : EXP_SCOPE_MIG))) {
				rows[mg.numMetrics] = i;
				mg.metrics[mg.numMetrics++].metricId = exp_metrics[i].gpm;
			}
		r = mg.numMetrics ? nv->gpm_metrics_get(&mg) : NVML_SUCCESS;
		if (r != NVML_SUCCESS)
			count_failure(sr, r);
		for (unsigned k = 0; r == NVML_SUCCESS && k < mg.numMetrics; k++) {
			if (mg.metrics[k].nvmlReturn != NVML_SUCCESS) {
				count_failure(sr, mg.metrics[k].nvmlReturn);
				continue;
			}
			v->v[rows[k]] = mg.metrics[k].value * exp_metrics[rows[k]].gpm_scale;
			exp_mask_set(&v->valid, (size_t)rows[k]);
		}
	}
	g->cur ^= 1;
	g->have_prev = true;
}

/* A counter made a rate (EXP_SCOPE_RATE): growth per second / 1000, 0 on the first round, as DCGM. */
static double rate_of(struct exp_gpu *eg, size_t row, double counter, double now)
{
	struct exp_rate *p = &eg->rate_prev[row];
	double dt = now - p->at, v = 0;
	if (p->have && dt > 0 && counter >= p->counter)
		v = floor((counter - p->counter) / dt / 1000.0);
	p->counter = counter;
	p->at = now;
	p->have = true;
	return v;
}

/* Sample one device (index j of GPU eg) into v; NOT_SUPPORTED and friends leave the field out. */
static void sample_device(struct exporter *e, struct exp_gpu *eg, size_t j, nvmlDevice_t h, nvmlDevice_t parent,
			  bool gpm, struct exp_values *v, struct sample_round *sr)
{
	bool mig = j > 0;
	memset(&v->valid, 0, sizeof(v->valid));
	if (gpm)
		sample_gpm(e, eg, j, parent, v, sr);
	for (size_t i = 0; i < EXP_METRIC_COUNT; i++) {
		const struct exp_metric_def *m = &exp_metrics[i];
		if (!exp_mask_has(&e->enabled, i) || !(m->scope & (mig ? EXP_SCOPE_MIG : EXP_SCOPE_GPU)) ||
		    exp_mask_has(&v->valid, i) || !m->get)
			continue;
		double x;
		nvmlReturn_t r = m->get(e->nv, h, m->arg, &x);
		if (r != NVML_SUCCESS) {
			count_failure(sr, r);
			continue;
		}
		v->v[i] = m->scope & EXP_SCOPE_RATE ? rate_of(eg, i, x, sr->now) : x;
		exp_mask_set(&v->valid, i);
	}
	/* DCGM's int64 fields are whole numbers: 615.06 MiB reserved is 615, bytes/s from GPM too */
	for (size_t i = 0; i < EXP_METRIC_COUNT; i++)
		if (exp_mask_has(&v->valid, i) && !exp_metrics[i].fp)
			v->v[i] = trunc(v->v[i]);
	exp_mask_or(&sr->seen, &v->valid);
}

/* The MIG instance j of GPU eg, if it is still the one exporter_init saw. */
static nvmlReturn_t mig_handle(struct exporter *e, struct exp_gpu *eg, size_t j, nvmlDevice_t h, nvmlDevice_t *ret)
{
	const struct nvml *nv = e->nv;
	const struct exp_device *d = &e->devs[eg->first_dev + j];
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
	nvmlReturn_t r = nv->device_get_mig_device_handle_by_index
			     ? nv->device_get_mig_device_handle_by_index(h, (unsigned)d->mig, ret)
			     : NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		r = nv->device_get_uuid(*ret, uuid, sizeof(uuid));
	if (r == NVML_SUCCESS && !streq(uuid, d->attr_uuid)) {
		/* MIG re-partitioned: this index is another instance now; never mislabel it */
		if (!atomic_exchange(&e->layout_changed, true))
			log_warn("MIG layout changed", "uuid=%s index=%u mig_index=%d expected=%s found=%s", eg->uuid,
				 eg->nvml_index, d->mig, d->attr_uuid, uuid);
		return NVML_ERROR_NOT_FOUND;
	}
	return r;
}

#define LATE_JUDGE_S 5.0 /* past the stale age: slow GPUs have had their rounds, hung ones will not */

/*
 * After every GPU's second round: the enabled fields no device gave are unavailable on this node.
 * late: a GPU that hangs from the start never finishes its rounds; once it counts as stale, judge
 * on the GPUs that did (the hung one gives nothing either way).
 */
static void note_first_round(struct exporter *e, bool late)
{
	if (!late && atomic_fetch_add(&e->first_samples, 1) + 1 != e->n_gpus)
		return;
	if (atomic_exchange(&e->judged, true))
		return;
	struct exp_mask seen = {0}, gpm_only = {0};
	char no_gpm[512] = "";
	size_t n_no_gpm = 0;
	for (size_t i = 0; i < EXP_METRIC_COUNT; i++)
		if (!exp_metrics[i].get && exp_metrics[i].gpm)
			exp_mask_set(&gpm_only, i);
	for (size_t g = 0; g < e->n_gpus; g++) {
		pthread_mutex_lock(&e->gpus[g].lock);
		exp_mask_or(&seen, &e->gpus[g].seen);
		if (e->gpus[g].gpm_support < 0 && n_no_gpm < sizeof(no_gpm))
			n_no_gpm += (size_t)snprintf(no_gpm + n_no_gpm, sizeof(no_gpm) - n_no_gpm, "%s%s",
						     n_no_gpm ? "," : "", e->gpus[g].uuid);
		pthread_mutex_unlock(&e->gpus[g].lock);
	}
	/* a node mixing GPUs with and without GPM: the GPM fields are served, but not for these */
	struct exp_mask served_gpm = e->enabled;
	for (size_t k = 0; k < EXP_MASK_WORDS; k++)
		served_gpm.w[k] &= gpm_only.w[k];
	if (n_no_gpm && exp_mask_any(&served_gpm, &seen, NULL))
		log_warn(
		    "GPUs without GPM (Hopper or newer has it): their DCGM_FI_PROF_* fields from GPM are not served",
		    "uuids=%s", no_gpm);
	for (size_t k = 0; k < EXP_MASK_WORDS; k++)
		e->unsupported.w[k] = e->enabled.w[k] & ~seen.w[k];
	atomic_store(&e->probed, true);
	char names[EXP_METRIC_COUNT * 48] = "";
	size_t len = 0;
	for (int i = 0; i < EXP_METRIC_COUNT; i++)
		if (exp_mask_has(&e->unsupported, (size_t)i))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? "," : "",
						exp_metrics[i].name);
	if (len)
		log_warn("fields not available from NVML on this node (DCGM_FI_PROF_* need GPM: Hopper or newer); "
			 "not served, listed by gpulet_exporter_field_unavailable",
			 "fields=%s", names);
}

/* DCGM_EXP_P2P_STATUS: GPU gi's NVLink P2P status to each other GPU, as DCGM asks NVML. */
static void sample_p2p(struct exporter *e, size_t gi, const nvmlDevice_t *h, uint8_t *p2p)
{
	const struct nvml *nv = e->nv;
	memset(p2p, EXP_P2P_NONE, EXP_P2P_PEERS);
	for (size_t k = 0; h && e->p2p_enabled && nv->device_get_p2p_status && nv->device_get_handle_by_uuid &&
			   k < MIN(e->n_gpus, (size_t)EXP_P2P_PEERS);
	     k++) {
		nvmlDevice_t peer;
		nvmlGpuP2PStatus_t st;
		if (k == gi || !e->gpus[k].uuid[0] ||
		    nv->device_get_handle_by_uuid(e->gpus[k].uuid, &peer) != NVML_SUCCESS)
			continue;
		if (nv->device_get_p2p_status(*h, peer, NVML_P2P_CAPS_INDEX_NVLINK, &st) == NVML_SUCCESS && st >= 0 &&
		    st <= NVML_P2P_STATUS_UNKNOWN)
			p2p[k] = (uint8_t)st;
	}
}

void exporter_sample_gpu(struct exporter *e, size_t gi)
{
	struct exp_gpu *eg = &e->gpus[gi];
	const struct nvml *nv = e->nv;
	struct exp_values *vals = eg->next;
	struct sample_round sr = {.now = exp_now_monotonic()};
	nvmlDevice_t h;

	/* --kubernetes-virtual-gpus: each device's processes (procs.c), swapped in with the values */
	struct exp_procs *procs = e->per_process ? calloc(eg->n_devs, sizeof(*procs)) : NULL;

	memset(vals, 0, eg->n_devs * sizeof(*vals));
	nvmlReturn_t r = gpu_handle(nv, eg, &h);
	if (r == NVML_SUCCESS) {
		bool gpm = gpm_ready(e, eg, h);
		sample_device(e, eg, 0, h, h, gpm, &vals[0], &sr);
		exp_health_update(eg, nv, h);
		if (procs)
			exp_procs_collect(e, h, true, &procs[0]);
		for (size_t j = 1; j < eg->n_devs; j++) {
			nvmlDevice_t mh;
			nvmlReturn_t mr = mig_handle(e, eg, j, h, &mh);
			if (mr == NVML_SUCCESS)
				sample_device(e, eg, j, mh, h, gpm, &vals[j], &sr);
			if (mr == NVML_SUCCESS && procs)
				exp_procs_collect(e, mh, false, &procs[j]);
			else if (mr != NVML_SUCCESS && mr != NVML_ERROR_NOT_FOUND)
				count_failure(&sr, mr == NVML_ERROR_NOT_SUPPORTED ? NVML_ERROR_UNKNOWN : mr);
		}
	} else {
		sr.errors++;
		sr.lost = r == NVML_ERROR_GPU_IS_LOST;
	}

	uint8_t p2p[EXP_P2P_PEERS];
	sample_p2p(e, gi, r == NVML_SUCCESS ? &h : NULL, p2p);

	/* DCGM_EXP_CLOCK_EVENTS_COUNT: this round's clock event reasons, when any is set */
	double reasons = 0;
	if (e->clock_count_enabled && r == NVML_SUCCESS &&
	    exp_metrics[EXP_CLOCKS_EVENT_REASONS].get(nv, h, 0, &reasons) != NVML_SUCCESS)
		reasons = 0;

	pthread_mutex_lock(&eg->lock);
	bool was_lost = eg->st.lost;
	memcpy(eg->st.p2p, p2p, sizeof(p2p));
	if (reasons > 0) {
		eg->st.clock_events[eg->st.n_clock_events % EXP_CLOCK_RECENT].reasons = (uint64_t)reasons;
		eg->st.clock_events[eg->st.n_clock_events++ % EXP_CLOCK_RECENT].at = sr.now;
	}
	/*
	 * A GPU that cannot be opened serves no values (dcgm-exporter leaves blanks out): the last
	 * ones would look current. Its sample age keeps growing from the last complete sample.
	 */
	eg->next = eg->vals;
	eg->vals = vals;
	if (procs) {
		struct exp_procs *old = eg->procs;
		eg->procs = procs;
		procs = old; /* freed below, outside the lock */
	}
	if (r == NVML_SUCCESS)
		eg->st.sampled_at = exp_now_monotonic();
	exp_mask_or(&eg->seen, &sr.seen);
	eg->st.nvml_errors += sr.errors;
	eg->st.lost |= sr.lost; /* sticky like the plugin's health: a lost GPU needs a reset */
	/* GPM gives its first values on the second round: judge after two */
	bool judge = eg->st.rounds < 2 && ++eg->st.rounds == 2, done = eg->st.rounds == 2;
	pthread_mutex_unlock(&eg->lock);
	for (size_t j = 0; procs && j < eg->n_devs; j++)
		exp_procs_free(&procs[j]);
	free(procs);
	if (judge)
		note_first_round(e, false);
	else if (done && !atomic_load(&e->judged) && sr.now - e->started_at > e->stale_s + LATE_JUDGE_S)
		note_first_round(e, true);
	if (sr.lost && !was_lost)
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
	st->recent[st->n_recent % EXP_XID_RECENT].code = xid;
	st->recent[st->n_recent++ % EXP_XID_RECENT].at = exp_now_monotonic();
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
	/*
	 * Three missed rounds and a second: a sampler stuck in a hung NVML call stops serving its old
	 * values (they would look current); gpulet_sample_age_seconds keeps saying how old they are.
	 */
	e->stale_s = 3.0 * e->interval_ms / 1000.0 + 1.0;
	size_t left_out = exp_static_labels_fill(e);
	if (left_out > 0)
		log_warn("static label fields too long to serve were left out (--log-level debug names them)",
			 "labels=%zu", left_out);
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
