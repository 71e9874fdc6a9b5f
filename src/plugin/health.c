/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watcher's rules: what a fault is, the XID policy (DP_DISABLE_HEALTHCHECKS /
 * DP_ENABLE_HEALTHCHECKS), recovery after the quiet period, replay and inheritance of the faults
 * still active. The sources that feed it are in health_watch.c (NVML events, probes, MIG poll) and
 * health_klog.c (kernel log); see health_int.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "plugin/health_int.h"

static const char *const kind_names[] = {
    [HEALTH_XID] = "xid",
    [HEALTH_ECC_DBE] = "ecc-dbe",
    [HEALTH_ECC_SBE] = "ecc-sbe",
    [HEALTH_GPU_LOST] = "gpu-lost",
    [HEALTH_NVML_ERROR] = "nvml-error",
    [HEALTH_RECOVERED] = "recovered",
    [HEALTH_UNSUPPORTED] = "unsupported",
    [HEALTH_SOURCE_ERROR] = "source-error",
    [HEALTH_MIG_CHANGED] = "mig-changed",
};

const char *health_kind_name(enum health_kind k)
{
	return (unsigned)k < ELEMENTSOF(kind_names) && kind_names[k] ? kind_names[k] : "unknown";
}

void health_options_default(struct health_options *o)
{
	*o = (struct health_options){.wait_ms = 100, .quiet_ms = 300000, .mig_poll_ms = 10000};
	xid_policy_default(&o->policy);
}

uint64_t health_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- reporting (lock held) ---- */

void health_emit(struct health_watcher *w, struct health_event *ev)
{
	w->o.cb(ev, w->o.userdata);
	if (ev->node)
		node_free(ev->node);
	ev->node = NULL;
}

void health_event_init(struct health_event *ev, enum health_kind kind, const struct gpu_state *g, const char *source)
{
	*ev = (struct health_event){.kind = kind, .index = -1, .gi = -1, .ci = -1, .source = source, .healthy = true};
	if (g) {
		snprintf(ev->uuid, sizeof(ev->uuid), "%s", g->uuid);
		ev->index = (int)g->index;
	}
}

void health_report_info(struct health_watcher *w, enum health_kind kind, const struct gpu_state *g, const char *source,
			unsigned xid, const char *fmt, ...)
{
	struct health_event ev;
	va_list ap;

	health_event_init(&ev, kind, g, source);
	ev.xid = xid;
	va_start(ap, fmt);
	vsnprintf(ev.reason, sizeof(ev.reason), fmt, ap);
	va_end(ap);
	health_emit(w, &ev);
}

static bool fault_covers(const struct fault *f, int gi, int ci)
{
	return f->gi < 0 || (f->gi == gi && (f->ci < 0 || f->ci == ci));
}

/*
 * Record an error on GPU g (or a MIG instance of it) and report it. The event is a transition when
 * no earlier fault already covered the same target; either way it is reported, so that the log
 * shows every XID.
 */
void health_gpu_fault(struct health_watcher *w, struct gpu_state *g, int gi, int ci, enum health_kind kind,
		      unsigned xid, enum xid_recovery recovery, const char *source, const char *reason)
{
	struct health_event ev;
	bool covered = false;
	struct fault *f = NULL;

	g->last_bad_ms = health_now_ms();
	for (size_t i = 0; i < g->n_faults; i++) {
		if (fault_covers(&g->faults[i], gi, ci))
			covered = true;
		if (g->faults[i].gi == gi && g->faults[i].ci == ci)
			f = &g->faults[i];
	}
	if (!f && g->n_faults == MAX_FAULTS) {
		/* too many distinct instances failing: treat it as the whole GPU */
		f = &g->faults[0];
		gi = ci = -1;
	}
	if (!f) {
		f = &g->faults[g->n_faults++];
		f->recovery = XID_RECOVER_QUIET;
	}
	f->gi = gi;
	f->ci = ci;
	f->kind = kind;
	f->xid = xid;
	f->recovery = MAX(f->recovery, recovery);
	snprintf(f->reason, sizeof(f->reason), "%s", reason);

	health_event_init(&ev, kind, g, source);
	ev.gi = gi;
	ev.ci = ci;
	ev.xid = xid;
	ev.healthy = false;
	ev.transition = !covered;
	snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
	health_emit(w, &ev);
}

