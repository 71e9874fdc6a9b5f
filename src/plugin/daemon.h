/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin daemon: one gRPC server per resource in the device-plugin dir, registration with
 * kubelet, and the loop that reacts to kubelet restarts (inotify on kubelet.sock), SIGHUP
 * (reload), SIGTERM/SIGINT/SIGQUIT (empty device list, sockets removed, exit 0).
 * One owner (daemon.c) for everything `gpulet plugin` runs, started, run and stopped
 * symmetrically: every way out goes through plugin_daemon_stop(), which stops whatever was
 * started (health watcher threads, gRPC servers, NVML, the fds).
 * Facts: docs/reference/device-plugin.md §3.1-3.2.
 */
#pragma once

#include "plugin/config.h"

struct plugin_daemon;

/*
 * Take the daemon's signals (util/loop.h), read the node and its resources, write the CDI specs, start the health
 * watcher and serve. Returns 0 with *ret running (also on a node whose devices are not there yet,
 * as upstream waits), or -errno (logged; exit code 1) with everything started so far stopped
 * again. args and cfg are borrowed: they must outlive plugin_daemon_stop() (args for SIGHUP). src (NULL:
 * none) is one more event source of the loop (the node label of per-node configs), borrowed the same way.
 */
int plugin_daemon_start(const struct loop_argv *args, const struct plugin_config *cfg, const struct loop_source *src,
			struct plugin_daemon **ret);
/*
 * Serve until a stop signal, on the one daemon loop (util/loop.h): kubelet restarts, SIGHUP reloads,
 * health events, retries. 0 after a stop signal, -errno (logged) when the loop cannot wait any more.
 */
int plugin_daemon_run(struct plugin_daemon *d);
/*
 * Empty device lists to kubelet, sockets removed, watcher stopped, the signal mask and SIGPIPE's
 * action as they were before start, everything freed. NULL is fine.
 */
void plugin_daemon_stop(struct plugin_daemon *d);
/* For _cleanup_: stop *p and set it to NULL. */
static inline void plugin_daemon_stopp(struct plugin_daemon **p)
{
	plugin_daemon_stop(*p);
	*p = NULL;
}
