/* SPDX-License-Identifier: Apache-2.0 */
/* Driver root discovery. See driver.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/driver.h"
#include "host/ldcache.h"
#include "util/fileio.h"

/* ---- tables ------------------------------------------------------------------------------------ */

/* IPC endpoints (nvidia-ctk internal/discover/ipc.go); the first existing spelling of each wins. */
static const struct {
	const char *paths[2];
	bool dir; /* a directory: mounted read-write only when safe_dir() says a local user cannot own it */
} ipc_paths[] = {
    {{"/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"}, false},
    {{"/run/nvidia-fabricmanager/socket", "/var/run/nvidia-fabricmanager/socket"}, false},
    /* MPS pipe dir (libnvidia-container nvc_info.c): a fixed name under the world-writable /tmp */
    {{"/tmp/nvidia-mps", NULL}, true},
};

/* Utility binaries (nvidia-ctk internal/discover binaries; cdi.md §7.5), searched in host_bin_dirs. */
static const char *const binaries[] = {
    "nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server",
};

/*
 * The one list of driver library directories, inside the driver root, in search order. The NVML
 * loader (nvml/open.c; every verb, doctor and the plugin) tries each for libnvidia-ml.so.1;
 * discovery scans them when the root has no ld.so.cache. Sources (docs/reference/cdi.md §7.4,
 * docs/reference/real-driver.md): nvidia-ctk pkg/lookup/library.go default search paths; Debian's
 * nvidia/current (its packages install there, reached through /etc/alternatives links); RHEL's
 * usr/lib64; usr/lib and lib last, where older NVML loaders also looked.
 */
const char *const driver_lib_dirs[] = {
    "/usr/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu/nvidia/current",
    "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/lib64",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu/nvidia/current",
    "/lib/aarch64-linux-gnu/nvidia/current",
    "/usr/lib",
    "/lib",
};
const size_t driver_n_lib_dirs = ELEMENTSOF(driver_lib_dirs);

/*
 * Driver libraries without the driver's version in their name, matched as PREFIX<version>
 * (nvidia-ctk pkg/nvcdi/driver-nvml.go getLegacyNVVMLibraryMounts, internal/discover/graphics.go;
 * docs/reference/cdi.md §7.4). dotted: the EGL platform libraries have their own X.Y.Z version,
 * so only a name with a '.' after the prefix is the library file (the SONAME link is mounted too).
 */
static const struct {
	const char *prefix;
	bool dotted;
} unversioned_libs[] = {
    {"libnvidia-nvvm70.so.", false},      {"libnvidia-egl-gbm.so.", true}, {"libnvidia-egl-wayland.so.", true},
    {"libnvidia-egl-wayland2.so.", true}, {"libnvidia-egl-xcb.so.", true}, {"libnvidia-egl-xlib.so.", true},
};

/*
 * Config files the loaders in the container read (nvidia-ctk internal/discover/graphics.go
 * newGraphicsConfigsDiscoverer, newVulkanConfigsDiscover; docs/reference/cdi.md §7.5): found as
 * <search dir>/<name> under the driver root, mounted at <container dir>/<name> so the container's
 * loader finds them wherever the host installed them. Search dirs: /etc, then the XDG data dirs'
 * defaults /usr/local/share, /usr/share; the Vulkan files also at the driver root itself (GKE's
 * <driver root>/vulkan/icd.d). The first file found for a name wins.
 */
