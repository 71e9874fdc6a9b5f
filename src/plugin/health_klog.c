/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watcher's second XID source: the kernel log, for XIDs NVML does not deliver (79
 * "fallen off the bus"). Follows /dev/kmsg records or a text file like tail -f (rotation and
 * truncation included) and hands each "NVRM: Xid" line to the XID policy (health.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/health_int.h"

#define KLOG_LINE_MAX 8192

struct klog {
	int fd;
	bool is_kmsg; /* character device: one record per read(), poll()able */
	int ino_fd;   /* inotify for a text file */
	off_t off;
	char buf[KLOG_LINE_MAX];
	size_t len;
	struct xid_kmsg_parser parser;
	dev_t dev;
	ino_t ino;
};

static struct gpu_state *gpu_by_pci(struct health_watcher *w, const struct pci_addr *a)
{
	for (size_t i = 0; i < w->n_gpus; i++)
		if (w->gpus[i].have_pci && pci_addr_equal(&w->gpus[i].pci, a))
			return &w->gpus[i];
	return NULL;
}

static void klog_line(struct health_watcher *w, struct klog *k, const char *line)
{
	struct xid_kmsg x;
	struct gpu_state *g;

	if (xid_kmsg_parse_line(&k->parser, line, &x) != 1)
		return;
	pthread_mutex_lock(&w->lock);
	g = gpu_by_pci(w, &x.pci);
	if (g)
		health_handle_xid(w, g, x.xid, -1, -1, "kmsg", x.text);
	else
		health_report_info(w, HEALTH_SOURCE_ERROR, NULL, "kmsg", x.xid,
				   "kernel log XID %u for PCI %s, which is none of this node's GPUs", x.xid,
				   x.pci_text);
	pthread_mutex_unlock(&w->lock);
}

static int klog_open(struct health_watcher *w, struct klog *k, bool at_end)
{
	struct stat st;

	k->fd = open(w->klog, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0)
		return -errno;
	if (fstat(k->fd, &st) < 0) {
		int r = -errno;
		close(k->fd);
		k->fd = -1;
		return r;
	}
	k->is_kmsg = S_ISCHR(st.st_mode);
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	k->len = 0;
	/* like tail -f: only what is written from now on (/dev/kmsg: SEEK_END skips old records) */
	k->off = at_end ? lseek(k->fd, 0, SEEK_END) : 0;
	if (k->off < 0)
		k->off = 0;
	return 0;
}

/* Read what is new; split into lines. Returns -errno when the file must be reopened. */
static int klog_read(struct health_watcher *w, struct klog *k)
{
	for (;;) {
		ssize_t n;
		if (k->is_kmsg) {
			char rec[KLOG_LINE_MAX];
			n = read(k->fd, rec, sizeof(rec) - 1);
			if (n < 0 && errno == EPIPE)
				continue; /* records overwritten before we read them; go on with the next */
			if (n <= 0)
				return n < 0 && errno != EAGAIN ? -errno : 0;
			rec[n] = '\0';
			klog_line(w, k, rec);
			continue;
		}
		struct stat st;
		if (fstat(k->fd, &st) == 0 && st.st_size < k->off) {
			k->off = 0; /* truncated (copytruncate rotation) */
			k->len = 0;
		}
		n = pread(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len, k->off);
		if (n <= 0)
			return n < 0 ? -errno : 0;
		k->off += n;
		k->len += (size_t)n;
		k->buf[k->len] = '\0';
		char *start = k->buf, *nl;
		while ((nl = memchr(start, '\n', k->len - (size_t)(start - k->buf)))) {
			*nl = '\0';
			klog_line(w, k, start);
			start = nl + 1;
		}
		k->len -= (size_t)(start - k->buf);
		memmove(k->buf, start, k->len);
		if (k->len == sizeof(k->buf) - 1)
			k->len = 0; /* a line longer than the buffer: drop it */
	}
}

/* A text log replaced by rotation: is the path now another file? */
static bool klog_rotated(struct health_watcher *w, const struct klog *k)
{
	struct stat st;
	return !k->is_kmsg && stat(w->klog, &st) == 0 && (st.st_dev != k->dev || st.st_ino != k->ino);
}

void *health_kmsg_main(void *arg)
{
	struct health_watcher *w = arg;
	struct klog k = {.fd = -1, .ino_fd = -1};
	int r;

	/* reported once; then tried again every second (a log file may appear later) */
	for (bool told = false; (r = klog_open(w, &k, true)) < 0; told = true) {
		if (!told) {
			pthread_mutex_lock(&w->lock);
			health_report_info(
			    w, HEALTH_SOURCE_ERROR, NULL, "kmsg", 0,
			    "cannot read kernel log %s: %s; XIDs that NVML does not deliver (79 fallen off the "
			    "bus) will be missed until it can be read; mount /dev/kmsg or give a log file",
			    w->klog, strerror(-r));
			pthread_mutex_unlock(&w->lock);
		}
		if (health_wait_stop(w, 1000))
			return NULL;
	}
	if (!k.is_kmsg) {
		k.ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (k.ino_fd >= 0)
			(void)inotify_add_watch(k.ino_fd, w->klog,
						IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB);
	}
	while (!atomic_load(&w->stop)) {
		struct pollfd p[2] = {{.fd = w->stop_pipe[0], .events = POLLIN},
				      {.fd = k.is_kmsg ? k.fd : k.ino_fd, .events = POLLIN}};
		/* a text file is also re-read each second: inotify may not see writes on some mounts */
		(void)poll(p, p[1].fd >= 0 ? 2 : 1, k.is_kmsg ? -1 : 1000);
		if (atomic_load(&w->stop))
			break;
		if (!k.is_kmsg && k.ino_fd >= 0 && (p[1].revents & POLLIN)) {
			char ev[4096];
			while (read(k.ino_fd, ev, sizeof(ev)) > 0)
				;
		}
		r = klog_read(w, &k);
		if (r < 0 || klog_rotated(w, &k)) {
			/* finish the old file, then follow the new one from its start */
			close(k.fd);
			if (klog_open(w, &k, false) < 0) {
				k.fd = -1;
				if (health_wait_stop(w, 1000))
					break;
				continue;
			}
			if (k.ino_fd >= 0) {
				close(k.ino_fd);
				k.ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
				if (k.ino_fd >= 0)
					(void)inotify_add_watch(k.ino_fd, w->klog,
								IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB);
			}
			(void)klog_read(w, &k);
		}
	}
	if (k.fd >= 0)
		close(k.fd);
	if (k.ino_fd >= 0)
		close(k.ino_fd);
	return NULL;
}
