/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The static gpulet-cdi-hook runs no dynamic loader, so it cannot load the driver's libnvidia-ml
 * (glibc's dlopen from a static program wants the very glibc it was linked with). For the one action
 * that needs NVML it hands over to the dynamically linked gpulet installed beside it (one bin
 * directory: docs/HACKING.md §7), by exec, with an empty environment (no loader variable of the
 * container's can reach that loader) and the OCI state it already read on stdin
 * (docs/reference/cdi-hook.md §2.5).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cdihook/cdihook.h"
#include "util/macro.h"

#define DYNAMIC_NAME "gpulet"

/* The gpulet beside this executable, opened O_PATH and checked as the module loader checks a module. */
static int open_sibling(char *path, size_t size, struct gerr *err)
{
	_cleanup_close_ int fd = -1;
	char self[PATH_MAX], *slash;
	struct stat st, me;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0 || stat("/proc/self/exe", &me) < 0)
		return gerr_set(err, errno, "finding this executable (/proc/self/exe): %s", strerror(errno));
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash || (size_t)snprintf(path, size, "%.*s/" DYNAMIC_NAME, (int)(slash - self), self) >= size)
		return gerr_set(err, ENAMETOOLONG, "the path of %s is too long", self);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return gerr_set(err, errno,
				"%s: %s; the static hook needs the dynamically linked gpulet installed beside it to "
				"load NVML (install both, or name gpulet itself as the hook)",
				path, strerror(errno));
	if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
		return gerr_set(err, EACCES, "%s is not an executable file", path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return gerr_set(err, EPERM, "refusing to run %s: writable by group or others (mode %04o)", path,
				(unsigned)(st.st_mode & 07777));
	if (st.st_uid != 0 && st.st_uid != me.st_uid)
		return gerr_set(err, EPERM, "refusing to run %s: owned by uid %u, not root or the owner of this hook",
				path, (unsigned)st.st_uid);
	return TAKE_FD(fd);
}

int cdihook_exec_dynamic(const char *const *args, size_t n_args, const char *state, size_t len, struct gerr *err)
{
	_cleanup_close_ int exe = -1, mem = -1;
	_cleanup_free_ const char **argv = NULL;
	char *const envp[] = {NULL};
	char path[PATH_MAX];

	if (!cdihook_is_static())
		return gerr_set(err, EINVAL, "internal: only the static hook hands over to gpulet");
	exe = open_sibling(path, sizeof(path), err);
	if (exe < 0)
		return exe;
	argv = calloc(n_args + 3, sizeof(*argv));
	if (!argv)
		return gerr_set(err, ENOMEM, "out of memory");
	argv[0] = DYNAMIC_NAME;
	argv[1] = "cdi-hook";
	for (size_t i = 0; i < n_args; i++)
		argv[i + 2] = args[i];
	/* the state read from stdin (or --container-spec) becomes the new process's stdin */
	mem = memfd_create("oci-state", MFD_CLOEXEC);
	if (mem < 0 || write(mem, state, len) != (ssize_t)len || lseek(mem, 0, SEEK_SET) != 0 ||
	    dup2(mem, STDIN_FILENO) < 0)
		return gerr_set(err, errno ? errno : EIO, "handing the OCI state to %s: %s", path,
				strerror(errno ? errno : EIO));
	syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
	return gerr_set(err, errno, "running %s: %s", path, strerror(errno));
}
