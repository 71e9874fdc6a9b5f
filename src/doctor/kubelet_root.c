/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where is kubelet's root dir on this node? Each source below is one table row; the facts about
 * each distribution (defaults, file formats, merge rules) are in docs/reference/kubelet-root-dir.md.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/kubelet_root.h"
#include "kube/kubeletcfg.h"
#include "util/fileio.h"

#define KUBELET_DEFAULT  "/var/lib/kubelet"                /* kubelet --root-dir default */
#define DEVICE_PLUGINS   "/var/lib/kubelet/device-plugins" /* fixed in kubelet (pluginapi.DevicePluginPath) */
#define KROOT_FILE_MAX   (1u << 20)                        /* a config file larger than this is refused */
#define KROOT_MAX_PROCS  100000                            /* /proc entries looked at */
#define KROOT_MAX_DROPIN 64                                /* drop-ins (kubelet.service.d, config.yaml.d) per source */

struct scan {
	struct doctor_ctx *c;
	struct kubelet_root *k;
	bool have_unit; /* systemd's kubelet.service exists: kubeadm's env files are read through it */
};

static void problem(struct scan *s, const char *fmt, ...) _printf_(2, 3);
static void problem(struct scan *s, const char *fmt, ...)
{
	va_list ap;

	if (s->k->n_problems >= KROOT_MAX_PROBLEMS)
		return;
	va_start(ap, fmt);
	vsnprintf(s->k->problems[s->k->n_problems++], sizeof(s->k->problems[0]), fmt, ap);
	va_end(ap);
}

static void answer(struct scan *s, const char *dir, bool live, bool explicit, const char *fmt, ...) _printf_(5, 6);
static void answer(struct scan *s, const char *dir, bool live, bool explicit, const char *fmt, ...)
{
	struct kroot_answer *a;
	size_t l = strlen(dir);
	va_list ap;

	while (l > 1 && dir[l - 1] == '/')
		l--;
	if (dir[0] != '/' || l >= sizeof(a->dir)) {
		char where[512];

		va_start(ap, fmt);
		vsnprintf(where, sizeof(where), fmt, ap);
		va_end(ap);
		problem(s, "%s: root dir \"%.200s\" is not an absolute path of at most %zu bytes; ignored", where, dir,
			sizeof(a->dir) - 1);
		return;
	}
	if (s->k->n_answers >= KROOT_MAX_ANSWERS)
		return;
	a = &s->k->answers[s->k->n_answers++];
	snprintf(a->dir, sizeof(a->dir), "%.*s", (int)l, dir);
	a->live = live;
	a->explicit = explicit;
	va_start(ap, fmt);
	vsnprintf(a->source, sizeof(a->source), fmt, ap);
	va_end(ap);
}

/* A file below root: 1 read, 0 absent, -1 exists but unreadable (a problem is recorded). */
static int slurp(struct scan *s, const char *path, char **ret, size_t *len)
{
	_cleanup_free_ char *p = doctor_path(s->c, path);
	struct gerr err = {0};
	int r;

	if (!p)
		return -1;
	r = read_file(p, KROOT_FILE_MAX, ret, len, &err);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0) {
		problem(s, "%s: %s", path, r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		return -1;
	}
	return 1;
}

/* ---- command lines (live processes and service units) ---- */

/* All values of --name (as --name=V or --name V), appended to list. */
static int all_flags(const struct kargv *argv, const char *name, struct kargv *list)
{
	size_t l = strlen(name);
	int r = 0;

	for (size_t k = 0; r >= 0 && k < argv->n; k++) {
		const char *w = argv->v[k];

		if (strncmp(w, "--", 2) || strncmp(w + 2, name, l))
			continue;
		if (w[2 + l] == '=')
			r = kargv_add(list, w + 3 + l, strlen(w + 3 + l));
		else if (w[2 + l] == '\0' && k + 1 < argv->n)
			r = kargv_add(list, argv->v[k + 1], strlen(argv->v[k + 1]));
	}
	return r;
}

/* k3s / rke2 config.yaml then config.yaml.d/ *.yaml|*.yml by name, merged into list. from: the file
 * that last set root-dir. Returns the number of files read. */
static int k3s_files(struct scan *s, const char *config, struct kargv *list, char *from, size_t from_size);

