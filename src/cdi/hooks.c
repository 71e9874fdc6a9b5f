/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hooks of a generated spec, in nvidia-ctk's order and shape (internal/discover/hooks.go,
 * ldconfig.go, symlinks.go; docs/reference/cdi-hook.md §4): createContainer but for
 * apply-cuda-memory-limits (createRuntime), env NVIDIA_CTK_DEBUG=false, argv[0] the binary's name.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdi/hooks.h"
#include "cdi/internal.h"

const struct enum_name cdi_hook_names[8] = {
    {CDI_HOOK_CREATE_SYMLINKS, "create-symlinks"},
    {CDI_HOOK_CUDA_COMPAT, "enable-cuda-compat"},
    {CDI_HOOK_LDCACHE, "update-ldcache"},
    {CDI_HOOK_DEVNODES, "disable-device-node-modification"},
    {CDI_HOOK_APP_PROFILE, "update-application-profile"},
    {CDI_HOOK_MEMORY_LIMITS, "apply-cuda-memory-limits"},
    {CDI_HOOK_CHMOD, "chmod"},
    {CDI_HOOK_ALL, "all"}, /* last: --enable-hook takes the rows before it */
};

unsigned cdi_hooks_off(const struct cdi_hook_options *o)
{
	unsigned off = (o ? o->disabled : 0) | CDI_HOOK_DEFAULT_OFF;

	return off & ~(o ? o->enabled : 0);
}

/*
 * Links nvidia-ctk adds for a mounted driver library (symlinks.go getLinksForMount, graphics.go): the
 * file name pattern (%s = driver version), the link's target (NULL = the file itself) and name.
 */
static const struct {
	const char *file;
	const char *target;
	const char *link;
} extra_links[] = {
    {"libcuda.so.%s", "libcuda.so.1", "libcuda.so"},       /* applications dlopen("libcuda.so") */
    {"libGLX_nvidia.so.%s", NULL, "libGLX_indirect.so.0"}, /* GLVND's indirect GLX */
    {"libnvidia-opticalflow.so.%s", "libnvidia-opticalflow.so.1", "libnvidia-opticalflow.so"},
    /* graphics (graphics.go graphicsDriverLibraries.Hooks): GBM's backend, Vulkan's producer */
    {"libnvidia-allocator.so.%s", "../libnvidia-allocator.so.1", "gbm/nvidia-drm_gbm.so"},
    {"libnvidia-vulkan-producer.so.%s", NULL, "libnvidia-vulkan-producer.so"},
};

/* lib?*.so or lib?*.so.<anything>: what nvidia-ctk calls a library (ldconfig.go isLibName) */
static bool is_lib_name(const char *base)
{
	const char *so;

	if (fnmatch("lib?*.so*", base, 0) != 0)
		return false;
	so = strstr(base, ".so");
	while (so && strstr(so + 1, ".so"))
		so = strstr(so + 1, ".so");
	return so && (so[3] == '\0' || so[3] == '.');
}

/* Whether array a holds s: as an element (key NULL) or as member key of an element. */
static bool array_has(const json_t *a, const char *key, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach (a, i, v) {
		const char *x = json_string_value(key ? json_object_get(v, key) : v);

		if (x && streq(x, s))
			return true;
	}
	return false;
}

