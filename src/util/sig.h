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