/* kubelet as k3s or rke2 runs it: config files, then the process's own --kubelet-arg flags. */
static void k3s_answer(struct scan *s, const char *prog, const struct kargv *argv, const char *where)
{
	_cleanup_(kargv_done) struct kargv list = {0};
	char def[128], from[512] = "";
	const char *cfg = kargv_flag(argv, "config");
	const char *v;
	int n;

	snprintf(def, sizeof(def), "/etc/rancher/%s/config.yaml", prog);
	n = k3s_files(s, cfg ? cfg : def, &list, from, sizeof(from));
	if (all_flags(argv, "kubelet-arg", &list) < 0)
		return;
	v = k3s_kubelet_arg(&list, "root-dir");
	if (v && !from[0])
		snprintf(from, sizeof(from), "its --kubelet-arg");
	if (argv->n || n > 0)
		answer(s, v ? v : KUBELET_DEFAULT, argv->n > 0, v, "%s: %s%s", where,
		       v ? "kubelet-arg root-dir from " : "no kubelet-arg root-dir (kubelet's default)", v ? from : "");
}

/* k0s worker / controller: --kubelet-root-dir, else <--data-dir>/kubelet (k0s' default data dir
 * /var/lib/k0s). */
static void k0s_answer(struct scan *s, const struct kargv *argv, bool live, const char *where)
{
	const char *krd = kargv_flag(argv, "kubelet-root-dir"), *dd = kargv_flag(argv, "data-dir");
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/kubelet", dd ? dd : "/var/lib/k0s");
	answer(s, krd ? krd : dir, live, krd || dd, "%s: %s", where,
	       krd  ? "k0s --kubelet-root-dir"
	       : dd ? "k0s --data-dir + /kubelet"
		    : "k0s default (/var/lib/k0s/kubelet)");
}

/* microk8s' kubelet args file ($SNAP_COMMON and $SNAP_DATA as the snap's wrapper expands them). */
static void microk8s_answer(struct scan *s, const char *path, bool live, const char *where)
{
	static const char *const snap_vars[] = {"SNAP_COMMON=/var/snap/microk8s/common",
						"SNAP_DATA=/var/snap/microk8s/current", "SNAP=/snap/microk8s/current"};
	const struct kargv vars = {(char **)snap_vars, ELEMENTSOF(snap_vars)};
	_cleanup_(kargv_done) struct kargv argv = {0};
	_cleanup_free_ char *text = NULL, *x = NULL;
	struct gerr err = {0};
	const char *v;
	size_t len;

	if (slurp(s, path, &text, &len) <= 0)
		return;
	if (kexpand(text, &vars, &x) < 0 || kargv_split(&argv, x, true, &err) < 0) {
		problem(s, "%s: %s", path, err.msg[0] ? err.msg : "cannot expand");
		return;
	}
	v = kargv_flag(&argv, "root-dir");
	answer(s, v ? v : KUBELET_DEFAULT, live, v, "%s%s: %s", where, path,
	       v ? "--root-dir" : "no --root-dir (kubelet's default)");
}

/* What a process is, from its comm (and argv[1] for hyperkube). */
enum proc_kind { P_NONE, P_KUBELET, P_K3S, P_RKE2, P_K0S, P_KUBELITE };

static enum proc_kind proc_kind(const char *comm)
{
	if (streq(comm, "kubelet") || streq(comm, "hyperkube"))
		return P_KUBELET;
	if (streq(comm, "kubelite"))
		return P_KUBELITE;
	if (!strncmp(comm, "k3s", 3))
		return P_K3S;
	if (!strncmp(comm, "rke2", 4))
		return P_RKE2;
	return streq(comm, "k0s") ? P_K0S : P_NONE;
}

/* The subcommand that runs kubelet (k3s/rke2 server|agent, k0s worker|controller), not a CLI tool
 * of the same binary (k3s kubectl, k0s status). */
static bool runs_kubelet(const struct kargv *argv, const char *a, const char *b)
{
	for (size_t k = 1; k < argv->n; k++)
		if (streq(argv->v[k], a) || streq(argv->v[k], b))
			return true;
	return false;
}

