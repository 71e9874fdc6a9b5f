/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's side of the health watcher (plugin/health.h), in daemon_health.c: the watcher's
 * callback queues transitions from the watcher threads and wakes the main thread through an
 * eventfd; the main thread applies them to the resources and wakes ListAndWatch. A unit of the
 * plugin daemon (daemon.c owns it): the watcher threads touch nothing but this struct's queue.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/xid.h"
#include "plugin/config.h"
#include "plugin/daemon_serve.h"
#include "plugin/node_health.h"
#include "plugin/resources.h"
#include "util/err.h"

struct health_item;

struct daemon_health {
	struct health_watcher *hw; /* NULL: no watcher runs */
	int evfd;                  /* written by the watcher threads, polled by the main thread */
	pthread_mutex_t qlock;
	bool qlock_ready;
	/* under qlock */
	struct health_item *q_head, **q_tail;
	bool mig_changed;
	/* --node-health: the Node object hears of each transition (plugin/node_health.h); NULL: off */
	struct node_health_reporter *nh;
	char *nh_node, *nh_kubeconfig; /* what nh was started with */
};

/*
 * Read upstream's env-only XID knobs (docs/reference/device-plugin.md §1, §4; a malformed entry is
 * logged and skipped, as upstream), create the eventfd and the queue. On failure
 * daemon_health_fini() still releases what was made.
 */
int daemon_health_init(struct daemon_health *h, struct gerr *err);
/*
 * (Re)start the watcher on node (none without nv or node); failing to is logged, devices stay. Node
 * health follows cfg: started, stopped or restarted as --node-health and its node say, and told the
 * node's GPUs.
 */
void daemon_health_restart(struct daemon_health *h, struct nvml *nv, const struct node *node,
			   const struct plugin_config *cfg);
/*
 * Apply what the watcher queued to rs (main thread, after the eventfd woke it) under the servers'
 * lock, telling ListAndWatch when a device changed. True when the watcher saw the device layout
 * change (MIG re-partition, GPU added or removed): the caller rebuilds.
 */
bool daemon_health_drain(struct daemon_health *h, struct resource_set *rs, const struct node *node,
			 struct daemon_servers *s);
/* Stop the watcher (joins its threads), free what is still queued, close the eventfd. Idempotent. */
void daemon_health_fini(struct daemon_health *h);
/*
 * A rebuilt resource set starts healthy: carry over what the old one knew (an XID does not repeat
 * itself), by physical GPU and MIG instance, since replica counts and names may have changed.
 */
void daemon_carry_health(const struct resource_set *old, const struct node *on, struct resource_set *rs,
			 const struct node *n);
