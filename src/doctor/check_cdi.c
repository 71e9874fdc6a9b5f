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
#include <unistd.h>

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

/* Where NVIDIA's and gpulet's CDI hooks are installed (nvidia-container-toolkit-base ≥ 1.16 ships
 * nvidia-cdi-hook beside nvidia-ctk; the GPU Operator's toolkit uses /usr/local/nvidia/toolkit). */
static const char *const hook_paths[] = {
    "/usr/bin/nvidia-cdi-hook",
    "/usr/bin/nvidia-ctk",
    "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
    "/usr/local/nvidia/toolkit/nvidia-ctk",
    "/usr/local/bin/nvidia-cdi-hook",
    "/usr/local/bin/nvidia-ctk",
    "/usr/bin/gpulet-cdi-hook",
    "/usr/local/bin/gpulet-cdi-hook",
};

static bool node_executable(const struct doctor_ctx *c, const char *path)
{
	_cleanup_free_ char *p = path && *path == '/' ? doctor_path(c, path) : NULL;

	return p && access(p, X_OK) == 0;
}

/* The first CDI hook installed on the node, "" none. */
static void node_hook(const struct doctor_ctx *c, char *buf, size_t size)
{
	buf[0] = '\0';
	for (size_t k = 0; k < ELEMENTSOF(hook_paths) && !buf[0]; k++)
		if (node_executable(c, hook_paths[k]))
			snprintf(buf, size, "%s", hook_paths[k]);
}

/* What a spec file says about itself: enough to regenerate it as it was meant. */
struct spec_facts {
	bool read;
	char vendor[128], class[128];
	bool yaml;
	bool by_uuid, by_index;      /* device names */
	char hook_missing[PATH_MAX]; /* a hook path the spec names that the node lacks */
	char hook[PATH_MAX];         /* an executable hook on the node, "" none */
	bool plugin_own;             /* the device plugin's own spec: it rewrites it at start */
};

static void hooks_of(const struct doctor_ctx *c, const json_t *edits, struct spec_facts *sf)
{
	size_t i;
	json_t *h;

	json_array_foreach (json_object_get(edits, "hooks"), i, h) {
		const char *path = json_string_value(json_object_get(h, "path"));

		if (!path)
			continue;
		if (node_executable(c, path)) {
			if (!sf->hook[0])
				snprintf(sf->hook, sizeof(sf->hook), "%s", path);
		} else if (!sf->hook_missing[0])
			snprintf(sf->hook_missing, sizeof(sf->hook_missing), "%s", path);
	}
}

static void spec_facts_read(const struct doctor_ctx *c, const char *file, struct spec_facts *sf)
{
	const char *node = doctor_node_path(c, file), *base = strrchr(node, '/');
	json_auto_t *spec = NULL;
	const char *kind, *slash;
	size_t i, l = strlen(file);
	json_t *dev;

	memset(sf, 0, sizeof(*sf));
	base = base ? base + 1 : node;
	sf->plugin_own = !strncmp(base, "k8s.device-plugin.nvidia.com", 28) || !strncmp(base, "gpulet", 6);
	sf->yaml = l > 5 && streq(file + l - 5, ".yaml");
	if (cdi_read_spec(file, &spec, NULL) < 0 || !(kind = json_string_value(json_object_get(spec, "kind"))) ||
	    !(slash = strchr(kind, '/')))
		return;
	snprintf(sf->vendor, sizeof(sf->vendor), "%.*s", (int)(slash - kind), kind);
	snprintf(sf->class, sizeof(sf->class), "%s", slash + 1);
	if (!cdi_vendor_valid(sf->vendor) || !cdi_class_valid(sf->class))
		return;
	hooks_of(c, json_object_get(spec, "containerEdits"), sf);
	json_array_foreach (json_object_get(spec, "devices"), i, dev) {
		const char *name = json_string_value(json_object_get(dev, "name")) ?: "";

		hooks_of(c, json_object_get(dev, "containerEdits"), sf);
		if (!strncmp(name, "GPU-", 4) || !strncmp(name, "MIG-", 4))
			sf->by_uuid = true;
		else if (name[strspn(name, "0123456789:")] == '\0')
			sf->by_index = true;
	}
	if (!sf->hook[0])
		node_hook(c, sf->hook, sizeof(sf->hook));
	sf->read = true;
}

/*
 * The file regenerated in place, as the node sees it: same kind, same device names, the same format,
 * a hook that exists on the node. --force because the file it replaces is not gpulet's; a fresh spec
 * in /var/run/cdi hides a stale one in /etc/cdi only until the next reboot, and two specs of one kind
 * in one dir drop the device (docs/reference/cdi.md §4).
 */
