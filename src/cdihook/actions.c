/* SPDX-License-Identifier: Apache-2.0 */
/*
 * create-symlinks, enable-cuda-compat, disable-device-node-modification, chmod,
 * update-application-profile and the confined file writes they share. Behaviour follows
 * nvidia-cdi-hook (docs/reference/cdi-hook.md §2).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cdihook/cdihook.h"
#include "cdihook/inroot.h"
#include "util/fileio.h"

#define DEFAULT_COMPAT_DIR  "/usr/local/cuda/compat"
#define DEFAULT_HOST_PARAMS "/proc/driver/nvidia/params"
#define CONTAINER_PARAMS    "/proc/driver/nvidia/params"
#define PARAMS_MAX          (64u << 10)

/*
 * A temp name beside name (buf of NAME_MAX + 1); the pid keeps two hooks of two containers apart.
 * A name too long to carry gets a short one, never a cut one (two cut names could be the same).
 */
static int temp_name(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, ".%s.gpulet-%ld", name, (long)getpid());

	if (n > 0 && (size_t)n < size && n <= NAME_MAX)
		return 0;
	n = snprintf(buf, size, ".gpulet-%ld.tmp", (long)getpid());
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* cdihook_write_in_root() with the file's mode. */
static int write_in_root_mode(int root_fd, const char *path, const char *text, mode_t mode, struct gerr *err)
{
	_cleanup_close_ int dir = -1, fd = -1;
	const char *name = NULL;
	char tmp[NAME_MAX + 1];
	size_t len = strlen(text);

	dir = inroot_open_parent(root_fd, path, true, &name);
	if (dir < 0)
		return gerr_set(err, -dir, "creating the directory of %s in the container: %s", path, strerror(-dir));
	if (temp_name(tmp, sizeof(tmp), name) < 0)
		return gerr_set(err, ENAMETOOLONG, "writing %s in the container: no temp name fits", path);
	(void)unlinkat(dir, tmp, 0);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return gerr_set(err, errno, "creating %s in the container: %s (is the rootfs read-only?)", path,
				strerror(errno));
	if (write(fd, text, len) != (ssize_t)len || fchmod(fd, mode) < 0 || close(TAKE_FD(fd)) < 0) {
		int e = errno ? errno : EIO;

		(void)unlinkat(dir, tmp, 0);
		return gerr_set(err, e, "writing %s in the container: %s", path, strerror(e));
	}
	if (renameat(dir, tmp, dir, name) < 0) {
		int e = errno;

		(void)unlinkat(dir, tmp, 0);
		return gerr_set(err, e, "replacing %s in the container: %s", path, strerror(e));
	}
	return 0;
}

int cdihook_write_in_root(int root_fd, const char *path, const char *text, struct gerr *err)
{
	return write_in_root_mode(root_fd, path, text, 0644, err);
}

/*
 * One link: nothing to do when link already points at target; else a new symlink under a temp
 * name renamed over whatever is there (a file, another link), as `ln -sf` inside a chroot would.
 */
static int create_link(int root_fd, const char *target, const char *link, struct gerr *err)
{
	_cleanup_close_ int dir = -1;
	const char *name = NULL, *qt, *ql;
	char tmp[NAME_MAX + 1], cur[PATH_MAX], qtbuf[GERR_QUOTE_MAX], qlbuf[GERR_QUOTE_MAX];
	ssize_t n;

	/* The image's spec may name paths past PATH_MAX: the messages quote them shortened. */
	qt = gerr_quote(target, qtbuf);
	ql = gerr_quote(link, qlbuf);
	if (!*target || !*link)
		return gerr_set(err, EINVAL, "--link '%s::%s': target and link must not be empty", qt, ql);
	dir = inroot_open_parent(root_fd, link, true, &name);
	if (dir < 0)
		return gerr_set(err, -dir, "--link %s::%s: the link's directory in the container: %s", qt, ql,
				strerror(-dir));
	n = readlinkat(dir, name, cur, sizeof(cur) - 1);
	if (n >= 0) {
		cur[n] = '\0';
		if (streq(cur, target))
			return 0;
	}
	if (temp_name(tmp, sizeof(tmp), name) < 0)
		return gerr_set(err, ENAMETOOLONG, "--link %s::%s: no temp name fits", qt, ql);
	(void)unlinkat(dir, tmp, 0);
	if (symlinkat(target, dir, tmp) < 0)
		return gerr_set(err, errno, "--link %s::%s: creating the symlink: %s", qt, ql, strerror(errno));
	if (renameat(dir, tmp, dir, name) < 0) {
		int e = errno;

		(void)unlinkat(dir, tmp, 0);
		return gerr_set(err, e, "--link %s::%s: %s (a directory is in the way?)", qt, ql, strerror(e));
	}
	return 0;
}