static const struct {
	const char *name;
	const char *container_dir;
	bool at_root;
} config_files[] = {
    {"glvnd/egl_vendor.d/10_nvidia.json", "/usr/share", false}, /* EGL vendor (libglvnd) */
    {"egl/egl_external_platform.d/15_nvidia_gbm.json", "/usr/share", false},
    {"egl/egl_external_platform.d/10_nvidia_wayland.json", "/usr/share", false},
    {"egl/egl_external_platform.d/09_nvidia_wayland2.json", "/usr/share", false},
    {"egl/egl_external_platform.d/20_nvidia_xcb.json", "/usr/share", false},
    {"egl/egl_external_platform.d/20_nvidia_xlib.json", "/usr/share", false},
    {"nvidia/nvoptix.bin", "/usr/share", false}, /* OptiX data */
    {"X11/xorg.conf.d/10-nvidia.conf", "/usr/share", false},
    {"X11/xorg.conf.d/nvidia-drm-outputclass.conf", "/usr/share", false},
    {"OpenCL/vendors/nvidia.icd", "/etc", false}, /* OpenCL ICD loader */
    {"vulkan/icd.d/nvidia_icd.json", "/etc", true},
    {"vulkan/icd.d/nvidia_layers.json", "/etc", true},
    {"vulkan/implicit_layer.d/nvidia_layers.json", "/etc", true},
#if defined(__x86_64__)
    {"vulkan/icd.d/nvidia_icd.x86_64.json", "/etc", true}, /* some RPM packages */
#elif defined(__aarch64__)
    {"vulkan/icd.d/nvidia_icd.aarch64.json", "/etc", true},
#endif
};
static const char *const config_dirs[] = {"/etc", "/usr/local/share", "/usr/share"};

/* Firmware dir under the driver root (libnvidia-container: /lib/firmware/nvidia/%s/gsp*.bin; nvidia-ctk 1.20
 * also ucodes*.bin). */
#define FIRMWARE_DIR "/lib/firmware/nvidia"

/* ---- discovery --------------------------------------------------------------------------------- */

struct discovery {
	const char *root, *driver_root, *dev_root;
	struct driver_info *info;
	size_t cap;
};

/* host_path = base + host, container_path = container (a symlink followed on the host side). */
static int add_file_at(struct discovery *d, enum driver_file_kind kind, const char *base, const char *host,
		       const char *container, bool is_dir)
{
	struct driver_info *in = d->info;
	struct driver_file *f;

	if (in->n_files == d->cap) {
		struct driver_file *nf = grow_alloc(in->files, &d->cap, sizeof(*nf), 32);

		if (!nf)
			return -ENOMEM;
		in->files = nf;
	}
	f = &in->files[in->n_files];
	*f = (struct driver_file){.kind = kind, .is_dir = is_dir};
	f->host_path = host_join(base, host);
	f->container_path = strdup(container);
	if (!f->host_path || !f->container_path) {
		free(f->host_path);
		free(f->container_path);
		return -ENOMEM;
	}
	in->n_files++;
	return 0;
}

static int add_file(struct discovery *d, enum driver_file_kind kind, const char *base, const char *path, bool is_dir)
{
	return add_file_at(d, kind, base, path, path, is_dir);
}

/* lstat/stat of base+path read under root. */
static int stat_under(const struct discovery *d, const char *base, const char *path, struct stat *st, bool follow)
{
	_cleanup_free_ char *host = host_join(base, path), *p = NULL;

	if (!host)
		return -ENOMEM;
	p = root_path(d->root, host);
	if (!p)
		return -ENOMEM;
	if ((follow ? stat(p, st) : lstat(p, st)) < 0)
		return -errno;
	return 0;
}

static void normalize_path(char *p)
{
	/* Fold "//", "/./" and "/x/../" in an absolute path, in place. */
	char *out = p, *s = p;

	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);

		if (n == 1 && s[0] == '.') {
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (out > p && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, s, n);
			out += n;
		}
		s = e;
	}
	if (out == p)
		*out++ = '/';
	*out = 0;
}