static int regenerate_run(const struct doctor_ctx *c, struct doctor_finding *f, const char *file,
			  const struct spec_facts *sf)
{
	struct doctor_fix_arg args[24] = {FIX_W("gpulet"),   FIX_W("cdi"),      FIX_W("generate"), FIX_ROOTOPTS,
					  FIX_W("--vendor"), FIX_W(sf->vendor), FIX_W("--class"),  FIX_W(sf->class)};
	size_t n = 8;

	if (!sf->read)
		return 0;
	if (sf->by_uuid != sf->by_index) {
		args[n++] = (struct doctor_fix_arg)FIX_W("--device-name-strategy");
		args[n++] = (struct doctor_fix_arg)FIX_W(sf->by_uuid ? "uuid" : "index");
	}
	args[n++] = (struct doctor_fix_arg)FIX_W("--format");
	args[n++] = (struct doctor_fix_arg)FIX_W(sf->yaml ? "yaml" : "json");
	if (sf->hook[0]) {
		args[n++] = (struct doctor_fix_arg)FIX_W("--nvidia-cdi-hook-path");
		args[n++] = (struct doctor_fix_arg)FIX_W(sf->hook);
	} else {
		size_t l = strlen(f->fix);

		args[n++] = (struct doctor_fix_arg)FIX_W("--cdi-disable-hooks");
		args[n++] = (struct doctor_fix_arg)FIX_W("all");
		snprintf(f->fix + l, sizeof(f->fix) - l,
			 "; no CDI hook is installed on the node, so the command writes the spec without hooks "
			 "(nvidia-container-toolkit-base ships nvidia-cdi-hook)");
	}
	args[n++] = (struct doctor_fix_arg)FIX_W("--force");
	args[n++] = (struct doctor_fix_arg)FIX_W("--output");
	args[n++] = (struct doctor_fix_arg)FIX_P(doctor_node_path(c, file));
	args[n] = (struct doctor_fix_arg)FIX_DONE;
	return doctor_fix_run(c, f, args);
}

/* "restart the device plugin" naming its DaemonSet (gpulet's chart or NVIDIA's), for its own spec. */
static void plugin_restart(const struct doctor_ctx *c, char *buf, size_t size)
{
	struct plugin_ds ds;

	cluster_plugin_ds(c, &ds);
	snprintf(buf, size,
		 "restart the device plugin, which rewrites its own spec at start (kubectl -n %s rollout restart "
		 "daemonset/%s)",
		 ds.ns, ds.name);
}

static const char *stale_fix(const struct doctor_ctx *c, const char *file, const struct spec_facts *sf, char *buf,
			     size_t size)
{
	char restart[400] = "";

	if (sf->plugin_own)
		plugin_restart(c, restart, sizeof(restart));
	if (!sf->read)
		snprintf(buf, size,
			 "%s%sregenerate %s with the tool that wrote it (gpulet cdi generate, nvidia-ctk cdi generate)",
			 restart, *restart ? "; or " : "", doctor_node_path(c, file));
	else
		snprintf(buf, size,
			 "%s%sregenerate %s in place with the same kind %s/%s (command below); a new file in "
			 "/var/run/cdi would hide a stale /etc/cdi spec only until reboot",
			 restart, *restart ? "; or " : "", doctor_node_path(c, file), sf->vendor, sf->class);
	return buf;
}

/*
 * A hook the spec names is not on the node: the runtime cannot exec it and every container given
 * these devices fails ("error running createContainer hook #0: fork/exec /usr/bin/nvidia-ctk: no such
 * file or directory", docs/reference/doctor-classes.md §11). Its own finding: nothing about the GPUs
 * is stale, and regenerating with the same missing hook would change nothing.
 */
static const char *hook_fix(const struct doctor_ctx *c, const char *file, const struct spec_facts *sf, char *buf,
			    size_t size)
{
	char restart[400] = "";
	struct plugin_ds ds;

	cluster_plugin_ds(c, &ds);
	if (sf->plugin_own)
		snprintf(restart, sizeof(restart),
			 "set the device plugin's hook path to it (--nvidia-cdi-hook-path, env NVIDIA_CDI_HOOK_PATH%s) "
			 "so it writes it itself, or ",
			 ds.gpulet ? ", gpulet chart value cdi.nvidiaHookPath" : "");
	if (sf->hook[0])
		snprintf(buf, size, "%s is not on the node but %s is: %sregenerate %s with it (command below)",
			 sf->hook_missing, sf->hook, restart, doctor_node_path(c, file));
	else
		snprintf(
		    buf, size,
		    "install the hook: apt-get install nvidia-container-toolkit-base (or dnf install "
		    "nvidia-container-toolkit-base; it ships %s), or install gpulet's hook and point the spec at it",
		    sf->hook_missing);
	return buf;
}