int cdihook_create_symlinks(int root_fd, const char *const *links, size_t n, struct gerr *err)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *target = NULL;
		const char *sep = strstr(links[i], "::");
		bool seen = false;
		int r;

		for (size_t j = 0; j < i; j++)
			seen = seen || streq(links[j], links[i]);
		if (seen)
			continue;
		if (!sep || strstr(sep + 2, "::"))
			return gerr_set(err, EINVAL,
					"--link '%s': expected TARGET::LINK (e.g. libcuda.so.1::/usr/lib64/libcuda.so)",
					links[i]);
		target = strndup(links[i], (size_t)(sep - links[i]));
		if (!target)
			return gerr_set(err, ENOMEM, "out of memory");
		r = create_link(root_fd, target, sep + 2, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Major number of a "535.261.03" version; -1 when it does not start with digits. */
static long version_major(const char *v)
{
	char *end;
	long m;

	if (!v || *v < '0' || *v > '9')
		return -1;
	m = strtol(v, &end, 10);
	return (*end == '.' || *end == '\0') ? m : -1;
}

int cdihook_enable_cuda_compat(int root_fd, const char *host_driver_version, const char *compat_dir, struct gerr *err)
{
	_cleanup_free_ char *found = NULL, *text = NULL;
	long host = version_major(host_driver_version);
	struct dirent *de;
	DIR *d;
	int fd, n = 0;

	if (!host_driver_version || !*host_driver_version)
		return 0; /* upstream: no version, no-op */
	if (!compat_dir)
		compat_dir = DEFAULT_COMPAT_DIR;
	fd = inroot_open(root_fd, compat_dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return 0; /* no compat libraries in this image */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return gerr_set(err, errno, "reading %s in the container: %s", compat_dir, strerror(errno));
	}
	while ((de = readdir(d))) {
		struct stat st;
		bool reg = de->d_type == DT_REG ||
			   (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISREG(st.st_mode)); /* file systems without d_type */

		if (fnmatch("libcuda.so.*.*", de->d_name, 0) == 0 && reg && n++ == 0)
			found = strdup(de->d_name);
	}
	closedir(d);
	/* one compat libcuda, newer major than the host's; anything else: leave the image alone */
	if (n != 1 || !found || host < 0 || version_major(found + strlen("libcuda.so.")) <= host)
		return 0;
	if (asprintf(&text, "%s\n", compat_dir) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	return cdihook_write_in_root(root_fd, "/etc/ld.so.conf.d/00-compat-gpulet.conf", text, err);
}

/* The params text with "ModifyDeviceFiles: 1" made 0; NULL when no change is needed. */
static char *params_disabled(const char *text)
{
	const char *key = "ModifyDeviceFiles: ";
	char *out, *line;

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, strlen(key)) == 0 && p[strlen(key)] == '1' &&
		    (p[strlen(key) + 1] == '\n' || p[strlen(key) + 1] == '\0')) {
			out = strdup(text);
			if (!out)
				return NULL;
			line = out + (p - text);
			line[strlen(key)] = '0';
			return out;
		}
	return NULL;
}

int cdihook_disable_devnode_mod(int root_fd, const char *host_params, struct gerr *err)
{
	_cleanup_free_ char *text = NULL, *changed = NULL;
	_cleanup_close_ int fs = -1, mnt = -1, file = -1, tree = -1, target = -1;
	size_t len;
	int r;

	if (!host_params)
		host_params = DEFAULT_HOST_PARAMS;
	r = read_file(host_params, PARAMS_MAX, &text, &len, NULL);
	if (r == -ENOENT)
		return 0; /* no driver loaded, or not this driver: nothing to disable */
	if (r < 0)
		return gerr_set(err, -r, "reading %s: %s", host_params, strerror(-r));
	changed = params_disabled(text);
	if (!changed)
		return 0;
	target = inroot_open(root_fd, CONTAINER_PARAMS, O_PATH | O_NOFOLLOW, 0);
	if (target < 0)
		return gerr_set(err, -target,
				"%s in the container: %s; the runtime mounts /proc before createContainer hooks, so "
				"run this hook as createContainer",
				CONTAINER_PARAMS, strerror(-target));
	/* a private tmpfs, not attached anywhere: nothing is left in the container's tree but the file mount */
	fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return gerr_set(err, errno, "creating a tmpfs for the params copy: %s%s", strerror(errno),
				errno == ENOSYS ? " (the new mount API needs Linux 5.2)" : "");
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return gerr_set(err, errno, "mounting the tmpfs: %s", strerror(errno));
	file = openat(mnt, "params", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (file < 0 || write(file, changed, strlen(changed)) != (ssize_t)strlen(changed))
		return gerr_set(err, errno ? errno : EIO, "writing the params copy: %s", strerror(errno ? errno : EIO));
	tree = open_tree(mnt, "params", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return gerr_set(err, errno, "cloning the params copy: %s", strerror(errno));
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &(struct mount_attr){.attr_set = MOUNT_ATTR_RDONLY},
			  sizeof(struct mount_attr)) < 0 ||
	    move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return gerr_set(err, errno, "mounting the params copy over %s in the container: %s", CONTAINER_PARAMS,
				strerror(errno));
	return 0;
}

/*
 * chmod MODE PATH: the object path names inside the root (links followed inside it, as upstream's
 * os.Chmod of root+path follows them on the host) gets mode, unless it has it already. A directory
 * is changed through an fd of its own; anything else through its O_PATH fd's /proc/self/fd entry, so
 * a device node is never opened.
 */
static int chmod_one(int root_fd, const char *path, mode_t mode, struct gerr *err)
{
	_cleanup_close_ int fd = -1, dir = -1;
	char q[GERR_QUOTE_MAX], proc[64];
	struct stat st;
	int r;

	fd = inroot_open(root_fd, path, O_PATH, 0);
	if (fd == -ENOENT)
		return 0; /* upstream skips a path that does not exist */
	if (fd < 0 || fstat(fd, &st) < 0)
		return gerr_set(err, fd < 0 ? -fd : errno, "--path %s: %s", gerr_quote(path, q),
				strerror(fd < 0 ? -fd : errno));
	if ((st.st_mode & 07777) == mode)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = dir < 0 ? -errno : fchmod(dir, mode) < 0 ? -errno : 0;
	} else {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		r = chmod(proc, mode) < 0 ? -errno : 0;
	}
	/* upstream ignores a permission error: a read-only bind of the host's /dev (its issue 143) */
	if (r == -EPERM || r == -EACCES || r == -EROFS)
		return 0;
	return r < 0 ? gerr_set(err, -r, "--path %s: chmod %o: %s", gerr_quote(path, q), (unsigned)mode, strerror(-r))
		     : 0;
}