/* One process that runs or embeds kubelet: its answer; false when it turns out not to run kubelet. */
static bool proc_answer(struct scan *s, const char *pid, enum proc_kind kind, const struct kargv *argv)
{
	char where[128];
	const char *v;

	snprintf(where, sizeof(where), "/proc/%s/cmdline", pid);
	switch (kind) {
	case P_KUBELET:
		if (strstr(argv->v[0], "hyperkube") && (argv->n < 2 || !streq(argv->v[1], "kubelet")))
			return false; /* hyperkube runs other components too */
		v = kargv_flag(argv, "root-dir");
		answer(s, v ? v : KUBELET_DEFAULT, true, v, "%s: the running kubelet (pid %s) %s", where, pid,
		       v ? "has --root-dir" : "runs without --root-dir (kubelet's default)");
		break;
	case P_K3S:
	case P_RKE2:
		if (!runs_kubelet(argv, "server", "agent"))
			return false;
		k3s_answer(s, kind == P_K3S ? "k3s" : "rke2", argv, where);
		break;
	case P_K0S:
		if (!runs_kubelet(argv, "worker", "controller"))
			return false;
		k0s_answer(s, argv, true, where);
		break;
	case P_KUBELITE:
		v = kargv_flag(argv, "kubelet-args-file");
		snprintf(where, sizeof(where), "/proc/%s/cmdline (microk8s kubelite) --kubelet-args-file ", pid);
		microk8s_answer(s, v ? v : "/var/snap/microk8s/current/args/kubelet", true, where);
		break;
	default:
		return false;
	}
	return true;
}

/* Processes below root's /proc that run kubelet: a kubelet process first, then embedders. */
static void src_proc(struct scan *s)
{
	_cleanup_free_ char *p = doctor_path(s->c, "/proc");
	DIR *d = p ? opendir(p) : NULL;
	struct dirent *de;
	bool embedder = false;
	size_t seen = 0;

	if (!d)
		return;
	for (int pass = 0; pass < 2; pass++) {
		rewinddir(d);
		while ((de = readdir(d)) && seen++ < KROOT_MAX_PROCS) {
			char path[300], comm[64];
			_cleanup_free_ char *cl = NULL, *cp = NULL;
			_cleanup_(kargv_done) struct kargv argv = {0};
			enum proc_kind kind;
			size_t len;

			if (!de->d_name[0] || strspn(de->d_name, "0123456789") != strlen(de->d_name) ||
			    strlen(de->d_name) > 10)
				continue;
			snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
			cp = doctor_path(s->c, path);
			if (!cp || read_line_file(cp, comm, sizeof(comm)) < 0)
				continue; /* gone, or not ours to read */
			kind = proc_kind(comm);
			if (kind == P_NONE || (pass == 0) != (kind == P_KUBELET) || (pass == 1 && embedder))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
			if (slurp(s, path, &cl, &len) <= 0 || kargv_from_nul(cl, len, &argv) < 0 || !argv.n) {
				if (cl && !len)
					problem(s, "%s: empty (the %s process is exiting or a zombie)", path, comm);
				continue;
			}
			if (proc_answer(s, de->d_name, kind, &argv))
				embedder = pass == 1;
		}
		seen = 0;
	}
	closedir(d);
}

/* ---- systemd ---- */

/* Unit dirs in systemd's order of precedence (a drop-in in an earlier dir masks the same name later). */
static const char *const unit_dirs[] = {"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system",
					"/lib/systemd/system"};

static int cmp_name(const void *a, const void *b)
{
	const char *x = strrchr(*(char *const *)a, '/'), *y = strrchr(*(char *const *)b, '/');

	return strcmp(x, y);
}

/* kubelet.service.d/ *.conf of every unit dir, one per name, sorted by name (paths below root). */
static void dropins(struct scan *s, const char *unit, struct kargv *out)
{
	for (size_t k = 0; k < ELEMENTSOF(unit_dirs); k++) {
		char rel[512];
		_cleanup_free_ char *p = NULL;
		DIR *d;
		struct dirent *de;

		snprintf(rel, sizeof(rel), "%s/%s.d", unit_dirs[k], unit);
		p = doctor_path(s->c, rel);
		d = p ? opendir(p) : NULL;
		while (d && (de = readdir(d)) && out->n < KROOT_MAX_DROPIN) {
			size_t l = strlen(de->d_name);
			char full[800];
			bool dup = false;

			if (l < 6 || !streq(de->d_name + l - 5, ".conf"))
				continue;
			for (size_t i = 0; i < out->n && !dup; i++)
				dup = streq(strrchr(out->v[i], '/') + 1, de->d_name);
			snprintf(full, sizeof(full), "%s/%s", rel, de->d_name);
			if (!dup && kargv_add(out, full, strlen(full)) < 0)
				break;
		}
		if (d)
			closedir(d);
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(out->v[0]), cmp_name);
}

