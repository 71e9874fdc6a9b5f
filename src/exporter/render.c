/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus text exposition 0.0.4 of the exporter's last samples. Reads each GPU slot under its
 * lock (a copy, no NVML), then writes without locks. Pod labels follow dcgm-exporter (A2, A4): a
 * device held by one container gets pod/namespace/container; a device shared by several pods
 * (time-slicing replicas) gets one of them, as upstream does by default, or with
 * --kubernetes-virtual-gpus one series per pod with label vgpu (gpulet_pod_gpu_allocated names
 * every holder either way).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "exporter/exporter.h"
#include "exporter/hpc.h"
#include "exporter/procs.h"

void strbuf_reset(struct strbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->s)
		b->s[0] = '\0';
}

void strbuf_free(struct strbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

/* Room for n more bytes and the NUL after them (doubling, 4 KiB at least); false (b->oom) when out of memory. */
static bool strbuf_room(struct strbuf *b, size_t n)
{
	while (b->cap - b->len <= n) {
		char *s = grow_alloc(b->s, &b->cap, 1, 4096);

		if (!s) {
			b->oom = true;
			return false;
		}
		b->s = s;
	}
	return true;
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->cap - b->len;
		int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		if (!strbuf_room(b, (size_t)n))
			return;
	}
}

/* Append s as is (the hot path of a scrape: no format parsing). */
static void put_str(struct strbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->oom)
		return;
	if (!strbuf_room(b, n))
		return;
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

/* Values as Prometheus parses them; integers without an exponent up to 2^53. */
static void put_value(struct strbuf *b, double v)
{
	if (v >= 0 && v < 9007199254740992.0 && v == floor(v)) {
		char digits[24], *p = digits + sizeof(digits);
		unsigned long long u = (unsigned long long)v;
		*--p = '\0';
		*--p = '\n';
		do
			*--p = (char)('0' + u % 10);
		while ((u /= 10));
		*--p = ' ';
		put_str(b, p);
	} else if (isnan(v))
		strbuf_printf(b, " NaN\n");
	else if (isinf(v))
		strbuf_printf(b, v > 0 ? " +Inf\n" : " -Inf\n");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		strbuf_printf(b, " %.0f\n", v);
	else
		strbuf_printf(b, " %.6g\n", v);
}

static void family(struct strbuf *b, const char *name, const char *type, const char *help)
{
	strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * Pod labels per device for this scrape: suffix strings in one buffer, ranges per device, each with its
 * holder; and the HPC jobs of each device (--hpc-job-mapping-dir, read for this scrape).
 */
struct attribution {
	struct strbuf text;
	size_t *off; /* offsets of NUL-separated suffixes in text */
	size_t n_off;
	size_t *first, *count; /* per device */
	struct exp_hpc hpc;
	const struct exp_hpc_entry **jobs; /* per device, NULL: no job */
	const struct podres_map *map;      /* the holders (per-process values) */
};

static bool same_holder(const struct podres_device *a, const struct podres_device *b)
{
	return streq(a->pod, b->pod) && streq(a->ns, b->ns) && streq(a->container, b->container);
}

/* dcgm-exporter's labels of a device a DRA claim holds (docs/reference/dcgm-exporter.md, DRA). */
static void dra_suffix(struct strbuf *b, const struct podres_device *h)
{
	static const struct {
		const char *label;
		size_t off;
	} rows[] = {
	    {"dra_claim_name", offsetof(struct podres_device, claim)},
	    {"dra_claim_namespace", offsetof(struct podres_device, claim_ns)},
	    {"dra_driver_name", offsetof(struct podres_device, driver)},
	    {"dra_pool_name", offsetof(struct podres_device, pool)},
	    {"dra_device_name", offsetof(struct podres_device, dra_device)},
	};
	char v[512];

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		prom_escape(*(char *const *)((const char *)h + rows[i].off), v, sizeof(v));
		strbuf_printf(b, ",%s=\"%s\"", rows[i].label, v);
	}
}

/*
 * The labels of holder h: pod, namespace, container (-o: dcgm-exporter 1.x's container_name,
 * pod_namespace, pod_name), then with the pods watch its UID (--kubernetes-enable-pod-uid, or always
 * with uid, as upstream's per-process series) and its own labels (--kubernetes-enable-pod-labels), and
 * vgpu for a replica with vgpu. Caller holds e->podmeta's lock.
 */
