/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's side of the health watcher (plugin/health.h): its callback queues transitions from
 * the watcher threads, the main thread applies them to the resources and wakes ListAndWatch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/daemon_int.h"
#include "util/log.h"

/* Watcher thread: queue the transition for the main thread; log what only informs. */
static void on_health(struct health_event *ev, void *userdata)
{
	struct daemon *d = userdata;
	struct health_item *it = NULL;
	uint64_t one = 1;

	if (ev->kind == HEALTH_SOURCE_ERROR || ev->kind == HEALTH_UNSUPPORTED || ev->kind == HEALTH_ECC_SBE ||
	    (!ev->transition && ev->kind != HEALTH_MIG_CHANGED)) {
		log_emit(ev->kind == HEALTH_ECC_SBE || ev->kind == HEALTH_UNSUPPORTED ? LOG_LVL_INFO : LOG_LVL_WARN,
			 "health event", "kind=%s uuid=%s index=%d xid=%u source=%s reason=\"%s\"",
			 health_kind_name(ev->kind), ev->uuid, ev->index, ev->xid, ev->source, ev->reason);
		return;
	}
	if (ev->kind != HEALTH_MIG_CHANGED) {
		it = calloc(1, sizeof(*it));
		if (!it)
			return;
		snprintf(it->uuid, sizeof(it->uuid), "%s", ev->uuid);
		snprintf(it->reason, sizeof(it->reason), "%s", ev->reason);
		it->gi = ev->gi;
		it->ci = ev->ci;
		it->healthy = ev->healthy;
	}
	pthread_mutex_lock(&d->qlock);
	if (it) {
		*d->q_tail = it;
		d->q_tail = &it->next;
	} else {
		d->mig_changed = true;
	}
	pthread_mutex_unlock(&d->qlock);
	if (write(d->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the main thread has a wakeup pending anyway */
	}
}

void daemon_health_restart(struct daemon *d)
{
	struct health_options o;
	struct gerr err = {0};

	health_stop(d->hw);
	d->hw = NULL;
	if (!d->node || !d->nv)
		return;
	health_options_default(&o);
	o.root = d->cfg.root;
	o.policy = d->policy;
	o.mig_poll_ms = d->cfg.rescan_interval * 1000;
	o.quiet_ms = d->cfg.health_recovery * 1000;
	if (d->cfg.kernel_log[0])
		o.kernel_log = d->cfg.kernel_log;
	o.cb = on_health;
	o.userdata = d;
	if (health_start(d->nv, d->node, &o, &d->hw, &err) < 0)
		log_error("Cannot start health checks; devices stay advertised as they are", "error=\"%s\"", err.msg);
}

/*
 * A rebuilt resource set starts healthy: carry over what the old one knew (an XID does not repeat
 * itself), by physical GPU and MIG instance, since replica counts and names may have changed.
 */
void daemon_carry_health(const struct resource_set *old, const struct node *on, struct resource_set *rs,
			 const struct node *n)
{
	if (!old || !on)
		return;
	for (size_t i = 0; i < old->n; i++)
		for (size_t k = 0; k < old->res[i].n_devices; k++) {
			const struct rdevice *dv = &old->res[i].devices[k];
			const struct node_gpu *g = dv->gpu < on->n_gpus ? &on->gpus[dv->gpu] : NULL;
			const struct node_mig *m =
			    g && dv->mig >= 0 && (size_t)dv->mig < g->n_migs ? &g->migs[dv->mig] : NULL;

			if (dv->healthy || !g || !g->uuid[0])
				continue;
			resources_set_health(rs, n, g->uuid, m ? (int)m->gi : -1, m ? (int)m->ci : -1, false,
					     dv->reason);
		}
}

/* Apply one transition to the resources, log each device that changed; true if any did. */
static bool apply_health(struct daemon *d, const struct health_item *it)
{
	size_t total = 0, k = 0;
	_cleanup_free_ bool *was = NULL;
	bool changed = false;

	for (size_t i = 0; i < d->rs->n; i++)
		total += d->rs->res[i].n_devices;
	was = calloc(total + 1, sizeof(*was));
	if (!was)
		return false;
	for (size_t i = 0; i < d->rs->n; i++)
		for (size_t j = 0; j < d->rs->res[i].n_devices; j++)
			was[k++] = d->rs->res[i].devices[j].healthy;
	if (resources_set_health(d->rs, d->node, it->uuid, it->gi, it->ci, it->healthy, it->reason) <= 0)
		return false;
	k = 0;
	for (size_t i = 0; i < d->rs->n; i++)
		for (size_t j = 0; j < d->rs->res[i].n_devices; j++) {
			const struct rdevice *dv = &d->rs->res[i].devices[j];

			if (was[k++] == dv->healthy)
				continue;
			changed = true;
			if (dv->healthy)
				log_info("device is healthy again", "resource=%s id=%s uuid=%s index=%s",
					 d->rs->res[i].name, dv->id, dv->uuid, dv->index);
			else
				log_warn("unhealthy device", "resource=%s id=%s uuid=%s index=%s reason=\"%s\"",
					 d->rs->res[i].name, dv->id, dv->uuid, dv->index, it->reason);
		}
	return changed;
}

void daemon_drain_health(struct daemon *d)
{
	struct health_item *list;
	uint64_t cnt;
	bool mig, changed = false;

	if (read(d->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&d->qlock);
	list = d->q_head;
	d->q_head = NULL;
	d->q_tail = &d->q_head;
	mig = d->mig_changed;
	d->mig_changed = false;
	pthread_mutex_unlock(&d->qlock);

	if (d->g)
		gsrv_lock(d->g);
	while (list) {
		struct health_item *it = list;

		list = it->next;
		if (d->rs)
			changed |= apply_health(d, it);
		free(it);
	}
	if (d->g) {
		for (size_t i = 0; changed && i < d->n_sv; i++)
			gsrv_notify(d->sv[i].srv);
		gsrv_unlock(d->g);
	}
	if (mig)
		daemon_restart(d, "device layout changed (MIG re-partition, GPU added or removed)", REBUILD);
}

void daemon_health_queue_free(struct daemon *d)
{
	while (d->q_head) {
		struct health_item *it = d->q_head;

		d->q_head = it->next;
		free(it);
	}
}
