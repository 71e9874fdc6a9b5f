/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watcher's NVML side: events through the one NVML event watcher (nvml/watch.h),
 * probes when the wait fails, the timer thread (recovery ticks, MIG/lost poll), start and stop.
 * See health_int.h for the threads and the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "plugin/health_int.h"

/* ---- NVML events ---- */

static void handle_nvml_event(struct health_watcher *w, const struct nvml_watch_event *e)
{
	struct gpu_state *g = &w->gpus[e->gpu];

	if (e->kind == NVML_WATCH_XID) {
		health_handle_xid(w, g, e->xid, e->gi, e->ci, "nvml", NULL);
	} else if (e->kind == NVML_WATCH_ECC_DBE) {
		/*
		 * nvmlEventTypeDoubleBitEccError is its own event, not an XID (the driver reports XID 48
		 * separately, and that one goes through the XID policy). Uncorrectable memory: it needs
		 * a reset, like the XIDs of the reset class (docs/reference/device-plugin.md §4).
		 */
		health_gpu_fault(w, g, e->gi, e->ci, HEALTH_ECC_DBE, 0, XID_RECOVER_CLEAN, "nvml",
				 "double-bit (uncorrectable) ECC error event from NVML");
	} else if (e->kind == NVML_WATCH_ECC_SBE) {
		health_report_info(w, HEALTH_ECC_SBE, g, "nvml", 0, "single-bit ECC error (corrected); no action");
	}
}

nvmlReturn_t health_probe_gpu(struct health_watcher *w, const struct gpu_state *g)
{
	char uuid[NODE_UUID_MAX];
	nvmlDevice_t h;
	nvmlReturn_t r;

	r = w->nv->device_get_handle_by_index(g->index, &h);
	if (r != NVML_SUCCESS)
		return r;
	r = w->nv->device_get_uuid(h, uuid, sizeof(uuid));
	if (r != NVML_SUCCESS)
		return r;
	if (!streq(uuid, g->uuid))
		return NVML_ERROR_NOT_FOUND;
	if (NVML_HAS(w->nv, device_get_memory_info)) {
		nvmlMemory_t m;
		r = w->nv->device_get_memory_info(h, &m);
		if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED)
			return r;
	}
	return NVML_SUCCESS;
}

bool health_gpu_clean(struct health_watcher *w, const struct gpu_state *g, char *why, size_t size)
{
	nvmlFieldValue_t f = {.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION};
	unsigned int corr, unc, pend = 0, fail = 0;
	nvmlDevice_t h;
	nvmlEnableState_t pending = 0;

	if (w->nv->device_get_handle_by_index(g->index, &h) != NVML_SUCCESS)
		return snprintf(why, size, "NVML has no handle for it"), false;
	if (!NVML_HAS(w->nv, device_get_field_values) || w->nv->device_get_field_values(h, 1, &f) != NVML_SUCCESS ||
	    f.nvmlReturn != NVML_SUCCESS)
		return snprintf(why, size,
				"this driver's NVML does not report a recovery action, so a reset cannot be "
				"seen; restart the plugin after resetting the GPU"),
		       false;
	if (f.value.uiVal != NVML_GPU_RECOVERY_ACTION_NONE)
		return snprintf(why, size, "NVML's recovery action is %u (not none)", f.value.uiVal), false;
	if (NVML_HAS(w->nv, device_get_retired_pages_pending_status) &&
	    w->nv->device_get_retired_pages_pending_status(h, &pending) == NVML_SUCCESS && pending)
		return snprintf(why, size, "retired pages are pending"), false;
	if (NVML_HAS(w->nv, device_get_remapped_rows) &&
	    w->nv->device_get_remapped_rows(h, &corr, &unc, &pend, &fail) == NVML_SUCCESS && (pend || fail))
		return snprintf(why, size, "row remapping is %s", fail ? "failed" : "pending"), false;
	return true;
}

