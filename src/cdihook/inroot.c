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
		return errno == EINVAL ? -EAGAIN : -errno; /* no longer a link since fstatat: walk again */
	target[n] = '\0';
	if (target[0] == '/')
		walk_reset(w);
	if (asprintf(&next, "%s/%s", target, after) < 0)
		return -ENOMEM;
	free(*buf);
	*buf = *rest = next;
	return 0;
}

/*
 * errno of an open of name that fstatat had seen otherwise: when the entry is now a directory or a
 * symlink (swapped since: ELOOP, or ENOTDIR/EINVAL for O_PATH|O_NOFOLLOW on a link), -EAGAIN to
 * walk again; a plain file or nothing keeps the real error.
 */
static int swapped_or(int dir, const char *name, int e)
{
	struct stat st;

	if ((e == ELOOP || e == ENOTDIR || e == EINVAL) && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)))
		return -EAGAIN;
	return -e;
}

static int walk_step(struct walk *w, const char *name)
{
	int fd;

	if (w->depth == WALK_MAX_DEPTH)
		return -ENAMETOOLONG;
	fd = openat(walk_cur(w), name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return swapped_or(walk_cur(w), name, errno);
	w->fds[w->depth++] = fd;
	return 0;
}

/* The last component; one that became a symlink after fstatat when it was to be followed: retry. */
static int walk_last(struct walk *w, const char *name, int flags, bool follow, mode_t mode)
{
	struct stat st;
	int fd = openat(walk_cur(w), name, flags | O_NOFOLLOW | O_CLOEXEC, mode);

	if (fd < 0)
		return follow ? swapped_or(walk_cur(w), name, errno) : -errno;
	if (follow && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
		close(fd);
		return -EAGAIN;
	}
	return fd;
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
			/* rest points into the new *buf, which the caller owns and frees: no leak */
			// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
			r = splice_link(w, name, after, &links, buf, &rest);
			if (r < 0)
				return r;
			continue;
		}
		if (last)
			return walk_last(w, name, flags, follow, mode);
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

static int mkdir_p(int root_fd, const char *path, mode_t mode, int links);

/*
 * name in parent exists (mkdirat said EEXIST) yet does not open as a directory: a dangling
 * symlink is followed by creating its target inside the root, as a chrooted `mkdir -p` of the
 * link's target would; anything else keeps the error.
 */
static int mkdir_link_target(int root_fd, int parent, const char *dir, const char *name, mode_t mode, int links)
{
	_cleanup_free_ char *next = NULL;
	char target[PATH_MAX];
	ssize_t n;

	if (links >= INROOT_MAX_LINKS)
		return -ELOOP;
	n = readlinkat(parent, name, target, sizeof(target) - 1);
	if (n < 0)
		return errno == EINVAL ? -ENOTDIR : -errno; /* not a link: a file is in the way */
	target[n] = '\0';
	if (asprintf(&next, "%s/%s", target[0] == '/' ? "" : dir, target) < 0)
		return -ENOMEM;
	return mkdir_p(root_fd, next, mode, links + 1);
}

/* One component: the last of p, named by s, below an existing dir; created when missing. */
static int mkdir_one(int root_fd, const char *p, const char *s, mode_t mode, int links)
{
	_cleanup_free_ char *dir = strndup(p, (size_t)(s - p));
	_cleanup_close_ int parent = -1;
	int fd = inroot_open(root_fd, p, O_PATH | O_DIRECTORY, 0);

	if (fd != -ENOENT)
		return fd;
	if (!dir)
		return -ENOMEM;
	parent = inroot_open(root_fd, *dir ? dir : "/", O_PATH | O_DIRECTORY, 0);
	if (parent < 0)
		return parent;
	if (mkdirat(parent, s, mode) < 0 && errno != EEXIST)
		return -errno;
	fd = inroot_open(root_fd, p, O_PATH | O_DIRECTORY, 0);
	if (fd != -ENOENT)
		return fd;
	/* EEXIST, yet it does not resolve: a dangling link */
	fd = mkdir_link_target(root_fd, parent, *dir ? dir : "/", s, mode, links);
	if (fd < 0)
		return fd;
	close(fd);
	return inroot_open(root_fd, p, O_PATH | O_DIRECTORY, 0);
}

static int mkdir_p(int root_fd, const char *path, mode_t mode, int links)
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
		fd = mkdir_one(root_fd, p, s, mode, links);
		if (fd < 0 || !save)
			return fd;
		close(fd);
		*e = save;
		s = e;
	}
}

int inroot_mkdir_p(int root_fd, const char *path, mode_t mode)
{
	return mkdir_p(root_fd, path, mode, 0);
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
