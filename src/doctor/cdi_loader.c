/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A CDI spec that mounts the driver libraries but runs no hook: nothing updates the container's
 * ld.so.cache, so libcuda.so.1 loads only if it lands in a directory the image's loader searches
 * anyway. Debian/Ubuntu images (nvidia/cuda's base) search their multiarch dirs and /lib, /usr/lib,
 * not /usr/lib64 (docs/reference/container-runtimes.md §5): a spec written for a RHEL layout gives
 * them "libcuda.so.1: cannot open shared object file" however the runtime is configured.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi/cdi.h"
#include "doctor/cdi_loader.h"
#include "doctor/doctor.h"
#include "util/fileio.h"

/* Where a Debian/Ubuntu image's ld.so finds a library without ld.so.cache help (its ld.so.conf.d
 * multiarch entries and the built-in /lib, /usr/lib). */
static const char *const debian_loader_dirs[] = {
    "/lib",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
};

static bool loader_dir(const char *dir)
{
	for (size_t k = 0; k < ELEMENTSOF(debian_loader_dirs); k++)
		if (streq(dir, debian_loader_dirs[k]))
			return true;
	return false;
}

/* The spec-level edits and each device's: any hook, any LD_LIBRARY_PATH naming dir. */
struct scan {
	bool hooks;
	char ldpath[1024];
	char lib[512];  /* containerPath of a libcuda.so* outside the loader dirs */
	bool in_loader; /* some libcuda.so* mount lands in a loader dir */
};

static void scan_edits(const json_t *edits, struct scan *s)
{
	size_t i;
	json_t *v;

	if (json_array_size(json_object_get(edits, "hooks")))
		s->hooks = true;
	json_array_foreach (json_object_get(edits, "env"), i, v) {
		const char *e = json_string_value(v);

		if (e && !strncmp(e, "LD_LIBRARY_PATH=", 16))
			snprintf(s->ldpath, sizeof(s->ldpath), ":%s:", e + 16);
	}
	json_array_foreach (json_object_get(edits, "mounts"), i, v) {
		const char *cp = json_string_value(json_object_get(v, "containerPath"));
		const char *slash = cp ? strrchr(cp, '/') : NULL;
		char dir[512];

		if (!slash || strncmp(slash + 1, "libcuda.so", 10))
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - cp), cp);
		if (loader_dir(dir))
			s->in_loader = true;
		else if (!s->lib[0])
			snprintf(s->lib, sizeof(s->lib), "%s", cp);
	}
}

static bool in_ldpath(const struct scan *s)
{
	char dir[530];
	const char *slash = strrchr(s->lib, '/');

	snprintf(dir, sizeof(dir), ":%.*s:", (int)(slash - s->lib), s->lib);
	return s->ldpath[0] && strstr(s->ldpath, dir);
}

static void check_spec(struct doctor_ctx *c, const char *file, const json_t *spec, struct doctor_finding **f)
{
	struct scan s = {0};
	size_t i;
	json_t *dev;

	scan_edits(json_object_get(spec, "containerEdits"), &s);
	json_array_foreach (json_object_get(spec, "devices"), i, dev)
		scan_edits(json_object_get(dev, "containerEdits"), &s);
	if (!s.lib[0] || s.in_loader || s.hooks || in_ldpath(&s))
		return;
	if (!*f)
		*f = doctor_report(c, "cdi.libs-not-loadable", DOCTOR_FAIL, LINK_CDI,
				   "regenerate the spec with an ldcache hook (gpulet cdi generate, or nvidia-ctk cdi "
				   "generate, add an update-ldcache createContainer hook) or mount the libraries into "
				   "/usr/lib/x86_64-linux-gnu",
				   "a CDI spec mounts libcuda.so.1 outside the loader's default dirs of Debian/Ubuntu "
				   "images and runs no hook: nothing makes libcuda.so.1 loadable in those containers");
	doctor_evidence(*f,
			"%s: mounts %s, no hooks, no LD_LIBRARY_PATH for it (Debian/Ubuntu images search "
			"/lib, /usr/lib and the multiarch dirs, not that one)",
			file, s.lib);
}

int doctor_check_cdi_loader(struct doctor_ctx *c, const char *const *dirs, size_t n_dirs)
{
	struct doctor_finding *f = NULL;

	for (size_t d = 0; d < n_dirs; d++) {
		char names[64][256];
		size_t n = doctor_cdi_dir_files(c, dirs[d], names, ELEMENTSOF(names));

		for (size_t k = 0; k < n; k++) {
			char rel[PATH_MAX];
			_cleanup_free_ char *p = NULL;
			json_t *spec = NULL;

			snprintf(rel, sizeof(rel), "%s/%s", dirs[d], names[k]);
			p = doctor_path(c, rel);
			if (!p)
				return -ENOMEM;
			if (cdi_read_spec(p, &spec, NULL) < 0)
				continue; /* cdi.spec-invalid says why */
			check_spec(c, rel, spec, &f);
			json_decref(spec);
		}
	}
	return 0;
}
