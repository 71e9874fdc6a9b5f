/* SPDX-License-Identifier: Apache-2.0 */
/* Paths confined to a container rootfs: openat2(RESOLVE_IN_ROOT), or the same rules as a walk. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cdihook/inroot.h"
#include "util/macro.h"

#define WALK_MAX_DEPTH 256

/* The directories walked so far; the root itself is below the stack and never closed here. */
struct walk {
	int root_fd;
	int fds[WALK_MAX_DEPTH];
	size_t depth;
};

static int walk_cur(const struct walk *w)
{
	return w->depth ? w->fds[w->depth - 1] : w->root_fd;
}

static void walk_pop(struct walk *w)
{
	if (w->depth)
		close(w->fds[--w->depth]);
}

static void walk_reset(struct walk *w)
{
	while (w->depth)
		walk_pop(w);
}

/*
 * Replace the link component: the remaining path becomes target + "/" + after. An absolute
 * target starts again at the root (the rootfs is "/" for the container).
 */
static int splice_link(struct walk *w, const char *name, const char *after, int *links, char **buf, char **rest)
{
	char target[PATH_MAX];
	char *next;
	ssize_t n;

	if (++*links > INROOT_MAX_LINKS)
		return -ELOOP;
	n = readlinkat(walk_cur(w), name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	if (target[0] == '/')
		walk_reset(w);
	if (asprintf(&next, "%s/%s", target, after) < 0)
		return -ENOMEM;
	free(*buf);
	*buf = *rest = next;
	return 0;
}

static int walk_step(struct walk *w, const char *name)
{
	int fd;

	if (w->depth == WALK_MAX_DEPTH)
		return -ENAMETOOLONG;
	fd = openat(walk_cur(w), name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EAGAIN : -errno; /* became a symlink since fstatat: retry */
	w->fds[w->depth++] = fd;
	return 0;
}

static int walk_run(struct walk *w, char **buf, int flags, mode_t mode)
{
	char *rest = *buf, name[NAME_MAX + 1];
	int links = 0, r;

	for (;;) {
		size_t len;
		const char *after;
		bool last, follow;
		struct stat st;

		rest += strspn(rest, "/");
		if (!*rest) { /* the path named a directory ("/", "a/..", "a/"): open it */
			int fd = openat(walk_cur(w), ".", flags | O_CLOEXEC, mode);

			return fd < 0 ? -errno : fd;
		}
		len = strcspn(rest, "/");
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, rest, len);
		name[len] = '\0';
		after = rest + len;
		last = after[strspn(after, "/")] == '\0';
		/* a trailing slash asks for a directory: follow the link then, as the kernel does */
		follow = !last || !(flags & O_NOFOLLOW) || *after == '/';
		if (streq(name, ".") || streq(name, "..")) {
			if (name[1])
				walk_pop(w);
			rest = (char *)after;
			continue;
		}
		if (fstatat(walk_cur(w), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) && follow) {
			r = splice_link(w, name, after, &links, buf, &rest);
			if (r < 0)
				return r;
			continue;
		}
		if (last) {
			int fd = openat(walk_cur(w), name, flags | O_NOFOLLOW | O_CLOEXEC, mode);

			return fd < 0 ? -errno : fd;
		}
		r = walk_step(w, name);
		if (r < 0)
			return r;
		rest = (char *)after;
	}
}

int inroot_open_walk(int root_fd, const char *path, int flags, mode_t mode)
{
	struct walk w = {.root_fd = root_fd};
	char *buf;
	int r;

	if (!path || !*path)
		return -ENOENT;
	for (int attempt = 0; attempt < 4; attempt++) {
		buf = strdup(path);
		if (!buf)
			return -ENOMEM;
		r = walk_run(&w, &buf, flags, mode);
		walk_reset(&w);
		free(buf);
		if (r != -EAGAIN)
			return r;
	}
	return -EAGAIN;
}

int inroot_open(int root_fd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (unsigned)(flags | O_CLOEXEC),
	    .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (!path || !*path)
		return -ENOENT;
	fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	/* no openat2 (before 5.6, or filtered by seccomp), or a rename raced with the lookup */
	if (errno == ENOSYS || errno == EPERM || errno == EAGAIN)
		return inroot_open_walk(root_fd, path, flags, mode);
	return -errno;
}

int inroot_mkdir_p(int root_fd, const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	char *s;

	if (!p)
		return -ENOMEM;
	for (s = p;;) {
		char *e, save;
		int fd;

		s += strspn(s, "/");
		if (!*s)
			return inroot_open(root_fd, *p ? p : "/", O_PATH | O_DIRECTORY, 0);
		e = s + strcspn(s, "/");
		save = *e;
		*e = '\0';
		fd = inroot_open(root_fd, p, O_PATH | O_DIRECTORY, 0);
		if (fd == -ENOENT) {
			char c = *s;
			int parent;

			*s = '\0';
			parent = inroot_open(root_fd, *p ? p : "/", O_PATH | O_DIRECTORY, 0);
			*s = c;
			if (parent < 0)
				return parent;
			if (mkdirat(parent, s, mode) < 0 && errno != EEXIST) {
				int r = -errno;

				close(parent);
				return r;
			}
			close(parent);
			fd = inroot_open(root_fd, p, O_PATH | O_DIRECTORY, 0);
		}
		if (fd < 0 || !save)
			return fd;
		close(fd);
		*e = save;
		s = e;
	}
}

int inroot_open_parent(int root_fd, const char *path, bool create, const char **ret_name)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	int fd;

	if (!*name || streq(name, ".") || streq(name, ".."))
		return -EINVAL;
	dir = slash ? strndup(path, (size_t)(slash - path)) : strdup("/");
	if (!dir)
		return -ENOMEM;
	if (!*dir) {
		free(dir);
		dir = strdup("/");
		if (!dir)
			return -ENOMEM;
	}
	fd = create ? inroot_mkdir_p(root_fd, dir, 0755) : inroot_open(root_fd, dir, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0)
		*ret_name = name;
	return fd;
}
