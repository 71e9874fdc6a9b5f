/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Find the container runtime that runs on the node and the config it really reads
 * (docs/reference/container-runtimes.md; k0s and MicroK8s §1). Order: a live process under <root>/proc (its own
 * command line names its config), the well-known rendered/installed config files of each
 * distribution, then a runtime that is installed but has no config (it runs on built-in defaults).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "parse/toml.h"
#include "util/fileio.h"

#define K3S_DIR  "/var/lib/rancher/k3s/agent/etc/containerd"
#define RKE2_DIR "/var/lib/rancher/rke2/agent/etc/containerd"

/* Per kind: default config, drop-in dir, name, restart command (docs/reference/container-runtimes.md §1–3). */
static const struct rt_row {
	enum rt_kind kind;
	const char *config;
	const char *dropins;
	const char *name;
	const char *restart;
	const char *edit; /* where edits go when the config itself is generated ("" the config) */
} rt_rows[] = {
    {RT_NONE, "", "", "no container runtime", "", ""},
    {RT_CONTAINERD, "/etc/containerd/config.toml", "", "containerd", "systemctl restart containerd", ""},
    {RT_K3S, K3S_DIR "/config.toml", "", "k3s's embedded containerd",
     "systemctl restart k3s (k3s-agent on agent nodes)", ""},
    {RT_RKE2, RKE2_DIR "/config.toml", "", "RKE2's embedded containerd",
     "systemctl restart rke2-server (rke2-agent on agent nodes)", ""},
    {RT_K0S, "/etc/k0s/containerd.toml", "", "k0s's containerd",
     "systemctl restart k0sworker (k0scontroller on a controller+worker)",
     "a drop-in in /etc/k0s/containerd.d/ (k0s merges its CRI settings; containerd.toml stays k0s-managed)"},
    {RT_MICROK8S, "/var/snap/microk8s/current/args/containerd.toml", "", "MicroK8s's containerd",
     "snap restart microk8s",
     "/var/snap/microk8s/current/args/containerd-template.toml (MicroK8s renders containerd.toml from it)"},
    {RT_CRIO, "/etc/crio/crio.conf", "/etc/crio/crio.conf.d", "CRI-O", "systemctl restart crio", ""},
    {RT_DOCKER, "/etc/docker/daemon.json", "", "Docker (through cri-dockerd)", "systemctl restart docker", ""},
};

/* cri-dockerd, the CRI shim that lets kubelet run pods on Docker (Mirantis/cri-dockerd): its binary or unit. */
static const char *const cri_dockerd[] = {
    "/usr/bin/cri-dockerd", "/usr/local/bin/cri-dockerd", "/etc/systemd/system/cri-docker.service",
    "/lib/systemd/system/cri-docker.service", "/usr/lib/systemd/system/cri-docker.service"};

/* Files that show a runtime is installed even without a config (then it runs on built-in defaults). */
static const struct {
	enum rt_kind kind;
	const char *path;
} installed[] = {
    {RT_K3S, "/usr/local/bin/k3s"},
    {RT_RKE2, "/usr/local/bin/rke2"},
    {RT_RKE2, "/usr/bin/rke2"},
    {RT_CONTAINERD, "/usr/bin/containerd"},
    {RT_CONTAINERD, "/usr/local/bin/containerd"},
    {RT_CONTAINERD, "/usr/sbin/containerd"},
    {RT_CONTAINERD, "/lib/systemd/system/containerd.service"},
    {RT_CONTAINERD, "/usr/lib/systemd/system/containerd.service"},
    {RT_CONTAINERD, "/etc/systemd/system/containerd.service"},
    {RT_CRIO, "/usr/bin/crio"},
    {RT_CRIO, "/usr/local/bin/crio"},
    {RT_CRIO, "/lib/systemd/system/crio.service"},
    {RT_CRIO, "/usr/lib/systemd/system/crio.service"},
};
static const struct {
	enum rt_kind kind;
	const char *pkg;
} packages[] = {
    {RT_CONTAINERD, "containerd"},
    {RT_CONTAINERD, "containerd.io"},
    {RT_CRIO, "cri-o"},
};

static const struct rt_row *row(enum rt_kind k)
{
	for (size_t i = 0; i < ELEMENTSOF(rt_rows); i++)
		if (rt_rows[i].kind == k)
			return &rt_rows[i];
	return &rt_rows[0];
}

bool rt_is_containerd(const struct runtime_found *rt)
{
	return rt && rt->kind != RT_NONE && rt->kind != RT_CRIO && rt->kind != RT_DOCKER;
}

const char *rt_name(const struct runtime_found *rt)
{
	return row(rt ? rt->kind : RT_NONE)->name;
}

const char *rt_restart(const struct runtime_found *rt)
{
	return row(rt ? rt->kind : RT_NONE)->restart;
}

