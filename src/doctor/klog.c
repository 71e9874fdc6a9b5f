/* SPDX-License-Identifier: Apache-2.0 */
/* The node's kernel log, read once (doctor/klog.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "doctor/klog.h"
#include "util/fileio.h"

#define KLOG_MAX (64u << 20)

/* /dev/kmsg: one record per read(), EAGAIN at the end of the ring; EPIPE when a record was overwritten. */
static int read_kmsg(char **ret)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while (buf) {
		ssize_t n;

		if (cap - len < 8192) {
			char *nb = cap < KLOG_MAX ? grow_alloc(buf, &cap, 1, 1 << 16) : NULL;

			if (!nb)
				break;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	*ret = buf;
	return 0;
}

/* The text logs a node keeps its kernel messages in: the first of the rotating logs, then the boot ring. */
static int read_files(struct doctor_ctx *c, char **ret)
{
	static const char *const logs[] = {"/var/log/kern.log", "/var/log/messages", "/var/log/syslog"};
	_cleanup_free_ char *text = NULL, *boot = NULL, *bp = doctor_path(c, "/var/log/dmesg");
	const char *src = NULL;

	if (!bp)
		return -ENOMEM;
	for (size_t k = 0; k < ELEMENTSOF(logs) && !text; k++) {
		_cleanup_free_ char *p = doctor_path(c, logs[k]);

		if (!p)
			return -ENOMEM;
		if (read_file(p, KLOG_MAX, &text, NULL, NULL) >= 0)
			src = logs[k];
	}
	if (read_file(bp, KLOG_MAX, &boot, NULL, NULL) >= 0) {
		char *both = NULL;

		if (asprintf(&both, "%s%s%s", boot, text && *boot ? "\n" : "", text ? text : "") < 0)
			return -ENOMEM;
		snprintf(c->klog_src, sizeof(c->klog_src), "%s%s%s", src ? src : "", src ? " and " : "",
			 "/var/log/dmesg");
		free(text);
		text = both;
	} else if (src)
		snprintf(c->klog_src, sizeof(c->klog_src), "%s", src);
	if (!text)
		return -ENOENT;
	*ret = TAKE_PTR(text);
	return 0;
}

int doctor_need_klog(struct doctor_ctx *c, const char **text, const char **src)
{
	int r;

	if (!c->klog_state) {
		if (c->o->kernel_log) {
			snprintf(c->klog_src, sizeof(c->klog_src), "%s", c->o->kernel_log);
			r = read_file(c->o->kernel_log, KLOG_MAX, &c->klog, NULL, NULL);
		} else {
			r = read_files(c, &c->klog);
			if (r == -ENOENT && !doctor_root_elsewhere(c)) {
				snprintf(c->klog_src, sizeof(c->klog_src), "/dev/kmsg");
				r = read_kmsg(&c->klog);
			}
		}
		c->klog_state = r < 0 ? r : 1;
	}
	if (c->klog_state < 0)
		return c->klog_state;
	*text = c->klog;
	if (src)
		*src = c->klog_src;
	return 0;
}

bool klog_next_line(const char **pos, const char **line, size_t *len)
{
	const char *p = *pos, *nl;

	if (!p || !*p)
		return false;
	nl = strchr(p, '\n');
	*line = p;
	*len = nl ? (size_t)(nl - p) : strlen(p);
	*pos = nl ? nl + 1 : p + *len;
	return true;
}

const char *klog_message(const char *line, size_t len, size_t *mlen)
{
	const char *end = line + len, *p = line, *k = memmem(line, len, "kernel: ", 8);
	size_t digits = strspn(line, "0123456789");

	if (k)
		p = k + 8;
	else if (digits && digits < len && line[digits] == ',') { /* /dev/kmsg: prio,seq,usec,flags;text */
		const char *semi = memchr(line, ';', len);

		if (semi)
			p = semi + 1;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < end && *p == '[') { /* [   12.345678] or [Sat Apr 13 23:38:47 2024] */
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (close)
			p = close + 1;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	*mlen = (size_t)(end - p);
	return p;
}

const char *klog_find(const char *text, const char *needle, const char *also, char *buf, size_t size)
{
	const char *pos = text, *line;
	size_t len, nl = strlen(needle), al = also ? strlen(also) : 0;

	while (klog_next_line(&pos, &line, &len)) {
		size_t mlen;
		const char *m;

		if (!memmem(line, len, needle, nl) || (also && !memmem(line, len, also, al)))
			continue;
		m = klog_message(line, len, &mlen);
		snprintf(buf, size, "%.*s", (int)mlen, m);
		return line;
	}
	return NULL;
}

bool klog_api_mismatch(const char *text, char *client, size_t size, char *line, size_t lsize)
{
	const char *hit, *v;
	size_t n;

	if (!klog_find(text, "NVRM: API mismatch", NULL, line, lsize))
		return false;
	hit = strstr(text, "NVRM: API mismatch");
	v = hit ? strstr(hit, "has the version ") : NULL;
	if (!v)
		return false;
	v += 16;
	n = strspn(v, "0123456789.");
	while (n && v[n - 1] == '.')
		n--;
	if (!n || n >= size)
		return false;
	snprintf(client, size, "%.*s", (int)n, v);
	return true;
}
