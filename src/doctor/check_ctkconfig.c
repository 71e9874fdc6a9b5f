/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVIDIA container toolkit's own config (docs/reference/doctor-classes.md §8), read where the
 * legacy hook reads it (/etc/nvidia-container-runtime/config.toml; the GPU Operator's toolkit keeps its
 * copy under /usr/local/nvidia/toolkit/.config): [nvidia-container-cli] root left pointing at a driver
 * container that is not there, an ldconfig path this distribution does not have ("@/sbin/ldconfig.real"
 * is Debian's; RHEL has /sbin/ldconfig), and cgroup v2 with a libnvidia-container older than 1.8, which
 * knows only cgroup v1's device controller. Each breaks every container the hook prepares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "parse/toml.h"
#include "util/fileio.h"

static const char *const config_files[] = {
    "/etc/nvidia-container-runtime/config.toml",
    "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml",
};

/* Where a driver tree keeps libnvidia-ml.so.1 (a subset of host/ driver_lib_dirs, for a quick look). */
static const char *const nvml_in_tree[] = {
    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1",
    "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/libnvidia-ml.so.1"};

static bool has_driver(const struct doctor_ctx *c, const char *tree)
{
	for (size_t k = 0; k < ELEMENTSOF(nvml_in_tree); k++) {
		char rel[512];
		_cleanup_free_ char *p = NULL;

		snprintf(rel, sizeof(rel), "%s%s", streq(tree, "/") ? "" : tree, nvml_in_tree[k]);
		p = doctor_path(c, rel);
		if (p && access(p, F_OK) == 0)
			return true;
	}
	return false;
}

static bool node_file(const struct doctor_ctx *c, const char *path)
{
	_cleanup_free_ char *p = doctor_path(c, path);

	return p && access(p, F_OK) == 0;
}

/* "sed -i 'Ns/^/#/' FILE": the line of key commented out, so the tool's default applies. */
static int comment_out(const struct doctor_ctx *c, struct doctor_finding *f, const char *file, unsigned line)
{
	char expr[64];

	snprintf(expr, sizeof(expr), "%us/^/#/", line);
	return doctor_fix_run(
	    c, f, (const struct doctor_fix_arg[]){FIX_W("sed"), FIX_W("-i"), FIX_W(expr), FIX_P(file), FIX_DONE});
}

static int driver_root(struct doctor_ctx *c, const char *file, const struct toml *cli)
{
	const struct toml *v = toml_get(cli, "root");
	struct doctor_finding *f;

	if (!v || v->type != TOML_STRING || !*v->s || streq(v->s, "/") || has_driver(c, v->s))
		return 0;
	f = doctor_report(c, "toolkit.driver-root-missing", DOCTOR_FAIL, LINK_TOOLKIT,
			  has_driver(c, "/")
			      ? "the driver is installed on the host: drop the root line (command below; "
				"nvidia-ctk config --in-place --set nvidia-container-cli.root=/ does the same)"
			      : "point root at where the driver is installed, or start the GPU Operator's driver "
				"container again",
			  "the toolkit looks for the driver under %s, which holds no driver: every GPU container "
			  "fails (\"nvidia-container-cli: initialization error: load library failed: "
			  "libnvidia-ml.so.1\")",
			  v->s);
	doctor_evidence(f, "%s:%u: [nvidia-container-cli] root = \"%s\"", file, v->line, v->s);
	doctor_evidence(f, "%s has no libnvidia-ml.so.1 (the GPU Operator's driver container is gone)", v->s);
	if (has_driver(c, "/")) {
		doctor_evidence(f, "the host has the driver's libnvidia-ml.so.1");
		return comment_out(c, f, file, v->line);
	}
	return 0;
}

static int ldconfig(struct doctor_ctx *c, const char *file, const struct toml *cli)
{
	static const char *const tools[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig", "/sbin/ldconfig.real"};
	const struct toml *v = toml_get(cli, "ldconfig");
	const char *use = NULL;
	struct doctor_finding *f;
	char expr[128], fix[512];

	/* "@" names a host path; without it the path is the container's */
	if (!v || v->type != TOML_STRING || v->s[0] != '@' || node_file(c, v->s + 1))
		return 0;
	for (size_t k = 0; k < ELEMENTSOF(tools) && !use; k++)
		if (node_file(c, tools[k]))
			use = tools[k];
	snprintf(fix, sizeof(fix), "set ldconfig = \"@%s\" under [nvidia-container-cli] in %s%s",
		 use ? use : "/sbin/ldconfig", file, use ? " (command below)" : "");
	f = doctor_report(c, "toolkit.ldconfig-missing", DOCTOR_FAIL, LINK_TOOLKIT, fix,
			  "the toolkit runs %s to update the container's library cache, which this host does not have: "
			  "every GPU container fails (\"nvidia-container-cli: ldcache error: open failed: %s: no such "
			  "file or directory\")",
			  v->s + 1, v->s + 1);
	doctor_evidence(f, "%s:%u: ldconfig = \"%s\"; %s does not exist", file, v->line, v->s, v->s + 1);
	if (!use)
		return 0;
	doctor_evidence(f, "%s exists", use);
	snprintf(expr, sizeof(expr), "%us|.*|ldconfig = \"@%s\"|", v->line, use);
	return doctor_fix_run(
	    c, f, (const struct doctor_fix_arg[]){FIX_W("sed"), FIX_W("-i"), FIX_W(expr), FIX_P(file), FIX_DONE});
}

/* libnvidia-container supports cgroup v2 from 1.8.0 (its NEWS); before, it asks for cgroup v1's devices controller. */
static void cgroup_v2(struct doctor_ctx *c, const char *file, const struct toml *cli)
{
	static const char *const pkgs[] = {"libnvidia-container1", "libnvidia-container-tools"};
	char ver[64] = "";
	const char *pkg = NULL;
	struct doctor_finding *f;

	if (!node_file(c, "/sys/fs/cgroup/cgroup.controllers") || toml_bool(cli, "no-cgroups", 0) == 1)
		return;
	for (size_t k = 0; k < ELEMENTSOF(pkgs) && !pkg; k++)
		if (doctor_dpkg_version(c, pkgs[k], ver, sizeof(ver)))
			pkg = pkgs[k];
	if (!pkg || version_cmp(ver, "1.8.0") >= 0)
		return;
	f = doctor_report(
	    c, "toolkit.cgroup-v2-unsupported", DOCTOR_FAIL, LINK_TOOLKIT,
	    "upgrade the NVIDIA container toolkit to 1.8 or later (apt-get install nvidia-container-toolkit "
	    "libnvidia-container1), or boot with cgroup v1 (systemd.unified_cgroup_hierarchy=0)",
	    "the node runs cgroup v2 but libnvidia-container %s knows only cgroup v1: every GPU container "
	    "fails (\"nvidia-container-cli: container error: cgroup subsystem devices not found\")",
	    ver);
	doctor_evidence(f, "/sys/fs/cgroup/cgroup.controllers exists: the unified (v2) hierarchy");
	doctor_evidence(f, "dpkg: %s %s < 1.8.0", pkg, ver);
	doctor_evidence(f, "%s: no-cgroups is not set", file);
}

int doctor_check_toolkit_config(struct doctor_ctx *c)
{
	bool any = false;

	for (size_t k = 0; k < ELEMENTSOF(config_files); k++) {
		_cleanup_free_ char *p = doctor_path(c, config_files[k]);
		_cleanup_(toml_freep) struct toml *t = NULL;
		const struct toml *cli;
		int r;

		if (!p || toml_load_file(p, &t, NULL) < 0)
			continue;
		any = true;
		/* mode = "cdi": the runtime injects from CDI specs and never runs nvidia-container-cli */
		if (streq(toml_string(toml_get(t, "nvidia-container-runtime"), "mode", "auto"), "cdi"))
			continue;
		cli = toml_get(t, "nvidia-container-cli");
		r = driver_root(c, config_files[k], cli);
		if (r >= 0)
			r = ldconfig(c, config_files[k], cli);
		if (r < 0)
			return r;
		cgroup_v2(c, config_files[k], cli);
	}
	if (!any)
		doctor_skip(c, "no NVIDIA container toolkit config (/etc/nvidia-container-runtime/config.toml)");
	return 0;
}
