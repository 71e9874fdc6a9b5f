/* SPDX-License-Identifier: Apache-2.0 */
/* `gpulet mps-control-daemon` (mps_daemon.c): upstream's mps-control-daemon, and its mount-shm. */
#pragma once

#include <signal.h>
#include <stddef.h>

#include "plugin/config.h"
#include "util/err.h"

struct mps_daemon;

/*
 * One owner for what `gpulet mps-control-daemon` runs, started, run and stopped symmetrically.
 * Start: block the stop signals, start the MPS control daemons (a failed start is logged and
 * retried from the run loop, as upstream). Returns 0 with *ret, or -errno (logged) with nothing
 * left running. args and cfg are borrowed (args for SIGHUP) and must outlive mps_daemon_stop().
 * restore_mask (NULL: the mask now) is the signal mask mps_daemon_stop() sets back: the caller's from
 * before it blocked the stop signals itself.
 */
int mps_daemon_start(const struct config_args *args, const struct plugin_config *cfg, const sigset_t *restore_mask,
		     struct mps_daemon **ret);
/* Supervise until a stop signal: logs, readiness probes, restarts on SIGHUP or a daemon that stopped answering. */
void mps_daemon_run(struct mps_daemon *d);
/* Quit every control daemon, set the compute mode back, remove .ready/.started/logs; free. NULL is fine. */
void mps_daemon_stop(struct mps_daemon *d);
/* _cleanup_(mps_daemon_stopp): stops, frees and NULLs the pointer (no use after the free). */
static inline void mps_daemon_stopp(struct mps_daemon **d)
{
	mps_daemon_stop(*d);
	*d = NULL;
}

/* Mount a tmpfs at <mps-root>/shm, half of MemTotal, as upstream's init container. opts gets the size. */
int mps_mount_shm(const struct plugin_config *cfg, char *opts, size_t size, struct gerr *err);
