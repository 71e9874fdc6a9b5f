/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <signal.h>

/* The signals that stop a gpulet command that runs until stopped: SIGTERM and SIGINT. */
void sig_stop_set(sigset_t *set);

/*
 * The signals a gpulet daemon (plugin, mps-control-daemon, labels) takes itself: SIGTERM, SIGINT and
 * SIGQUIT stop it (sig_stop_set() and SIGQUIT), SIGHUP reloads its config. One set, so the mask a verb blocks at start,
 * the daemon's signalfd and what it drains at the end are the same signals.
 */
void sig_daemon_set(sigset_t *set);

/*
 * Block set in this thread (and every thread it starts later), the old mask in *old: a daemon verb
 * does it first, so a signal sent before its loop's signalfd exists waits for it instead of taking
 * its default action. 0 or the errno pthread_sigmask() returned.
 */
int sig_block(const sigset_t *set, sigset_t *old);
/* The mask as it was before sig_block(), after taking the signals of set still pending (they would end us now). */
void sig_restore(const sigset_t *set, const sigset_t *old);
