/* SPDX-License-Identifier: Apache-2.0 */
/* Finding and loading a serving module next to the running executable (module.h). Executable only. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/module.h"
#include "util/macro.h"

static const char *const files[_SERVE_MAX] = {
    [SERVE_GRPC] = "gpulet-grpc.so",
    [SERVE_HTTP] = "gpulet-http.so",
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[_SERVE_MAX];

const char *serve_module_file(enum serve_module m)
{
	return files[m];
}

bool serve_module_loaded(enum serve_module m)
{
	bool r;

	pthread_mutex_lock(&lock);
	r = handles[m] != NULL;
	pthread_mutex_unlock(&lock);
	return r;
}

/* The directory of the running executable (symlinks resolved: argv[0] may be nvidia-device-plugin). */
static int exe_dir(char *buf, size_t size, struct stat *ret_st, struct gerr *err)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n < 0 || (size_t)n >= size - 1)
		return gerr_set(err, errno ? errno : ENAMETOOLONG,
				"cannot read /proc/self/exe (%m): gpulet finds its serving modules next to itself, "
				"so /proc must be mounted");
	buf[n] = '\0';
	if (stat(buf, ret_st) < 0)
		return gerr_set(err, errno, "cannot stat %s: %m", buf);
	slash = strrchr(buf, '/');
	if (!slash)
		return gerr_set(err, EINVAL, "/proc/self/exe is not an absolute path: %s", buf);
	*slash = '\0';
	return 0;
}

/*
 * A module runs with the daemon's privileges: load it only if nobody but its owner can change it
 * and that owner is root or the owner of the executable, as for the executable itself.
 */
static int check_file(const char *path, const struct stat *exe, struct gerr *err)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return gerr_set(err, EINVAL, "%s is not a regular file", path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return gerr_set(err, EPERM, "refusing to load %s: writable by group or others (chmod go-w it)", path);
	if (st.st_uid != 0 && st.st_uid != exe->st_uid)
		return gerr_set(err, EPERM, "refusing to load %s: owned by uid %u, not root or the owner of gpulet",
				path, (unsigned)st.st_uid);
	return 0;
}

static void *open_module(enum serve_module m, struct gerr *err)
{
	static const char *const dirs[] = SERVE_MODULE_DIRS;
	char dir[PATH_MAX], path[PATH_MAX + 64], tried[2 * (PATH_MAX + 64)] = "";
	struct stat exe;
	int r = exe_dir(dir, sizeof(dir), &exe, err);

	if (r < 0)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", dir, dirs[i], files[m]);
		r = check_file(path, &exe, err);
		if (r == -ENOENT) {
			snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s", *tried ? ", " : "",
				 path);
			continue;
		}
		if (r < 0)
			return NULL;
		void *h =
		    dlopen(path, RTLD_LAZY | RTLD_LOCAL); /* NOW would bind every symbol of libgrpc, absl, ...: pages */
		if (!h) {
			gerr_set(err, ENOEXEC, "cannot load %s: %s", path, dlerror());
			return NULL;
		}
		const char *abi = dlsym(h, SERVE_ABI_SYMBOL);
		if (!abi || strcmp(abi, SERVE_ABI) != 0) {
			gerr_set(err, ENOEXEC,
				 "%s is from another build (%s, this gpulet is %s): install gpulet and its "
				 "modules from the same build",
				 path, abi ? abi : "no version", SERVE_ABI);
			dlclose(h);
			return NULL;
		}
		return h;
	}
	gerr_set(err, ENOENT,
		 "%s not found (tried %s): it holds gpulet's gRPC/HTTP serving code and is installed "
		 "with gpulet",
		 files[m], tried);
	return NULL;
}

void *serve_symbol(enum serve_module m, const char *name, struct gerr *err)
{
	void *h, *sym;

	pthread_mutex_lock(&lock);
	if (!handles[m])
		handles[m] = open_module(m, err);
	h = handles[m];
	pthread_mutex_unlock(&lock);
	if (!h)
		return NULL;
	sym = dlsym(h, name);
	if (!sym)
		gerr_set(err, ENOEXEC, "%s has no %s: install gpulet and its modules from the same build", files[m],
			 name);
	return sym;
}

#ifdef __SANITIZE_ADDRESS__
/*
 * A module holds its own copy of the objects the executable also has and, by ELF interposition,
 * uses the executable's (module.h): its global registrations then name the executable's globals
 * a second time, which ASan's one-definition check reports. That sharing is the design, so the
 * sanitizer build of gpulet turns the check off (ASAN_OPTIONS still overrides it).
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_odr_violation=0";
}
#endif