void health_register_gpu(struct health_watcher *w, struct gpu_state *g)
{
	struct gerr err = {0};
	char reason[256];
	int r;

	if (!w->watch)
		return;
	r = nvml_watch_register(w->watch, (size_t)(g - w->gpus), &err);
	if (r == -EOPNOTSUPP) {
		/* upstream #1562: an old GPU is not an unhealthy one */
		health_report_info(w, HEALTH_UNSUPPORTED, g, "nvml", 0,
				   "GPU is too old to support health checking through NVML events; the kernel log "
				   "and NVML probes still apply");
	} else if (r == -ENODEV) {
		health_gpu_lost(w, g, "nvml", 0, "nvmlDeviceRegisterEvents answered GPU_IS_LOST");
	} else if (r < 0) {
		snprintf(reason, sizeof(reason), "cannot register NVML health events: %s", err.msg);
		health_gpu_fault(w, g, -1, -1, HEALTH_NVML_ERROR, 0, XID_RECOVER_QUIET, "nvml", reason);
	}
}

/* When the event wait fails, find out which GPUs really are gone instead of marking all (#426). */
static void probe_all(struct health_watcher *w, const char *source)
{
	for (size_t i = 0; i < w->n_gpus; i++)
		if (health_probe_gpu(w, &w->gpus[i]) == NVML_ERROR_GPU_IS_LOST)
			health_gpu_lost(w, &w->gpus[i], source, 0, "NVML answered GPU_IS_LOST");
}

bool health_wait_stop(struct health_watcher *w, unsigned ms)
{
	struct pollfd p = {.fd = w->stop_pipe[0], .events = POLLIN};
	if (atomic_load(&w->stop))
		return true;
	(void)poll(&p, 1, (int)ms);
	return atomic_load(&w->stop);
}

/* On the events thread; the NVML watcher holds no lock of its own while calling. */
static void on_nvml_event(const struct nvml_watch_event *e, void *userdata)
{
	struct health_watcher *w = userdata;

	pthread_mutex_lock(&w->lock);
	if (e->kind != NVML_WATCH_WAIT_ERROR) {
		handle_nvml_event(w, e);
	} else {
		if (e->first)
			health_report_info(w, HEALTH_SOURCE_ERROR, NULL, "nvml", 0,
					   "nvmlEventSetWait failed: %s; probing each GPU instead of marking all "
					   "unhealthy",
					   e->message);
		probe_all(w, "probe");
	}
	pthread_mutex_unlock(&w->lock);
}

static void *events_main(void *arg)
{
	struct health_watcher *w = arg;

	nvml_watch_run(w->watch, w->o.wait_ms, on_nvml_event, w);
	return NULL;
}

/* ---- MIG poll and the timer ---- */

/* Layout equality ignoring GPUs that are lost in b: what a lost GPU had can no longer be read. */
static bool layout_equal(const struct node *a, const struct node *b)
{
	if (a->n_gpus != b->n_gpus)
		return false;
	for (size_t i = 0; i < a->n_gpus; i++) {
		struct node x = {.gpus = &a->gpus[i], .n_gpus = 1}, y = {.gpus = &b->gpus[i], .n_gpus = 1};
		if (!b->gpus[i].lost && !node_equal_layout(&x, &y))
			return false;
	}
	return true;
}