/* Feed one unit file; remember it as where root-dir came from when it mentions it. */
static void feed(struct scan *s, struct kunit *u, const char *path, bool *found, char *from, size_t from_size)
{
	_cleanup_free_ char *text = NULL;
	struct gerr err = {0};
	size_t len;

	if (slurp(s, path, &text, &len) <= 0)
		return;
	*found = true;
	if (kunit_feed(u, path, text, &err) < 0)
		problem(s, "%s", err.msg);
	if (strstr(text, "root-dir"))
		snprintf(from, from_size, "%s", path);
}

/* Read the EnvironmentFile= files into env (after Environment=: systemd lets them override it). */
static void env_files(struct scan *s, struct kunit *u, char *from, size_t from_size)
{
	for (size_t k = 0; k < u->env_files.n; k++) {
		const char *path = u->env_files.v[k];
		bool optional = path[0] == '-';
		_cleanup_free_ char *text = NULL;
		struct gerr err = {0};
		size_t len;
		int r;

		path += optional;
		r = slurp(s, path, &text, &len);
		if (r == 0 && !optional)
			problem(s, "%s: EnvironmentFile=%s does not exist (systemd refuses to start kubelet)",
				"kubelet.service", path);
		if (r <= 0)
			continue;
		if (kenv_parse(&u->env, path, text, &err) < 0)
			problem(s, "%s", err.msg);
		if (strstr(text, "root-dir"))
			snprintf(from, from_size, "%s", path);
	}
}

/* kubelet.service with its drop-ins: the command ExecStart= runs, variables expanded. */
static void src_systemd(struct scan *s)
{
	_cleanup_(kunit_done) struct kunit u = {0};
	_cleanup_(kargv_done) struct kargv ins = {0}, argv = {0};
	char from[512] = "";
	struct gerr err = {0};
	bool found = false;
	const char *v;

	for (size_t k = 0; k < ELEMENTSOF(unit_dirs) && !found; k++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/kubelet.service", unit_dirs[k]);
		feed(s, &u, path, &found, from, sizeof(from));
	}
	dropins(s, "kubelet.service", &ins);
	for (size_t k = 0; k < ins.n; k++)
		feed(s, &u, ins.v[k], &found, from, sizeof(from));
	if (!found || !u.exec_start)
		return;
	s->have_unit = true;
	env_files(s, &u, from, sizeof(from));
	if (kunit_exec_argv(u.exec_start, &u.env, &argv, &err) < 0) {
		problem(s, "kubelet.service ExecStart=: %s", err.msg[0] ? err.msg : "cannot expand");
		return;
	}
	v = kargv_flag(&argv, "root-dir");
	answer(s, v ? v : KUBELET_DEFAULT, false, v, "systemd kubelet.service ExecStart %s%s",
	       v ? "has --root-dir, set in " : "has no --root-dir (kubelet's default)", v ? from : "");
}

/* kubeadm's env files read directly, when no kubelet.service is there to name them. */
static void src_kubeadm_env(struct scan *s)
{
	static const struct {
		const char *path, *var;
	} files[] = {
	    {"/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS"}, /* written by kubeadm init/join */
	    {"/etc/default/kubelet", "KUBELET_EXTRA_ARGS"},                 /* Debian packages */
	    {"/etc/sysconfig/kubelet", "KUBELET_EXTRA_ARGS"},               /* RPM packages */
	};
	const char *from = NULL, *read = NULL;
	char v[256] = "";

	if (s->have_unit)
		return;
	for (size_t k = 0; k < ELEMENTSOF(files); k++) {
		_cleanup_(kargv_done) struct kargv env = {0}, argv = {0};
		_cleanup_free_ char *text = NULL;
		struct gerr err = {0};
		const char *val, *rd;
		size_t len;

		if (slurp(s, files[k].path, &text, &len) <= 0)
			continue;
		if (kenv_parse(&env, files[k].path, text, &err) < 0 ||
		    ((val = kenv_get(&env, files[k].var)) && kargv_split(&argv, val, false, &err) < 0)) {
			problem(s, "%s", err.msg);
			continue;
		}
		read = read ? read : files[k].path;
		rd = kargv_flag(&argv, "root-dir");
		if (rd) {
			snprintf(v, sizeof(v), "%s", rd);
			from = files[k].path;
		}
	}
	if (read)
		answer(s, from ? v : KUBELET_DEFAULT, false, from, "%s%s", from ? from : read,
		       from ? ": --root-dir in the kubelet flags" : ": no --root-dir (kubelet's default)");
}

