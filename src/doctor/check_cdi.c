/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Link 6: the CDI specs containerd reads. "CDI enabled but nothing injected": spec missing,
 * unreadable, invalid, cdiVersion newer than the runtime knows, a device defined twice, or devices
 * that no longer exist (docs/reference/field-guide.md §3.3, docs/reference/cdi.md §4–6). Parsing and
 * validation are the cdi module's (cdi_validate_dirs() in src/cdi/scan.c, src/cdi/validate.c); this
 * file maps its problem categories onto doctor findings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor/cudatable.h"
#include "doctor/cdi_loader.h"
#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "util/fileio.h"
#include "nvml/node.h"
#include "parse/toml.h"

#include "cdi/cdi.h"

static bool spec_name(const char *name)
{
	size_t l = strlen(name);

	return l > 5 && (streq(name + l - 5, ".json") || streq(name + l - 5, ".yaml"));
}

size_t doctor_cdi_dir_files(const struct doctor_ctx *c, const char *dir, char names[][256], size_t max)
{
	return doctor_dir_names(c, dir, spec_name, names, max);
}

/* cdi module category → doctor finding (same words: docs/reference/cdi.md §4–6) */
struct category {
	const char *category;
	const char *id;
	enum doctor_severity sev;
	const char *summary;
	const char *fix;
};
static const struct category categories[] = {
    {"spec-invalid", "cdi.spec-invalid", DOCTOR_FAIL,
     "a CDI spec does not load: the runtime skips the whole file and its devices are unresolvable",
     "gpulet cdi validate FILE shows the field; regenerate with gpulet cdi generate (or nvidia-ctk cdi generate)"},
    {"spec-unreadable", "cdi.spec-unreadable", DOCTOR_FAIL,
     "containerd cannot read a CDI spec or dir and silently ignores it: CDI is on but nothing is injected",
     "chmod 0644 the spec files and 0755 their directory; they must be regular files"},
    {"version-too-new", "cdi.version-too-new", DOCTOR_FAIL,
     "a CDI spec's cdiVersion is newer than the runtime's CDI library: it ignores the file without an error",
     "regenerate the spec with the lowest cdiVersion (gpulet cdi generate does that) or upgrade the runtime"},
    {"duplicate-device", "cdi.duplicate-device", DOCTOR_FAIL,
     "a CDI device is defined in two files of one directory: the runtime drops it (unresolvable CDI devices)",
     "keep one spec per vendor/class in each directory (e.g. remove the stale copy), see gpulet cdi list"},
    {"stale-devices", "cdi.stale-devices", DOCTOR_FAIL,
     "a CDI spec names host paths or GPUs that no longer exist (driver upgrade, GPU gone, MIG re-partitioned)",
     "regenerate the spec: gpulet cdi generate --output /var/run/cdi/nvidia.yaml (or nvidia-ctk cdi generate)"},
    {"warning", "cdi.warning", DOCTOR_WARN, "CDI specs work but probably not as meant",
     "see gpulet cdi validate for each warning"},
};

/* The row of a cdi module category ("stale-devices"); NULL for one the doctor does not map. */
static const struct category *category_row(const char *category)
{
	for (size_t i = 0; i < ELEMENTSOF(categories); i++)
		if (streq(categories[i].category, category))
			return &categories[i];
	return NULL;
}

/* containerd version from dpkg, to choose the CDI version limit of its vendored library. */
static const char *cdi_runtime_for(const struct doctor_ctx *c, char *why, size_t size)
{
	char v[64];

	if (doctor_dpkg_version(c, "containerd", v, sizeof(v)) ||
	    doctor_dpkg_version(c, "containerd.io", v, sizeof(v))) {
		snprintf(why, size, "containerd %s (dpkg)", v);
		if (version_cmp(v, "1.7.13") < 0)
			return "containerd-1.7";
		if (version_cmp(v, "2") < 0)
			return "containerd-1.7.13";
		return NULL;
	}
	if (c->rt && c->rt->kind == RT_CRIO) {
		snprintf(why, size, "CRI-O (version unknown, assuming a current CDI library)");
		return NULL;
	}
	if (c->ctrd_state > 0 && c->ctrd_version < 3) {
		snprintf(why, size, "config version 2 (containerd 1.x; version unknown, assuming 1.7.0-1.7.12)");
		return "containerd-1.7";
	}
	snprintf(why, size, "containerd 2.x or unknown");
	return NULL;
}

/*
 * Regenerate the stale file itself: a fresh spec in /var/run/cdi (tmpfs) hides a stale one in /etc/cdi
 * only until the next reboot, and two specs of one kind in one dir drop the device
 * (docs/reference/cdi.md §4).
 */
static const char *stale_fix(const struct doctor_ctx *c, const char *file, char *buf, size_t size)
{
	const char *root = !streq(doctor_root(c->o), "/") ? doctor_root(c->o) : "";
	size_t l = strlen(root);

	if (file && l && !strncmp(file, root, l) && file[l] == '/')
		file += l; /* the node's own path */
	snprintf(buf, size,
		 "regenerate the stale spec in place: gpulet cdi generate --output %s (or nvidia-ctk cdi generate "
		 "--output=%s); a new file in /var/run/cdi hides a stale /etc/cdi spec only until reboot",
		 file ? file : "<the stale file>", file ? file : "<the stale file>");
	return buf;
}

