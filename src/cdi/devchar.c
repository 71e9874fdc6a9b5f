/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /dev/char/<major>:<minor> links for the NVIDIA device nodes, as `nvidia-ctk system
 * create-dev-char-symlinks` makes them (docs/reference/cdi.md §7.3.1). With the systemd cgroup
 * driver, systemd names a container's devices by these links at every daemon-reload; nvidia-modprobe
 * makes the nodes without udev, so the links are missing and running GPU containers lose their
 * devices ("Failed to initialize NVML: Unknown Error"; toolkit issues 48, 251, 1227, 1397).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "util/macro.h"

/* The dirs under the dev root's dev/ whose nvidia* character devices get a link (existing.go). */
static const char *const node_dirs[] = {"", "nvidia-caps/"};
/* Names left out, as upstream's nodeIsBlocked (existing.go). */
static const char *const blocked[] = {"nvidia-fs", "nvidia-nvswitch", "nvidia-nvlink"};

struct links {
	int chardir;    /* <root>/dev/char */
	const char *to; /* what a node's dev-relative name is joined to: ".." or "<dev root>/dev" */
	unsigned made;
};

static bool blocked_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(blocked); i++)
		if (strncmp(name, blocked[i], strlen(blocked[i])) == 0)
			return true;
	return strncmp(name, "nvidia", 6) != 0;
}

/* One link char/<maj>:<min> -> <to>/<sub><name>; an existing entry (udev's, a link of ours) is kept. */
static int link_one(struct links *l, const char *sub, const char *name, dev_t rdev)
{
	char link[32], target[PATH_MAX];

	snprintf(link, sizeof(link), "%u:%u", major(rdev), minor(rdev));
	if ((size_t)snprintf(target, sizeof(target), "%s/%s%s", l->to, sub, name) >= sizeof(target))
		return 0;
	if (symlinkat(target, l->chardir, link) == 0) {
		l->made++;
		return 0;
	}
	return errno == EEXIST ? 0 : -errno;
}

/* Each NVIDIA character device directly in devfd's sub. */
static int link_dir(struct links *l, int devfd, const char *sub)
{
	int fd = openat(devfd, *sub ? sub : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while (r == 0 && (de = readdir(d))) {
		struct stat st;

		if (blocked_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISCHR(st.st_mode))
			continue;
		r = link_one(l, sub, de->d_name, st.st_rdev);
	}
	closedir(d);
	return r;
}

int cdi_dev_char_links(const struct host_paths *h, unsigned *ret_made, struct gerr *err)
{
	_cleanup_free_ char *nodes = NULL, *dev = NULL, *to = NULL;
	_cleanup_close_ int devfd = -1, hostdev = -1;
	struct links l = {.chardir = -1};
	int r = 0;

	*ret_made = 0;
	/* the dev root "/": udev's relative form, right under any --root; else the node's host path */
	if (asprintf(&nodes, "%s/dev", h->dev_dir) < 0 || asprintf(&dev, "%s/dev", h->root) < 0 ||
	    asprintf(&to, "%s/dev", streq(h->dev_root, "/") ? "" : h->dev_root) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	l.to = streq(h->dev_root, "/") ? ".." : to;
	devfd = open(nodes, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	hostdev = open(dev, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (devfd < 0 || hostdev < 0)
		return gerr_set(err, errno, "%s: %s", devfd < 0 ? nodes : dev, strerror(errno));
	if (mkdirat(hostdev, "char", 0755) < 0 && errno != EEXIST)
		return gerr_set(err, errno, "creating %s/char: %s", dev, strerror(errno));
	/* never through a link: char must be the host /dev's own directory */
	l.chardir = openat(hostdev, "char", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l.chardir < 0)
		return gerr_set(err, errno, "%s/char: %s", dev, strerror(errno));
	for (size_t i = 0; r == 0 && i < ELEMENTSOF(node_dirs); i++)
		r = link_dir(&l, devfd, node_dirs[i]);
	close(l.chardir);
	*ret_made = l.made;
	return r < 0 ? gerr_set(err, -r, "linking NVIDIA device nodes in %s/char: %s", dev, strerror(-r)) : 0;
}