static void mig_poll(struct health_watcher *w)
{
	struct node *cur = NULL, *fresh = NULL;
	struct health_event ev;

	if (node_load(w->nv, w->root, &cur, NULL) < 0)
		return; /* NVML down as a whole: the event source reports that */
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < cur->n_gpus && i < w->n_gpus; i++)
		if (cur->gpus[i].lost)
			health_gpu_lost(w, &w->gpus[i], "poll", 0, "NVML answered GPU_IS_LOST");
		else
			health_nvml_lost_back(w, &w->gpus[i]);
	if (w->snap && layout_equal(w->snap, cur)) {
		pthread_mutex_unlock(&w->lock);
		node_free(cur);
		return;
	}
	/* MIG faults name instances that may no longer exist on a GPU whose layout changed */
	for (size_t i = 0; w->snap && i < w->n_gpus && i < cur->n_gpus && i < w->snap->n_gpus; i++) {
		struct node x = {.gpus = &w->snap->gpus[i], .n_gpus = 1}, y = {.gpus = &cur->gpus[i], .n_gpus = 1};
		struct gpu_state *g = &w->gpus[i];
		size_t keep = 0;
		if (node_equal_layout(&x, &y))
			continue;
		for (size_t f = 0; f < g->n_faults; f++)
			if (g->faults[f].gi < 0)
				g->faults[keep++] = g->faults[f];
		g->n_faults = keep;
	}
	pthread_mutex_unlock(&w->lock);
	/* the callback gets its own snapshot (it may keep it); ours stays the comparison baseline */
	if (node_load(w->nv, w->root, &fresh, NULL) < 0) {
		node_free(cur);
		return;
	}
	pthread_mutex_lock(&w->lock);
	node_free(w->snap);
	w->snap = cur;
	health_event_init(&ev, HEALTH_MIG_CHANGED, NULL, "poll");
	snprintf(ev.reason, sizeof(ev.reason), "MIG layout changed: re-enumerate resources");
	ev.node = fresh;
	health_emit(w, &ev);
	pthread_mutex_unlock(&w->lock);
}

static void *timer_main(void *arg)
{
	struct health_watcher *w = arg;
	/* no baseline (the layout changed during start): poll at once */
	uint64_t next_poll = w->snap ? health_now_ms() + w->o.mig_poll_ms : 0;
	unsigned tick = w->o.wait_ms;

	if (w->o.mig_poll_ms)
		tick = MIN(tick, w->o.mig_poll_ms);
	while (!health_wait_stop(w, tick)) {
		pthread_mutex_lock(&w->lock);
		health_recover_tick(w);
		pthread_mutex_unlock(&w->lock);
		if (w->o.mig_poll_ms && health_now_ms() >= next_poll) {
			mig_poll(w);
			next_poll = health_now_ms() + w->o.mig_poll_ms;
		}
	}
	return NULL;
}

/* ---- start / stop ---- */

static int states_init(struct health_watcher *w, const struct node *n)
{
	w->gpus = calloc(n->n_gpus ? n->n_gpus : 1, sizeof(*w->gpus));
	if (!w->gpus)
		return -ENOMEM;
	w->n_gpus = n->n_gpus;
	for (size_t i = 0; i < n->n_gpus; i++) {
		struct gpu_state *g = &w->gpus[i];
		snprintf(g->uuid, sizeof(g->uuid), "%s", n->gpus[i].uuid);
		g->index = n->gpus[i].index;
		g->have_pci = pci_addr_parse(n->gpus[i].pci_bus_id, &g->pci) == 0;
	}
	return 0;
}

/*
 * Our own snapshot (the caller may free theirs). If the layout already differs from the caller's,
 * drop it: the timer's first poll then reports a change at once.
 */
static int snapshot(struct health_watcher *w, const struct node *n, struct gerr *err)
{
	int r = node_load(w->nv, w->root, &w->snap, err);
	if (r < 0)
		return r;
	if (!layout_equal(n, w->snap)) {
		node_free(w->snap);
		w->snap = NULL;
	}
	return 0;
}

/* The NVML event set, every GPU registered but those already lost (lock held). */
static void watch_events(struct health_watcher *w)
{
	struct gerr err = {0};
	int r = nvml_watch_new(w->nv, NVML_WATCH_HEALTH_TYPES, w->n_gpus, &w->watch, &err);

	if (r == -ENOSYS) {
		health_report_info(w, HEALTH_SOURCE_ERROR, NULL, "nvml", 0,
				   "this NVML has no event API; only the kernel log and probes report health");
		return;
	}
	if (r < 0) {
		health_report_info(w, HEALTH_SOURCE_ERROR, NULL, "nvml", 0, "%s", err.msg);
		return;
	}
	for (size_t i = 0; i < w->n_gpus; i++)
		nvml_watch_set_gpu(w->watch, i, w->gpus[i].index, w->gpus[i].uuid);
	for (size_t i = 0; i < w->n_gpus; i++)
		if (!health_gpu_is_lost(&w->gpus[i]))
			health_register_gpu(w, &w->gpus[i]);
}

