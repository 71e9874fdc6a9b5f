/* SPDX-License-Identifier: Apache-2.0 */
/*
 * update-ldcache: the container's ld.so.conf.d gets the injected library dirs and the system dirs
 * its own dynamic loader uses, then the host's ldconfig rebuilds /etc/ld.so.cache inside the
 * rootfs, isolated in new namespaces (isolate.c; docs/reference/cdi-hook.md §2.2, §6). The ldconfig
 * must be a static ELF: a script would need a shell, and a dynamic one would load the container's
 * ld.so after the pivot_root.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdihook/cdihook.h"
#include "cdihook/inroot.h"
#include "util/fileio.h"

#define DEFAULT_LDCONFIG "/sbin/ldconfig"
/* 00-: before the image's own drop-ins, so the injected driver wins; zz-: the system dirs last. */
#define FOLDERS_CONF "/etc/ld.so.conf.d/00-nvcr-gpulet.conf"
#define SYSTEM_CONF  "/etc/ld.so.conf.d/zz-nvcr-gpulet.conf"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#define LIB64     "/lib64\n/usr/lib64\n/libx32\n/usr/libx32\n"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#define LIB64     "/lib64\n/usr/lib64\n"
#else
#define MULTIARCH ""
#define LIB64     ""
#endif

/*
 * The dirs the container's glibc searches without a cache entry: Debian patches its loader to the
 * multiarch dirs first; others have /lib, /usr/lib and the lib64 variants (glibc add_system_dir).
 * Written into the container because the host's ldconfig has the host's list compiled in.
 */
static const char *system_dirs(int root_fd)
{
	struct stat st;
	int fd = inroot_open(root_fd, "/etc/debian_version", O_PATH, 0);
	bool debian = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);

	if (fd >= 0)
		close(fd);
	if (debian && *MULTIARCH)
		return "/lib/" MULTIARCH "\n/usr/lib/" MULTIARCH "\n/lib\n/usr/lib\n";
	return "/lib\n/usr/lib\n" LIB64;
}

int cdihook_check_ldconfig_path(const char *path, struct gerr *err)
{
	if (!path || !*path || path[*path == '@'] == '/')
		return 0;
	return gerr_set(err, EINVAL,
			"not an absolute path: the runtime runs hooks in the container's rootfs, so it would name "
			"the image's file; give the host's ldconfig, e.g. /sbin/ldconfig");
}

/* "/sbin/ldconfig" or "@/sbin/ldconfig" → /sbin/ldconfig.real when that exists (Ubuntu's wrapper script). */
static char *ldconfig_binary(const char *path)
{
	_cleanup_free_ char *real = NULL;
	struct stat st;

	if (!path || !*path)
		path = DEFAULT_LDCONFIG;
	if (*path == '@')
		path++;
	if (asprintf(&real, "%s.real", path) < 0)
		return NULL;
	if (stat(real, &st) == 0 && S_ISREG(st.st_mode))
		return TAKE_PTR(real);
	return strdup(path);
}

/* A static ELF executable of this machine's class, or an error that says what it is instead. */
static int check_static_elf(int fd, const char *path, struct gerr *err)
{
	Elf64_Ehdr eh;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		if (pread(fd, &eh, 2, 0) == 2 && memcmp(&eh, "#!", 2) == 0)
			return gerr_set(err, ENOEXEC,
					"--ldconfig-path %s is a script; the hook runs no shell: give the ELF binary "
					"(on Ubuntu /sbin/ldconfig.real)",
					path);
		return gerr_set(err, ENOEXEC, "--ldconfig-path %s is not an ELF executable", path);
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 512)
		return gerr_set(err, ENOEXEC, "--ldconfig-path %s: not a 64-bit ELF executable", path);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return gerr_set(err, ENOEXEC, "--ldconfig-path %s: truncated ELF file", path);
		if (ph.p_type == PT_INTERP)
			return gerr_set(err, ENOEXEC,
					"--ldconfig-path %s is dynamically linked: pivoted into the container it would "
					"load the container's libc; give glibc's static ldconfig",
					path);
	}
	return 0;
}

/* folders, one a line, without repeats */
static char *folders_text(const struct cdihook_ldcache_options *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < o->n_folders; i++) {
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen = seen || streq(o->folders[i], o->folders[j]);
		if (!seen && *o->folders[i])
			fprintf(f, "%s\n", o->folders[i]);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* A container without /etc/ld.so.conf (distroless) gets the standard one including ld.so.conf.d. */
static int ensure_ld_so_conf(int root_fd, struct gerr *err)
{
	int fd = inroot_open(root_fd, "/etc/ld.so.conf", O_PATH, 0);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return cdihook_write_in_root(root_fd, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n", err);
}

int cdihook_update_ldcache(int root_fd, const struct cdihook_ldcache_options *o, struct gerr *err)
{
	_cleanup_free_ char *exe = ldconfig_binary(o->ldconfig_path), *folders = folders_text(o);
	_cleanup_close_ int exe_fd = -1;
	char *const argv[] = {"ldconfig", "-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache", NULL};
	struct cdihook_jail j = {.rootfs = o->rootfs, .name = NULL, .argv = argv, .timeout_s = o->timeout_s};
	struct stat st;
	int r;

	r = cdihook_check_ldconfig_path(o->ldconfig_path, err);
	if (r < 0) {
		gerr_prefix(err, "--ldconfig-path '%s': ", o->ldconfig_path);
		return r;
	}
	if (!o->rootfs || o->timeout_s > CDIHOOK_LDCONFIG_TIMEOUT_S)
		return gerr_set(err, EINVAL, "update-ldcache: no rootfs path, or a time bound over %d s",
				CDIHOOK_LDCONFIG_TIMEOUT_S);
	if (!exe || !folders)
		return gerr_set(err, ENOMEM, "out of memory");
	if (fstat(root_fd, &st) < 0)
		return gerr_set(err, errno, "the rootfs: %s", strerror(errno));
	exe_fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (exe_fd < 0)
		return gerr_set(err, errno, "--ldconfig-path %s: %s; give the host's ldconfig (e.g. /sbin/ldconfig)",
				exe, strerror(errno));
	r = check_static_elf(exe_fd, exe, err);
	if (r < 0)
		return r;
	r = ensure_ld_so_conf(root_fd, err);
	if (r >= 0 && *folders)
		r = cdihook_write_in_root(root_fd, FOLDERS_CONF, folders, err);
	if (r >= 0)
		r = cdihook_write_in_root(root_fd, SYSTEM_CONF, system_dirs(root_fd), err);
	if (r < 0)
		return r;
	j.dev = st.st_dev;
	j.ino = st.st_ino;
	j.exe_fd = exe_fd;
	j.name = exe;
	return cdihook_run_isolated(&j, err);
}
