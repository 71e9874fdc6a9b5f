/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the health watcher (not for other modules; see health.h). Three threads, one lock:
 *   events: the NVML event watcher (nvml/watch.h) in wait_ms slices: XID, ECC DBE/SBE (health_watch.c)
 *   kmsg:   follows the kernel log (/dev/kmsg records or a text file like tail -f) for "NVRM: Xid"
 *           (health_klog.c)
 *   timer:  every wait_ms checks recovery; every mig_poll_ms reloads the node (MIG layout, lost GPUs)
 *           (health_watch.c)
 * What a fault is, the XID policy, recovery, replay and inheritance live in health.c. The lock
 * guards the per-GPU state and serializes the callback; functions taking a watcher with "(lock
 * held)" expect the caller to hold it.
 */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "plugin/health.h"
#include "nvml/watch.h"

#define MAX_FAULTS 16 /* per GPU: the whole GPU plus at most 7 MIG instances, with room */

struct fault {
	int gi, ci; /* -1: whole GPU / all CIs */
	enum health_kind kind;
	unsigned xid;
	enum xid_recovery recovery; /* what brings it back (nvml/xid.h); the strictest of its errors */
	char reason[256];
};

struct gpu_state {
	char uuid[NODE_UUID_MAX];
	unsigned index;
	struct pci_addr pci;
	bool have_pci;
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
	struct gpu_state *gpus; /* slot i of the NVML watch is gpus[i] */
	size_t n_gpus;
	struct node *snap;        /* latest layout, compared by the MIG poll */
	struct nvml_watch *watch; /* NULL: no NVML events (disabled, no event API, set not created) */
	pthread_t events_thread, kmsg_thread, timer_thread;
	bool have_events, have_kmsg, have_timer;
	int stop_pipe[2];
	atomic_bool stop;
};

uint64_t health_now_ms(void);

/* ---- health.c: reporting and faults (lock held) ---- */
void health_emit(struct health_watcher *w, struct health_event *ev);
void health_event_init(struct health_event *ev, enum health_kind kind, const struct gpu_state *g, const char *source);
void health_report_info(struct health_watcher *w, enum health_kind kind, const struct gpu_state *g, const char *source,
			unsigned xid, const char *fmt, ...) _printf_(6, 7);
void health_gpu_fault(struct health_watcher *w, struct gpu_state *g, int gi, int ci, enum health_kind kind,
		      unsigned xid, enum xid_recovery recovery, const char *source, const char *reason);
bool health_gpu_is_lost(const struct gpu_state *g);
void health_gpu_lost(struct health_watcher *w, struct gpu_state *g, const char *source, unsigned xid, const char *why);
/* An XID from either source, with the policy applied. */
void health_handle_xid(struct health_watcher *w, struct gpu_state *g, unsigned xid, int gi, int ci, const char *source,
		       const char *text);
void health_recover_tick(struct health_watcher *w);
void health_nvml_lost_back(struct health_watcher *w, struct gpu_state *g);
/* Take over the faults of the watcher being replaced, matched by UUID. */
void health_inherit_faults(struct health_watcher *w, struct health_watcher *old, const struct node *n);

/* ---- health_watch.c (lock held) ---- */
/* Is the GPU answering? NVML_SUCCESS yes, else the NVML code of the failing call. */
nvmlReturn_t health_probe_gpu(struct health_watcher *w, const struct gpu_state *g);
/*
 * NVML's own word that the GPU was reset and is clean: the recovery action field answers NONE and
 * no retired page or row remap is pending. False, with why filled, when NVML says otherwise or
 * cannot say (a driver without the field).
 */
bool health_gpu_clean(struct health_watcher *w, const struct gpu_state *g, char *why, size_t size);
/* Register NVML events for one GPU (again); reports what could not be done. */
void health_register_gpu(struct health_watcher *w, struct gpu_state *g);
/* Sleep ms unless health_stop() was called; true when stopping. */
bool health_wait_stop(struct health_watcher *w, unsigned ms);

/* ---- health_klog.c ---- */
void *health_kmsg_main(void *arg);
