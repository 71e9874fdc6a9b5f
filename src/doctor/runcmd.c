/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asking a host tool for its version without a shell (issue 8 §4: gpulet runs as root and never
 * invokes /bin/sh): the tool is looked up in host_bin_dirs below --root (no $PATH lookup) and run
 * by spawn_run() with a fixed argv and environment, stderr to /dev/null.
 */
#include <errno.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/spawn.h"

int doctor_run_tool(const char *root, const char *name, char *const argv[], char *buf, size_t size, int timeout_ms)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	_cleanup_free_ char *path = host_find_bin(root, NULL, name);
	int r;

	if (!path)
		return -ENOENT;
	r = spawn_run(&(struct spawn_opts){.path = path, .argv = argv, .envp = envp, .timeout_ms = timeout_ms}, buf,
		      size);
	if (r < 0)
		return r;
	return r == 0 ? (int)strlen(buf) : -EIO;
}
