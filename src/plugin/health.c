/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Health watcher. Three threads, one lock:
 *   events: nvmlEventSetWait_v2 in wait_ms slices (XID, ECC DBE/SBE; docs/reference/nvml-abi.md events)
 *   kmsg:   follows the kernel log (/dev/kmsg records or a text file like tail -f) for "NVRM: Xid"
 *   timer:  every wait_ms checks recovery; every mig_poll_ms reloads the node (MIG layout, lost GPUs)
 * The lock guards the per-GPU state and serializes the callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"
#include "plugin/health.h"

#define MAX_FAULTS    16          /* per GPU: the whole GPU plus at most 7 MIG instances, with room */
#define NO_ID         0xFFFFFFFFu /* nvmlEventData_t gi/ci when not attributable (nvml.h) */
#define EVENT_MASK    (nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError)
#define KLOG_LINE_MAX 8192

struct fault {
	int gi, ci; /* -1: whole GPU / all CIs */
	enum health_kind kind;
	unsigned xid;
	bool permanent;
	char reason[256];
};

struct gpu_state {
	char uuid[NODE_UUID_MAX];
	unsigned index;
	struct pci_addr pci;
	bool have_pci;
	nvmlDevice_t h;
	bool registered;
	struct fault faults[MAX_FAULTS];
	size_t n_faults;
	uint64_t last_bad_ms; /* monotonic time of the latest error */
};

struct health_watcher {
	struct nvml *nv;
	struct health_options o;
	char root[PATH_MAX];
	char klog[PATH_MAX];
	pthread_mutex_t lock;
	struct gpu_state *gpus;
	size_t n_gpus;
	struct node *snap; /* latest layout, compared by the MIG poll */
	nvmlEventSet_t set;
	pthread_t events_thread, kmsg_thread, timer_thread;
	bool have_events, have_kmsg, have_timer;
	int stop_pipe[2];
	atomic_bool stop;
	bool wait_failing; /* the event wait is failing; reported once per failure streak */
};

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

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- reporting (lock held) ---- */

static void emit(struct health_watcher *w, struct health_event *ev)
{
	w->o.cb(ev, w->o.userdata);
	if (ev->node)
		node_free(ev->node);
	ev->node = NULL;
}

static void event_init(struct health_event *ev, enum health_kind kind, const struct gpu_state *g, const char *source)
{
	*ev = (struct health_event){.kind = kind, .index = -1, .gi = -1, .ci = -1, .source = source, .healthy = true};
	if (g) {
		snprintf(ev->uuid, sizeof(ev->uuid), "%s", g->uuid);
		ev->index = (int)g->index;
	}
}

static void report_info(struct health_watcher *w, enum health_kind kind, const struct gpu_state *g, const char *source,
			unsigned xid, const char *fmt, ...) _printf_(6, 7);
static void report_info(struct health_watcher *w, enum health_kind kind, const struct gpu_state *g, const char *source,
			unsigned xid, const char *fmt, ...)
{
	struct health_event ev;
	va_list ap;

	event_init(&ev, kind, g, source);
	ev.xid = xid;
	va_start(ap, fmt);
	vsnprintf(ev.reason, sizeof(ev.reason), fmt, ap);
	va_end(ap);
	emit(w, &ev);
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
static void gpu_fault(struct health_watcher *w, struct gpu_state *g, int gi, int ci, enum health_kind kind,
		      unsigned xid, bool permanent, const char *source, const char *reason)
{
	struct health_event ev;
	bool covered = false;
	struct fault *f = NULL;

	g->last_bad_ms = now_ms();
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
	if (!f)
		f = &g->faults[g->n_faults++];
	f->gi = gi;
	f->ci = ci;
	f->kind = kind;
	f->xid = xid;
	f->permanent = f->permanent || permanent;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);

	event_init(&ev, kind, g, source);
	ev.gi = gi;
	ev.ci = ci;
	ev.xid = xid;
	ev.healthy = false;
	ev.transition = !covered;
	snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
	emit(w, &ev);
}

static bool gpu_is_lost(const struct gpu_state *g)
{
	for (size_t i = 0; i < g->n_faults; i++)
		if (g->faults[i].gi < 0 && g->faults[i].permanent)
			return true;
	return false;
}