static void pod_suffix(struct strbuf *b, const struct exporter *e, const struct podres_device *h, bool vgpu, bool uid)
{
	const struct exp_pod *meta = e->podmeta ? exp_podmeta_find(e->podmeta, h->ns, h->pod) : NULL;
	char pod[512], ns[256], ctr[512];

	prom_escape(h->pod, pod, sizeof(pod));
	prom_escape(h->ns, ns, sizeof(ns));
	prom_escape(h->container, ctr, sizeof(ctr));
	strbuf_printf(b,
		      e->old_namespace ? ",container_name=\"%s\",pod_namespace=\"%s\",pod_name=\"%s\""
				       : ",container=\"%s\",namespace=\"%s\",pod=\"%s\"",
		      ctr, ns, pod);
	if ((uid || e->pod_uid) && meta && meta->uid[0])
		strbuf_printf(b, ",pod_uid=\"%s\"", meta->uid);
	if (e->pod_labels && meta)
		strbuf_printf(b, "%s", meta->labels);
	if (vgpu && h->replica >= 0)
		strbuf_printf(b, ",vgpu=\"%d\"", h->replica);
	if (h->claim)
		dra_suffix(b, h);
}

/*
 * The holders of device d. kubelet names a GPU by UUID, or by nvidia<index> under GKE's device
 * plugin (--kubernetes-gpu-id-type device-name, as dcgm-exporter: one or the other); a MIG
 * instance by its UUID or GKE's nvidia<index>/gi<GI id> either way.
 */
static size_t find_holders(const struct exporter *e, const struct podres_map *map, size_t d,
			   const struct podres_device **h)
{
	const struct exp_device *dev = &e->devs[d];
	bool by_uuid = dev->mig >= 0 || !e->gpu_id_device_name, by_name = dev->mig >= 0 || e->gpu_id_device_name;
	size_t n = by_uuid ? podres_find(map, dev->attr_uuid, h) : 0;
	if (!n && by_name)
		n = podres_find(map, dev->attr_name, h);
	/* a device allocated through a DRA claim: kubelet names it by driver, pool and device name */
	return n || !dev->attr_dra[0] ? n : podres_find(map, dev->attr_dra, h);
}

/* The HPC job mapping of this scrape (none when the option is off or the directory is not there). */
static int attribution_jobs(struct attribution *a, const struct exporter *e)
{
	if (!e->hpc_dir)
		return 0;
	a->jobs = calloc(e->n_devs + 1, sizeof(*a->jobs));
	if (!a->jobs)
		return -ENOMEM;
	if (exp_hpc_read(e->root, e->hpc_dir, &a->hpc) == -ENOMEM)
		return -ENOMEM;
	for (size_t d = 0; d < e->n_devs; d++)
		a->jobs[d] = exp_hpc_find(&a->hpc, e->gpus[e->devs[d].gpu].nvml_index,
					  e->devs[d].mig >= 0 ? (int)e->devs[d].gi : -1);
	return 0;
}

static int attribution_build(struct attribution *a, const struct exporter *e, const struct podres_map *map)
{
	memset(a, 0, sizeof(*a));
	a->map = map;
	size_t cap = 0;
	a->first = calloc(e->n_devs + 1, sizeof(size_t));
	a->count = calloc(e->n_devs + 1, sizeof(size_t));
	if (!a->first || !a->count || attribution_jobs(a, e) < 0)
		return -ENOMEM;
	for (size_t d = 0; d < e->n_devs; d++) { /* every device's count set, 0 without PodResources */
		const struct podres_device *h = NULL;
		size_t n = map ? find_holders(e, map, d, &h) : 0;
		bool one = n > 0;
		for (size_t k = 1; k < n; k++)
			one &= same_holder(&h[0], &h[k]);
		/* shared (time-slicing replicas): one series per pod with --kubernetes-virtual-gpus,
		 * else one series for one holder as dcgm-exporter (its map keeps the last; here the
		 * holder of the highest replica) */
		bool per_pod = !one && e->virtual_gpus;
		size_t want = per_pod ? n : MIN(n, (size_t)1);
		a->first[d] = a->n_off;
		for (size_t k = 0; k < want; k++) {
			if (a->n_off == cap) {
				size_t *o = grow_alloc(a->off, &cap, sizeof(*o), 32);
				if (!o)
					return -ENOMEM;
				a->off = o;
			}
			a->off[a->n_off++] = a->text.len;
			pod_suffix(&a->text, e, per_pod ? &h[k] : &h[n - 1], per_pod, false);
			strbuf_printf(&a->text, "%c", '\0');
		}
		a->count[d] = want;
	}
	return a->text.oom ? -ENOMEM : 0;
}

