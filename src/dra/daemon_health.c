/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's side of the health watcher (daemon_health.h). The watcher threads only queue; the
 * daemon's loop applies. What only informs (an ignored XID, a single-bit ECC error, a source that
 * failed) is logged here, on the watcher's thread, as the device plugin logs it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dra/daemon_health.h"
#include "dra/devices.h"
#include "plugin/health.h"
#include "util/log.h"

/* The taint key of each kind of fault: NVIDIA's where it has one (docs/reference/dra.md §12.2). */
static const char *const taint_keys[] = {
    [HEALTH_XID] = DRA_TAINT_XID,
    [HEALTH_GPU_LOST] = DRA_TAINT_LOST,
    [HEALTH_ECC_DBE] = "ecc-dbe",        /* gpulet's: NVIDIA's monitor does not watch ECC events */
    [HEALTH_NVML_ERROR] = "unmonitored", /* NVIDIA's key; it taints such a GPU with effect None only */
};

/* Watcher thread: queue a transition or a new layout, log what only informs. */
static void on_health(struct health_event *ev, void *userdata)
{
	struct dra_health *h = userdata;
	struct dra_health_item *it = NULL;
	uint64_t one = 1;

	if (ev->kind != HEALTH_MIG_CHANGED && !ev->transition) {
		log_emit(ev->kind == HEALTH_ECC_SBE || ev->kind == HEALTH_UNSUPPORTED ? LOG_LVL_INFO : LOG_LVL_WARN,
			 "health event", "kind=%s uuid=%s index=%d xid=%u source=%s reason=\"%s\"",
			 health_kind_name(ev->kind), ev->uuid, ev->index, ev->xid, ev->source, ev->reason);
		return;
	}
	if (ev->kind != HEALTH_MIG_CHANGED) {
		if (!(it = calloc(1, sizeof(*it))))
			return;
		snprintf(it->uuid, sizeof(it->uuid), "%s", ev->uuid);
		snprintf(it->reason, sizeof(it->reason), "%s", ev->reason);
		it->gi = ev->gi;
		it->ci = ev->ci;
		it->healthy = ev->healthy;
		if (!ev->healthy) {
			it->taint_key = (size_t)ev->kind < ELEMENTSOF(taint_keys) && taint_keys[ev->kind]
					    ? taint_keys[ev->kind]
					    : DRA_TAINT_XID;
			if (ev->xid)
				snprintf(it->taint_value, sizeof(it->taint_value), "%u", ev->xid);
		}
	}
	pthread_mutex_lock(&h->lock);
	if (it) {
		*h->tail = it;
		h->tail = &it->next;
	} else {
		node_free(h->mig_node);
		h->mig_node = TAKE_PTR(ev->node);
	}
	pthread_mutex_unlock(&h->lock);
	if (write(h->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the loop has a wake-up pending anyway */
	}
}

int dra_health_init(struct dra_health *h, struct gerr *err)
{
	*h = (struct dra_health){.evfd = -1};
	h->tail = &h->head;
	h->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->evfd < 0)
		return gerr_set(err, errno, "eventfd: %s", strerror(errno));
	if (pthread_mutex_init(&h->lock, NULL) != 0)
		return gerr_set(err, ENOMEM, "cannot create the health queue's lock");
	h->lock_ready = true;
	return 0;
}

int dra_health_restart(struct dra_health *h, struct nvml *nv, const struct node *node,
		       const struct dra_health_options *o, struct gerr *err)
{
	_cleanup_(health_stopp) struct health_watcher *old = TAKE_PTR(h->hw);
	struct health_options ho;

	health_options_default(&ho);
	ho.root = o->root;
	ho.policy = o->policy;
	if (o->kernel_log)
		ho.kernel_log = o->kernel_log;
	if (o->quiet_ms)
		ho.quiet_ms = o->quiet_ms;
	if (o->mig_poll_ms)
		ho.mig_poll_ms = o->mig_poll_ms;
	ho.cb = on_health;
	ho.userdata = h;
	/* the new watcher takes over the old one's faults; the old one is stopped on return */
	ho.inherit = old;
	return health_start(nv, node, &ho, &h->hw, err);
}

struct dra_health_item *dra_health_take(struct dra_health *h, struct node **ret_node)
{
	struct dra_health_item *list;
	uint64_t cnt;

	if (read(h->evfd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: nothing was signalled, the queue is read anyway */
	}
	pthread_mutex_lock(&h->lock);
	list = h->head;
	h->head = NULL;
	h->tail = &h->head;
	*ret_node = TAKE_PTR(h->mig_node);
	pthread_mutex_unlock(&h->lock);
	return list;
}

void dra_health_items_free(struct dra_health_item *it)
{
	while (it) {
		struct dra_health_item *next = it->next;

		free(it);
		it = next;
	}
}

void dra_health_fini(struct dra_health *h)
{
	health_stop(h->hw); /* joins the watcher threads: nothing queues after this */
	h->hw = NULL;
	dra_health_items_free(h->head);
	h->head = NULL;
	h->tail = &h->head;
	node_free(h->mig_node);
	h->mig_node = NULL;
	if (h->evfd >= 0)
		close(h->evfd);
	h->evfd = -1;
	if (h->lock_ready)
		pthread_mutex_destroy(&h->lock);
	h->lock_ready = false;
}