int cdihook_chmod(int root_fd, const char *const *paths, size_t n, mode_t mode, struct gerr *err)
{
	for (size_t i = 0; i < n; i++) {
		int r = chmod_one(root_fd, paths[i], mode, err);

		if (r < 0)
			return r;
	}
	return 0;
}

int cdihook_parse_mode(const char *s, mode_t *ret, struct gerr *err)
{
	unsigned long m = 0;

	if (!s || !*s)
		return gerr_set(err, EINVAL, "--mode: a non-empty mode must be specified (octal, e.g. 755)");
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '7')
			return gerr_set(err, EINVAL, "--mode %s is not an octal mode (e.g. 755)", s);
		m = m * 8 + (unsigned long)(*p - '0');
		if (m > 0777)
			/* upstream's os.Chmod keeps only the permission bits of a value above 0777 */
			return gerr_set(err, EINVAL,
					"--mode %s: only permission bits (at most 777) are set; setuid, setgid and "
					"sticky bits are refused",
					s);
	}
	*ret = (mode_t)m;
	return 0;
}

#define APP_PROFILE_DIR  "/etc/nvidia/nvidia-application-profiles-rc.d"
#define APP_PROFILE_FILE APP_PROFILE_DIR "/10-container.conf"

/* The minor of /dev/<name> when it is a character device named nvidia<digits>, else -1. */
static long gpu_minor(int dev, const struct dirent *de)
{
	const char *p = de->d_name + strlen("nvidia");
	struct stat st;

	if (strncmp(de->d_name, "nvidia", 6) != 0 || !*p || strspn(p, "0123456789") != strlen(p))
		return -1;
	if (de->d_type != DT_CHR && de->d_type != DT_UNKNOWN)
		return -1;
	if (fstatat(dev, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISCHR(st.st_mode))
		return -1;
	return (long)minor(st.st_rdev);
}

int cdihook_update_app_profile(int root_fd, struct gerr *err)
{
	char text[192];
	unsigned long long mask = 0;
	struct dirent *de;
	_cleanup_close_ int dirfd_ = -1;
	DIR *d;
	int fd, r;

	fd = inroot_open(root_fd, "/dev", O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return gerr_set(err, -fd, "/dev in the container: %s", strerror(-fd));
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return gerr_set(err, errno, "reading /dev in the container: %s", strerror(errno));
	}
	while ((de = readdir(d))) {
		long m = gpu_minor(dirfd(d), de);

		/* EGLVisibleDGPUDevices is a 64-bit mask: upstream drops minors past 63 with a warning */
		if (m >= 0 && m < 64)
			mask |= 1ull << m;
	}
	closedir(d);
	if (!mask)
		return 0;
	snprintf(text, sizeof(text),
		 "{\"profiles\":[{\"name\":\"_container_\",\"settings\":[\"EGLVisibleDGPUDevices\",0x%llx]}],"
		 "\"rules\":[{\"pattern\":[],\"profile\":\"_container_\"}]}",
		 mask);
	dirfd_ = inroot_mkdir_p(root_fd, APP_PROFILE_DIR, 0555);
	r = dirfd_ < 0 ? gerr_set(err, -dirfd_, "creating %s in the container: %s", APP_PROFILE_DIR, strerror(-dirfd_))
		       : write_in_root_mode(root_fd, APP_PROFILE_FILE, text, 0444, err);
	/* upstream lets the container start on a read-only rootfs (EROFS) or a busy target (EBUSY) */
	if (r == -EROFS || r == -EBUSY)
		return 0;
	return r;
}