static void attribution_free(struct attribution *a)
{
	strbuf_free(&a->text);
	free(a->off);
	free(a->first);
	free(a->count);
	free(a->jobs);
	exp_hpc_free(&a->hpc);
}

static const char *suffix(const struct attribution *a, size_t d, size_t k)
{
	return a->text.s + a->off[a->first[d] + k];
}

/* One sample line of device d per HPC job of it (or one without): labels, extra, the pod's suffix. */
static void job_lines(struct strbuf *b, const struct exporter *e, const struct attribution *a, size_t d,
		      const char *name, const char *extra, const char *pod, double v)
{
	const struct exp_hpc_entry *jobs = a->jobs ? a->jobs[d] : NULL;
	size_t n = jobs ? jobs->n : 0;

	for (size_t j = 0; j < MAX(n, (size_t)1); j++) {
		put_str(b, name);
		put_str(b, "{");
		put_str(b, e->devs[d].labels);
		put_str(b, e->hostname_labels);
		put_str(b, extra);
		put_str(b, pod);
		if (n) {
			put_str(b, ",hpc_job=\"");
			put_str(b, jobs->jobs[j]); /* printable, without quotes or backslashes (hpc.c) */
			put_str(b, "\"");
		}
		put_str(b, "}");
		put_value(b, v);
	}
}

/* One sample line per attribution of device d (or one bare line); extra: more labels or "". */
static void device_line(struct strbuf *b, const struct exporter *e, const struct attribution *a, size_t d,
			const char *name, const char *extra, double v)
{
	size_t n = a->count[d];
	for (size_t k = 0; k < MAX(n, (size_t)1); k++)
		job_lines(b, e, a, d, name, extra, n ? suffix(a, d, k) : "", v);
}

static void render_pod_allocation(struct strbuf *b, const struct exporter *e, const struct podres_map *map)
{
	bool header = false;
	for (size_t d = 0; d < e->n_devs; d++) { /* every device's count set, 0 without PodResources */
		const struct podres_device *h = NULL;
		size_t n = map ? find_holders(e, map, d, &h) : 0;
		for (size_t k = 0; k < n; k++) {
			if (!header) {
				family(
				    b, "gpulet_pod_gpu_allocated", "gauge",
				    "1 for each device (GPU, MIG instance or time-slicing replica) kubelet assigned to "
				    "a container (PodResources API).");
				header = true;
			}
			strbuf_printf(b, "gpulet_pod_gpu_allocated{%s%s", e->devs[d].labels, e->hostname_labels);
			char res[256];
			prom_escape(h[k].resource, res, sizeof(res));
			pod_suffix(b, e, &h[k], true, false);
			strbuf_printf(b, ",resource=\"%s\"}", res);
			put_value(b, 1);
		}
	}
}

/* Is GPU g's sample too old to serve (a sampler stuck in a hung NVML call)? */
static bool stale(const struct exporter *e, const struct exp_gpu_state *st, double now)
{
	return e->stale_s > 0 && st->sampled_at > 0 && now - st->sampled_at > e->stale_s;
}

/* Field i of device d as served: an instance shows its GPU's value for device-wide fields. */
static bool device_value(const struct exporter *e, const struct exp_values *vals, size_t d, size_t i, double *ret)
{
	const struct exp_device *dev = &e->devs[d];
	size_t src = dev->mig >= 0 && (exp_metrics[i].scope & EXP_SCOPE_INHERIT) ? e->gpus[dev->gpu].first_dev : d;
	if (!exp_mask_has(&vals[src].valid, i))
		return false;
	*ret = vals[src].v[i];
	return true;
}

