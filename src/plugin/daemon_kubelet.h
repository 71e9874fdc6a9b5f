/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubelet restarts as the plugin sees them (daemon_kubelet.c): inotify on the kubelet socket's
 * dir, looked for again every tick while that dir does not exist. A unit of the plugin daemon
 * (daemon.c owns it).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "util/err.h"

struct daemon_kubelet_watch {
	int fd;                  /* inotify; -1 when there is no kubelet socket to watch */
	int wd;                  /* watch on the dir; -1 until the dir exists */
	char dir[PATH_MAX];      /* dirname of the kubelet socket */
	char name[NAME_MAX + 1]; /* basename of the kubelet socket */
	bool warned;             /* the dir was missing (logged once) */
};

/* Watch the dir of socket ("" or NULL: nothing to watch, fd -1). Release with _fini, also on failure. */
int daemon_kubelet_watch_init(struct daemon_kubelet_watch *w, const char *socket, struct gerr *err);
void daemon_kubelet_watch_fini(struct daemon_kubelet_watch *w);
/*
 * Put the watch in place when it is not (the dir appeared). True when it is in place; a dir that
 * is missing is logged once.
 */
bool daemon_kubelet_watch_retry(struct daemon_kubelet_watch *w);
/* Drain the inotify events: true when the kubelet socket was (re)created (or events were lost). */
bool daemon_kubelet_watch_read(struct daemon_kubelet_watch *w);
