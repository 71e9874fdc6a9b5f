/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the CDI / driver / ld.so.cache unit tests: temp dirs and tiny real libraries. */
#pragma once

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/hostpaths.h"
#include "util/macro.h"

/* Run a shell command built with printf; returns its exit status. */
/* The host paths a verb resolves from --root, --driver-root and --dev-root (NULL: not given). */
static inline struct host_paths *mk_paths(const char *root, const char *driver_root, const char *dev_root)
{
	struct host_paths *hp = NULL;

	if (host_paths_new(&(struct host_paths_options){.root = root, .driver_root = driver_root, .dev_root = dev_root},
			   &hp, NULL) < 0)
		abort();
	return hp;
}

_printf_(1, 2) static inline int shf(const char *fmt, ...)
{
	char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	r = system(cmd);
	free(cmd);
	return r;
}

static inline char *mk_tempdir(void)
{
	char tmpl[] = "/tmp/gpulet-cdi-test.XXXXXX";
	char *d = mkdtemp(tmpl);

	return d ? strdup(d) : NULL;
}

/*
 * A real shared object root/dir/file with the given SONAME (so ldconfig -r links and caches it),
 * compiled from an empty translation unit.
 */
static inline int mk_lib(const char *root, const char *dir, const char *file, const char *soname)
{
	return shf("mkdir -p '%s%s' && cc -shared -fPIC -nostdlib -Wl,-soname,%s -o '%s%s/%s' -x c /dev/null", root,
		   dir, soname, root, dir, file);
}

/* Write ld.so.conf listing dirs and run ldconfig -r root (format: new, old or compat). */
static inline int mk_ldcache(const char *root, const char *dirs, const char *format)
{
	return shf("mkdir -p '%s/etc' && printf '%%s\\n' %s > '%s/etc/ld.so.conf' && "
		   "ldconfig -r '%s' -c %s",
		   root, dirs, root, root, format);
}

static inline void rm_tree(const char *dir)
{
	if (dir && strncmp(dir, "/tmp/gpulet-cdi-test.", 21) == 0)
		shf("rm -rf '%s'", dir);
}

/*
 * The least a driver root needs for cdi_generate() to write a spec for test_node-like nodes:
 * control nodes, GPU nodes nvidia0 and nvidia3, the MIG cap nodes 12, 13, 21, 22 (plain files: the
 * generator checks that they exist) under root/dev_sub/dev, and libcuda + libnvidia-ml of version
 * in root/usr/lib/x86_64-linux-gnu (found by the library-dir scan; no ld.so.cache).
 */
static inline int mk_driver(const char *root, const char *dev_sub, const char *version)
{
	return shf("d='%s%s/dev' && mkdir -p \"$d/nvidia-caps\" '%s/usr/lib/x86_64-linux-gnu' && "
		   "touch \"$d/nvidiactl\" \"$d/nvidia-uvm\" \"$d/nvidia0\" \"$d/nvidia3\" "
		   "\"$d/nvidia-caps/nvidia-cap12\" \"$d/nvidia-caps/nvidia-cap13\" \"$d/nvidia-caps/nvidia-cap21\" "
		   "\"$d/nvidia-caps/nvidia-cap22\" && cd '%s/usr/lib/x86_64-linux-gnu' && "
		   "touch libcuda.so.%s libnvidia-ml.so.%s libnvidia-ptxjitcompiler.so.%s libnvidia-nvvm.so.%s",
		   root, dev_sub ? dev_sub : "", root, root, version, version, version, version);
}