/*
 * FB_USED or GPU_UTIL of device d under --kubernetes-virtual-gpus, as dcgm-exporter's per-process
 * values (process_metrics.go, kubernetes.go createPerProcessMetrics): the device's own line without
 * pod labels, then one line per holder with pod_uid and the value of its pod's processes (0 when it
 * has none there). A holder whose UID is not known (no pods watch, or the pod not seen yet) gets no
 * line rather than a wrong value. Without holders: the device's line alone.
 */
static void per_process_lines(struct strbuf *b, const struct exporter *e, const struct attribution *a, size_t d,
			      size_t i, double v)
{
	const struct podres_device *h = NULL;
	size_t n = a->map ? find_holders(e, a->map, d, &h) : 0;
	struct exp_gpu *eg = &e->gpus[e->devs[d].gpu];

	job_lines(b, e, a, d, e->name[i], "", "", v);
	for (size_t k = 0; k < n; k++) {
		const struct exp_pod *meta = e->podmeta ? exp_podmeta_find(e->podmeta, h[k].ns, h[k].pod) : NULL;
		struct strbuf pod = {0};
		double pv;
		bool have;

		pthread_mutex_lock(&eg->lock);
		have = eg->procs && exp_procs_pod_value(&eg->procs[d - eg->first_dev], meta ? meta->uid : NULL,
							i == EXP_FB_USED, &pv);
		pthread_mutex_unlock(&eg->lock);
		if (!have)
			continue;
		pod_suffix(&pod, e, &h[k], true, true);
		if (!pod.oom)
			job_lines(b, e, a, d, e->name[i], "", pod.s ? pod.s : "", pv);
		b->oom |= pod.oom;
		strbuf_free(&pod);
	}
}

static void render_fields(struct strbuf *b, const struct exporter *e, const struct attribution *a,
			  const struct exp_values *vals, const struct exp_gpu_state *st, double now)
{
	for (size_t i = 0; i < EXP_METRIC_COUNT; i++) {
		if (!exp_mask_has(&e->enabled, i))
			continue;
		bool header = false;
		for (size_t d = 0; d < e->n_devs; d++) {
			double v;
			if (!e->devs[d].shown || stale(e, &st[e->devs[d].gpu], now) || !device_value(e, vals, d, i, &v))
				continue;
			if (!header) {
				family(b, e->name[i], e->type[i], e->help[i]);
				header = true;
			}
			if (e->per_process && (i == EXP_FB_USED || i == EXP_GPU_UTIL))
				per_process_lines(b, e, a, d, i, v);
			else
				device_line(b, e, a, d, e->name[i], "", v);
		}
	}
}

/*
 * DCGM_EXP_GPU_HEALTH_STATUS as dcgm-exporter's gpu_health_collector.go: per GPU, one series per
 * health watch (health_watch, health_error_code), the value DCGM's result (health_status.c). A hung
 * GPU serves none; a lost one says so under ALL.
 */
static void render_health_status(struct strbuf *b, const struct exporter *e, const struct attribution *a,
				 const struct exp_gpu_state *st, double now)
{
	if (!e->health_status_enabled || !e->n_gpus)
		return;
	family(b, "DCGM_EXP_GPU_HEALTH_STATUS", e->health_status_type, e->health_status_help);
	for (size_t g = 0; g < e->n_gpus; g++) {
		struct exp_health_verdict v[EXP_HEALTH_WATCHES];

		if (stale(e, &st[g], now))
			continue;
		exp_health_verdicts(&st[g], e->gpus[g].arch, v);
		for (size_t w = 0; w < EXP_HEALTH_WATCHES; w++) {
			char extra[128];
			snprintf(extra, sizeof(extra), ",health_watch=\"%s\",health_error_code=\"%s\"",
				 exp_health_watch_names[w], v[w].code);
			device_line(b, e, a, e->gpus[g].first_dev, "DCGM_EXP_GPU_HEALTH_STATUS", extra, v[w].result);
		}
	}
}

/*
 * DCGM_FI_DEV_XID_ERRORS: the last XID, with dcgm-exporter's err_code and err_msg labels (its
 * gpu_collector.go). A lost or hung GPU serves no DCGM_FI_DEV_* series at all, this one included.
 */
