/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one NVML event watcher (the plugin's health checks and the exporter's XID counters both use
 * it): an event set with a list of GPUs, each registered for the event types the caller asks for,
 * and a loop that waits on the set and hands every event to a callback, mapped to the GPU it came
 * from. A failed wait is handed over too and never ends the loop: the loop waits wait_ms and waits
 * again, so events are delivered again as soon as NVML answers (the plugin's behaviour since #426;
 * the exporter's old loop stopped counting XIDs after the first failure).
 *
 * Like the rest of src/nvml/ it does not log: what happened comes back as events and -errno with
 * NVML's words in a struct gerr, and the caller decides what to say. Facts:
 * docs/reference/nvml-abi.md (events).
 *
 *	r = nvml_watch_new(nv, NVML_WATCH_HEALTH_TYPES, n->n_gpus, &w, &err);   // -ENOSYS: no event API
 *	for (i...) { nvml_watch_set_gpu(w, i, n->gpus[i].index, n->gpus[i].uuid);
 *	             r = nvml_watch_register(w, i, &err); }                    // -EOPNOTSUPP: too old, -ENODEV: lost
 *	thread: nvml_watch_run(w, 100, on_event, userdata);                    // returns after nvml_watch_interrupt()
 *	nvml_watch_interrupt(w); join; nvml_watch_free(w);
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"
#include "nvml/nvml.h"

/* The event types each user asks for (nvml.h "Event Types"). */
#define NVML_WATCH_HEALTH_TYPES \
	(nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError)
#define NVML_WATCH_XID_TYPES (nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError)

enum nvml_watch_kind {
	NVML_WATCH_XID,        /* eventData is the XID number */
	NVML_WATCH_ECC_DBE,    /* double-bit (uncorrectable) ECC error */
	NVML_WATCH_ECC_SBE,    /* single-bit (corrected) ECC error */
	NVML_WATCH_MIG_CHANGE, /* a GPU or compute instance was created or destroyed */
	NVML_WATCH_WAIT_ERROR, /* nvmlEventSetWait failed; the loop waits wait_ms and goes on */
};

struct nvml_watch_event {
	enum nvml_watch_kind kind;
	size_t gpu;   /* the caller's GPU slot (nvml_watch_set_gpu); unused for WAIT_ERROR */
	int gi, ci;   /* MIG GPU/compute instance ids, -1 when the event names none */
	unsigned xid; /* NVML_WATCH_XID only */
	/* NVML_WATCH_WAIT_ERROR only */
	int error;           /* -errno of the failed wait (nvml_errno) */
	bool first;          /* the first failure after a successful wait (or since the start) */
	const char *message; /* NVML's words for the failure */
};

/* Called on the thread running nvml_watch_run(), one event at a time; no watch lock is held. */
typedef void (*nvml_watch_cb)(const struct nvml_watch_event *ev, void *userdata);

struct nvml_watch;

/*
 * An event set for n_gpus GPU slots, to be registered for `types` (masked by what each GPU
 * supports). -ENOSYS when this NVML has no event API (an optional part of the ABI), else the errno
 * of nvmlEventSetCreate; err says which.
 */
int nvml_watch_new(struct nvml *nv, unsigned long long types, size_t n_gpus, struct nvml_watch **ret, struct gerr *err);

/* Name slot i: the GPU with NVML index `index` and this UUID (events are matched by handle, then UUID). */
void nvml_watch_set_gpu(struct nvml_watch *w, size_t i, unsigned index, const char *uuid);

/*
 * Register slot i's events. May be called again (from any thread, also while nvml_watch_run() waits)
 * for a slot that is not registered yet, e.g. after the GPU recovered; a registered slot is left
 * alone. 0: registered. -EOPNOTSUPP: the GPU supports none of the types (the slot counts as done:
 * an old GPU is not an unhealthy one, upstream #1562). -ENODEV: the GPU is lost. Other -errno:
 * NVML failed (nvml_errno); try again later. err->msg holds NVML's words.
 */
int nvml_watch_register(struct nvml_watch *w, size_t i, struct gerr *err);
bool nvml_watch_registered(struct nvml_watch *w, size_t i);

/*
 * Wait for events in wait_ms slices and pass each to cb, until nvml_watch_interrupt(). An event of a
 * device that is none of the slots (by handle, then by UUID) is skipped. A failed wait is passed as
 * NVML_WATCH_WAIT_ERROR, then the loop sleeps wait_ms (cut short by an interrupt) and waits again.
 */
void nvml_watch_run(struct nvml_watch *w, unsigned wait_ms, nvml_watch_cb cb, void *userdata);

/* Make nvml_watch_run() return within about wait_ms (or when a hung NVML call returns). */
void nvml_watch_interrupt(struct nvml_watch *w);

/* Free the set; no nvml_watch_run() may be running. NULL is a no-op. */
void nvml_watch_free(struct nvml_watch *w);
DEFINE_CLEANUP_FUNC(struct nvml_watch, nvml_watch_free)
