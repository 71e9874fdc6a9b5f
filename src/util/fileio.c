/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/macro.h"

char *root_path(const char *root, const char *path)
{
	size_t rl, pl;
	char *r;

	if (!root || !*root)
		root = "/";
	rl = strlen(root);
	while (rl > 0 && root[rl - 1] == '/')
		rl--;
	while (*path == '/')
		path++;
	pl = strlen(path);
	r = malloc(rl + pl + 2);
	if (!r)
		return NULL;
	memcpy(r, root, rl);
	r[rl] = '/';
	memcpy(r + rl + 1, path, pl + 1);
	return r;
}

int read_fd(int fd, const char *path, size_t max, char **ret, size_t *ret_len, struct gerr *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 4096;

	buf = malloc(cap);
	if (!buf)
		return gerr_set(err, ENOMEM, "out of memory reading %s", path);
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *nb;

			if (cap > max + 1)
				return gerr_set(err, EFBIG, "%s is larger than %zu bytes; refusing to read it", path,
						max);
			nb = grow_alloc(buf, &cap, 1, 4096);
			if (!nb)
				return gerr_set(err, ENOMEM, "out of memory reading %s", path);
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return gerr_set(err, errno, "cannot read %s: %s", path, strerror(errno));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return gerr_set(err, EFBIG, "%s is larger than %zu bytes; refusing to read it", path, max);
	}
	buf[len] = 0;
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct gerr *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return gerr_set(err, errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		return gerr_set(err, errno, "cannot stat %s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return gerr_set(err, EISDIR, "%s is a directory, expected a file", path);
	return read_fd(fd, path, max, ret, ret_len, err);
}

int read_and_parse(const char *path, size_t max, read_parse_fn parse, void *ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file(path, max, &text, &len, err);
	if (r < 0)
		return r;
	return parse(path, &text, len, ret, err);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, struct gerr *err)
{
	_cleanup_free_ char *tmp = NULL, *dircopy = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;
	struct stat st;
	int r;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return gerr_set(err, ELOOP,
				"%s is a symlink; refusing to replace it (remove it by hand if it is yours)", path);
	/* A dot-file: NFD, CDI registries and other directory scanners skip hidden files, so they never
	 * read the half-written temp file. */
	{
		const char *slash = strrchr(path, '/');
		int dl = slash ? (int)(slash - path + 1) : 0;

		if (asprintf(&tmp, "%.*s.%s.tmp.XXXXXX", dl, path, path + dl) < 0) {
			tmp = NULL;
			return gerr_set(err, ENOMEM, "out of memory");
		}
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return gerr_set(err, errno, "cannot create a temporary file next to %s: %s", path, strerror(errno));
	r = write_all(fd, data, len);
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return gerr_set(err, r, "cannot write %s: %s; the previous file, if any, is unchanged", path,
				strerror(-r));
	}
	dircopy = strdup(path);
	if (dircopy) {
		dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0)
			(void)fsync(dfd);
	}
	return 0;
}

int read_line_file(const char *path, char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f))
		return ferror(f) ? -EIO : -ENODATA;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	return mkdir(tmp, mode) < 0 && errno != EEXIST ? -errno : 0;
}

int path_absolute(const char *path, char **ret, struct gerr *err)
{
	_cleanup_free_ char *cwd = NULL;
	char *abs;

	if (!path[0] || path[0] == '/')
		abs = strdup(path);
	else if (!(cwd = getcwd(NULL, 0)))
		return gerr_set(err, errno, "cannot make '%s' absolute: %s; give an absolute path", path,
				strerror(errno));
	else if (asprintf(&abs, "%s%s%s", cwd, streq(cwd, "/") ? "" : "/", path) < 0)
		abs = NULL;
	if (!abs)
		return gerr_set(err, ENOMEM, "out of memory");
	*ret = abs;
	return 0;
}