static void gpu_lost(struct health_watcher *w, struct gpu_state *g, const char *source, unsigned xid, const char *why)
{
	char reason[256];

	if (gpu_is_lost(g))
		return; /* already known lost */
	snprintf(reason, sizeof(reason), "GPU is lost: %s", why);
	gpu_fault(w, g, -1, -1, HEALTH_GPU_LOST, xid, true, source, reason);
}

static struct gpu_state *gpu_by_handle(struct health_watcher *w, nvmlDevice_t h)
{
	for (size_t i = 0; i < w->n_gpus; i++)
		if (w->gpus[i].h && w->gpus[i].h == h)
			return &w->gpus[i];
	return NULL;
}

/* An XID from either source, with the policy applied. */
static void handle_xid(struct health_watcher *w, struct gpu_state *g, unsigned xid, int gi, int ci, const char *source,
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
		report_info(w, HEALTH_XID, g, source, xid, "%s; ignored: %s (DP_ENABLE_HEALTHCHECKS=%u makes it count)",
			    reason, x && x->app_error ? "application error" : "in the ignore list", xid);
		return;
	}
	if (xid == 79) {
		gpu_lost(w, g, source, xid, reason);
		return;
	}
	gpu_fault(w, g, gi, ci, HEALTH_XID, xid, !xid_recoverable(xid), source, reason);
}

/* ---- NVML events ---- */

static void handle_nvml_event(struct health_watcher *w, const nvmlEventData_t *e)
{
	struct gpu_state *g = gpu_by_handle(w, e->device);
	int gi = e->gpuInstanceId == NO_ID ? -1 : (int)e->gpuInstanceId;
	int ci = e->computeInstanceId == NO_ID ? -1 : (int)e->computeInstanceId;

	if (!g) {
		char uuid[NODE_UUID_MAX];
		/* not one of our handles: try its UUID (a MIG handle, or a library that re-issues handles) */
		if (w->nv->device_get_uuid(e->device, uuid, sizeof(uuid)) != NVML_SUCCESS)
			return;
		for (size_t i = 0; i < w->n_gpus && !g; i++)
			if (streq(w->gpus[i].uuid, uuid))
				g = &w->gpus[i];
		if (!g)
			return;
	}
	if (e->eventType & nvmlEventTypeXidCriticalError) {
		handle_xid(w, g, (unsigned)e->eventData, gi, ci, "nvml", NULL);
	} else if (e->eventType & nvmlEventTypeDoubleBitEccError) {
		/* a DBE is what XID 48 reports, so the XID policy decides for both (DP_DISABLE_HEALTHCHECKS=48) */
		if (xid_policy_is_critical(&w->o.policy, 48))
			gpu_fault(w, g, gi, ci, HEALTH_ECC_DBE, 48, false, "nvml",
				  "double-bit ECC error (uncorrectable, XID 48 GPU_ECC_DBE)");
		else
			report_info(w, HEALTH_ECC_DBE, g, "nvml", 48,
				    "double-bit ECC error; ignored: XID 48 is in DP_DISABLE_HEALTHCHECKS");
	} else if (e->eventType & nvmlEventTypeSingleBitEccError) {
		report_info(w, HEALTH_ECC_SBE, g, "nvml", 0, "single-bit ECC error (corrected); no action");
	}
}

/* Is the GPU answering? 0 yes, else the NVML code of the failing call. */
static nvmlReturn_t probe_gpu(struct health_watcher *w, struct gpu_state *g)
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
	g->h = h;
	return NVML_SUCCESS;
}

/* Register events for one GPU (lock held). Reports what could not be done. */
static void register_gpu(struct health_watcher *w, struct gpu_state *g)
{
	unsigned long long supported = EVENT_MASK;
	nvmlReturn_t r;

	if (!w->set || g->registered)
		return;
	r = w->nv->device_get_handle_by_index(g->index, &g->h);
	if (r == NVML_SUCCESS && NVML_HAS(w->nv, device_get_supported_event_types))
		r = w->nv->device_get_supported_event_types(g->h, &supported);
	if (r == NVML_SUCCESS && !(supported & EVENT_MASK))
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		r = w->nv->device_register_events(g->h, EVENT_MASK & supported, w->set);
	if (r == NVML_SUCCESS) {
		g->registered = true;
	} else if (r == NVML_ERROR_NOT_SUPPORTED) {
		/* upstream #1562: an old GPU is not an unhealthy one */
		g->registered = true;
		report_info(w, HEALTH_UNSUPPORTED, g, "nvml", 0,
			    "GPU is too old to support health checking through NVML events; the kernel log and "
			    "NVML probes still apply");
	} else if (r == NVML_ERROR_GPU_IS_LOST) {
		gpu_lost(w, g, "nvml", 0, "nvmlDeviceRegisterEvents answered GPU_IS_LOST");
	} else {
		char reason[256];
		snprintf(reason, sizeof(reason), "cannot register NVML health events: %s", nvml_strerror(w->nv, r));
		gpu_fault(w, g, -1, -1, HEALTH_NVML_ERROR, 0, false, "nvml", reason);
	}
}