const char *rt_edit_target(const struct runtime_found *rt)
{
	return rt->templ[0] ? rt->templ : rt->config;
}

static bool exists(const struct doctor_ctx *c, const char *path)
{
	_cleanup_free_ char *p = doctor_path(c, path);
	struct stat st;

	return p && stat(p, &st) == 0;
}

/* containerd's config lives in k3s's or RKE2's agent dir when they run it. */
static enum rt_kind containerd_kind(const char *config)
{
	if (!strncmp(config, "/var/lib/rancher/k3s/", 21))
		return RT_K3S;
	if (!strncmp(config, "/var/lib/rancher/rke2/", 22))
		return RT_RKE2;
	if (!strncmp(config, "/etc/k0s/", 9))
		return RT_K0S;
	if (strstr(config, "/snap/microk8s/"))
		return RT_MICROK8S;
	return RT_CONTAINERD;
}

static void set_found(struct runtime_found *rt, enum rt_kind kind, const char *config, const char *dropins)
{
	rt->kind = kind;
	snprintf(rt->config, sizeof(rt->config), "%s", config && *config ? config : row(kind)->config);
	snprintf(rt->dropins, sizeof(rt->dropins), "%s", dropins && *dropins ? dropins : row(kind)->dropins);
}

/* Value of -x / --long / --long=V in argv; NULL when absent. */
static const char *flag_value(char **argv, size_t argc, const char *shrt, const char *lng)
{
	size_t l = strlen(lng);

	for (size_t k = 1; k < argc; k++) {
		if ((streq(argv[k], shrt) || streq(argv[k], lng)) && k + 1 < argc)
			return argv[k + 1];
		if (!strncmp(argv[k], lng, l) && argv[k][l] == '=')
			return argv[k] + l + 1;
	}
	return NULL;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* One process: a runtime when argv[0] is containerd or crio (runtime_find.h). */
bool rt_from_cmdline(struct runtime_found *rt, const char *pid, char *text, size_t len)
{
	char *argv[64];
	size_t argc = 0;

	for (size_t off = 0; off < len && argc < ELEMENTSOF(argv); off += strlen(text + off) + 1)
		argv[argc++] = text + off;
	if (!argc)
		return false;
	if (streq(base_name(argv[0]), "containerd")) {
		const char *cfg = flag_value(argv, argc, "-c", "--config") ?: "/etc/containerd/config.toml";

		set_found(rt, containerd_kind(cfg), cfg, NULL);
	} else if (streq(base_name(argv[0]), "crio")) {
		set_found(rt, RT_CRIO, flag_value(argv, argc, "-c", "--config"),
			  flag_value(argv, argc, "-d", "--config-dir"));
	} else if (streq(base_name(argv[0]), "cri-dockerd")) {
		set_found(rt, RT_DOCKER, NULL, NULL);
	} else
		return false;
	snprintf(rt->source, sizeof(rt->source), "/proc/%s/cmdline: %s%s%s", pid, argv[0], argc > 1 ? " " : "",
		 argc > 1 ? argv[1] : "");
	for (size_t k = 2; k < argc && k < 5; k++)
		snprintf(rt->source + strlen(rt->source), sizeof(rt->source) - strlen(rt->source), " %s", argv[k]);
	return true;
}

/*
 * Any user can name a process "containerd -c FILE": only the runtime's own user counts (root, or
 * --runtime-user for a rootless one). A root without /proc/PID/status (a saved node tree) keeps it.
 */
static bool runtime_user_process(const struct doctor_ctx *c, const char *pid)
{
	char rel[64];
	_cleanup_free_ char *p = NULL, *text = NULL;
	const char *u;
	unsigned real, eff;

	snprintf(rel, sizeof(rel), "/proc/%s/status", pid);
	p = doctor_path(c, rel);
	if (!p || read_file(p, 1 << 16, &text, NULL, NULL) < 0)
		return true;
	u = strstr(text, "\nUid:");
	if (!u || sscanf(u + 5, "%u %u", &real, &eff) != 2)
		return true;
	return eff == 0 || eff == c->o->runtime_uid;
}

static int cmp_pid(const void *a, const void *b)
{
	return atoi(*(char *const *)a) - atoi(*(char *const *)b);
}

static bool cri_dockerd_installed(const struct doctor_ctx *c, const char **which)
{
	for (size_t k = 0; k < ELEMENTSOF(cri_dockerd); k++)
		if (exists(c, cri_dockerd[k])) {
			*which = cri_dockerd[k];
			return true;
		}
	return false;
}

static bool from_proc(const struct doctor_ctx *c, struct runtime_found *rt)
{
	const char *which;
	bool docker = cri_dockerd_installed(c, &which);
	static char names[4096][256]; /* 1 MiB: off the stack; the doctor is single-threaded */
	char pids[4096][16];
	char *order[4096];
	size_t n = doctor_dir_names(c, "/proc", NULL, names, ELEMENTSOF(names)), m = 0;

	for (size_t k = 0; k < n; k++)
		if (names[k][strspn(names[k], "0123456789")] == '\0' && strlen(names[k]) < sizeof(pids[0])) {
			snprintf(pids[m], sizeof(pids[m]), "%s", names[k]);
			order[m] = pids[m];
			m++;
		}
	qsort(order, m, sizeof(order[0]), cmp_pid);
	for (size_t k = 0; k < m; k++) {
		static struct runtime_found one; /* large: off the stack */
		char rel[64];
		_cleanup_free_ char *p = NULL, *text = NULL;
		size_t len = 0;

		snprintf(rel, sizeof(rel), "/proc/%s/cmdline", order[k]);
		p = doctor_path(c, rel);
		memset(&one, 0, sizeof(one));
		if (!p || read_file(p, 1 << 16, &text, &len, NULL) < 0 || !runtime_user_process(c, order[k]) ||
		    !rt_from_cmdline(&one, order[k], text, len))
			continue;
		/* cri-dockerd is kubelet's runtime even beside Docker's own containerd (which serves no pods):
		 * look on for it only where it is installed */
		if (rt->kind == RT_NONE || one.kind == RT_DOCKER)
			*rt = one;
		if (rt->kind == RT_DOCKER || !docker)
			return true;
	}
	return rt->kind != RT_NONE;
}

static bool dir_has_files(const struct doctor_ctx *c, const char *dir)
{
	char names[1][256];

	return *dir && doctor_dir_names(c, dir, NULL, names, 1) > 0;
}

/* Docker with cri-dockerd installed: kubelet's pods run on Docker, whatever containerd config is there. */
static bool docker_installed(const struct doctor_ctx *c, struct runtime_found *rt)
{
	const char *which;

	if (!cri_dockerd_installed(c, &which))
		return false;
	set_found(rt, RT_DOCKER, NULL, NULL);
	snprintf(rt->source, sizeof(rt->source), "no runtime process under /proc; %s is installed", which);
	return true;
}

/* Well-known config files; k3s and RKE2 first (a node running them has no /etc/containerd). */
static bool from_files(const struct doctor_ctx *c, struct runtime_found *rt)
{
	static const enum rt_kind order[] = {RT_K3S, RT_RKE2, RT_K0S, RT_MICROK8S, RT_CONTAINERD, RT_CRIO};

	for (size_t k = 0; k < ELEMENTSOF(order); k++) {
		const struct rt_row *r = row(order[k]);

		if (exists(c, r->config) || dir_has_files(c, r->dropins)) {
			set_found(rt, order[k], NULL, NULL);
			snprintf(rt->source, sizeof(rt->source), "no runtime process under /proc; %s exists",
				 exists(c, r->config) ? r->config : r->dropins);
			return true;
		}
	}
	return false;
}

static bool from_installed(const struct doctor_ctx *c, struct runtime_found *rt)
{
	char v[64];

	for (size_t k = 0; k < ELEMENTSOF(installed); k++)
		if (exists(c, installed[k].path)) {
			set_found(rt, installed[k].kind, NULL, NULL);
			snprintf(rt->source, sizeof(rt->source), "%s is installed (%s), no config file found",
				 row(installed[k].kind)->name, installed[k].path);
			return true;
		}
	for (size_t k = 0; k < ELEMENTSOF(packages); k++)
		if (doctor_dpkg_version(c, packages[k].pkg, v, sizeof(v))) {
			set_found(rt, packages[k].kind, NULL, NULL);
			snprintf(rt->source, sizeof(rt->source),
				 "dpkg package %s %s is installed, no config file found", packages[k].pkg, v);
			return true;
		}
	return false;
}

/* k3s and RKE2 render config.toml from config-v3.toml.tmpl, else config.toml.tmpl (k3s
 * pkg/agent/containerd/config.go templateGenerations). */
static void find_template(const struct doctor_ctx *c, struct runtime_found *rt)
{
	static const char *const names[] = {"config-v3.toml.tmpl", "config.toml.tmpl"};
	const char *dir = rt->kind == RT_K3S ? K3S_DIR : RKE2_DIR;

	for (size_t k = 0; k < ELEMENTSOF(names); k++) {
		snprintf(rt->templ, sizeof(rt->templ), "%s/%s", dir, names[k]);
		if (exists(c, rt->templ)) {
			rt->templ_exists = true;
			return;
		}
	}
	/* none yet: the one matching the rendered config's version is chosen once it is read */
	snprintf(rt->templ, sizeof(rt->templ), "%s/config-v3.toml.tmpl", dir);
}

int doctor_need_runtime(struct doctor_ctx *c)
{
	struct runtime_found *rt;

	if (c->rt)
		return 0;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	if (c->o->containerd_config) {
		set_found(rt, containerd_kind(c->o->containerd_config), c->o->containerd_config, NULL);
		snprintf(rt->source, sizeof(rt->source), "--containerd-config %s", c->o->containerd_config);
	} else if (!from_proc(c, rt) && !docker_installed(c, rt) && !from_files(c, rt) && !from_installed(c, rt)) {
		size_t l = (size_t)snprintf(rt->looked, sizeof(rt->looked),
					    "no containerd or crio process under /proc; none of");

		for (size_t k = 1; k < ELEMENTSOF(rt_rows) && l < sizeof(rt->looked); k++)
			l += (size_t)snprintf(rt->looked + l, sizeof(rt->looked) - l, " %s%s%s", rt_rows[k].config,
					      *rt_rows[k].dropins ? ", " : "", rt_rows[k].dropins);
		if (l < sizeof(rt->looked))
			snprintf(rt->looked + l, sizeof(rt->looked) - l,
				 "; no containerd, k3s, rke2 or crio binary, unit or dpkg package");
	}
	if (rt->kind == RT_K3S || rt->kind == RT_RKE2)
		find_template(c, rt);
	else if (*row(rt->kind)->edit)
		snprintf(rt->templ, sizeof(rt->templ), "%s", row(rt->kind)->edit);
	c->rt = rt;
	if (rt->kind == RT_DOCKER)
		return docker_load(c, rt);
	if (rt->kind == RT_CRIO) {
		snprintf(rt->templ, sizeof(rt->templ), "a drop-in file in %s/ (CRI-O reads them in name order)",
			 rt->dropins);
		return crio_load(c, rt);
	}
	return 0;
}

void runtime_found_free(struct runtime_found *rt)
{
	if (!rt)
		return;
	toml_free(rt->crio);
	json_decref(rt->docker);
	for (unsigned k = 0; k < rt->n_crio_files && k < RT_MAX_FILES; k++) /* n counts past the cap */
		free(rt->crio_files[k]);
	free(rt);
}

int doctor_need_containerd(struct doctor_ctx *c)
{
	struct gerr err = {0};
	int r;

	if (c->ctrd_state)
		return c->ctrd_state;
	r = doctor_need_runtime(c);
	if (r < 0)
		return r;
	if (!rt_is_containerd(c->rt)) {
		snprintf(c->ctrd_error, sizeof(c->ctrd_error), "no containerd on this node: %s",
			 c->rt->kind == RT_CRIO ? c->rt->source : c->rt->looked);
		return c->ctrd_state = -ENODEV;
	}
	r = toml_load_containerd(doctor_root(c->o), c->rt->config, &c->ctrd, &c->ctrd_files, &err);
	if (r < 0) {
		snprintf(c->ctrd_error, sizeof(c->ctrd_error), "%s", err.msg[0] ? err.msg : strerror(-r));
		return c->ctrd_state = r;
	}
	c->ctrd_version = (int)toml_int(c->ctrd, "version", 1);
	if ((c->rt->kind == RT_K3S || c->rt->kind == RT_RKE2) && !c->rt->templ_exists && c->ctrd_version < 3)
		snprintf(c->rt->templ, sizeof(c->rt->templ), "%s/config.toml.tmpl",
			 c->rt->kind == RT_K3S ? K3S_DIR : RKE2_DIR);
	return c->ctrd_state = 1;
}

size_t cdi_spec_dirs_of(const struct toml *list, const char **dirs, size_t max)
{
	static const char *const defaults[] = {"/etc/cdi", "/var/run/cdi"}; /* CDI pkg/cdi/spec-dirs.go */
	size_t n = 0;

	if (list && list->type == TOML_ARRAY) {
		for (size_t k = 0; k < list->n && n < max; k++)
			if (list->vals[k]->type == TOML_STRING)
				dirs[n++] = list->vals[k]->s;
		return n;
	}
	for (size_t k = 0; k < ELEMENTSOF(defaults) && n < max; k++)
		dirs[n++] = defaults[k];
	return n;
}

size_t doctor_cdi_dirs(const struct doctor_ctx *c, const char **dirs, size_t max)
{
	struct ctrd_facts f;

	if (c->rt && c->rt->kind == RT_CRIO)
		return crio_cdi_dirs(c->rt, dirs, max);
	if (c->ctrd_state <= 0)
		return cdi_spec_dirs_of(NULL, dirs, max);
	doctor_containerd_facts(c, &f);
	return cdi_spec_dirs_of(toml_get(f.cri, "cdi_spec_dirs"), dirs, max);
}