int health_start(struct nvml *nv, const struct node *n, const struct health_options *o, struct health_watcher **ret,
		 struct gerr *err)
{
	struct health_watcher *w;
	int r;

	if (!o->cb)
		return gerr_set(err, EINVAL, "health watcher needs a callback");
	w = calloc(1, sizeof(*w));
	if (!w)
		return gerr_set(err, ENOMEM, "out of memory");
	w->nv = nv;
	w->o = *o;
	/* borrowed during health_start() only (the caller frees them after): root and kernel_log are
	 * copied into w->root and w->klog below */
	w->o.inherit = NULL;
	w->o.root = NULL;
	w->o.kernel_log = NULL;
	if (!w->o.wait_ms)
		w->o.wait_ms = 100;
	w->stop_pipe[0] = w->stop_pipe[1] = -1;
	snprintf(w->root, sizeof(w->root), "%s", o->root && *o->root ? o->root : "/");
	pthread_mutex_init(&w->lock, NULL);
	if (pipe2(w->stop_pipe, O_CLOEXEC) < 0 || states_init(w, n) < 0) {
		health_stop(w);
		return gerr_set(err, errno ? errno : ENOMEM, "health watcher: %s", strerror(errno ? errno : ENOMEM));
	}
	if (o->kernel_log) {
		snprintf(w->klog, sizeof(w->klog), "%s", o->kernel_log);
	} else {
		_cleanup_free_ char *p = root_path(w->root, "/dev/kmsg");
		snprintf(w->klog, sizeof(w->klog), "%s", p ? p : "/dev/kmsg");
	}
	r = snapshot(w, n, err);
	if (r < 0) {
		health_stop(w);
		return r;
	}
	pthread_mutex_lock(&w->lock);
	if (o->inherit)
		health_inherit_faults(w, (struct health_watcher *)o->inherit, n);
	for (size_t i = 0; i < n->n_gpus; i++)
		if (n->gpus[i].lost)
			health_gpu_lost(w, &w->gpus[i], "nvml", 0, "NVML answered GPU_IS_LOST when the node was read");
	if (!o->policy.disabled)
		watch_events(w);
	pthread_mutex_unlock(&w->lock);
	if (w->watch && pthread_create(&w->events_thread, NULL, events_main, w) == 0)
		w->have_events = true;
	if (!o->policy.disabled && w->klog[0] && (!o->kernel_log || *o->kernel_log) &&
	    pthread_create(&w->kmsg_thread, NULL, health_kmsg_main, w) == 0)
		w->have_kmsg = true;
	if (pthread_create(&w->timer_thread, NULL, timer_main, w) == 0)
		w->have_timer = true;
	if (!w->have_timer || (w->watch && !w->have_events)) {
		health_stop(w);
		return gerr_set(err, EAGAIN, "health watcher: cannot start a thread");
	}
	*ret = w;
	return 0;
}

void health_stop(struct health_watcher *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	if (w->stop_pipe[1] >= 0)
		(void)!write(w->stop_pipe[1], "x", 1);
	if (w->watch)
		nvml_watch_interrupt(w->watch);
	if (w->have_events)
		pthread_join(w->events_thread, NULL);
	if (w->have_kmsg)
		pthread_join(w->kmsg_thread, NULL);
	if (w->have_timer)
		pthread_join(w->timer_thread, NULL);
	nvml_watch_free(w->watch);
	if (w->stop_pipe[0] >= 0)
		close(w->stop_pipe[0]);
	if (w->stop_pipe[1] >= 0)
		close(w->stop_pipe[1]);
	node_free(w->snap);
	free(w->gpus);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
