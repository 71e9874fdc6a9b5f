/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The systemd daemon-reload device loss (docs/reference/doctor-classes.md §6): with the systemd cgroup
 * driver, systemd rewrites a container's device rules from the unit it knows at every daemon-reload,
 * and it names a device by its /dev/char/<major>:<minor> link; NVIDIA's device nodes are made by
 * nvidia-modprobe, not udev, so those links are missing and the containers lose /dev/nvidia* ("Failed to
 * initialize NVML: Unknown Error") after the next package install. The fix is the links.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "kube/k8sobj.h"
#include "parse/toml.h"
#include "util/fileio.h"

#define MAX_NODES 256

/* The runtime's own setting (its config is already loaded): containerd's runc SystemdCgroup, CRI-O's
 * cgroup_manager (systemd by default). */
static bool runtime_systemd(struct doctor_ctx *c, char *why, size_t size)
{
	if (doctor_need_runtime(c) < 0)
		return false;
	if (c->rt->kind == RT_CRIO && c->rt->crio) {
		const char *m =
		    toml_string(toml_path(c->rt->crio, "crio", "runtime", NULL), "cgroup_manager", "systemd");

		snprintf(why, size, "CRI-O cgroup_manager = \"%s\"", m);
		return streq(m, "systemd");
	}
	if (rt_is_containerd(c->rt) && doctor_need_containerd(c) > 0) {
		struct ctrd_facts f;
		const struct toml *rts;

		doctor_containerd_facts(c, &f);
		rts = toml_get(f.containerd, "runtimes");
		for (size_t k = 0; rts && rts->type == TOML_TABLE && k < rts->n; k++)
			if (toml_bool(toml_get(rts->vals[k], "options"), "SystemdCgroup", 0) == 1) {
				snprintf(why, size, "%s: runtimes.%s.options.SystemdCgroup = true", rt_name(c->rt),
					 rts->keys[k]);
				return true;
			}
	}
	return false;
}

/* Who puts containers under systemd's cgroup management: the runtime, or kubelet's cgroupDriver (its
 * config is YAML: read only when the runtime did not say). why gets the evidence. */
static bool systemd_cgroups(struct doctor_ctx *c, char *why, size_t size)
{
	_cleanup_free_ char *p = NULL;
	json_t *docs = NULL;
	const char *drv;
	bool yes = false;

	if (runtime_systemd(c, why, size))
		return true;
	p = doctor_path(c, "/var/lib/kubelet/config.yaml");
	if (p && k8sobj_load(p, &docs, NULL) >= 0 &&
	    (drv = json_string_value(json_object_get(json_array_get(docs, 0), "cgroupDriver"))) &&
	    streq(drv, "systemd")) {
		snprintf(why, size, "/var/lib/kubelet/config.yaml: cgroupDriver: systemd");
		yes = true;
	}
	json_decref(docs);
	return yes;
}

static bool nvidia_node(const char *name)
{
	return !strncmp(name, "nvidia", 6);
}

struct devnode {
	char path[64];   /* /dev/nvidia0, /dev/nvidia-caps/nvidia-cap1 */
	char target[64]; /* the link's target, relative to /dev/char */
	char link[32];   /* /dev/char/195:0 */
};

/* NVIDIA character devices in /dev and /dev/nvidia-caps whose /dev/char link is missing or elsewhere. */
static size_t missing_links(struct doctor_ctx *c, struct devnode *out, size_t max, size_t *n_nodes)
{
	static const char *const dirs[] = {"/dev", "/dev/nvidia-caps"};
	static char names[MAX_NODES][256];
	size_t n_out = 0;

	*n_nodes = 0;
	for (size_t d = 0; d < ELEMENTSOF(dirs); d++) {
		size_t n = doctor_dir_names(c, dirs[d], nvidia_node, names, ELEMENTSOF(names));

		for (size_t k = 0; k < n; k++) {
			struct devnode dn;
			_cleanup_free_ char *p = NULL, *lp = NULL;
			struct stat st, lst;

			snprintf(dn.path, sizeof(dn.path), "%s/%.40s", dirs[d], names[k]);
			p = doctor_path(c, dn.path);
			if (!p || stat(p, &st) < 0 || !S_ISCHR(st.st_mode))
				continue;
			(*n_nodes)++;
			snprintf(dn.link, sizeof(dn.link), "/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
			snprintf(dn.target, sizeof(dn.target), "..%s", dn.path + 4);
			lp = doctor_path(c, dn.link);
			if (lp && stat(lp, &lst) == 0 && S_ISCHR(lst.st_mode) && lst.st_rdev == st.st_rdev)
				continue;
			if (n_out < max)
				out[n_out] = dn;
			n_out++;
		}
	}
	return n_out;
}

/* Evidence order: the control nodes, the GPUs, NVSwitches, then MIG capabilities; by number within each. */
static int rank(const char *path)
{
	static const char *const first[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
					    "/dev/nvidia-modeset"};

	for (size_t k = 0; k < ELEMENTSOF(first); k++)
		if (streq(path, first[k]))
			return 0;
	if (!strncmp(path, "/dev/nvidia-caps/", 17))
		return 3;
	return strncmp(path, "/dev/nvidia-nvswitch", 20) ? 1 : 2;
}

static int cmp_devnode(const void *a, const void *b)
{
	const struct devnode *x = a, *y = b;
	int d = rank(x->path) - rank(y->path);

	return d ? d : strverscmp(x->path, y->path);
}

int doctor_check_devchar(struct doctor_ctx *c)
{
	static struct devnode miss[MAX_NODES];
	struct doctor_fix_arg args[4 + 5 * MAX_NODES];
	char why[512];
	size_t n_nodes, n, a = 0;
	struct doctor_finding *f;

	if (c->wsl || !systemd_cgroups(c, why, sizeof(why))) {
		doctor_skip(c, "containers are not under the systemd cgroup driver: a daemon-reload does not touch "
			       "their device rules");
		return 0;
	}
	n = missing_links(c, miss, ELEMENTSOF(miss), &n_nodes);
	if (!n)
		return 0;
	if (n > ELEMENTSOF(miss))
		n = ELEMENTSOF(miss);
	qsort(miss, n, sizeof(miss[0]), cmp_devnode);
	f = doctor_report(
	    c, "devnode.char-links-missing", DOCTOR_WARN, LINK_DEVNODE,
	    "create the links (command below, or nvidia-ctk system create-dev-char-symlinks --create-all "
	    "from toolkit 1.12) and keep them across reboots with a udev rule running that command when "
	    "the nvidia driver binds (NVIDIA's notice, nvidia-container-toolkit issue 48)",
	    "NVIDIA device nodes have no /dev/char/<major>:<minor> link: with the systemd cgroup driver, the "
	    "next systemctl daemon-reload takes /dev/nvidia* away from running GPU containers (\"Failed "
	    "to initialize NVML: Unknown Error\")");
	doctor_evidence(f, "%s", why);
	for (size_t k = 0; k < n && k < DOCTOR_MAX_EVIDENCE - 3; k++)
		doctor_evidence(f, "%s has no %s link", miss[k].path, miss[k].link);
	if (n > DOCTOR_MAX_EVIDENCE - 3)
		doctor_evidence(f, "and %zu more NVIDIA device nodes (all in the command below)",
				n - (DOCTOR_MAX_EVIDENCE - 3));
	args[a++] = (struct doctor_fix_arg)FIX_W("mkdir");
	args[a++] = (struct doctor_fix_arg)FIX_W("-p");
	args[a++] = (struct doctor_fix_arg)FIX_P("/dev/char");
	for (size_t k = 0; k < n; k++) {
		args[a++] = (struct doctor_fix_arg)FIX_AND;
		args[a++] = (struct doctor_fix_arg)FIX_W("ln");
		args[a++] = (struct doctor_fix_arg)FIX_W("-sfn");
		args[a++] = (struct doctor_fix_arg)FIX_W(miss[k].target);
		args[a++] = (struct doctor_fix_arg)FIX_P(miss[k].link);
	}
	args[a] = (struct doctor_fix_arg)FIX_DONE;
	return doctor_fix_run(c, f, args);
}