/* Library dirs (for update-ldcache) and the extra links (for create-symlinks) of the mounts. */
static int scan_mounts(const json_t *mounts, const char *version, json_t *dirs, json_t *links)
{
	const json_t *m;
	size_t i;

	json_array_foreach (mounts, i, m) {
		const char *path = json_string_value(json_object_get(m, "containerPath"));
		const char *slash = path ? strrchr(path, '/') : NULL;
		_cleanup_free_ char *dir = NULL;

		if (!slash || !is_lib_name(slash + 1))
			continue;
		dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		if (!dir || (!array_has(dirs, NULL, dir) && jpush(dirs, json_string(dir)) < 0))
			return -ENOMEM;
		for (size_t k = 0; version && k < ELEMENTSOF(extra_links); k++) {
			char file[NAME_MAX + 1], link[PATH_MAX];
			json_t *s;

			snprintf(file, sizeof(file), extra_links[k].file, version);
			snprintf(link, sizeof(link), "%s/%s", dir, extra_links[k].link);
			/* a link the spec already mounts is there; a rename over a mount point would fail */
			if (!streq(slash + 1, file) || array_has(mounts, "containerPath", link))
				continue;
			s = json_sprintf("%s::%s", extra_links[k].target ? extra_links[k].target : file, link);
			if (!s)
				return -ENOMEM;
			if (array_has(links, NULL, json_string_value(s)))
				json_decref(s);
			else if (jpush(links, s) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Default hook binary: the static gpulet-cdi-hook installed next to the running gpulet (a hook
 * that no LD_PRELOAD can reach), else the running binary itself (*ret_dynamic set: the hook is
 * this dynamically linked gpulet). *ret (malloc'd) is absolute.
 */
static int default_hook_path(char **ret, bool *ret_dynamic)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return -errno;
	self[n] = '\0';
	slash = strrchr(self, '/');
	*ret_dynamic = false;
	if (slash && asprintf(ret, "%.*s/%s", (int)(slash - self), self, CDI_STATIC_HOOK) >= 0) {
		if (access(*ret, X_OK) == 0)
			return 0;
		free(*ret);
	}
	*ret = strdup(self);
	*ret_dynamic = true;
	return *ret ? 0 : -ENOMEM;
}

int cdi_hooks_fallback_warning(const struct cdi_hook_options *o, char **ret)
{
	_cleanup_free_ char *path = NULL;
	bool dynamic = false;
	int r;

	*ret = NULL;
	if (o && o->path && *o->path)
		return 0; /* the user named the binary */
	r = default_hook_path(&path, &dynamic);
	if (r < 0 || !dynamic)
		return r < 0 ? r : 0;
	if (asprintf(ret,
		     "the static hook " CDI_STATIC_HOOK " (not installed beside %s): the spec's hooks run %s cdi-hook, "
		     "dynamically linked, whose loader acts on a container's LD_PRELOAD before gpulet can refuse it "
		     "when a runtime hands a hook without env the container's environment; install " CDI_STATIC_HOOK
		     " beside it, or give --nvidia-cdi-hook-path (docs/reference/cdi-hook.md §7.1)",
		     path, path) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * The binary and the argv prefix: nvidia-cdi-hook ACTION, gpulet-cdi-hook ACTION, nvidia-ctk hook
 * ACTION, gpulet cdi-hook ACTION. *ret_path is set only on success.
 */
static int hook_binary(const struct cdi_hook_options *o, char **ret_path, json_t **ret_prefix)
{
	_cleanup_free_ char *path = NULL;
	const char *base;
	bool dynamic;
	json_t *prefix;
	int r;

	if (o && o->path && *o->path)
		path = strdup(o->path);
	else if ((r = default_hook_path(&path, &dynamic)) < 0)
		return r;
	if (!path)
		return -ENOMEM;
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (streq(base, "nvidia-cdi-hook") || streq(base, CDI_STATIC_HOOK))
		prefix = json_pack("[s]", base);
	else if (streq(base, "nvidia-ctk"))
		prefix = json_pack("[ss]", "nvidia-ctk", "hook");
	else
		prefix = json_pack("[ss]", "gpulet", "cdi-hook");
	if (!prefix)
		return -ENOMEM;
	*ret_prefix = prefix;
	*ret_path = TAKE_PTR(path);
	return 0;
}

/* One hook: prefix + action + args (args is consumed); createRuntime for apply-cuda-memory-limits. */
static int push_hook(json_t *hooks, const char *path, const json_t *prefix, const char *action, json_t *args)
{
	const char *stage = streq(action, "apply-cuda-memory-limits") ? "createRuntime" : "createContainer";
	json_t *argv = json_deep_copy(prefix);
	json_t *h;

	if (!argv || !args || jpush(argv, json_string(action)) < 0 || json_array_extend(argv, args) < 0) {
		json_decref(argv);
		json_decref(args);
		return -ENOMEM;
	}
	json_decref(args);
	h = json_pack("{s:s, s:s, s:o, s:[s]}", "hookName", stage, "path", path, "args", argv, "env",
		      "NVIDIA_CTK_DEBUG=false");
	return jpush(hooks, h);
}

/* ["--flag", v1, "--flag", v2, ...] */
static json_t *repeat_flag(const char *flag, const json_t *values)
{
	json_t *a = json_array();
	const json_t *v;
	size_t i;

	json_array_foreach (values, i, v)
		if (!a || jpush(a, json_string(flag)) < 0 || jpush(a, json_incref((json_t *)v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int build_hooks(json_t *hooks, const char *path, const json_t *prefix, const char *version,
		       const struct cdi_hook_options *o, const json_t *dirs, const json_t *links)
{
	unsigned off = cdi_hooks_off(o);
	json_t *ld;
	int r = 0;

	if (!(off & CDI_HOOK_CREATE_SYMLINKS) && json_array_size(links) > 0)
		r = push_hook(hooks, path, prefix, "create-symlinks", repeat_flag("--link", links));
	if (r == 0 && !(off & CDI_HOOK_CUDA_COMPAT) && version && *version)
		r = push_hook(hooks, path, prefix, "enable-cuda-compat",
			      json_pack("[s+]", "--host-driver-version=", version));
	if (r == 0 && !(off & CDI_HOOK_LDCACHE) && json_array_size(dirs) > 0) {
		ld = o && o->ldconfig_path ? json_pack("[ss]", "--ldconfig-path", o->ldconfig_path) : json_array();
		json_t *folders = repeat_flag("--folder", dirs);

		if (!ld || !folders || json_array_extend(ld, folders) < 0) {
			json_decref(ld);
			json_decref(folders);
			return -ENOMEM;
		}
		json_decref(folders);
		r = push_hook(hooks, path, prefix, "update-ldcache", ld);
	}
	if (r == 0 && !(off & CDI_HOOK_DEVNODES))
		r = push_hook(hooks, path, prefix, "disable-device-node-modification", json_array());
	/* graphics: EGL/Vulkan see only the container's GPUs (common-nvml.go, last of the spec's hooks) */
	if (r == 0 && !(off & CDI_HOOK_APP_PROFILE))
		r = push_hook(hooks, path, prefix, "update-application-profile", json_array());
	return r;
}

/* The hook binary's host path (absolute) and argv prefix, or an error that says what to give. */
static int binary_checked(const struct cdi_hook_options *o, char **ret_path, json_t **ret_prefix, struct gerr *err)
{
	int r = hook_binary(o, ret_path, ret_prefix);

	if (r < 0)
		return gerr_set(err, -r,
				"finding the hook binary for the CDI hooks (/proc/self/exe): %s; give "
				"--nvidia-cdi-hook-path",
				strerror(-r));
	if ((*ret_path)[0] != '/')
		return gerr_set(err, EINVAL,
				"--nvidia-cdi-hook-path '%s' is not an absolute path; the runtime needs one",
				*ret_path);
	return 0;
}

/* ["--mode", "755", "--path", d1, ...]: upstream's chmod arguments (hooks.go transformArgs) */
static json_t *chmod_args(const json_t *dirs)
{
	json_t *a = json_pack("[ss]", "--mode", "755"), *paths = repeat_flag("--path", dirs);

	if (!a || !paths || json_array_extend(a, paths) < 0) {
		json_decref(a);
		a = NULL;
	}
	json_decref(paths);
	return a;
}

int cdi_device_hooks(const struct cdi_device_hooks *d, const struct cdi_hook_options *o, json_t **ret, struct gerr *err)
{
	json_auto_t *hooks = json_array(), *prefix = NULL;
	_cleanup_free_ char *path = NULL;
	unsigned off = cdi_hooks_off(o);
	const json_t *uuid;
	size_t i;
	int r = 0;

	if (!hooks)
		return gerr_set(err, ENOMEM, "out of memory");
	if (!((json_array_size(d->links) > 0 && !(off & CDI_HOOK_CREATE_SYMLINKS)) ||
	      (json_array_size(d->dirs) > 0 && !(off & CDI_HOOK_CHMOD)) ||
	      (json_array_size(d->gpus) > 0 && !(off & CDI_HOOK_MEMORY_LIMITS)))) {
		*ret = json_incref(hooks);
		return 0;
	}
	r = binary_checked(o, &path, &prefix, err);
	if (r < 0)
		return r;
	/* nvidia-ctk's order (full-gpu-nvml.go): the device nodes' by-path links, the folders' modes, the limits */
	if (json_array_size(d->links) > 0 && !(off & CDI_HOOK_CREATE_SYMLINKS))
		r = push_hook(hooks, path, prefix, "create-symlinks", repeat_flag("--link", d->links));
	if (r == 0 && json_array_size(d->dirs) > 0 && !(off & CDI_HOOK_CHMOD))
		r = push_hook(hooks, path, prefix, "chmod", chmod_args(d->dirs));
	json_array_foreach (d->gpus, i, uuid)
		if (r == 0 && !(off & CDI_HOOK_MEMORY_LIMITS))
			r = push_hook(
			    hooks, path, prefix, "apply-cuda-memory-limits",
			    json_pack("[ssss]", "--driver-root", d->driver_root, "--gpu-id", json_string_value(uuid)));
	if (r < 0)
		return gerr_set(err, -r, "building a device's CDI hooks: %s", strerror(-r));
	*ret = json_incref(hooks);
	return 0;
}

int cdi_add_hooks(json_t *edits, const char *driver_version, const struct cdi_hook_options *o, struct gerr *err)
{
	json_auto_t *hooks = json_array(), *dirs = json_array(), *links = json_array(), *prefix = NULL;
	_cleanup_free_ char *path = NULL;
	int r;

	if ((cdi_hooks_off(o) & CDI_HOOK_ALL) == CDI_HOOK_ALL)
		return 0;
	if (!hooks || !dirs || !links)
		return gerr_set(err, ENOMEM, "out of memory");
	r = binary_checked(o, &path, &prefix, err);
	if (r < 0)
		return r;
	r = scan_mounts(json_object_get(edits, "mounts"), driver_version, dirs, links);
	if (r == 0)
		r = build_hooks(hooks, path, prefix, driver_version, o, dirs, links);
	if (r == 0 && json_array_size(hooks) > 0)
		r = jset(edits, "hooks", json_incref(hooks));
	return r < 0 ? gerr_set(err, -r, "building the CDI hooks: %s", strerror(-r)) : 0;
}