/* When the event wait fails, find out which GPUs really are gone instead of marking all (#426). */
static void probe_all(struct health_watcher *w, const char *source)
{
	for (size_t i = 0; i < w->n_gpus; i++)
		if (probe_gpu(w, &w->gpus[i]) == NVML_ERROR_GPU_IS_LOST)
			gpu_lost(w, &w->gpus[i], source, 0, "NVML answered GPU_IS_LOST");
}

static bool wait_stop(struct health_watcher *w, unsigned ms)
{
	struct pollfd p = {.fd = w->stop_pipe[0], .events = POLLIN};
	if (atomic_load(&w->stop))
		return true;
	(void)poll(&p, 1, (int)ms);
	return atomic_load(&w->stop);
}

static void *events_main(void *arg)
{
	struct health_watcher *w = arg;

	while (!atomic_load(&w->stop)) {
		nvmlEventData_t e = {0};
		nvmlReturn_t r = w->nv->event_set_wait(w->set, &e, w->o.wait_ms);

		if (r == NVML_ERROR_TIMEOUT)
			continue;
		pthread_mutex_lock(&w->lock);
		if (r == NVML_SUCCESS) {
			w->wait_failing = false;
			handle_nvml_event(w, &e);
		} else {
			if (!w->wait_failing)
				report_info(w, HEALTH_SOURCE_ERROR, NULL, "nvml", 0,
					    "nvmlEventSetWait failed: %s; probing each GPU instead of marking all "
					    "unhealthy",
					    nvml_strerror(w->nv, r));
			w->wait_failing = true;
			probe_all(w, "probe");
		}
		pthread_mutex_unlock(&w->lock);
		if (r != NVML_SUCCESS && wait_stop(w, w->o.wait_ms))
			break;
	}
	return NULL;
}

/* ---- kernel log ---- */

struct klog {
	int fd;
	bool is_kmsg; /* character device: one record per read(), poll()able */
	int ino_fd;   /* inotify for a text file */
	off_t off;
	char buf[KLOG_LINE_MAX];
	size_t len;
	struct xid_kmsg_parser parser;
	dev_t dev;
	ino_t ino;
};

static struct gpu_state *gpu_by_pci(struct health_watcher *w, const struct pci_addr *a)
{
	for (size_t i = 0; i < w->n_gpus; i++)
		if (w->gpus[i].have_pci && pci_addr_equal(&w->gpus[i].pci, a))
			return &w->gpus[i];
	return NULL;
}

static void klog_line(struct health_watcher *w, struct klog *k, const char *line)
{
	struct xid_kmsg x;
	struct gpu_state *g;

	if (xid_kmsg_parse_line(&k->parser, line, &x) != 1)
		return;
	pthread_mutex_lock(&w->lock);
	g = gpu_by_pci(w, &x.pci);
	if (g)
		handle_xid(w, g, x.xid, -1, -1, "kmsg", x.text);
	else
		report_info(w, HEALTH_SOURCE_ERROR, NULL, "kmsg", x.xid,
			    "kernel log XID %u for PCI %s, which is none of this node's GPUs", x.xid, x.pci_text);
	pthread_mutex_unlock(&w->lock);
}

static int klog_open(struct health_watcher *w, struct klog *k, bool at_end)
{
	struct stat st;

	k->fd = open(w->klog, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0)
		return -errno;
	if (fstat(k->fd, &st) < 0) {
		int r = -errno;
		close(k->fd);
		k->fd = -1;
		return r;
	}
	k->is_kmsg = S_ISCHR(st.st_mode);
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	k->len = 0;
	/* like tail -f: only what is written from now on (/dev/kmsg: SEEK_END skips old records) */
	k->off = at_end ? lseek(k->fd, 0, SEEK_END) : 0;
	if (k->off < 0)
		k->off = 0;
	return 0;
}