static void render_xid(struct strbuf *b, const struct exporter *e, const struct attribution *a,
		       const struct exp_gpu_state *st, double now)
{
	bool header = false;
	for (size_t d = 0; e->xid_enabled && d < e->n_devs; d++) {
		const struct exp_gpu_state *s = &st[e->devs[d].gpu];
		if (!e->devs[d].shown || s->lost || stale(e, s, now))
			continue;
		if (!header) {
			family(b, "DCGM_FI_DEV_XID_ERRORS", e->xid_type, e->xid_help);
			header = true;
		}
		char extra[160], msg[128];
		prom_escape(exp_xid_text(s->last_xid), msg, sizeof(msg));
		snprintf(extra, sizeof(extra), ",err_code=\"%u\",err_msg=\"%s\"", s->last_xid, msg);
		device_line(b, e, a, d, "DCGM_FI_DEV_XID_ERRORS", extra, s->last_xid);
	}
}

/*
 * DCGM_EXP_XID_ERRORS_COUNT as dcgm-exporter's xid collector: per device, one series per XID code
 * seen in the last -x milliseconds (label xid, the count), else one series of 0 without xid; every
 * series has window_size_in_ms.
 */
static void render_xid_count(struct strbuf *b, const struct exporter *e, const struct attribution *a,
			     const struct exp_gpu_state *st, double now)
{
	if (!e->xid_count_enabled || !e->n_gpus)
		return;
	family(b, "DCGM_EXP_XID_ERRORS_COUNT", e->xid_count_type, e->xid_count_help);
	double since = now - e->xid_window_ms / 1000.0;
	for (size_t d = 0; d < e->n_devs; d++) {
		const struct exp_gpu_state *s = &st[e->devs[d].gpu];
		struct {
			unsigned code, n;
		} seen[EXP_XID_RECENT];
		size_t n_seen = 0, held = MIN(s->n_recent, (size_t)EXP_XID_RECENT);
		if (!e->devs[d].shown)
			continue;
		for (size_t k = 0; k < held; k++) {
			if (s->recent[k].at < since)
				continue;
			size_t j;
			for (j = 0; j < n_seen && seen[j].code != s->recent[k].code; j++)
				;
			if (j == n_seen)
				seen[n_seen++].code = s->recent[k].code, seen[j].n = 0;
			seen[j].n++;
		}
		char extra[96];
		snprintf(extra, sizeof(extra), ",window_size_in_ms=\"%u\"", e->xid_window_ms);
		if (!n_seen)
			device_line(b, e, a, d, "DCGM_EXP_XID_ERRORS_COUNT", extra, 0);
		for (size_t j = 0; j < n_seen; j++) {
			snprintf(extra, sizeof(extra), ",window_size_in_ms=\"%u\",xid=\"%u\"", e->xid_window_ms,
				 seen[j].code);
			device_line(b, e, a, d, "DCGM_EXP_XID_ERRORS_COUNT", extra, seen[j].n);
		}
	}
}

/*
 * Clock event reasons by dcgm-exporter's names (its clock_events_collector.go, after DCGM's
 * dcgmi): bit i of the NVML/DCGM bitmask is clock_event_names[i].
 */
static const char *const clock_event_names[] = {"gpu_idle",    "clocks_setting", "power_cap",
						"hw_slowdown", "sync_boost",     "sw_thermal",
						"hw_thermal",  "hw_power_brake", "display_clocks"};

/*
 * DCGM_EXP_CLOCK_EVENTS_COUNT as dcgm-exporter's clock events collector: per device, for each
 * reason, how many samples of the last --clock-events-count-window-size ms had it set (label
 * clock_event), else one series of 0 without it; every series has window_size_in_ms.
 */