static int k3s_files(struct scan *s, const char *config, struct kargv *list, char *from, size_t from_size)
{
	_cleanup_(kargv_done) struct kargv files = {0};
	char dir[512];
	_cleanup_free_ char *p = NULL;
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s.d", config);
	if (kargv_add(&files, config, strlen(config)) < 0)
		return -ENOMEM;
	p = doctor_path(s->c, dir);
	d = p ? opendir(p) : NULL;
	while (d && (de = readdir(d)) && files.n < KROOT_MAX_DROPIN) {
		size_t l = strlen(de->d_name);
		char full[800];

		if ((l < 6 || strcasecmp(de->d_name + l - 5, ".yaml")) &&
		    (l < 5 || strcasecmp(de->d_name + l - 4, ".yml")))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
		if (kargv_add(&files, full, strlen(full)) < 0)
			break;
	}
	if (d)
		closedir(d);
	if (files.n > 2)
		qsort(files.v + 1, files.n - 1, sizeof(files.v[0]), cmp_name);
	for (size_t k = 0; k < files.n; k++) {
		_cleanup_free_ char *text = NULL;
		struct gerr err = {0};
		char before[256];
		const char *v = k3s_kubelet_arg(list, "root-dir");
		size_t len;

		snprintf(before, sizeof(before), "%s", v ? v : "");
		if (slurp(s, files.v[k], &text, &len) <= 0)
			continue;
		if (k3s_config_kubelet_args(list, files.v[k], text, len, &err) < 0) {
			problem(s, "%s", err.msg);
			continue;
		}
		n++;
		v = k3s_kubelet_arg(list, "root-dir");
		if (v && (!streq(v, before) || strstr(text, "root-dir")))
			snprintf(from, from_size, "%s", files.v[k]);
	}
	return n;
}

static void src_k3s(struct scan *s)
{
	const struct kargv none = {0};

	k3s_answer(s, "k3s", &none, "k3s config");
}

static void src_rke2(struct scan *s)
{
	const struct kargv none = {0};

	k3s_answer(s, "rke2", &none, "rke2 config");
}

/* k0s' service units, as `k0s install worker|controller` writes them. */
static void src_k0s(struct scan *s)
{
	static const char *const units[] = {"/etc/systemd/system/k0sworker.service",
					    "/etc/systemd/system/k0scontroller.service"};

	for (size_t k = 0; k < ELEMENTSOF(units); k++) {
		_cleanup_(kunit_done) struct kunit u = {0};
		_cleanup_(kargv_done) struct kargv argv = {0};
		const struct kargv none = {0};
		struct gerr err = {0};
		bool found = false;
		char from[512];

		feed(s, &u, units[k], &found, from, sizeof(from));
		if (!found || !u.exec_start)
			continue;
		if (kunit_exec_argv(u.exec_start, &none, &argv, &err) < 0) {
			problem(s, "%s: ExecStart=: %s", units[k], err.msg);
			continue;
		}
		k0s_answer(s, &argv, false, units[k]);
		return;
	}
}

static void src_microk8s(struct scan *s)
{
	microk8s_answer(s, "/var/snap/microk8s/current/args/kubelet", false, "");
}

/* Last resort: the known root dirs that have kubelet's Registration socket. */
static void src_presence(struct scan *s)
{
	for (size_t k = 0; k < kroot_n_known; k++) {
		char rel[300];
		_cleanup_free_ char *p = NULL;
		struct stat st;

		snprintf(rel, sizeof(rel), "%s/device-plugins/kubelet.sock", kroot_known[k].dir);
		p = doctor_path(s->c, rel);
		if (p && stat(p, &st) == 0)
			answer(s, kroot_known[k].dir, false, false, "%s exists (%s)", rel, kroot_known[k].source);
	}
}