bool health_gpu_is_lost(const struct gpu_state *g)
{
	for (size_t i = 0; i < g->n_faults; i++)
		if (g->faults[i].gi < 0 && g->faults[i].recovery == XID_RECOVER_NEVER)
			return true;
	return false;
}

void health_gpu_lost(struct health_watcher *w, struct gpu_state *g, const char *source, unsigned xid, const char *why)
{
	char reason[256];

	if (health_gpu_is_lost(g))
		return; /* already known lost */
	snprintf(reason, sizeof(reason), "GPU is lost: %s", why);
	health_gpu_fault(w, g, -1, -1, HEALTH_GPU_LOST, xid, XID_RECOVER_NEVER, source, reason);
}

/* An XID from either source, with the policy applied. */
void health_handle_xid(struct health_watcher *w, struct gpu_state *g, unsigned xid, int gi, int ci, const char *source,
		       const char *text)
{
	const struct xid_info *x = xid_lookup(xid);
	char reason[256];

	if (x)
		snprintf(reason, sizeof(reason), "XID %u %s (%s)", xid, x->name, x->description);
	else
		snprintf(reason, sizeof(reason), "XID %u (not in gpulet's XID table)", xid);
	if (text && *text) {
		size_t len = strlen(reason);
		snprintf(reason + len, sizeof(reason) - len, ": %s", text);
	}
	if (!xid_policy_is_critical(&w->o.policy, xid)) {
		health_report_info(w, HEALTH_XID, g, source, xid,
				   "%s; ignored: %s (DP_ENABLE_HEALTHCHECKS=%u makes it count)", reason,
				   x && x->app_error ? "application error" : "in the ignore list", xid);
		return;
	}
	if (xid == 79) {
		health_gpu_lost(w, g, source, xid, reason);
		return;
	}
	health_gpu_fault(w, g, gi, ci, HEALTH_XID, xid, xid_recovery(xid), source, reason);
}

/* ---- recovery, replay, inheritance ---- */

/* An event about fault ft of GPU g, a transition: what recovery, replay and inheritance report. */
static void fault_event(struct health_event *ev, enum health_kind kind, const struct gpu_state *g,
			const struct fault *ft, const char *source)
{
	health_event_init(ev, kind, g, source);
	ev->gi = ft->gi;
	ev->ci = ft->ci;
	ev->xid = ft->xid;
	ev->transition = true;
}

/* Report a fault still active again (replay, inheritance): unhealthy, with its first reason. */
static void report_fault(struct health_watcher *w, const struct gpu_state *g, const struct fault *ft,
			 const char *source)
{
	struct health_event ev;

	fault_event(&ev, ft->kind, g, ft, source);
	ev.healthy = false;
	snprintf(ev.reason, sizeof(ev.reason), "%s", ft->reason);
	health_emit(w, &ev);
}

/* Say once per quiet period why a GPU with reset-class errors stays unhealthy (not a transition). */
static void still_down(struct health_watcher *w, const struct gpu_state *g, const char *why)
{
	struct health_event ev;

	fault_event(&ev, g->faults[0].kind, g, &g->faults[0], "probe");
	ev.transition = false;
	ev.healthy = false;
	snprintf(ev.reason, sizeof(ev.reason), "stays unhealthy until the GPU is reset: %s; was: %s", why,
		 g->faults[0].reason);
	health_emit(w, &ev);
}

/*
 * Bring GPUs back (docs/reference/device-plugin.md §4.1): application errors after a quiet
 * period with NVML answering; reset-class errors only once NVML says the GPU is clean; GPUs lost
 * or needing service never.
 */
