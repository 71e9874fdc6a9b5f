/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's resource servers (daemon_serve.c): one Device Plugin API server per resource in the
 * device-plugin dir, and registration of each with kubelet (docs/reference/device-plugin.md
 * §3.1-3.2). A unit of the plugin daemon (daemon.c owns it): it sees only what it is given.
 * Threads: the main thread calls these; the group's completion-queue thread (gsrv.c) reads the
 * served contexts, so what they point to changes only under daemon_servers_lock() or after
 * daemon_serve_stop().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "plugin/config.h"
#include "plugin/dp.h"
#include "plugin/resources.h"
#include "nvml/node.h"

struct served;

struct daemon_servers {
	struct gsrv_group *g; /* NULL: nothing served */
	struct served *sv;
	size_t n_sv;
	/* registration: the next try (0: none due), the quick retry schedule after (re)serving */
	long long next_register_ms;
	long long register_t0;
	size_t register_step;
	/* identity of the kubelet.sock every resource is registered with: an inotify event about the
	 * same socket (it raced with a restart that already registered) needs no second restart */
	dev_t kubelet_dev;
	ino_t kubelet_ino;
	struct timespec kubelet_ctime;
	/* the sockets could not be created: try again then (backoff up to upstream's 30 s) */
	long long next_serve_ms;
	unsigned serve_failures;
};

/* What one serving round hands the servers; every pointer must outlive daemon_serve_stop(). */
struct daemon_serve_input {
	const struct plugin_config *cfg;
	const struct node *node;
	const struct resource_set *rs;
	bool imex;          /* the configured IMEX channel exists */
	unsigned cdi_extra; /* DP_CDI_EXTRA_* */
	const struct dp_cdi_names *cdi_names;
	/* a resource's dp_ctx.mps_unready (NULL: not shared with MPS), asked of mps_data */
	const char *(*mps_unready)(const void *mps_data, const char *resource);
	const void *mps_data;
};

/*
 * Serve in->rs (one server per resource), then register with in->cfg's kubelet socket. On failure
 * nothing is left served, why is logged and another try is scheduled at next_serve_ms (1 s, 2 s,
 * ... up to 30 s apart). Returns 0 or -errno (-EADDRINUSE: another live plugin has the sockets).
 */
int daemon_serve_or_retry(struct daemon_servers *s, const struct daemon_serve_input *in);
/*
 * -EADDRINUSE (err names the pid) when another live plugin serves one of rs's sockets in
 * cfg->device_plugin_path: checked before anything is written for rs (CDI specs), so that a
 * second plugin on the same dir changes nothing of the first one's.
 */
int daemon_sockets_taken(const struct plugin_config *cfg, const struct resource_set *rs, struct gerr *err);
/* Stop serving; resources not in keep (NULL: all) first send kubelet an empty list. Idempotent. */
void daemon_serve_stop(struct daemon_servers *s, const struct resource_set *keep);

/*
 * Register every resource not registered yet, once; first: right after (re)serving, which starts
 * the quick retry schedule. A retry is due at next_register_ms (the main loop calls again).
 */
void daemon_register_all(struct daemon_servers *s, const char *kubelet_socket, bool first);
/* Serving, every socket still there, all registered with the kubelet.sock now at kubelet_socket. */
bool daemon_registered_with(const struct daemon_servers *s, const char *kubelet_socket);
/* Every served socket still exists (false when one was removed under us). */
bool daemon_sockets_present(const struct daemon_servers *s);

/* The group lock the gRPC thread reads the served state under; no-ops while nothing is served. */
void daemon_servers_lock(struct daemon_servers *s);
void daemon_servers_unlock(struct daemon_servers *s);
/* Under the lock: ListAndWatch sends resource's list again (NULL: every resource's). */
void daemon_servers_notify(struct daemon_servers *s, const char *resource);