/*
 * The spec to write when none exists: the kind and name style the plugin hands out (its checkpoint
 * entry), else the device plugin's kind when it asks for CDI names (k8s-device-plugin's
 * k8s.device-plugin.nvidia.com/gpu), else nvidia-ctk's nvidia.com/gpu; in dir, the runtime's spec dir
 * that wins (the last one it reads). out gets the node path.
 */
static void missing_spec_facts(const struct doctor_ctx *c, const struct inject_facts *inj, const char *dir,
			       struct spec_facts *sf, char *out, size_t size)
{
	const char *name = inj->cdi_name, *slash = strchr(name, '/'), *eq = strchr(name, '=');

	memset(sf, 0, sizeof(*sf));
	snprintf(sf->vendor, sizeof(sf->vendor), "%s",
		 inject_cdi_names(inj) ? "k8s.device-plugin.nvidia.com" : "nvidia.com");
	snprintf(sf->class, sizeof(sf->class), "gpu");
	if (slash && eq && slash < eq) {
		snprintf(sf->vendor, sizeof(sf->vendor), "%.*s", (int)(slash - name), name);
		snprintf(sf->class, sizeof(sf->class), "%.*s", (int)(eq - slash - 1), slash + 1);
		sf->by_uuid = !strncmp(eq + 1, "GPU-", 4) || !strncmp(eq + 1, "MIG-", 4);
		sf->by_index = !sf->by_uuid;
	}
	sf->read = cdi_vendor_valid(sf->vendor) && cdi_class_valid(sf->class);
	node_hook(c, sf->hook, sizeof(sf->hook));
	snprintf(out, size, "%s/%s-%s.json", dir, sf->vendor, sf->class);
}

/* A validator message names host paths below --root: say them as the node does. */
static const char *node_message(const struct doctor_ctx *c, const char *msg, char *buf, size_t size)
{
	const char *root = doctor_root(c->o);
	size_t l = doctor_root_elsewhere(c) ? strlen(root) : 0, used = 0;

	while (l > 1 && root[l - 1] == '/')
		l--;
	buf[0] = '\0';
	for (const char *m = msg; *m && used + 1 < size;) {
		const char *hit = l ? strstr(m, root) : NULL;

		if (hit && (hit[l] == '/')) {
			used += (size_t)snprintf(buf + used, size - used, "%.*s", (int)(hit - m), m);
			m = hit + l;
			continue;
		}
		snprintf(buf + used, size - used, "%s", m);
		break;
	}
	return buf;
}

/* The finding for a stale file (cdi.stale-devices) or a missing hook (cdi.hook-missing), made once. */
static int stale_report(struct doctor_ctx *c, const char *file, bool hook, struct doctor_finding **ret)
{
	const char *id = hook ? "cdi.hook-missing" : "cdi.stale-devices";
	struct doctor_finding *f = doctor_find(c, id);
	struct spec_facts sf;
	char fix[1024];

	if (f) {
		*ret = f;
		return 0;
	}
	spec_facts_read(c, file, &sf);
	if (hook)
		f = doctor_report(
		    c, id, DOCTOR_FAIL, LINK_CDI, hook_fix(c, file, &sf, fix, sizeof(fix)),
		    "a CDI spec's hook program is not on the node: every container given these devices fails "
		    "to start (the runtime cannot run the createContainer hook)");
	else
		f = doctor_report(c, id, DOCTOR_FAIL, LINK_CDI, stale_fix(c, file, &sf, fix, sizeof(fix)), "%s",
				  category_row("stale-devices")->summary);
	*ret = f;
	if (hook && !sf.hook[0])
		return 0; /* nothing on the node to point it at: install the toolkit */
	return regenerate_run(c, f, file, &sf);
}

/*
 * A stale-devices problem of the validator: a missing hook binary is its own finding, and a device node
 * the devnode link already found missing is that link's (the spec is right, the node lacks the node;
 * regenerating would drop the device). *ret NULL: the problem went to another finding as evidence.
 */
static int stale_or_hook(struct doctor_ctx *c, const struct cdi_problem *p, struct doctor_finding **ret)
{
	struct doctor_finding *devnode = doctor_find(c, "devnode.missing");
	bool missing = streq(p->code, "host-path-missing");

	if (devnode && missing && p->json_path && strstr(p->json_path, ".deviceNodes[")) {
		doctor_evidence(devnode, "CDI spec %s %s names it: the spec is right, the node lacks it",
				doctor_node_path(c, p->file), p->json_path);
		*ret = NULL;
		return 0;
	}
	return stale_report(c, p->file, missing && p->json_path && strstr(p->json_path, ".hooks["), ret);
}

