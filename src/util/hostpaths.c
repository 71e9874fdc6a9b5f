/* SPDX-License-Identifier: Apache-2.0 */
/* The one host-path rule (hostpaths.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/hostpaths.h"

/* An option's text, or def when it was not given (NULL or ""). */
static const char *given_or(const char *v, const char *def)
{
	return v && *v ? v : def;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void host_paths_free(struct host_paths *p)
{
	if (!p)
		return;
	free(p->root);
	free(p->driver_root);
	free(p->dev_root);
	free(p->driver_dir);
	free(p->dev_dir);
	free(p->mount_dir);
	free(p->nvml_dir);
	free(p->nvml_library);
	free(p);
}

/*
 * The rules, as nvidia-ctk and the device plugin read their options (docs/reference/cdi.md,
 * device-plugin.md §1): an empty driver root is "/", an empty dev root is the driver root; each is a
 * host path, read below --root like every other one.
 */
int host_paths_new(const struct host_paths_options *o, struct host_paths **ret, struct gerr *err)
{
	_cleanup_(host_paths_freep) struct host_paths *p = calloc(1, sizeof(*p));
	const char *ctr = given_or(o->ctr_driver_root, NULL), *lib = given_or(o->nvml_library, NULL);

	if (!p || !(p->root = strdup(given_or(o->root, "/"))) ||
	    !(p->driver_root = strdup(given_or(o->driver_root, "/"))) ||
	    !(p->dev_root = strdup(given_or(o->dev_root, p->driver_root))) ||
	    !(p->driver_dir = root_path(p->root, p->driver_root)) || !(p->dev_dir = root_path(p->root, p->dev_root)) ||
	    (ctr && !(p->mount_dir = root_path(p->root, ctr))) || (lib && !(p->nvml_library = strdup(lib))))
		return gerr_set(err, ENOMEM, "out of memory");
	p->nvml_dir =
	    strdup(!streq(p->driver_root, "/") && p->mount_dir && is_dir(p->mount_dir) ? p->mount_dir : p->driver_dir);
	if (!p->nvml_dir)
		return gerr_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(p);
	return 0;
}

bool host_paths_same_nvml(const struct host_paths *a, const struct host_paths *b)
{
	return a && b && streq_ptr(a->nvml_library, b->nvml_library) && streq(a->nvml_dir, b->nvml_dir);
}

char *host_join(const char *base, const char *path)
{
	if (!base || !*base || streq(base, "/"))
		return strdup(path);
	return root_path(base, path);
}

const char *const host_bin_dirs[] = {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"};
const size_t host_n_bin_dirs = ELEMENTSOF(host_bin_dirs);

char *host_find_bin(const char *root, const char *under, const char *name)
{
	if (!*name || strchr(name, '/'))
		return NULL;
	for (size_t k = 0; k < host_n_bin_dirs; k++) {
		_cleanup_free_ char *rel = NULL, *in = NULL, *p = NULL;

		if (asprintf(&rel, "%s/%s", host_bin_dirs[k], name) < 0)
			return NULL;
		in = host_join(under, rel);
		p = in ? root_path(root, in) : NULL;
		if (p && access(p, X_OK) == 0)
			return TAKE_PTR(p);
	}
	return NULL;
}
