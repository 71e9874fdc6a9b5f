/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's side of the health watcher (plugin/health.h, the device plugin's: both drivers
 * judge a GPU by one rule), in daemon_health.c: the watcher's callback queues transitions and MIG
 * re-partitions from the watcher threads and wakes the daemon's loop through an eventfd; the loop
 * takes them and applies them to the published devices. A unit of the DRA daemon (daemon.c owns it).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/xid.h"
#include "util/err.h"

/* One transition of a GPU (gi < 0) or of MIG devices on it. */
struct dra_health_item {
	struct dra_health_item *next;
	char uuid[NODE_UUID_MAX];
	int gi, ci;
	bool healthy;
	const char *taint_key; /* NVIDIA's key for why (dra/devices.h), NULL when healthy */
	char taint_value[16];  /* the XID, "" for none */
	char reason[256];
};

struct dra_health {
	struct health_watcher *hw; /* NULL: no watcher runs */
	int evfd;                  /* written by the watcher threads, polled by the loop */
	pthread_mutex_t lock;
	bool lock_ready;
	/* under lock */
	struct dra_health_item *head, **tail;
	struct node *mig_node; /* the new node snapshot after a layout change, NULL when none */
};

struct dra_health_options {
	const char *root;
	const char *kernel_log; /* NULL: <root>/dev/kmsg; "": none */
	struct xid_policy policy;
	unsigned quiet_ms, mig_poll_ms; /* 0: the watcher's defaults */
};

/* The eventfd and the queue. On failure dra_health_fini() still releases what was made. */
int dra_health_init(struct dra_health *h, struct gerr *err);
/* (Re)start the watcher on node; the old one's faults are carried over. A failure is returned (the caller logs). */
int dra_health_restart(struct dra_health *h, struct nvml *nv, const struct node *node,
		       const struct dra_health_options *o, struct gerr *err);
/*
 * What the watcher queued since the last call (the eventfd is drained): the transitions in order
 * (the caller frees them with dra_health_items_free()), and *ret_node the newest node snapshot when
 * the layout changed (NULL when not; the caller owns it).
 */
struct dra_health_item *dra_health_take(struct dra_health *h, struct node **ret_node);
void dra_health_items_free(struct dra_health_item *it);
/* Stop the watcher (joins its threads), free what is queued, close the eventfd. Idempotent. */
void dra_health_fini(struct dra_health *h);
