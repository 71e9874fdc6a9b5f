/* SPDX-License-Identifier: Apache-2.0 */
/* `gpulet mps-control-daemon` (mps_daemon.c): upstream's mps-control-daemon, and its mount-shm. */
#pragma once

#include <stddef.h>

#include "plugin/config.h"
#include "util/err.h"

struct mps_daemon;

/*
 * One owner for what `gpulet mps-control-daemon` runs, started, run and stopped symmetrically.
 * Start: take the daemon's signals (util/loop.h), start the MPS control daemons (a failed start is
 * logged and retried from the run loop, as upstream). Returns 0 with *ret, or -errno (logged) with
 * nothing left running. args and cfg are borrowed (args for SIGHUP) and must outlive
 * mps_daemon_stop(). The caller blocked the daemon's signals before (sig_block()) and sets its mask
 * back after mps_daemon_stop() (sig_restore()). src (NULL: none) is one more event source of the loop
 * (the node label of per-node configs), borrowed as args.
 */
int mps_daemon_start(const struct loop_argv *args, const struct plugin_config *cfg, const struct loop_source *src,
		     struct mps_daemon **ret);
/*
 * Supervise until a stop signal, on the one daemon loop: logs, readiness probes, restarts on SIGHUP
 * or a daemon that stopped answering. 0, or -errno (logged) when the loop cannot wait any more.
 */
int mps_daemon_run(struct mps_daemon *d);
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