int driver_resolve(const char *root, const char *driver_root, const char *path, char **ret)
{
	_cleanup_free_ char *cur = strdup(path);

	if (!cur)
		return -ENOMEM;
	for (int hop = 0; hop < 16; hop++) {
		_cleanup_free_ char *host = host_join(driver_root, cur), *p = NULL, *next = NULL;
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		p = host ? root_path(root, host) : NULL;
		if (!p)
			return -ENOMEM;
		if (lstat(p, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode)) {
			*ret = TAKE_PTR(cur);
			return 0;
		}
		n = readlink(p, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = 0;
		if (target[0] == '/') {
			next = strdup(target);
		} else {
			char *slash = strrchr(cur, '/');

			*slash = 0;
			if (asprintf(&next, "%s/%s", cur, target) < 0)
				next = NULL;
		}
		if (!next)
			return -ENOMEM;
		normalize_path(next);
		free(cur);
		cur = TAKE_PTR(next);
	}
	return -ELOOP;
}

/* The last component of path; all of it when there is no '/'. */
static const char *base_name(const char *path)
{
	/*
	 * The analyzer (LLVM 14) does not know that -errno after a failed lstat() is negative, so it follows
	 * driver_resolve()'s failure as a success that left the path NULL: not a path any caller passes.
	 */
	const char *slash = strrchr(path, '/'); // NOLINT(clang-analyzer-core.NonNullParamChecker)

	return slash ? slash + 1 : path;
}

static int resolve_in_root(const struct discovery *d, const char *path, char **ret)
{
	return driver_resolve(d->root, d->driver_root, path, ret);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && streq(s + a - b, suffix);
}

/* file_name is name.<something> ("libcuda.so" matches "libcuda.so.1", not "libcuda.so-x"). */
static bool is_library(const char *file_name, const char *name)
{
	size_t n = strlen(name);

	return strncmp(file_name, name, n) == 0 && file_name[n] == '.';
}

static bool known_library(const char *file_name)
{
	for (size_t i = 0; i < driver_n_libs; i++)
		if (is_library(file_name, driver_libs[i].name))
			return true;
	return false;
}

const struct driver_file *driver_find_library(const struct driver_info *d, const char *name)
{
	for (size_t i = 0; i < d->n_files; i++) {
		const struct driver_file *f = &d->files[i];

		if (f->kind == DRIVER_LIBRARY && is_library(strrchr(f->container_path, '/') + 1, name))
			return f;
	}
	return NULL;
}

/*
 * A known driver library's link that leads nowhere: the runtime would fail to mount it, so it is
 * left out, and the user hears about it (a stale ld.so.cache after a driver upgrade or removal).
 */
static int warn_dangling(struct discovery *d, const char *path)
{
	_cleanup_free_ char *host = host_join(d->driver_root, path), *p = NULL;
	char target[PATH_MAX];
	ssize_t n;

	if (!known_library(strrchr(path, '/') + 1))
		return 0;
	p = host ? root_path(d->root, host) : NULL;
	if (!p)
		return -ENOMEM;
	n = readlink(p, target, sizeof(target) - 1);
	if (n < 0)
		return 0; /* not a link: simply absent (a cache entry for a removed file) */
	target[n] = 0;
	/* once: the cache and the dir scan may meet the same link */
	return warnings_add_once(&d->info->warnings,
				 "%s: dangling link to %s (left out; reinstall the driver libraries or run ldconfig)",
				 host, target);
}

/*
 * A library candidate: path (inside the driver root) of a SONAME link or file. Kept when it
 * resolves to a regular "*.so.<version>" file that is a known driver library or, like
 * nvidia-ctk, any library with exactly the driver's version. Both the link and the file are
 * mounted, so the container has the SONAME without an ldconfig hook.
 */
/*
 * The regular file a library candidate path leads to (*ret, inside the driver root): 1 found, 0 not
 * a library file (a dangling link of a known library is a warning), -ENOMEM.
 */
static int library_file(struct discovery *d, const char *path, char **ret)
{
	_cleanup_free_ char *target = NULL;
	struct stat st;
	int r = resolve_in_root(d, path, &target);

	if (r == -ENOENT)
		return warn_dangling(d, path);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	if (stat_under(d, d->driver_root, target, &st, false) < 0 || !S_ISREG(st.st_mode))
		return 0;
	*ret = TAKE_PTR(target);
	return 1;
}

/* The library file and, when path is a link to it (its SONAME), the link too. */
static int add_library_at(struct discovery *d, const char *target, const char *path)
{
	int r = add_file(d, DRIVER_LIBRARY, d->driver_root, target, false);

	if (r == 0 && !streq(target, path))
		r = add_file(d, DRIVER_LIBRARY, d->driver_root, path, false);
	return r;
}

static int add_library(struct discovery *d, const char *path)
{
	_cleanup_free_ char *target = NULL, *suffix = NULL;
	const char *name;
	int r = library_file(d, path, &target);

	if (r <= 0)
		return r;
	name = base_name(target);
	if (asprintf(&suffix, ".so.%s", d->info->version) < 0)
		return -ENOMEM;
	if (!has_suffix(name, suffix) || (!known_library(name) && strncmp(name, "lib", 3) != 0))
		return 0;
	return add_library_at(d, target, path);
}

/* Every entry of a dir under the driver root matching pattern, as paths inside the root. */
static int for_each_match(struct discovery *d, const char *dir, const char *pattern,
			  int (*fn)(struct discovery *, const char *, void *), void *userdata)
{
	_cleanup_free_ char *host = host_join(d->driver_root, dir), *p = NULL;
	DIR *dh;
	struct dirent *de;
	int r = 0;

	p = host ? root_path(d->root, host) : NULL;
	if (!p)
		return -ENOMEM;
	dh = opendir(p);
	if (!dh)
		return 0;
	while (r >= 0 && (de = readdir(dh))) {
		_cleanup_free_ char *path = NULL;

		if (de->d_name[0] == '.' || fnmatch(pattern, de->d_name, 0) != 0)
			continue;
		if (asprintf(&path, "%s/%s", streq(dir, "/") ? "" : dir, de->d_name) < 0)
			r = -ENOMEM;
		else
			r = fn(d, path, userdata);
	}
	closedir(dh);
	return r;
}

static int add_library_cb(struct discovery *d, const char *path, void *userdata)
{
	return add_library(d, path);
}

/* A link or file named like unversioned_libs[i]: kept when it resolves to the library file. */
static int add_unversioned_cb(struct discovery *d, const char *path, void *userdata)
{
	size_t i = *(const size_t *)userdata, n = strlen(unversioned_libs[i].prefix);
	_cleanup_free_ char *target = NULL;
	const char *name;
	int r = library_file(d, path, &target);

	if (r <= 0)
		return r;
	name = base_name(target);
	if (strncmp(name, unversioned_libs[i].prefix, n) != 0 || !name[n] ||
	    (unversioned_libs[i].dotted && !strchr(name + n, '.')))
		return 0;
	return add_library_at(d, target, path);
}

/* unversioned_libs[] in every library dir, each real dir once (/lib may be a link to /usr/lib). */
static int discover_unversioned(struct discovery *d)
{
	struct stat seen[ELEMENTSOF(driver_lib_dirs)];
	size_t n_seen = 0;
	int r = 0;

	for (size_t i = 0; i < driver_n_lib_dirs && r >= 0; i++) {
		struct stat st;
		bool dup = false;

		if (stat_under(d, d->driver_root, driver_lib_dirs[i], &st, true) < 0 || !S_ISDIR(st.st_mode))
			continue;
		for (size_t j = 0; j < n_seen && !dup; j++)
			dup = seen[j].st_dev == st.st_dev && seen[j].st_ino == st.st_ino;
		if (dup)
			continue;
		seen[n_seen++] = st;
		for (size_t k = 0; k < ELEMENTSOF(unversioned_libs) && r >= 0; k++) {
			char pattern[64];

			snprintf(pattern, sizeof(pattern), "%s*", unversioned_libs[k].prefix);
			r = for_each_match(d, driver_lib_dirs[i], pattern, add_unversioned_cb, &k);
		}
	}
	return r;
}

/* config_files[]: the first regular file (links followed inside the driver root) of each name. */
static int discover_configs(struct discovery *d)
{
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(config_files) && r >= 0; i++)
		for (size_t j = 0; j <= ELEMENTSOF(config_dirs); j++) {
			_cleanup_free_ char *path = NULL, *target = NULL, *container = NULL;
			struct stat st;

			if (j == ELEMENTSOF(config_dirs) && !config_files[i].at_root)
				break;
			if (asprintf(&path, "%s/%s", j < ELEMENTSOF(config_dirs) ? config_dirs[j] : "",
				     config_files[i].name) < 0 ||
			    asprintf(&container, "%s/%s", config_files[i].container_dir, config_files[i].name) < 0)
				return -ENOMEM;
			if (resolve_in_root(d, path, &target) < 0 ||
			    stat_under(d, d->driver_root, target, &st, false) < 0 || !S_ISREG(st.st_mode))
				continue;
			r = add_file_at(d, DRIVER_CONFIG, d->driver_root, target, container, false);
			break;
		}
	return r;
}

