/* SPDX-License-Identifier: Apache-2.0 */
/* File helpers: every host path goes through a root prefix; writes are atomic. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

/* "<root>/<path>" with duplicate slashes folded; root NULL or "" means "/". Returns NULL on ENOMEM. */
char *root_path(const char *root, const char *path);

/*
 * Read a whole regular file (at most max bytes; larger is -EFBIG) into a NUL-terminated buffer.
 * *ret_len (optional) gets the length without the NUL.
 */
int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct gerr *err);
/*
 * read_file, then parse(path, &text, len, ret, err); parse may keep the text (it then sets *text to NULL),
 * otherwise it is freed here.
 */
typedef int (*read_parse_fn)(const char *path, char **text, size_t len, void *ret, struct gerr *err);
int read_and_parse(const char *path, size_t max, read_parse_fn parse, void *ret, struct gerr *err);
/* The same from an open fd (stdin, a pipe), to its end; path names it in messages. */
int read_fd(int fd, const char *path, size_t max, char **ret, size_t *ret_len, struct gerr *err);

/*
 * Write data to path atomically: temp file in the same directory, fsync, rename, fsync of the dir.
 * The old file stays intact on any failure (full disk included). Refuses a path whose final
 * component is a symlink. mode is applied before the rename.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, struct gerr *err);

/* mkdir -p: every missing component of path with mode; 0, or -errno (-ENAMETOOLONG past PATH_MAX). */
int mkdir_p(const char *path, mode_t mode);

/* Read a small file and strip the trailing newline; for sysfs/procfs values. */
int read_line_file(const char *path, char *buf, size_t size);

/*
 * path made absolute from the working directory, as a relative path given to a program is read
 * (an absolute or empty one is copied as it is), malloc'd in *ret. 0, or -errno with err.
 */
int path_absolute(const char *path, char **ret, struct gerr *err);