/* Read what is new; split into lines. Returns -errno when the file must be reopened. */
static int klog_read(struct health_watcher *w, struct klog *k)
{
	for (;;) {
		ssize_t n;
		if (k->is_kmsg) {
			char rec[KLOG_LINE_MAX];
			n = read(k->fd, rec, sizeof(rec) - 1);
			if (n < 0 && errno == EPIPE)
				continue; /* records overwritten before we read them; go on with the next */
			if (n <= 0)
				return n < 0 && errno != EAGAIN ? -errno : 0;
			rec[n] = '\0';
			klog_line(w, k, rec);
			continue;
		}
		struct stat st;
		if (fstat(k->fd, &st) == 0 && st.st_size < k->off) {
			k->off = 0; /* truncated (copytruncate rotation) */
			k->len = 0;
		}
		n = pread(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len, k->off);
		if (n <= 0)
			return n < 0 ? -errno : 0;
		k->off += n;
		k->len += (size_t)n;
		k->buf[k->len] = '\0';
		char *start = k->buf, *nl;
		while ((nl = memchr(start, '\n', k->len - (size_t)(start - k->buf)))) {
			*nl = '\0';
			klog_line(w, k, start);
			start = nl + 1;
		}
		k->len -= (size_t)(start - k->buf);
		memmove(k->buf, start, k->len);
		if (k->len == sizeof(k->buf) - 1)
			k->len = 0; /* a line longer than the buffer: drop it */
	}
}

/* A text log replaced by rotation: is the path now another file? */
static bool klog_rotated(struct health_watcher *w, const struct klog *k)
{
	struct stat st;
	return !k->is_kmsg && stat(w->klog, &st) == 0 && (st.st_dev != k->dev || st.st_ino != k->ino);
}

static void *kmsg_main(void *arg)
{
	struct health_watcher *w = arg;
	struct klog k = {.fd = -1, .ino_fd = -1};
	int r;

	/* reported once; then tried again every second (a log file may appear later) */
	for (bool told = false; (r = klog_open(w, &k, true)) < 0; told = true) {
		if (!told) {
			pthread_mutex_lock(&w->lock);
			report_info(w, HEALTH_SOURCE_ERROR, NULL, "kmsg", 0,
				    "cannot read kernel log %s: %s; XIDs that NVML does not deliver (79 fallen off the "
				    "bus) will be missed until it can be read; mount /dev/kmsg or give a log file",
				    w->klog, strerror(-r));
			pthread_mutex_unlock(&w->lock);
		}
		if (wait_stop(w, 1000))
			return NULL;
	}
	if (!k.is_kmsg) {
		k.ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (k.ino_fd >= 0)
			(void)inotify_add_watch(k.ino_fd, w->klog,
						IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB);
	}
	while (!atomic_load(&w->stop)) {
		struct pollfd p[2] = {{.fd = w->stop_pipe[0], .events = POLLIN},
				      {.fd = k.is_kmsg ? k.fd : k.ino_fd, .events = POLLIN}};
		/* a text file is also re-read each second: inotify may not see writes on some mounts */
		(void)poll(p, p[1].fd >= 0 ? 2 : 1, k.is_kmsg ? -1 : 1000);
		if (atomic_load(&w->stop))
			break;
		if (!k.is_kmsg && k.ino_fd >= 0 && (p[1].revents & POLLIN)) {
			char ev[4096];
			while (read(k.ino_fd, ev, sizeof(ev)) > 0)
				;
		}
		r = klog_read(w, &k);
		if (r < 0 || klog_rotated(w, &k)) {
			/* finish the old file, then follow the new one from its start */
			close(k.fd);
			if (klog_open(w, &k, false) < 0) {
				k.fd = -1;
				if (wait_stop(w, 1000))
					break;
				continue;
			}
			if (k.ino_fd >= 0) {
				close(k.ino_fd);
				k.ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
				if (k.ino_fd >= 0)
					(void)inotify_add_watch(k.ino_fd, w->klog,
								IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB);
			}
			(void)klog_read(w, &k);
		}
	}
	if (k.fd >= 0)
		close(k.fd);
	if (k.ino_fd >= 0)
		close(k.ino_fd);
	return NULL;
}