const struct kroot_known kroot_known[] = {
    {"/var/lib/kubelet", "kubelet --root-dir default (kubeadm, k3s, rke2, kind)"},
    {"/var/lib/k0s/kubelet", "k0s: kubelet root dir under its data dir"},
    {"/var/snap/microk8s/common/var/lib/kubelet", "microk8s snap: --root-dir in args/kubelet"},
};
const size_t kroot_n_known = ELEMENTSOF(kroot_known);

/*
 * Anything on the machine that says kubelet runs or ran here: a source above (process, unit with
 * --root-dir, kubeadm-flags.env, distribution config), one that could not be read, a Registration
 * socket, or one of the files and dirs below. A plain GPU server or Docker host has none of them.
 */
static const char *const kubelet_traces[] = {
    /* units (kubeadm's deb/rpm, k3s, RKE2, k0s, MicroK8s) */
    "/etc/systemd/system/kubelet.service", "/usr/lib/systemd/system/kubelet.service",
    "/lib/systemd/system/kubelet.service", "/etc/systemd/system/kubelet.service.d",
    "/usr/lib/systemd/system/kubelet.service.d", "/etc/systemd/system/k3s.service",
    "/etc/systemd/system/k3s-agent.service", "/usr/local/lib/systemd/system/rke2-server.service",
    "/usr/local/lib/systemd/system/rke2-agent.service", "/usr/lib/systemd/system/rke2-server.service",
    "/usr/lib/systemd/system/rke2-agent.service", "/etc/systemd/system/k0sworker.service",
    "/etc/systemd/system/k0scontroller.service", "/etc/systemd/system/snap.microk8s.daemon-kubelite.service",
    /* config */
    "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/bootstrap-kubelet.conf", "/etc/rancher/k3s", "/etc/rancher/rke2",
    "/var/lib/rancher/k3s", "/var/lib/rancher/rke2", "/etc/k0s",
    /* binaries */
    "/usr/bin/kubelet", "/usr/local/bin/kubelet", "/usr/local/bin/k3s", "/usr/bin/k3s", "/usr/local/bin/rke2",
    "/usr/bin/rke2", "/usr/local/bin/k0s", "/usr/bin/k0s", "/snap/bin/microk8s"};

bool doctor_kubelet_trace(struct doctor_ctx *c, char *what, size_t size)
{
	if (doctor_need_kubelet_root(c) < 0 || c->kroot->n_answers || c->kroot->n_problems) {
		snprintf(what, size, "%s", c->kroot ? c->kroot->chosen.source : "");
		return true;
	}
	for (size_t k = 0; k < ELEMENTSOF(kubelet_traces) + kroot_n_known; k++) {
		const char *rel = k < ELEMENTSOF(kubelet_traces) ? kubelet_traces[k]
								 : kroot_known[k - ELEMENTSOF(kubelet_traces)].dir;
		_cleanup_free_ char *p = doctor_path(c, rel);

		if (p && access(p, F_OK) == 0) {
			snprintf(what, size, "%s exists", rel);
			return true;
		}
	}
	return false;
}

/* Sources in order of precedence: the live process first, then files, then what is on disk. */
static void (*const sources[])(struct scan *s) = {
    src_proc, src_systemd, src_kubeadm_env, src_k3s, src_rke2, src_k0s, src_microk8s, src_presence,
};

static void choose(struct kubelet_root *k)
{
	const struct kroot_answer *pick = NULL;

	for (size_t i = 0; i < k->n_answers && !pick; i++)
		if (k->answers[i].live)
			pick = &k->answers[i];
	for (size_t i = 0; i < k->n_answers && !pick; i++)
		if (k->answers[i].explicit)
			pick = &k->answers[i];
	if (!pick && k->n_answers)
		pick = &k->answers[0];
	if (pick) {
		k->chosen = *pick;
		return;
	}
	snprintf(k->chosen.dir, sizeof(k->chosen.dir), "%s", KUBELET_DEFAULT);
	snprintf(k->chosen.source, sizeof(k->chosen.source),
		 "nothing on this node names kubelet's root dir (no kubelet process, unit or config file): "
		 "kubelet's default");
}

