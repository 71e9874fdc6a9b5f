/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside `gpulet plugin` (not for other modules; see daemon.h). One daemon, four concerns:
 *   daemon.c         lifecycle: build the node and resources, restart/reload, the main loop, signals
 *   daemon_serve.c   the resource servers: one gRPC server per resource, registration with kubelet
 *   daemon_health.c  the health watcher's queue: events in (watcher threads), transitions applied here
 *   daemon_cdi.c     CDI spec upkeep for the CDI device-list strategies
 * Threads: the main one (signals, inotify, registration, reloads, health updates), the gRPC
 * completion-queue thread of the current server group (gsrv.c) and the health watcher's threads
 * (plugin/health.h). Everything the gRPC thread reads (resource set, node, config) is replaced
 * only after the group is freed, and changed in place (health) only under the group lock. The
 * health watcher never touches that state: its callback queues the event and wakes the main
 * thread through an eventfd.
 */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "plugin/config.h"
#include "plugin/dp.h"
#include "plugin/gsrv.h"
#include "plugin/health.h"
#include "plugin/resources.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/xid.h"

struct served {
	struct dp_ctx ctx;
	struct gsrv *srv;
	bool registered;
	char path[PATH_MAX];
	/* rejected requests: a misbehaving client retrying must not flood the log (gRPC thread only) */
	long long reject_log_ms;
	unsigned rejects_suppressed;
};

struct daemon {
	const struct config_args *args;
	struct plugin_config cfg;
	bool imex;          /* cfg's IMEX channel exists (daemon_imex_select) */
	unsigned cdi_extra; /* DP_CDI_EXTRA_*: the gated CDI specs written */
	struct nvml *nv;
	struct node *node;
	struct resource_set *rs;
	struct gsrv_group *g;
	struct served *sv;
	size_t n_sv;
	int sigfd, inofd;
	int inowd;                       /* watch on the kubelet socket's dir; -1 until the dir exists */
	char kubelet_dir[PATH_MAX];      /* dirname of the kubelet socket */
	bool watch_warned;               /* the dir was missing (logged once) */
	char kubelet_name[NAME_MAX + 1]; /* basename of the kubelet socket, for inotify */
	/* identity of the kubelet.sock every resource is registered with: an inotify event about the
	 * same socket (it raced with a restart that already registered) needs no second restart */
	dev_t kubelet_dev;
	ino_t kubelet_ino;
	struct timespec kubelet_ctime;
	long long next_register_ms;
	long long register_t0; /* first try after (re)serving */
	size_t register_step;  /* index in the quick retry schedule */
	long long next_init_ms;
	/* the sockets could not be created: try again then (backoff up to upstream's 30 s) */
	long long next_serve_ms;
	unsigned serve_failures;
	/* health: the watcher, and the queue its callback fills (under qlock) */
	struct health_watcher *hw;
	struct xid_policy policy;
	int evfd;
	pthread_mutex_t qlock;
	struct health_item *q_head, **q_tail;
	bool mig_changed;
	/* MPS: each MPS resource's readiness, checked every few seconds (daemon_mps.c) */
	struct daemon_mps {
		char res[128];
		char why[512]; /* "" ready; read by the gRPC thread under the group lock */
		bool checked;
	} mps[8];
	size_t n_mps;
	long long next_mps_ms;
	/* the device names of the CDI spec last written (none when it could not be): Allocate hands
	 * out no other (dp_ctx.cdi_names) */
	struct dp_cdi_names cdi;
};

struct health_item {
	struct health_item *next;
	char uuid[NODE_UUID_MAX];
	int gi, ci;
	bool healthy;
	char reason[256];
};

enum restart_kind {
	RESERVE, /* kubelet restarted or a socket vanished: serve the same devices again, fast */
	REBUILD, /* the node changed: read NVML again */
	RELOAD,  /* SIGHUP: read the config file and NVML again */
};

/* daemon.c */
long long daemon_now_ms(void);
/*
 * Full restart (kubelet restart, SIGHUP, layout change): new config (optional), new node and
 * resources, then swap. When the new state cannot be built the old one is served again, so one
 * bad reload never takes the node's GPUs away.
 */
void daemon_restart(struct daemon *d, const char *why, enum restart_kind kind);

/* daemon_serve.c */
bool daemon_all_registered(const struct daemon *d);
/*
 * Register every resource not registered yet, once; first: right after (re)serving, which starts
 * the quick retry schedule. A retry is due at next_register_ms (the main loop calls again).
 */
void daemon_register_all(struct daemon *d, bool first);
/* Serve d->rs: one server per resource, then register. On failure nothing is left served. */
int daemon_start_serving(struct daemon *d, struct gerr *err);
/*
 * daemon_start_serving(), and when it fails log why and schedule another try (every failure is
 * logged; 1 s, 2 s, ... up to 30 s apart). Returns its result.
 */
int daemon_serve_or_retry(struct daemon *d);
/* Stop serving; resources not in keep (NULL: all) first send kubelet an empty list. */
void daemon_stop_serving(struct daemon *d, const struct resource_set *keep);

/* daemon_health.c */
/* (Re)start the health watcher on d->node; failing to is logged, devices stay as they are. */
void daemon_health_restart(struct daemon *d);
/*
 * A rebuilt resource set starts healthy: carry over what the old one knew (an XID does not repeat
 * itself), by physical GPU and MIG instance, since replica counts and names may have changed.
 */
void daemon_carry_health(const struct resource_set *old, const struct node *on, struct resource_set *rs,
			 const struct node *n);
/* Apply what the watcher queued (main thread, after the eventfd woke it). */
void daemon_drain_health(struct daemon *d);
/* Free what is still queued (after the watcher stopped). */
void daemon_health_queue_free(struct daemon *d);

/* daemon_mps.c */
/* After d->rs changed: the MPS resources to watch, checked now (before they are served). */
void daemon_mps_reset(struct daemon *d);
/* Check again when due (force: now); a change is logged and sent to kubelet. */
void daemon_mps_check(struct daemon *d, bool force);
/* What dp_ctx.mps_unready points to for resource name: NULL when it is not shared with MPS. */
const char *daemon_mps_reason(const struct daemon *d, const char *name);

/* daemon_cdi.c */
/* Returns 0 when written or not needed, -errno (logged) when a CDI strategy has no spec; d->cdi
 * holds the names it defines. */
int daemon_write_cdi_spec(struct daemon *d);
void daemon_cdi_names_clear(struct dp_cdi_names *c);

/* daemon_cdi_extra.c */
/* Whether cfg's IMEX channel node is a character device under the dev root; *ret_path its path. */
bool daemon_imex_channel_present(const struct plugin_config *cfg, char **ret_path);
/*
 * upstream internal/imex: *ret is whether cfg's IMEX channel is used (its node exists; absent:
 * a warning). -ENODEV with err when imex.required and it does not exist.
 */
int daemon_imex_select(const struct plugin_config *cfg, bool *ret, struct gerr *err);
/* With a CDI strategy, write the imex-channel and gated (gdrcopy/gds/mofed) specs; enabled
 * features without device nodes are logged. Returns the DP_CDI_EXTRA_* bits written. */
unsigned daemon_write_cdi_extra(const struct daemon *d);