/* ---- recovery and MIG poll ---- */

static void recover_tick(struct health_watcher *w)
{
	uint64_t now = now_ms();

	if (w->o.quiet_ms == 0)
		return;
	for (size_t i = 0; i < w->n_gpus; i++) {
		struct gpu_state *g = &w->gpus[i];
		bool permanent = false, whole = false;
		nvmlReturn_t r;

		if (!g->n_faults || now - g->last_bad_ms < w->o.quiet_ms)
			continue;
		for (size_t f = 0; f < g->n_faults; f++) {
			permanent |= g->faults[f].permanent;
			whole |= g->faults[f].gi < 0;
		}
		if (permanent)
			continue;
		r = probe_gpu(w, g);
		if (r == NVML_ERROR_GPU_IS_LOST) {
			gpu_lost(w, g, "probe", 0, "NVML answered GPU_IS_LOST during the recovery check");
			continue;
		}
		if (r != NVML_SUCCESS) {
			g->last_bad_ms = now; /* still failing: wait another quiet period */
			continue;
		}
		/* all-or-nothing per GPU: one event for the whole GPU, else one per MIG instance */
		for (size_t f = 0; f < g->n_faults; f++) {
			struct health_event ev;
			if (whole && g->faults[f].gi >= 0)
				continue;
			event_init(&ev, HEALTH_RECOVERED, g, "probe");
			ev.gi = g->faults[f].gi;
			ev.ci = g->faults[f].ci;
			ev.xid = g->faults[f].xid;
			ev.transition = true;
			snprintf(ev.reason, sizeof(ev.reason), "no error for %u ms and NVML answers normally; was: %s",
				 w->o.quiet_ms, g->faults[f].reason);
			emit(w, &ev);
			if (whole)
				break;
		}
		g->n_faults = 0;
		if (!g->registered)
			register_gpu(w, g);
	}
}

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

void health_replay(struct health_watcher *w)
{
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->n_gpus; i++)
		for (size_t f = 0; f < w->gpus[i].n_faults; f++) {
			const struct fault *ft = &w->gpus[i].faults[f];
			struct health_event ev;
			event_init(&ev, ft->kind, &w->gpus[i], "replay");
			ev.gi = ft->gi;
			ev.ci = ft->ci;
			ev.xid = ft->xid;
			ev.healthy = false;
			ev.transition = true;
			snprintf(ev.reason, sizeof(ev.reason), "%s", ft->reason);
			emit(w, &ev);
		}
	pthread_mutex_unlock(&w->lock);
}

/*
 * A GPU lost only by NVML's own answer (GPU_IS_LOST, no XID 79) that NVML reads normally again was
 * reset or re-attached: it is healthy again (docs/reliability.md, "GPU lost / recovered"). An XID 79
 * or any other fault on it keeps it as it is.
 */
static void nvml_lost_back(struct health_watcher *w, struct gpu_state *g)
{
	struct health_event ev;

	if (!g->n_faults)
		return;
	for (size_t f = 0; f < g->n_faults; f++)
		if (g->faults[f].kind != HEALTH_GPU_LOST || g->faults[f].xid != 0 || g->faults[f].gi >= 0)
			return;
	if (probe_gpu(w, g) != NVML_SUCCESS)
		return;
	event_init(&ev, HEALTH_RECOVERED, g, "poll");
	ev.transition = true;
	snprintf(ev.reason, sizeof(ev.reason), "NVML reads the GPU normally again; was: %s", g->faults[0].reason);
	g->n_faults = 0;
	emit(w, &ev);
	if (!g->registered)
		register_gpu(w, g);
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
			gpu_lost(w, &w->gpus[i], "poll", 0, "NVML answered GPU_IS_LOST");
		else
			nvml_lost_back(w, &w->gpus[i]);
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
	event_init(&ev, HEALTH_MIG_CHANGED, NULL, "poll");
	snprintf(ev.reason, sizeof(ev.reason), "MIG layout changed: re-enumerate resources");
	ev.node = fresh;
	emit(w, &ev);
	pthread_mutex_unlock(&w->lock);
}

