/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watcher: one background thread per source that turns NVML events, kernel-log XIDs and
 * NVML answers into health transitions of physical GPUs (or MIG instances on them), and notices MIG
 * re-partitions. It only reports through a callback; the caller (the plugin) applies the event to
 * its resources with resources_set_health() and re-sends ListAndWatch.
 *
 * What differs from upstream (docs/reference/device-plugin.md §4, §11):
 * - ECC double-bit events make the GPU unhealthy (upstream skips every non-XID event).
 * - events are mapped to the GPU by the handle we registered, so a GPU whose UUID can no longer be
 *   read is still named, and a wait error never marks every GPU unhealthy (#426).
 * - a GPU unhealthy for an application XID returns to healthy once no new error came for the quiet
 *   period and NVML answers normally for it (#189, #234); one that needs a reset (reset-class XID,
 *   DBE) only once NVML also reports it reset and clean; a lost GPU stays unhealthy (§4.1).
 * - the kernel log is a second source, for XIDs NVML does not deliver (79 "fallen off the bus").
 * - node_load() every mig_poll_ms: a MIG layout change or a GPU gone lost is reported (#240, #992).
 *
 * Wiring it into the plugin (what the daemon is expected to do):
 *
 *	struct health_options ho;
 *	health_options_default(&ho);
 *	ho.policy = cfg->xid_policy;  (DP_*_HEALTHCHECKS, built with the config)
 *	ho.root = cfg.root; ho.cb = on_health; ho.userdata = daemon;
 *	r = health_start(nv, node, &ho, &watcher, &err);
 *
 *	static void on_health(struct health_event *ev, void *userdata)   // on a watcher thread
 *	{
 *		log it: kind name, ev->uuid, ev->index, ev->gi/ci, ev->xid, ev->reason, ev->source;
 *		if (ev->kind == HEALTH_MIG_CHANGED) {
 *			hand TAKE_PTR(ev->node) to the main loop (eventfd/pipe); it rebuilds the resources,
 *			restarts the servers. Never call health_stop() from here.
 *		} else if (ev->transition) {
 *			lock; changed = resources_set_health(rs, node, ev->uuid, ev->gi, ev->ci, ev->healthy,
 *							   ev->reason) > 0; unlock;
 *			if (changed) wake every ListAndWatch stream;
 *		}
 *	}
 *
 * Resources rebuilt from scratch (after a MIG change, a SIGHUP reload) start all healthy, but a
 * rebuild is no recovery. Either keep the watcher and call health_replay() once the new set is in
 * place, or start a new watcher with options.inherit = the old one (then stop the old one): every
 * fault still active is reported again (transition=true), so the plugin keeps no memory of its own
 * about which GPUs are unhealthy. Apply those events before the new servers send their first
 * ListAndWatch, or kubelet sees the GPU Healthy for a moment.
 */
#pragma once

#include <stdbool.h>

#include "util/err.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/xid.h"

enum health_kind {
	HEALTH_XID,          /* an XID (NVML event or kernel log); healthy=false */
	HEALTH_ECC_DBE,      /* double-bit ECC event (no XID number); healthy=false, needs a reset */
	HEALTH_ECC_SBE,      /* single-bit ECC event: informational, no transition */
	HEALTH_GPU_LOST,     /* NVML says GPU_IS_LOST, or XID 79; healthy=false, permanent */
	HEALTH_NVML_ERROR,   /* registering events failed for this GPU; healthy=false, recoverable */
	HEALTH_RECOVERED,    /* back to healthy (quiet period, and a reset where needed); healthy=true */
	HEALTH_UNSUPPORTED,  /* GPU too old for events (NOT_SUPPORTED): informational, stays healthy */
	HEALTH_SOURCE_ERROR, /* a source failed (event wait, kernel log unreadable): informational */
	HEALTH_MIG_CHANGED,  /* the MIG layout differs from the last snapshot; see ev->node */
};

struct health_event {
	enum health_kind kind;
	bool transition;          /* true when `healthy` is a new state for (uuid, gi, ci) to apply */
	bool healthy;             /* the new state when transition */
	char uuid[NODE_UUID_MAX]; /* physical GPU UUID; "" when the event concerns no single GPU */
	int index;                /* GPU index in the node, -1 when no GPU */
	int gi, ci;               /* MIG GPU/compute instance ids; -1 = whole GPU (or all CIs of gi) */
	unsigned xid;             /* XID number, 0 when none */
	const char *source;       /* "nvml", "kmsg", "probe", "poll" */
	char reason[256];         /* human words: "XID 79 GPU_HAS_FALLEN_OFF_THE_BUS (...)" */
	/*
	 * HEALTH_MIG_CHANGED only: the new node snapshot. The callback may take it (TAKE_PTR(ev->node));
	 * otherwise it is freed after the callback returns.
	 */
	struct node *node;
};

/*
 * Called from the watcher threads, never concurrently with itself (the watcher serializes). It must
 * not call health_stop().
 */
typedef void (*health_cb)(struct health_event *ev, void *userdata);

/* The strings (root, kernel_log) and inherit are borrowed during health_start() only. */
struct health_options {
	const char *root;       /* --root prefix for /dev/kmsg, sysfs, procfs (NULL = "/") */
	const char *kernel_log; /* file to follow like tail -f; NULL = <root>/dev/kmsg; "" = no kernel log */
	struct xid_policy policy;
	unsigned wait_ms;     /* NVML event wait slice; also the tick for recovery checks (default 100) */
	unsigned quiet_ms;    /* recovery after this long without a new error; 0 = never recover */
	unsigned mig_poll_ms; /* node_load() interval for MIG/lost detection; 0 = off */
	health_cb cb;
	void *userdata;
	/*
	 * A watcher being replaced (after a rebuild or a reload), or NULL: the new one takes over its
	 * faults -- a rebuild is no recovery -- and reports them from health_start() (source
	 * "inherited", transition=true), keeping their quiet-period clocks. MIG faults whose instance
	 * no longer exists are dropped. The caller stops the old watcher after health_start().
	 */
	const struct health_watcher *inherit;
};

/* Defaults: wait 100 ms, quiet 5 min, MIG poll 10 s, kernel log <root>/dev/kmsg, default policy. */
void health_options_default(struct health_options *o);

struct health_watcher;

/*
 * Start watching the GPUs of node n (the watcher keeps its own snapshot; n may be freed after).
 * NVML events are registered for every GPU; a GPU that cannot be registered is reported through
 * the callback (HEALTH_UNSUPPORTED or HEALTH_NVML_ERROR) before this returns. Fails only when no
 * thread can be started.
 */
int health_start(struct nvml *nv, const struct node *n, const struct health_options *o, struct health_watcher **ret,
		 struct gerr *err);
/*
 * Report every fault still active again through the callback, on the calling thread (which must not
 * hold a lock the callback takes). For a resource set rebuilt after the faults were first reported.
 */
void health_replay(struct health_watcher *w);

/* Stop the threads (returns within about wait_ms) and free the watcher. NULL is a no-op. */
void health_stop(struct health_watcher *w);
DEFINE_CLEANUP_FUNC(struct health_watcher, health_stop)

/* Stable names for logs: "xid", "ecc-dbe", "gpu-lost", "recovered", "mig-changed", ... */
const char *health_kind_name(enum health_kind k);