static int add_firmware_cb(struct discovery *d, const char *path, void *userdata)
{
	struct stat st;

	if (stat_under(d, d->driver_root, path, &st, true) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return add_file(d, DRIVER_FIRMWARE, d->driver_root, path, false);
}

/* When NVML gave no version: the one libcuda.so.* / libnvidia-ml.so.* in the cache resolve to. */
static void infer_version(struct discovery *d, const struct ldcache *c)
{
	static const char *const probes[] = {"libnvidia-ml.so.", "libcuda.so."};

	for (size_t p = 0; p < ELEMENTSOF(probes) && !d->info->version[0]; p++)
		for (size_t i = 0; c && i < c->n_entries && !d->info->version[0]; i++) {
			_cleanup_free_ char *target = NULL;
			const char *name;

			if (strncmp(c->entries[i].key, probes[p], strlen(probes[p])) != 0 ||
			    resolve_in_root(d, c->entries[i].value, &target) < 0)
				continue;
			name = base_name(target); /* ld.so.cache values are the host's: maybe not a path */
			if (strlen(name) > strlen(probes[p]) && strchr(name + strlen(probes[p]), '.'))
				snprintf(d->info->version, sizeof(d->info->version), "%s", name + strlen(probes[p]));
		}
}

static int discover_libraries(struct discovery *d, struct gerr *err)
{
	_cleanup_(ldcache_freep) struct ldcache *c = NULL;
	_cleanup_free_ char *host = host_join(d->driver_root, "/etc/ld.so.cache"), *p = NULL, *versioned = NULL;
	int32_t arch = ldcache_host_arch();
	size_t first = d->info->n_files, last;
	int r = 0;

	p = host ? root_path(d->root, host) : NULL;
	if (!p)
		return gerr_set(err, ENOMEM, "out of memory");
	if (access(p, F_OK) == 0) {
		r = ldcache_read(p, &c, err);
		if (r < 0)
			return r;
		d->info->ldcache_found = true;
	}
	if (!d->info->version[0])
		infer_version(d, c);
	if (!d->info->version[0])
		return 0; /* no driver libraries here */
	for (size_t i = 0; c && i < c->n_entries && r >= 0; i++) {
		const struct ldcache_entry *e = &c->entries[i];

		if ((e->flags & LDCACHE_FLAG_TYPE_MASK) != LDCACHE_FLAG_ELF_LIBC6 ||
		    (e->flags & LDCACHE_FLAG_ARCH_MASK) != arch || e->value[0] != '/')
			continue;
		r = add_library(d, e->value);
	}
	for (size_t i = 0; !c && i < driver_n_lib_dirs && r >= 0; i++)
		r = for_each_match(d, driver_lib_dirs[i], "lib*.so.*", add_library_cb, NULL);
	/*
	 * Like nvidia-ctk (driver-nvml.go getVersionLibs, docs/reference/cdi.md §7.4): every
	 * lib*.so.<version> in a dir that holds a driver library, though the cache lacks it (Debian's
	 * nvidia/current: libnvidia-cfg, libnvidia-vulkan-producer), and vdpau/ next to each; each dir once.
	 */
	if (asprintf(&versioned, "lib*.so.%s", d->info->version) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	last = d->info->n_files;
	for (size_t i = first; i < last && r >= 0; i++) {
		const char *cp = d->info->files[i].container_path;
		size_t n = (size_t)(strrchr(cp, '/') - cp);
		_cleanup_free_ char *vd = NULL, *dir = NULL;
		bool seen = false;

		for (size_t j = first; j < i && !seen; j++) {
			const char *o = d->info->files[j].container_path;

			seen = (size_t)(strrchr(o, '/') - o) == n && strncmp(o, cp, n) == 0;
		}
		if (seen || (n >= 6 && strncmp(cp + n - 6, "/vdpau", 6) == 0))
			continue;
		if (asprintf(&vd, "%.*s/vdpau", (int)n, cp) < 0 || !(dir = strndup(cp, n ? n : 1)))
			return gerr_set(err, ENOMEM, "out of memory");
		r = for_each_match(d, dir, versioned, add_library_cb, NULL);
		if (r >= 0)
			r = for_each_match(d, vd, "libvdpau_nvidia.so.*", add_library_cb, NULL);
	}
	if (r >= 0)
		r = discover_unversioned(d);
	return r < 0 ? gerr_set(err, -r, "driver discovery: %s", strerror(-r)) : 0;
}

/* Say why a dir is not safe (safe_dir); returns 0, "not safe". */
_printf_(3, 4) static int unsafe(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * path (under the driver root, read under --root) as a directory no local user can have made or
 * taken over, looked at without following any link: every component from the driver root down is
 * a directory owned by root and, where group or others may write it, sticky (as /tmp is: nobody
 * removes or replaces another's entry). nvidia-cuda-mps-control keeps the mode of a pipe dir that
 * exists and makes a missing one 0777 (docs/reference/cdi-hook.md §7.2). 1: safe; 0: not, why
 * says what; -errno: not there, or not a directory.
 */
static int safe_dir(const struct discovery *d, const char *path, char *why, size_t size)
{
	_cleanup_free_ char *top = root_path(d->root, d->driver_root);
	_cleanup_close_ int dir = -1;
	char seen[PATH_MAX] = "";

	if (!top)
		return -ENOMEM;
	dir = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	for (const char *p = path + strspn(path, "/"); *p; p += strspn(p, "/")) {
		size_t n = strcspn(p, "/");
		char name[NAME_MAX + 1];
		struct stat st;
		int next;

		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "/%s", name);
		next = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		close(dir);
		dir = next;
		if (fstat(dir, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode))
			return unsafe(why, size, "%s is a symlink", seen);
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (st.st_uid != 0)
			return unsafe(why, size, "%s is owned by uid %u, not root", seen, (unsigned)st.st_uid);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return unsafe(why, size, "%s has mode %04o: writable by group or others and not sticky", seen,
				      (unsigned)(st.st_mode & 07777));
	}
	return 1;
}

/* An IPC dir is mounted read-write into every GPU container: only a safe one (safe_dir), else a warning. */
static int add_ipc_dir(struct discovery *d, const char *path)
{
	_cleanup_free_ char *host = host_join(d->driver_root, path);
	char why[PATH_MAX + 64];
	int r = safe_dir(d, path, why, sizeof(why));

	if (r < 0)
		return r == -ENOMEM ? r : 0; /* gone or not a dir meanwhile: nothing to mount */
	if (r > 0)
		return add_file(d, DRIVER_IPC_SOCKET, d->driver_root, path, true);
	return warnings_add_once(
	    &d->info->warnings,
	    "%s (MPS pipe dir): not mounted into containers, as %s; a local user can make or take over "
	    "this path under the world-writable /tmp, and every GPU container would get it read-write. "
	    "Fix: before nvidia-cuda-mps-control starts (it keeps an existing dir's mode, and makes a "
	    "missing one 0777), make it root's and 1777 or 0755, e.g. the systemd-tmpfiles line "
	    "'d /tmp/nvidia-mps 1777 root root -'",
	    host ? host : path, why);
}

static int discover_fixed(struct discovery *d)
{
	_cleanup_free_ char *fw = NULL;
	struct stat st;
	int r = 0;

	for (size_t i = 0; i < driver_n_control_nodes && r >= 0; i++)
		if (stat_under(d, d->dev_root, driver_control_nodes[i].path, &st, true) == 0)
			r = add_file(d, DRIVER_DEVICE_NODE, d->dev_root, driver_control_nodes[i].path, false);
	for (size_t i = 0; i < ELEMENTSOF(ipc_paths) && r >= 0; i++)
		for (size_t j = 0; j < ELEMENTSOF(ipc_paths[i].paths) && ipc_paths[i].paths[j]; j++) {
			const char *path = ipc_paths[i].paths[j];

			if (stat_under(d, d->driver_root, path, &st, true) < 0 ||
			    (ipc_paths[i].dir ? !S_ISDIR(st.st_mode) : !S_ISSOCK(st.st_mode)))
				continue;
			r = ipc_paths[i].dir ? add_ipc_dir(d, path)
					     : add_file(d, DRIVER_IPC_SOCKET, d->driver_root, path, false);
			break;
		}
	for (size_t i = 0; i < ELEMENTSOF(binaries) && r >= 0; i++)
		for (size_t j = 0; j < host_n_bin_dirs; j++) {
			_cleanup_free_ char *path = NULL, *target = NULL;

			if (asprintf(&path, "%s/%s", host_bin_dirs[j], binaries[i]) < 0)
				return -ENOMEM;
			/* Debian: /usr/bin/nvidia-smi -> /etc/alternatives/... -> /usr/lib/nvidia/current/ */
			if (resolve_in_root(d, path, &target) < 0 ||
			    stat_under(d, d->driver_root, target, &st, false) < 0 || !S_ISREG(st.st_mode) ||
			    !(st.st_mode & 0111))
				continue;
			r = add_file_at(d, DRIVER_BINARY, d->driver_root, target, path, false);
			break;
		}
	if (r >= 0)
		r = discover_configs(d);
	if (r >= 0 && d->info->version[0]) {
		if (asprintf(&fw, FIRMWARE_DIR "/%s", d->info->version) < 0)
			return -ENOMEM;
		r = for_each_match(d, fw, "gsp*.bin", add_firmware_cb, NULL);
		/* R615+ load ucodes*.bin beside the GSP firmware (pkg/nvcdi/driver-nvml.go, v1.20.2) */
		if (r >= 0)
			r = for_each_match(d, fw, "ucodes*.bin", add_firmware_cb, NULL);
	}
	return r;
}

static int file_cmp(const void *a, const void *b)
{
	const struct driver_file *x = a, *y = b;

	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	return strcmp(x->container_path, y->container_path);
}

/* Container dirs of the versioned library files (vdpau/ excluded), for NVIDIA_CTK_LIBCUDA_DIR. */
static int collect_lib_dirs(struct driver_info *in)
{
	_cleanup_free_ char *suffix = NULL;

	in->lib_dirs = calloc(in->n_files + 1, sizeof(char *));
	if (!in->lib_dirs || asprintf(&suffix, ".so.%s", in->version) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < in->n_files; i++) {
		const struct driver_file *f = &in->files[i];
		size_t n = (size_t)(strrchr(f->container_path, '/') - f->container_path);
		bool seen = false;

		if (f->kind != DRIVER_LIBRARY || !has_suffix(f->container_path, suffix) ||
		    (n >= 6 && strncmp(f->container_path + n - 6, "/vdpau", 6) == 0))
			continue;
		for (size_t j = 0; j < in->n_lib_dirs && !seen; j++)
			seen = strlen(in->lib_dirs[j]) == n && strncmp(in->lib_dirs[j], f->container_path, n) == 0;
		if (seen)
			continue;
		in->lib_dirs[in->n_lib_dirs] = strndup(f->container_path, n ? n : 1);
		if (!in->lib_dirs[in->n_lib_dirs])
			return -ENOMEM;
		in->n_lib_dirs++;
	}
	return 0;
}

int driver_discover(const struct driver_options *o, struct driver_info **ret, struct gerr *err)
{
	_cleanup_(driver_info_freep) struct driver_info *in = calloc(1, sizeof(*in));
	struct discovery d = {
	    .root = o->host->root,
	    .driver_root = o->host->driver_root,
	    .dev_root = o->host->dev_root,
	    .info = in,
	};
	size_t w = 0;
	int r;

	if (!in)
		return gerr_set(err, ENOMEM, "out of memory");
	if (o->version)
		snprintf(in->version, sizeof(in->version), "%s", o->version);
	r = discover_libraries(&d, err);
	if (r < 0)
		return r;
	r = discover_fixed(&d);
	if (r < 0)
		return gerr_set(err, -r, "driver discovery: %s", strerror(-r));
	if (in->n_files > 1)
		qsort(in->files, in->n_files, sizeof(*in->files), file_cmp);
	for (size_t i = 0; i < in->n_files; i++) {
		if (w > 0 && file_cmp(&in->files[w - 1], &in->files[i]) == 0) {
			free(in->files[i].host_path);
			free(in->files[i].container_path);
			continue;
		}
		in->files[w++] = in->files[i];
	}
	in->n_files = w;
	if (collect_lib_dirs(in) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(in);
	return 0;
}

void driver_info_free(struct driver_info *d)
{
	if (!d)
		return;
	free_members(d->files, d->n_files, host_path, container_path);
	for (size_t i = 0; i < d->n_lib_dirs; i++)
		free(d->lib_dirs[i]);
	free(d->lib_dirs);
	warnings_clear(&d->warnings);
	free(d);
}