static void render_clock_count(struct strbuf *b, const struct exporter *e, const struct attribution *a,
			       const struct exp_gpu_state *st, double now)
{
	if (!e->clock_count_enabled || !e->n_gpus)
		return;
	family(b, "DCGM_EXP_CLOCK_EVENTS_COUNT", e->clock_count_type, e->clock_count_help);
	double since = now - e->clock_window_ms / 1000.0;
	for (size_t d = 0; d < e->n_devs; d++) {
		const struct exp_gpu_state *s = &st[e->devs[d].gpu];
		unsigned count[ELEMENTSOF(clock_event_names)] = {0}, total = 0;
		size_t held = MIN(s->n_clock_events, (size_t)EXP_CLOCK_RECENT);
		if (!e->devs[d].shown)
			continue;
		for (size_t k = 0; k < held; k++)
			for (size_t bit = 0; s->clock_events[k].at >= since && bit < ELEMENTSOF(count); bit++)
				if (s->clock_events[k].reasons & (1ull << bit))
					count[bit]++, total++;
		char extra[128];
		snprintf(extra, sizeof(extra), ",window_size_in_ms=\"%u\"", e->clock_window_ms);
		if (!total)
			device_line(b, e, a, d, "DCGM_EXP_CLOCK_EVENTS_COUNT", extra, 0);
		for (size_t bit = 0; bit < ELEMENTSOF(count); bit++) {
			if (!count[bit])
				continue;
			snprintf(extra, sizeof(extra), ",clock_event=\"%s\",window_size_in_ms=\"%u\"",
				 clock_event_names[bit], e->clock_window_ms);
			device_line(b, e, a, d, "DCGM_EXP_CLOCK_EVENTS_COUNT", extra, count[bit]);
		}
	}
}

/* Why gpulet does not serve a field a collectors file lists (docs/reference/dcgm-exporter.md §8). */
static const char *unavailable_reason(const char *field)
{
	(void)field;
	return "not sampled by gpulet";
}

/* The fields asked for that this node cannot serve, one series each (issue 14). */
static void render_unavailable(struct strbuf *b, const struct exporter *e)
{
	bool probed = atomic_load(&e->probed);
	if (!e->n_unavailable_names && !(probed && exp_mask_any(&e->unsupported, NULL, NULL)))
		return;
	family(b, "gpulet_exporter_field_unavailable", "gauge",
	       "1 for each field of the collectors set this node does not serve, with the reason (gpulet does not "
	       "sample it, or no GPU here supports it).");
	for (size_t k = 0; k < e->n_unavailable_names; k++) {
		char name[256];
		prom_escape(e->unavailable_names[k], name, sizeof(name));
		strbuf_printf(b, "gpulet_exporter_field_unavailable{field=\"%s\",reason=\"%s\"} 1\n", name,
			      unavailable_reason(e->unavailable_names[k]));
	}
	for (int i = 0; probed && i < EXP_METRIC_COUNT; i++)
		if (exp_mask_has(&e->unsupported, (size_t)i))
			strbuf_printf(b, "gpulet_exporter_field_unavailable{field=\"%s\",reason=\"%s\"} 1\n",
				      e->name[i],
				      exp_metrics[i].gpm && !exp_metrics[i].get ? "needs GPM (Hopper or newer)"
										: "not supported by these GPUs");
}

/*
 * DCGM_EXP_P2P_STATUS as dcgm-exporter's p2p collector: per GPU, one series per other GPU with
 * peer_gpu (its index) and link_status (the status by name), the value NVML's (= DCGM's) status.
 */
static void render_p2p(struct strbuf *b, const struct exporter *e, const struct attribution *a,
		       const struct exp_gpu_state *st, double now)
{
	static const char *const names[] = {"OK",
					    "ChipsetNotSupported",
					    "GPUNotSupported",
					    "TopologyNotSupported",
					    "DisabledByRegKey",
					    "NotSupported",
					    "Unknown"};
	bool header = false;
	for (size_t g = 0; e->p2p_enabled && g < e->n_gpus; g++) {
		if (st[g].lost || stale(e, &st[g], now))
			continue;
		for (size_t k = 0; k < MIN(e->n_gpus, (size_t)EXP_P2P_PEERS); k++) {
			unsigned s = st[g].p2p[k];
			if (s >= ELEMENTSOF(names)) /* EXP_P2P_NONE too */
				continue;
			if (!header) {
				family(b, "DCGM_EXP_P2P_STATUS", e->p2p_type, e->p2p_help);
				header = true;
			}
			char extra[96];
			snprintf(extra, sizeof(extra), ",peer_gpu=\"%u\",link_status=\"%s\"", e->gpus[k].nvml_index,
				 names[s]);
			device_line(b, e, a, e->gpus[g].first_dev, "DCGM_EXP_P2P_STATUS", extra, s);
		}
	}
}