/* The device-plugins dir: below the root dir when kubelet's Registration socket is there, else the fixed one. */
static void choose_dp(struct scan *s)
{
	struct kubelet_root *k = s->k;
	char mine[300], rel[320];
	_cleanup_free_ char *p = NULL;
	struct stat st;

	snprintf(mine, sizeof(mine), "%s/device-plugins", k->chosen.dir);
	snprintf(rel, sizeof(rel), "%s/kubelet.sock", mine);
	p = doctor_path(s->c, rel);
	if (streq(mine, DEVICE_PLUGINS)) {
		snprintf(k->dp_dir, sizeof(k->dp_dir), "%s", DEVICE_PLUGINS);
	} else if (p && stat(p, &st) == 0) {
		snprintf(k->dp_dir, sizeof(k->dp_dir), "%s", mine);
		snprintf(k->dp_note, sizeof(k->dp_note), "this kubelet serves device plugins below its --root-dir (%s)",
			 mine);
	} else {
		snprintf(k->dp_dir, sizeof(k->dp_dir), "%s", DEVICE_PLUGINS);
		snprintf(k->dp_note, sizeof(k->dp_note),
			 "device plugins: kubelet serves them at the fixed %s whatever its --root-dir (%s has no "
			 "kubelet.sock)",
			 DEVICE_PLUGINS, mine);
	}
}

int doctor_need_kubelet_root(struct doctor_ctx *c)
{
	struct scan s = {.c = c};

	if (c->kroot)
		return 0;
	s.k = calloc(1, sizeof(*s.k));
	if (!s.k)
		return -ENOMEM;
	for (size_t k = 0; k < ELEMENTSOF(sources); k++)
		sources[k](&s);
	choose(s.k);
	choose_dp(&s);
	c->kroot = s.k;
	return 0;
}

const char *doctor_kubelet_dir(struct doctor_ctx *c)
{
	return doctor_need_kubelet_root(c) < 0 ? KUBELET_DEFAULT : c->kroot->chosen.dir;
}

const char *doctor_device_plugin_dir(struct doctor_ctx *c)
{
	return doctor_need_kubelet_root(c) < 0 ? DEVICE_PLUGINS : c->kroot->dp_dir;
}

void kubelet_root_free(struct kubelet_root *k)
{
	free(k);
}

void doctor_kubelet_root_evidence(struct doctor_ctx *c, struct doctor_finding *f)
{
	if (doctor_need_kubelet_root(c) < 0)
		return;
	doctor_evidence(f, "kubelet's root dir %s: %s", c->kroot->chosen.dir, c->kroot->chosen.source);
	if (c->kroot->dp_note[0])
		doctor_evidence(f, "%s", c->kroot->dp_note);
}

void doctor_kubelet_root_findings(struct doctor_ctx *c)
{
	struct doctor_finding *f = NULL;
	const struct kubelet_root *k;

	if (doctor_need_kubelet_root(c) < 0)
		return;
	k = c->kroot;
	for (size_t i = 0; i < k->n_answers; i++) {
		const struct kroot_answer *a = &k->answers[i];

		if (!a->explicit || streq(a->dir, k->chosen.dir))
			continue;
		if (!f) {
			f = doctor_report(
			    c, "kubelet.root-dir-conflict", DOCTOR_WARN, LINK_KUBELET,
			    k->chosen.live ? "make the files agree with the running kubelet (or restart kubelet and "
					     "move the device plugin's hostPath with it), then run gpulet doctor again"
					   : "remove the stale setting so one file names kubelet's --root-dir",
			    k->chosen.live ? "kubelet's configuration names another root dir than the running "
					     "kubelet uses: the next kubelet restart moves it, and the device "
					     "plugin's socket dir must move with it"
					   : "this node's kubelet configuration files name different root dirs");
			doctor_evidence(f, "chose %s: %s", k->chosen.dir, k->chosen.source);
		}
		doctor_evidence(f, "%s says %s", a->source, a->dir);
	}
	if (!k->n_problems)
		return;
	f = doctor_report(c, "kubelet.config-unreadable", DOCTOR_WARN, LINK_KUBELET,
			  "fix or remove the file named below; gpulet doctor reads it to find kubelet's --root-dir",
			  "part of kubelet's configuration could not be read: the root dir below may be wrong");
	for (size_t i = 0; i < k->n_problems; i++)
		doctor_evidence(f, "%s", k->problems[i]);
	doctor_evidence(f, "using %s: %s", k->chosen.dir, k->chosen.source);
}
