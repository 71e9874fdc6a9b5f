/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's side of the health watcher (plugin/health.h): its callback queues transitions from
 * the watcher threads, the main thread applies them to the resources and wakes ListAndWatch
 * (interface: daemon_health.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "plugin/daemon_health.h"
#include "plugin/health.h"
#include "util/log.h"
#include "util/opt.h"

struct health_item {
	struct health_item *next;
	char uuid[NODE_UUID_MAX];
	int index, gi, ci;
	enum health_kind kind;
	unsigned xid;
	bool healthy;
	char reason[256];
};

/* Watcher thread: queue the transition for the main thread; log what only informs. */
static void on_health(struct health_event *ev, void *userdata)
{
	struct daemon_health *h = userdata;
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
		it->index = ev->index;
		it->gi = ev->gi;
		it->ci = ev->ci;
		it->kind = ev->kind;
		it->xid = ev->xid;
		it->healthy = ev->healthy;
	}
	pthread_mutex_lock(&h->qlock);
	if (it) {
		*h->q_tail = it;
		h->q_tail = &it->next;
	} else {
		h->mig_changed = true;
	}
	pthread_mutex_unlock(&h->qlock);
	if (write(h->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the main thread has a wakeup pending anyway */
	}
}

int daemon_health_init(struct daemon_health *h, struct gerr *err)
{
	*h = (struct daemon_health){.evfd = -1};
	h->q_tail = &h->q_head;
	h->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->evfd < 0)
		return gerr_set(err, errno, "eventfd: %s", strerror(errno));
	if (pthread_mutex_init(&h->qlock, NULL) != 0)
		return gerr_set(err, ENOMEM, "cannot create the health queue's lock");
	h->qlock_ready = true;
	return 0;
}

/* --node-health as cfg says: running with cfg's node and kubeconfig, or stopped. */
static void node_health_follow(struct daemon_health *h, const struct plugin_config *cfg)
{
	const struct node_health_options o = {
	    .node_name = cfg->node_name, .kubeconfig = cfg->kubeconfig, .env = &cfg->kenv};
	struct gerr err = {0};

	if (h->nh && cfg->node_health && streq(h->nh_node, cfg->node_name) && streq(h->nh_kubeconfig, cfg->kubeconfig))
		return;
	node_health_stop(h->nh);
	h->nh = NULL;
	free(h->nh_node);
	free(h->nh_kubeconfig);
	h->nh_node = h->nh_kubeconfig = NULL;
	if (!cfg->node_health)
		return;
	if (!(h->nh_node = strdup(cfg->node_name)) || !(h->nh_kubeconfig = strdup(cfg->kubeconfig)) ||
	    node_health_start(&o, &h->nh, &err) < 0) {
		log_error("Cannot start node health; GPU health stays on this node", "error=\"%s\"",
			  err.msg[0] ? err.msg : "out of memory");
		return;
	}
	log_info("Reporting GPU health on the Node", "node=%s condition=GPUHealthy", cfg->node_name);
}

void daemon_health_restart(struct daemon_health *h, struct nvml *nv, const struct node *node,
			   const struct plugin_config *cfg)
{
	const char *kernel_log = cfg->kernel_log;
	struct health_options o;
	struct gerr err = {0};
	_cleanup_(health_stopp) struct health_watcher *old = TAKE_PTR(h->hw);

	node_health_follow(h, cfg);
	if (!node || !nv)
		return;
	node_health_gpus(h->nh, node);
	health_options_default(&o);
	o.root = cfg->host->root;
	o.policy = cfg->xid_policy;
	o.mig_poll_ms = cfg->rescan_interval / OPT_NSEC_PER_MSEC;
	o.quiet_ms = cfg->health_recovery / OPT_NSEC_PER_MSEC;
	if (kernel_log && kernel_log[0])
		o.kernel_log = kernel_log;
	o.cb = on_health;
	o.userdata = h;
	/* the new watcher takes over the old one's faults (their quiet-period clocks too); the old
	 * one is stopped after, on return */
	o.inherit = old;
	if (health_start(nv, node, &o, &h->hw, &err) < 0)
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
static bool apply_health(struct resource_set *rs, const struct node *node, const struct health_item *it)
{
	size_t total = 0, k = 0;
	_cleanup_free_ bool *was = NULL;
	bool changed = false;

	for (size_t i = 0; i < rs->n; i++)
		total += rs->res[i].n_devices;
	was = calloc(total + 1, sizeof(*was));
	if (!was)
		return false;
	for (size_t i = 0; i < rs->n; i++)
		for (size_t j = 0; j < rs->res[i].n_devices; j++)
			was[k++] = rs->res[i].devices[j].healthy;
	if (resources_set_health(rs, node, it->uuid, it->gi, it->ci, it->healthy, it->reason) <= 0)
		return false;
	k = 0;
	for (size_t i = 0; i < rs->n; i++)
		for (size_t j = 0; j < rs->res[i].n_devices; j++) {
			const struct rdevice *dv = &rs->res[i].devices[j];

			if (was[k++] == dv->healthy)
				continue;
			changed = true;
			if (dv->healthy)
				log_info("device is healthy again", "resource=%s id=%s uuid=%s index=%s",
					 rs->res[i].name, dv->id, dv->uuid, dv->index);
			else
				log_warn("unhealthy device", "resource=%s id=%s uuid=%s index=%s reason=\"%s\"",
					 rs->res[i].name, dv->id, dv->uuid, dv->index, it->reason);
		}
	return changed;
}

bool daemon_health_drain(struct daemon_health *h, struct resource_set *rs, const struct node *node,
			 struct daemon_servers *s)
{
	struct health_item *list;
	uint64_t cnt;
	bool mig, changed = false;

	if (read(h->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return false;
	pthread_mutex_lock(&h->qlock);
	list = h->q_head;
	h->q_head = NULL;
	h->q_tail = &h->q_head;
	mig = h->mig_changed;
	h->mig_changed = false;
	pthread_mutex_unlock(&h->qlock);

	daemon_servers_lock(s);
	while (list) {
		struct health_item *it = list;
		const struct node_health_fault f = {.uuid = it->uuid,
						    .index = it->index,
						    .gi = it->gi,
						    .ci = it->ci,
						    .kind = it->kind,
						    .xid = it->xid,
						    .healthy = it->healthy,
						    .reason = it->reason};

		list = it->next;
		if (rs)
			changed |= apply_health(rs, node, it);
		node_health_note(h->nh, &f);
		free(it);
	}
	if (changed)
		daemon_servers_notify(s, NULL);
	daemon_servers_unlock(s);
	return mig;
}

void daemon_health_fini(struct daemon_health *h)
{
	health_stop(h->hw); /* joins the watcher threads: nothing queues after this */
	h->hw = NULL;
	node_health_stop(h->nh);
	h->nh = NULL;
	free(h->nh_node);
	free(h->nh_kubeconfig);
	h->nh_node = h->nh_kubeconfig = NULL;
	while (h->q_head) {
		struct health_item *it = h->q_head;

		h->q_head = it->next;
		free(it);
	}
	h->q_tail = &h->q_head;
	if (h->evfd >= 0)
		close(h->evfd);
	h->evfd = -1;
	if (h->qlock_ready)
		pthread_mutex_destroy(&h->qlock);
	h->qlock_ready = false;
}