static void render_devices(struct strbuf *b, const struct exporter *e, const struct attribution *a,
			   const struct exp_values *vals, const struct exp_gpu_state *st, double now)
{
	render_fields(b, e, a, vals, st, now);
	render_xid(b, e, a, st, now);
	render_xid_count(b, e, a, st, now);
	render_clock_count(b, e, a, st, now);
	render_p2p(b, e, a, st, now);
	render_health_status(b, e, a, st, now);
	render_unavailable(b, e);
	if (!e->n_gpus)
		return;
	bool header = false;
	for (size_t g = 0; g < e->n_gpus; g++)
		for (size_t k = 0; k < st[g].n_xids; k++) {
			if (!header) {
				family(b, "gpulet_xid_errors_total", "counter",
				       "XID errors seen since the exporter started, by XID code (NVML events).");
				header = true;
			}
			strbuf_printf(b, "gpulet_xid_errors_total{%s%s,xid=\"%u\"}",
				      e->devs[e->gpus[g].first_dev].labels, e->hostname_labels, st[g].xids[k].code);
			put_value(b, (double)st[g].xids[k].count);
		}

	family(b, "gpulet_gpu_healthy", "gauge",
	       "1 when the device is healthy: not lost, no critical XID or double-bit ECC event (the device "
	       "plugin's rules), and NVML reports no volatile double-bit ECC error, pending row remap or remap "
	       "failure now (gpulet_gpu_health_condition).");
	for (size_t d = 0; d < e->n_devs; d++) {
		strbuf_printf(b, "gpulet_gpu_healthy{%s%s}", e->devs[d].labels, e->hostname_labels);
		put_value(b, exp_health_ok(&st[e->devs[d].gpu]));
	}
	family(b, "gpulet_sample_age_seconds", "gauge",
	       "Seconds since this GPU was last sampled completely (grows while an NVML call hangs).");
	for (size_t g = 0; g < e->n_gpus; g++) {
		double since = st[g].sampled_at > 0 ? st[g].sampled_at : e->started_at;
		strbuf_printf(b, "gpulet_sample_age_seconds{%s%s}", e->devs[e->gpus[g].first_dev].labels,
			      e->hostname_labels);
		put_value(b, round(MAX(now - since, 0.0) * 1000.0) / 1000.0);
	}
	family(b, "gpulet_nvml_errors_total", "counter",
	       "Failed NVML calls while sampling this GPU (NOT_SUPPORTED answers excluded).");
	for (size_t g = 0; g < e->n_gpus; g++) {
		strbuf_printf(b, "gpulet_nvml_errors_total{%s%s}", e->devs[e->gpus[g].first_dev].labels,
			      e->hostname_labels);
		put_value(b, (double)st[g].nvml_errors);
	}
}

int exporter_render(struct exporter *e, const struct podres_map *map, double now, struct strbuf *b)
{
	strbuf_reset(b);
	/* the help must not begin with the value: `grep 'gpulet_exporter_ready 1'` would match it */
	family(b, "gpulet_exporter_ready", "gauge", "Whether NVML is loaded and the GPUs are known: 1 yes, 0 not yet.");
	strbuf_printf(b, "gpulet_exporter_ready");
	put_value(b, e ? 1 : 0);
	if (!e)
		return b->oom ? -ENOMEM : 0;
	atomic_fetch_add(&e->scrapes, 1);

	struct exp_values *vals = calloc(e->n_devs + 1, sizeof(*vals));
	struct exp_gpu_state *st = calloc(e->n_gpus + 1, sizeof(*st));
	struct attribution a;
	/* the pods' UIDs and labels hold still for the whole render (lock order: podmeta, then a GPU's) */
	if (e->podmeta)
		pthread_mutex_lock(&e->podmeta->lock);
	int r = vals && st ? attribution_build(&a, e, map) : -ENOMEM;
	if (r == 0) {
		for (size_t g = 0; g < e->n_gpus; g++) {
			struct exp_gpu *eg = &e->gpus[g];
			pthread_mutex_lock(&eg->lock);
			memcpy(&vals[eg->first_dev], eg->vals, eg->n_devs * sizeof(*vals));
			st[g] = eg->st;
			pthread_mutex_unlock(&eg->lock);
		}
		render_devices(b, e, &a, vals, st, now);
		render_pod_allocation(b, e, map);
	}
	if (e->podmeta)
		pthread_mutex_unlock(&e->podmeta->lock);
	if (vals && st)
		attribution_free(&a);
	free(vals);
	free(st);
	return r < 0 ? r : b->oom ? -ENOMEM : 0;
}
