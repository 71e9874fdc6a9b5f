/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch the kubelet socket's dir for kubelet restarts (interface: daemon_kubelet.h). A dir that
 * does not exist yet (the kubelet not installed yet, a hostPath mount not there yet) is looked
 * for again every tick instead of exiting as upstream does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "plugin/daemon_kubelet.h"
#include "util/log.h"
#include "util/macro.h"

bool daemon_kubelet_watch_retry(struct daemon_kubelet_watch *w)
{
	if (w->fd < 0 || w->wd >= 0)
		return true;
	w->wd = inotify_add_watch(w->fd, w->dir, IN_CREATE | IN_MOVED_TO);
	if (w->wd >= 0)
		return true;
	if (!w->warned)
		log_warn("Cannot watch the kubelet socket's directory for kubelet restarts, will retry",
			 "dir=%s error=\"%s\" hint=\"mount the kubelet device-plugins dir into the plugin pod\"",
			 w->dir, strerror(errno));
	w->warned = true;
	return false;
}

int daemon_kubelet_watch_init(struct daemon_kubelet_watch *w, const char *socket, struct gerr *err)
{
	const char *slash;

	*w = (struct daemon_kubelet_watch){.fd = -1, .wd = -1};
	if (!socket || !socket[0])
		return 0;
	slash = strrchr(socket, '/');
	/* the dir fits (the option is at most PATH_MAX - 1), a file name longer than a name can be never appears */
	if (strlen(slash ? slash + 1 : socket) >= sizeof(w->name))
		return gerr_set(err, ENAMETOOLONG, "--kubelet-socket %s: the file name is longer than %zu characters",
				socket, sizeof(w->name) - 1);
	snprintf(w->name, sizeof(w->name), "%s", slash ? slash + 1 : socket);
	snprintf(w->dir, sizeof(w->dir), "%.*s", slash && slash != socket ? (int)(slash - socket) : 1,
		 slash ? socket : ".");
	w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->fd < 0)
		return gerr_set(err, errno, "inotify_init1: %s", strerror(errno));
	daemon_kubelet_watch_retry(w);
	return 0;
}

void daemon_kubelet_watch_fini(struct daemon_kubelet_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->wd = -1;
}

bool daemon_kubelet_watch_read(struct daemon_kubelet_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool hit = false;
	ssize_t len;

	while ((len = read(w->fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if (ev->len && streq(ev->name, w->name))
				hit = true;
			if (ev->mask & IN_Q_OVERFLOW)
				hit = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	return hit;
}
