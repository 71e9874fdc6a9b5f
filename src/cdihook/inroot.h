/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Paths inside a container's rootfs, resolved as a process chrooted there would resolve them:
 * every component is looked up below the root directory fd, ".." stops at the root, and a
 * symlink's absolute target starts again at the root. No path, symlink included, can name a
 * file outside the rootfs (docs/reference/cdi-hook.md §3).
 *
 * openat2(RESOLVE_IN_ROOT) does this in the kernel (Linux 5.6+); where it is missing or filtered
 * (ENOSYS, EPERM from a seccomp profile) the same rules run as a walk, one component at a time,
 * each opened with O_NOFOLLOW relative to the previous one.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define INROOT_MAX_LINKS 40 /* the kernel's MAXSYMLINKS: more hops is ELOOP */

/*
 * Open path (relative or absolute, both taken inside the root) below root_fd with flags
 * (O_CLOEXEC is added). With O_NOFOLLOW the last component is not followed (O_PATH gives the
 * symlink itself). mode applies with O_CREAT. Returns the fd or -errno (-ELOOP: too many links).
 */
int inroot_open(int root_fd, const char *path, int flags, mode_t mode);
/* The same by the component walk only (what inroot_open falls back to); for tests and old kernels. */
int inroot_open_walk(int root_fd, const char *path, int flags, mode_t mode);

/*
 * The directory that holds path's last component, inside the root, created with its parents
 * (mode 0755) when missing; *ret_name points into path at the last component (not "", "." or "..").
 * Returns an O_PATH|O_DIRECTORY fd or -errno.
 */
int inroot_open_parent(int root_fd, const char *path, bool create, const char **ret_name);

/*
 * mkdir -p of path inside the root; returns an O_PATH|O_DIRECTORY fd of it or -errno. A dangling
 * symlink on the way gets its target created (resolved inside the root, at most INROOT_MAX_LINKS).
 */
int inroot_mkdir_p(int root_fd, const char *path, mode_t mode);