/* Devices named by UUID in the specs that NVML does not know (docs/reference/cdi.md §5.3 uuid names). */
static void check_uuids(struct doctor_ctx *c, const char *const *dirs, size_t n)
{
	const struct category *stale = category_row("stale-devices");
	struct doctor_finding *lost = doctor_find(c, "gpu.fallen-off-bus");
	json_t *list = NULL, *e;
	struct doctor_finding *f = NULL;
	size_t i;

	if (doctor_need_nvml(c) < 0 || cdi_list_dirs(doctor_root(c->o), dirs, n, &list, NULL) < 0)
		return;
	json_array_foreach (list, i, e) {
		const char *dev = json_string_value(json_object_get(e, "device"));

		if (!dev || (strncmp(dev, "GPU-", 4) && strncmp(dev, "MIG-", 4)) || node_find_gpu(c->node, dev) ||
		    node_find_mig(c->node, dev, NULL))
			continue;
		if (lost) { /* the GPU is gone from NVML because it fell off the bus: not a spec problem */
			doctor_evidence(lost,
					"CDI device %s (%s) names a GPU NVML no longer lists: regenerate that "
					"spec only after the GPU is back or replaced",
					json_string_value(json_object_get(e, "name")),
					json_string_value(json_object_get(e, "file")));
			continue;
		}
		if (!f) {
			char fix[1024];

			f = doctor_report(c, stale->id, stale->sev, LINK_CDI,
					  stale_fix(c, json_string_value(json_object_get(e, "file")), fix, sizeof(fix)),
					  "%s", stale->summary);
		}
		doctor_evidence(f, "%s (%s): no such GPU or MIG instance on this node now",
				json_string_value(json_object_get(e, "name")),
				json_string_value(json_object_get(e, "file")));
	}
	json_decref(list);
}

int doctor_check_cdi(struct doctor_ctx *c)
{
	const char *dirs[16];
	size_t n_dirs, n_files = 0;
	char names[64][256];
	struct ctrd_facts f = {0};
	struct doctor_finding *fd;

	if (doctor_need_containerd(c) == -ENOMEM)
		return -ENOMEM;
	n_dirs = doctor_cdi_dirs(c, dirs, ELEMENTSOF(dirs));
	for (size_t k = 0; k < n_dirs; k++)
		n_files += doctor_cdi_dir_files(c, dirs[k], names, ELEMENTSOF(names));
	if (c->ctrd_state > 0)
		doctor_containerd_facts(c, &f);
	if (!n_files) {
		const struct toml *rt = c->ctrd_state > 0
					    ? toml_path(f.containerd, "runtimes", c->o->runtime_class ?: "nvidia", NULL)
					    : NULL;
		const char *bin = toml_string(toml_get(rt, "options"), "BinaryName", "");
		struct inject_facts inj;
		bool cdi_mode, plugin_cdi;

		/* a runtime in CDI mode, or a plugin that hands out CDI names only: nothing else injects */
		doctor_inject_facts(c, &inj);
		plugin_cdi = inject_cdi_only(&inj);
		cdi_mode = strstr(bin, ".cdi") != NULL || plugin_cdi;
		/* CDI not in use: off, or only on by containerd 2's default with no CDI runtime mode */
		if ((!f.enable_cdi || !f.enable_cdi_explicit) && !cdi_mode)
			return 0;
		fd = doctor_report(
		    c, "cdi.spec-missing", cdi_mode ? DOCTOR_FAIL : DOCTOR_WARN, LINK_CDI,
		    "gpulet cdi generate --output /var/run/cdi/nvidia.yaml (or nvidia-ctk cdi generate "
		    "--output=/etc/cdi/nvidia.yaml); the device plugin with CDI writes its own spec at start",
		    "CDI is on but no CDI spec exists: CDI device requests are unresolvable%s",
		    plugin_cdi ? " and the device plugin hands out CDI names only"
		    : cdi_mode ? " and the nvidia-container-runtime.cdi runtime injects nothing"
			       : "");
		for (size_t k = 0; k < n_dirs; k++)
			doctor_evidence(fd, "%s: no *.json or *.yaml spec", dirs[k]);
		return 0;
	}
	{
		char why[160];
		struct cdi_validate_options o = {
		    .root = doctor_root(c->o), .runtime_uid = c->o->runtime_uid, .runtime_gid = c->o->runtime_gid};
		_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
		const char *rt = cdi_runtime_for(c, why, sizeof(why));
		char fix[1024];
		int r;

		o.runtime_name = rt;
		o.runtime_version = rt ? cdi_runtime_max_version(rt) : NULL;
		r = cdi_validate_dirs(dirs, n_dirs, &o, &rep);
		if (r < 0)
			return r;
		for (size_t k = 0; k < rep.n_problems; k++) {
			const struct cdi_problem *p = &rep.problems[k];
			const struct category *cat = category_row(p->category);

			if (!cat)
				continue;
			if (streq(p->category, "stale-devices"))
				fd = doctor_report_once(c, cat->id, cat->sev, LINK_CDI,
							stale_fix(c, p->file, fix, sizeof(fix)), "%s", cat->summary);
			else
				fd = doctor_report_once(c, cat->id, cat->sev, LINK_CDI, cat->fix, "%s", cat->summary);
			doctor_evidence(fd, "%s%s%s: %s [%s]", p->file, p->json_path && *p->json_path ? " " : "",
					p->json_path ? p->json_path : "", p->message, p->code);
			if (streq(p->category, "version-too-new"))
				doctor_evidence(fd, "runtime: %s", why);
		}
		check_uuids(c, dirs, n_dirs);
		r = doctor_check_cdi_loader(c, dirs, n_dirs);
		if (r < 0)
			return r;
	}
	return 0;
}