void health_recover_tick(struct health_watcher *w)
{
	uint64_t now = health_now_ms();

	if (w->o.quiet_ms == 0)
		return;
	for (size_t i = 0; i < w->n_gpus; i++) {
		struct gpu_state *g = &w->gpus[i];
		enum xid_recovery need = XID_RECOVER_QUIET;
		bool whole = false;
		char why[160] = "";
		nvmlReturn_t r;

		if (!g->n_faults || now - g->last_bad_ms < w->o.quiet_ms)
			continue;
		for (size_t f = 0; f < g->n_faults; f++) {
			need = MAX(need, g->faults[f].recovery);
			whole |= g->faults[f].gi < 0;
		}
		if (need == XID_RECOVER_NEVER)
			continue;
		r = health_probe_gpu(w, g);
		if (r == NVML_ERROR_GPU_IS_LOST) {
			health_gpu_lost(w, g, "probe", 0, "NVML answered GPU_IS_LOST during the recovery check");
			continue;
		}
		if (r != NVML_SUCCESS || (need == XID_RECOVER_CLEAN && !health_gpu_clean(w, g, why, sizeof(why)))) {
			g->last_bad_ms = now; /* still failing or not reset: wait another quiet period */
			if (why[0])
				still_down(w, g, why);
			continue;
		}
		/* all-or-nothing per GPU: one event for the whole GPU, else one per MIG instance */
		for (size_t f = 0; f < g->n_faults; f++) {
			struct health_event ev;
			if (whole && g->faults[f].gi >= 0)
				continue;
			fault_event(&ev, HEALTH_RECOVERED, g, &g->faults[f], "probe");
			snprintf(ev.reason, sizeof(ev.reason), "no error for %u ms and NVML %s; was: %s", w->o.quiet_ms,
				 need == XID_RECOVER_CLEAN ? "reports the GPU reset and clean (recovery action none)"
							   : "answers normally",
				 g->faults[f].reason);
			health_emit(w, &ev);
			if (whole)
				break;
		}
		g->n_faults = 0;
		health_register_gpu(w, g); /* if it was not */
	}
}

void health_replay(struct health_watcher *w)
{
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->n_gpus; i++)
		for (size_t f = 0; f < w->gpus[i].n_faults; f++)
			report_fault(w, &w->gpus[i], &w->gpus[i].faults[f], "replay");
	pthread_mutex_unlock(&w->lock);
}

/*
 * A GPU lost only by NVML's own answer (GPU_IS_LOST, no XID 79) that NVML reads normally again was
 * reset or re-attached: it is healthy again (docs/reliability.md, "GPU lost / recovered"). An XID 79
 * or any other fault on it keeps it as it is.
 */
void health_nvml_lost_back(struct health_watcher *w, struct gpu_state *g)
{
	struct health_event ev;

	if (!g->n_faults)
		return;
	for (size_t f = 0; f < g->n_faults; f++)
		if (g->faults[f].kind != HEALTH_GPU_LOST || g->faults[f].xid != 0 || g->faults[f].gi >= 0)
			return;
	if (health_probe_gpu(w, g) != NVML_SUCCESS)
		return;
	health_event_init(&ev, HEALTH_RECOVERED, g, "poll");
	ev.transition = true;
	snprintf(ev.reason, sizeof(ev.reason), "NVML reads the GPU normally again; was: %s", g->faults[0].reason);
	g->n_faults = 0;
	health_emit(w, &ev);
	health_register_gpu(w, g); /* if it was not */
}

static bool mig_exists(const struct node_gpu *g, int gi, int ci)
{
	for (size_t m = 0; m < g->n_migs; m++)
		if (g->migs[m].gi == (unsigned)gi && (ci < 0 || g->migs[m].ci == (unsigned)ci))
			return true;
	return false;
}

/* Take over the faults of the watcher being replaced, matched by UUID (lock of w held). */
void health_inherit_faults(struct health_watcher *w, struct health_watcher *old, const struct node *n)
{
	pthread_mutex_lock(&old->lock);
	for (size_t i = 0; i < w->n_gpus; i++) {
		struct gpu_state *g = &w->gpus[i];
		for (size_t k = 0; k < old->n_gpus; k++) {
			const struct gpu_state *o = &old->gpus[k];
			if (!g->uuid[0] || !streq(o->uuid, g->uuid))
				continue;
			for (size_t f = 0; f < o->n_faults; f++) {
				const struct fault *ft = &o->faults[f];
				if (ft->gi >= 0 && !mig_exists(&n->gpus[i], ft->gi, ft->ci))
					continue;
				g->faults[g->n_faults++] = *ft;
				report_fault(w, g, ft, "inherited");
			}
			g->last_bad_ms = o->last_bad_ms;
		}
	}
	pthread_mutex_unlock(&old->lock);
}