/* Devices named by UUID in the specs that NVML does not know (docs/reference/cdi.md §5.3 uuid names). */
static int check_uuids(struct doctor_ctx *c, const char *const *dirs, size_t n)
{
	struct doctor_finding *lost = doctor_find(c, "gpu.fallen-off-bus");
	json_t *list = NULL, *e;
	struct doctor_finding *f = NULL;
	size_t i;

	if (doctor_need_nvml(c) < 0 || cdi_list_dirs(doctor_root(c->o), dirs, n, &list, NULL) < 0)
		return 0;
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
					doctor_node_path(c, json_string_value(json_object_get(e, "file"))));
			continue;
		}
		if (!f && stale_report(c, json_string_value(json_object_get(e, "file")) ?: "", false, &f) < 0) {
			json_decref(list);
			return -ENOMEM;
		}
		doctor_evidence(f, "%s (%s): no such GPU or MIG instance on this node now",
				json_string_value(json_object_get(e, "name")),
				doctor_node_path(c, json_string_value(json_object_get(e, "file"))));
	}
	json_decref(list);
	return 0;
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
		struct rt_facts rf;
		struct spec_facts sf;
		char fix[1024], out[PATH_MAX], restart[400];
		bool cdi_mode, plugin_cdi, rt_cdi;

		/*
		 * A runtime in CDI mode, or a plugin that hands out CDI names: where the runtime resolves CDI
		 * names (containerd with CDI on, CRI-O always) an unresolvable name fails the container even
		 * when NVIDIA_VISIBLE_DEVICES came beside it; with CDI off the names are dropped, and then only
		 * a plugin handing out nothing else leaves the GPU out.
		 */
		doctor_inject_facts(c, &inj);
		rt_cdi = rt_facts_get(c, &rf) > 0 && rf.cdi;
		plugin_cdi = inject_cdi_only(&inj) || (inject_cdi_names(&inj) && rt_cdi);
		cdi_mode = strstr(bin, ".cdi") != NULL || plugin_cdi;
		/* CDI not in use: off, or only on by containerd 2's default with no CDI runtime mode */
		if ((!f.enable_cdi || !f.enable_cdi_explicit) && !cdi_mode)
			return 0;
		missing_spec_facts(c, &inj, n_dirs ? dirs[n_dirs - 1] : "/var/run/cdi", &sf, out, sizeof(out));
		plugin_restart(c, restart, sizeof(restart) - 6);
		strcat(restart, "; or ");
		snprintf(fix, sizeof(fix),
			 "%swrite a spec of the kind %s/%s where the runtime reads (command below; or nvidia-ctk cdi "
			 "generate --vendor=%s --class=%s --output=%s)",
			 plugin_cdi ? restart : "", sf.vendor, sf.class, sf.vendor, sf.class, out);
		fd = doctor_report(c, "cdi.spec-missing", cdi_mode ? DOCTOR_FAIL : DOCTOR_WARN, LINK_CDI, fix,
				   "CDI is on but no CDI spec exists: CDI device requests are unresolvable%s",
				   plugin_cdi ? " and the device plugin hands out CDI names"
				   : cdi_mode ? " and the nvidia-container-runtime.cdi runtime injects nothing"
					      : "");
		for (size_t k = 0; k < n_dirs; k++)
			doctor_evidence(fd, "%s: no *.json or *.yaml spec", dirs[k]);
		if (inj.mode != ALLOCRESP_NONE)
			doctor_evidence(fd, "%s", inj.source);
		return regenerate_run(c, fd, out, &sf);
	}
	{
		char why[160];
		struct cdi_validate_options o = {
		    .root = doctor_root(c->o), .runtime_uid = c->o->runtime_uid, .runtime_gid = c->o->runtime_gid};
		_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
		const char *rt = cdi_runtime_for(c, why, sizeof(why));
		char msg[1024];
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
			if (streq(p->category, "stale-devices")) {
				r = stale_or_hook(c, p, &fd);
				if (r < 0)
					return r;
				if (!fd)
					continue;
			} else
				fd = doctor_report_once(c, cat->id, cat->sev, LINK_CDI, cat->fix, "%s", cat->summary);
			doctor_evidence(fd, "%s%s%s: %s [%s]", doctor_node_path(c, p->file),
					p->json_path && *p->json_path ? " " : "", p->json_path ? p->json_path : "",
					node_message(c, p->message, msg, sizeof(msg)), p->code);
			if (streq(p->category, "version-too-new"))
				doctor_evidence(fd, "runtime: %s", why);
		}
		r = check_uuids(c, dirs, n_dirs);
		if (r >= 0)
			r = doctor_check_cdi_loader(c, dirs, n_dirs);
		if (r < 0)
			return r;
	}
	return 0;
}