static void *timer_main(void *arg)
{
	struct health_watcher *w = arg;
	/* no baseline (the layout changed during start): poll at once */
	uint64_t next_poll = w->snap ? now_ms() + w->o.mig_poll_ms : 0;
	unsigned tick = w->o.wait_ms;

	if (w->o.mig_poll_ms)
		tick = MIN(tick, w->o.mig_poll_ms);
	while (!wait_stop(w, tick)) {
		pthread_mutex_lock(&w->lock);
		recover_tick(w);
		pthread_mutex_unlock(&w->lock);
		if (w->o.mig_poll_ms && now_ms() >= next_poll) {
			mig_poll(w);
			next_poll = now_ms() + w->o.mig_poll_ms;
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

static bool mig_exists(const struct node_gpu *g, int gi, int ci)
{
	for (size_t m = 0; m < g->n_migs; m++)
		if (g->migs[m].gi == (unsigned)gi && (ci < 0 || g->migs[m].ci == (unsigned)ci))
			return true;
	return false;
}

/* Take over the faults of the watcher being replaced, matched by UUID (lock of w held). */
static void inherit_faults(struct health_watcher *w, struct health_watcher *old, const struct node *n)
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
				struct health_event ev;
				if (ft->gi >= 0 && !mig_exists(&n->gpus[i], ft->gi, ft->ci))
					continue;
				g->faults[g->n_faults++] = *ft;
				event_init(&ev, ft->kind, g, "inherited");
				ev.gi = ft->gi;
				ev.ci = ft->ci;
				ev.xid = ft->xid;
				ev.healthy = false;
				ev.transition = true;
				snprintf(ev.reason, sizeof(ev.reason), "%s", ft->reason);
				emit(w, &ev);
			}
			g->last_bad_ms = o->last_bad_ms;
		}
	}
	pthread_mutex_unlock(&old->lock);
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
	w->o.inherit = NULL; /* only read during start; the caller frees it after */
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
		inherit_faults(w, (struct health_watcher *)o->inherit, n);
	for (size_t i = 0; i < n->n_gpus; i++)
		if (n->gpus[i].lost)
			gpu_lost(w, &w->gpus[i], "nvml", 0, "NVML answered GPU_IS_LOST when the node was read");
	if (!o->policy.disabled && NVML_HAS(nv, event_set_create) && NVML_HAS(nv, device_register_events) &&
	    NVML_HAS(nv, event_set_wait) && NVML_HAS(nv, event_set_free)) {
		nvmlReturn_t rc = nv->event_set_create(&w->set);
		if (rc != NVML_SUCCESS) {
			w->set = NULL;
			report_info(w, HEALTH_SOURCE_ERROR, NULL, "nvml", 0, "nvmlEventSetCreate failed: %s",
				    nvml_strerror(nv, rc));
		}
		for (size_t i = 0; w->set && i < w->n_gpus; i++)
			if (!gpu_is_lost(&w->gpus[i]))
				register_gpu(w, &w->gpus[i]);
	} else if (!o->policy.disabled) {
		report_info(w, HEALTH_SOURCE_ERROR, NULL, "nvml", 0,
			    "this NVML has no event API; only the kernel log and probes report health");
	}
	pthread_mutex_unlock(&w->lock);
	if (w->set && pthread_create(&w->events_thread, NULL, events_main, w) == 0)
		w->have_events = true;
	if (!o->policy.disabled && w->klog[0] && (!o->kernel_log || *o->kernel_log) &&
	    pthread_create(&w->kmsg_thread, NULL, kmsg_main, w) == 0)
		w->have_kmsg = true;
	if (pthread_create(&w->timer_thread, NULL, timer_main, w) == 0)
		w->have_timer = true;
	if (!w->have_timer || (w->set && !w->have_events)) {
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
	if (w->have_events)
		pthread_join(w->events_thread, NULL);
	if (w->have_kmsg)
		pthread_join(w->kmsg_thread, NULL);
	if (w->have_timer)
		pthread_join(w->timer_thread, NULL);
	if (w->set)
		w->nv->event_set_free(w->set);
	if (w->stop_pipe[0] >= 0)
		close(w->stop_pipe[0]);
	if (w->stop_pipe[1] >= 0)
		close(w->stop_pipe[1]);
	node_free(w->snap);
	free(w->gpus);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
