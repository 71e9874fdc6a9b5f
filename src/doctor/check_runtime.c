/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Links 4–5: the NVIDIA container toolkit and containerd's runtime configuration — the RuntimeClass
 * handler, the default runtime, CDI on/off and its spec dirs, and CDI plus the legacy hook both
 * injecting (docs/reference/field-guide.md §3.3, §4.2; docs/reference/monitoring-doctor.md B3–B5).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "util/fileio.h"
#include "kube/k8sobj.h"
#include "parse/toml.h"
#include "doctor/runtime_find.h"
#include "doctor/kubelet_root.h"

int doctor_toolkit_version(const struct doctor_ctx *c, char *buf, size_t size, char *src, size_t src_size)
{
	static const char *const pkgs[] = {"nvidia-container-toolkit", "nvidia-container-toolkit-base",
					   "libnvidia-container-tools"};
	for (size_t k = 0; k < ELEMENTSOF(pkgs); k++)
		if (doctor_dpkg_version(c, pkgs[k], buf, size)) {
			snprintf(src, src_size, "dpkg: %s", pkgs[k]);
			return 0;
		}
	/* on the host itself, ask the binary ("NVIDIA Container Toolkit CLI version 1.14.3") */
	if (streq(doctor_root(c->o), "/")) {
		static char *const argv[] = {"nvidia-ctk", "--version", NULL};
		char out[1024];
		const char *v;

		if (doctor_run_tool("/", "nvidia-ctk", argv, out, sizeof(out), 5000) >= 0 &&
		    (v = strstr(out, "version "))) {
			v += strlen("version ");
			snprintf(buf, size, "%.*s", (int)strcspn(v, " \n"), v);
			snprintf(src, src_size, "nvidia-ctk --version");
			return 0;
		}
	}
	return -ENOENT;
}

int doctor_check_toolkit(struct doctor_ctx *c)
{
	char ver[64], src[128], fix[512];
	const struct toolkit_row *row;
	struct doctor_finding *f;

	if (doctor_toolkit_version(c, ver, sizeof(ver), src, sizeof(src)) < 0) {
		doctor_report(c, "toolkit.ok", DOCTOR_OK, LINK_TOOLKIT, NULL,
			      "nvidia-container-toolkit not found (not needed when CDI specs inject the devices)");
		return 0;
	}
	row = toolkit_too_old(c->driver_version, ver);
	if (!row) {
		doctor_report(c, "toolkit.ok", DOCTOR_OK, LINK_TOOLKIT, NULL, "nvidia-container-toolkit %s (%s)", ver,
			      src);
		return 0;
	}
	if (doctor_need_runtime(c) < 0)
		return -ENOMEM;
	snprintf(
	    fix, sizeof(fix),
	    "upgrade nvidia-container-toolkit (apt-get install nvidia-container-toolkit; with the GPU Operator, its "
	    "toolkit.version) before or with the driver, then %s; upgrade order: toolkit and plugin first, then "
	    "the driver",
	    c->rt->kind != RT_NONE ? rt_restart(c->rt) : "restart the container runtime");
	f = doctor_report(c, "toolkit.too-old-for-driver", DOCTOR_FAIL, LINK_TOOLKIT, fix,
			  "nvidia-container-toolkit %s is older than driver %s needs: %s", ver, c->driver_version,
			  row->what);
	doctor_evidence(f, "toolkit %s (%s) < %s, needed from driver branch %s", ver, src, row->toolkit_min,
			row->driver_min);
	doctor_evidence(f, "source: %s", row->source);
	return 0;
}

/* ---- containerd ---- */

static const struct toml *runtime_table(const struct ctrd_facts *f, const char *name)
{
	return toml_path(f->containerd, "runtimes", name, NULL);
}

/* Pods in --pods with this runtimeClassName (or, name NULL, GPU pods with none). */
size_t doctor_pods_with_class(const struct doctor_ctx *c, const char *name, struct doctor_finding *f)
{
	size_t i, n = 0;
	json_t *pod;

	json_array_foreach (c->pods, i, pod) {
		const char *rc = json_string_value(json_object_get(json_object_get(pod, "spec"), "runtimeClassName"));
		const json_t *md = json_object_get(pod, "metadata");

		if (doctor_pod_is_terminating(pod) || !doctor_pod_requests_gpu(pod))
			continue;
		if (name ? !(rc && streq(rc, name)) : rc != NULL)
			continue;
		n++;
		if (f)
			doctor_evidence(f, "pod %s/%s requests a GPU with runtimeClassName %s",
					json_string_value(json_object_get(md, "namespace")) ?: "default",
					json_string_value(json_object_get(md, "name")) ?: "?", rc ?: "(none)");
	}
	return n;
}

/* Any CDI spec file in the default dirs or the configured ones? Returns the dir holding one. */
static const char *spec_dir_in_use(const struct doctor_ctx *c, const char *const *dirs, size_t n)
{
	char names[4][256];

	for (size_t k = 0; k < n; k++)
		if (doctor_cdi_dir_files(c, dirs[k], names, ELEMENTSOF(names)))
			return dirs[k];
	return NULL;
}

static bool dir_listed(const char *dir, const char *const *dirs, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		size_t l = strlen(dirs[k]);

		while (l > 1 && dirs[k][l - 1] == '/')
			l--;
		if (strlen(dir) == l && !strncmp(dir, dirs[k], l))
			return true;
		/* /var/run is a symlink to /run on most distributions */
		if (!strncmp(dir, "/var/run/", 9) && !strcmp(dir + 4, dirs[k]))
			return true;
		if (!strncmp(dirs[k], "/var/run/", 9) && !strcmp(dirs[k] + 4, dir))
			return true;
	}
	return false;
}

/* nvidia-container-runtime's own mode (/etc/nvidia-container-runtime/config.toml), "auto" by default. */
static void nvidia_runtime_mode(const struct doctor_ctx *c, char *buf, size_t size)
{
	_cleanup_free_ char *p = doctor_path(c, "/etc/nvidia-container-runtime/config.toml");
	_cleanup_(toml_freep) struct toml *t = NULL;

	snprintf(buf, size, "auto");
	if (p && toml_load_file(p, &t, NULL) >= 0)
		snprintf(buf, size, "%s", toml_string(toml_get(t, "nvidia-container-runtime"), "mode", "auto"));
}

/* "<what> in <file the node's runtime reads>, then <restart>": k3s/RKE2 edits go to the template. */
static const char *rt_fix(const struct doctor_ctx *c, char *buf, size_t size, const char *what)
{
	snprintf(buf, size, "%s in %s%s, then %s", what, rt_edit_target(c->rt),
		 c->rt->kind == RT_K3S || c->rt->kind == RT_RKE2
		     ? " (start it with the rendered config.toml: k3s/RKE2 rewrite config.toml from "
		       "the template at every start, so edits to config.toml itself are lost)"
		     : "",
		 rt_restart(c->rt));
	return buf;
}

static void files_evidence(const struct doctor_ctx *c, struct doctor_finding *fd)
{
	char line[1024] = "";

	for (size_t k = 0; c->ctrd_files && c->ctrd_files[k]; k++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", k ? ", " : "", c->ctrd_files[k]);
	doctor_evidence(fd, "%s found by %s; read: %s (config version %d)", rt_name(c->rt), c->rt->source, line,
			c->ctrd_version);
}

static void check_handler(struct doctor_ctx *c, const struct ctrd_facts *f, const char *handler)
{
	const struct toml *rt = runtime_table(f, handler);
	struct doctor_finding *fd;
	char fix[1024], what[512];
	size_t users;

	if (!*handler)
		return; /* --runtime-class "": GPU pods name no RuntimeClass and run on the default runtime */
	if (!rt) {
		struct inject_facts inj;
		bool hook_needed;

		/* users: any pod here whose RuntimeClass names the handler (the plugin's own pods too), or a
		 * device plugin handing out NVIDIA_VISIBLE_DEVICES that only the nvidia runtime's hook acts on */
		users = cluster_handler_users(c, handler, NULL);
		doctor_inject_facts(c, &inj);
		hook_needed = inject_has_env(&inj) && !(f->enable_cdi && inject_cdi_names(&inj));
		if (!users && !hook_needed && f->enable_cdi && (c->pods || inject_cdi_names(&inj)))
			return; /* nobody asks for the handler and CDI injects the devices */
		if (!users && !hook_needed && cluster_gke(c))
			return; /* GKE's plugin mounts the driver and hands the device nodes over itself */
		users += hook_needed;
		if (c->rt->kind == RT_CONTAINERD)
			snprintf(fix, sizeof(fix),
				 "nvidia-ctk runtime configure --runtime=containerd --nvidia-runtime-name=%s "
				 "--config=%s && %s (the RuntimeClass handler must equal the runtimes.<name> key)",
				 handler, c->rt->config, rt_restart(c->rt));
		else {
			snprintf(
			    what, sizeof(what),
			    "%sadd [plugins.'%s'.containerd.runtimes.%s] (runtime_type io.containerd.runc.v2, "
			    "options BinaryName = the path of nvidia-container-runtime)",
			    c->rt->kind == RT_K3S || c->rt->kind == RT_RKE2
				? "install nvidia-container-toolkit so nvidia-container-runtime is on PATH or in "
				  "/usr/local/nvidia/toolkit (k3s and RKE2 add the \"nvidia\" runtime themselves at "
				  "start), or "
				: "",
			    f->plugin_id, handler);
			rt_fix(c, fix, sizeof(fix), what);
		}
		fd = doctor_report(c, "runtime.nvidia-handler-missing",
				   users || !f->enable_cdi ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME, fix,
				   "%s has no runtime named \"%s\": pods with runtimeClassName %s fail with "
				   "'no runtime for \"%s\" is configured'%s",
				   rt_name(c->rt), handler, handler, handler,
				   f->enable_cdi ? "" : ", and with CDI off nothing else injects the GPU");
		doctor_evidence(fd, "plugins.\"%s\".containerd.runtimes has no \"%s\"", f->plugin_id, handler);
		files_evidence(c, fd);
		if (hook_needed)
			doctor_evidence(fd, "%s: only the nvidia runtime's hook acts on it", inj.source);
		cluster_handler_users(c, handler, fd);
		return;
	}
	{
		const char *bin = toml_string(toml_get(rt, "options"), "BinaryName", NULL);
		_cleanup_free_ char *p = bin ? doctor_path(c, bin) : NULL;
		struct stat st;

		errno = EACCES;
		if (bin && p &&
		    (access(p, X_OK) < 0 || stat(p, &st) < 0 ||
		     !doctor_user_may(&st, c->o->runtime_uid, c->o->runtime_gid, 1))) {
			snprintf(what, sizeof(what),
				 "install nvidia-container-toolkit (the GPU Operator's toolkit lives in "
				 "/usr/local/nvidia/toolkit), or fix BinaryName");
			fd = doctor_report(c, "runtime.binary-missing", DOCTOR_FAIL, LINK_RUNTIME,
					   rt_fix(c, fix, sizeof(fix), what),
					   "the \"%s\" runtime's BinaryName %s is not an executable: its containers "
					   "fail to start",
					   handler, bin);
			doctor_evidence(
			    fd, "%s: %s%s", bin, strerror(errno),
			    errno == EACCES && c->o->runtime_uid ? " for the runtime's user (--runtime-user)" : "");
			files_evidence(c, fd);
		}
	}
}

/*
 * kubelet's cgroupDriver (/var/lib/kubelet/config.yaml, KubeletConfiguration) must match the
 * runtime's SystemdCgroup, or containers of that runtime fail to start (docs/reference/monitoring-doctor.md
 * B4 "Cgroup rule"). nvidia-ctk copies the option from runc, so a hand-written nvidia runtime is
 * where it goes wrong.
 */
static void check_cgroup_driver(struct doctor_ctx *c, const struct ctrd_facts *f, const char *handler)
{
	const struct toml *opts = toml_get(toml_path(f->containerd, "runtimes", handler, NULL), "options");
	_cleanup_free_ char *p = doctor_path(c, "/var/lib/kubelet/config.yaml");
	json_t *docs = NULL;
	const char *drv;
	bool systemd;
	char fix[1024], what[512];
	struct doctor_finding *fd;

	if (!opts || !p || k8sobj_load(p, &docs, NULL) < 0)
		return;
	drv = json_string_value(json_object_get(json_array_get(docs, 0), "cgroupDriver"));
	systemd = toml_bool(opts, "SystemdCgroup", 0) == 1;
	if (drv && systemd != streq(drv, "systemd")) {
		snprintf(what, sizeof(what),
			 "set SystemdCgroup = %s under [plugins.\"%s\".containerd.runtimes.%s.options] (kubelet's "
			 "cgroupDriver is %s)",
			 systemd ? "false" : "true", f->plugin_id, handler, drv);
		fd = doctor_report(c, "runtime.cgroup-driver-mismatch", DOCTOR_FAIL, LINK_RUNTIME,
				   rt_fix(c, fix, sizeof(fix), what),
				   "the \"%s\" runtime's SystemdCgroup does not match kubelet's cgroupDriver: its pods "
				   "fail to start",
				   handler);
		doctor_evidence(fd, "/var/lib/kubelet/config.yaml: cgroupDriver: %s", drv);
		doctor_evidence(fd, "runtimes.%s.options.SystemdCgroup = %s", handler, systemd ? "true" : "false");
		files_evidence(c, fd);
	}
	json_decref(docs);
}

static bool is_socket_name(const char *name)
{
	size_t l = strlen(name);

	return l > 5 && streq(name + l - 5, ".sock");
}

/*
 * Something on the node runs kubelet, so some CRI runtime must run too: kubelet's config, --pods, or
 * kubelet's Registration socket or a device plugin's socket where kubelet serves them (a plugin
 * registered there is asking this runtime to start GPU containers, whatever config file kubelet reads).
 */
static bool kubelet_here(struct doctor_ctx *c)
{
	static const char *const files[] = {"/var/lib/kubelet/config.yaml", "/etc/kubernetes/kubelet.conf",
					    "/var/lib/rancher/k3s/agent/kubelet.kubeconfig",
					    "/var/lib/rancher/rke2/agent/kubelet.kubeconfig"};
	char names[1][256];

	for (size_t k = 0; k < ELEMENTSOF(files); k++) {
		_cleanup_free_ char *p = doctor_path(c, files[k]);

		if (p && access(p, F_OK) == 0)
			return true;
	}
	return c->pods != NULL || doctor_dir_names(c, doctor_device_plugin_dir(c), is_socket_name, names, 1) > 0;
}

/*
 * No runtime found: say what was looked for, never describe a runtime that is not there. On a box
 * without kubelet (plain GPU server, Docker or no containers) that is no problem at all; with kubelet
 * some CRI runtime runs that the doctor cannot read, which is worth a warning, not a failure.
 */
static int runtime_not_found(struct doctor_ctx *c)
{
	struct doctor_finding *fd;

	if (!kubelet_here(c)) {
		doctor_skip(c, "no container runtime on this node (%s) and no kubelet: nothing to check",
			    c->rt->looked);
		return 0;
	}
	fd = doctor_report(c, "runtime.not-found", DOCTOR_WARN, LINK_RUNTIME,
			   "give the runtime's config: gpulet doctor --containerd-config PATH (containerd -c, "
			   "k3s/RKE2's agent/etc/containerd/config.toml); CRI-O is found by /etc/crio/crio.conf(.d)",
			   "kubelet is configured but the doctor found no containerd, k3s, RKE2 or CRI-O runtime: "
			   "the nvidia runtime and CDI settings (links 4-5) are not checked");
	doctor_evidence(fd, "%s", c->rt->looked);
	return 0;
}

/* containerd's disabled_plugins names the CRI plugin (v2 id, v3 ids, or the v1 "cri"). */
static bool cri_disabled(const struct doctor_ctx *c)
{
	const struct toml *list = toml_get(c->ctrd, "disabled_plugins");

	for (size_t k = 0; list && list->type == TOML_ARRAY && k < list->n; k++) {
		const char *p = list->vals[k]->type == TOML_STRING ? list->vals[k]->s : "";

		if (streq(p, "cri") || streq(p, "io.containerd.grpc.v1.cri") ||
		    !strncmp(p, "io.containerd.cri.v1.", 21))
			return true;
	}
	return false;
}

/*
 * The runtime checks are about Kubernetes pods (RuntimeClass handlers, the default runtime pods get,
 * CDI requests from the device plugin). Docker's containerd (containerd.io ships
 * disabled_plugins = ["cri"]) serves no pods, even where kubelet runs beside it (cri-dockerd): nothing
 * here applies, and saying "no nvidia runtime" there would be a false alarm.
 */
static bool kubernetes_runtime(struct doctor_ctx *c)
{
	if (cri_disabled(c)) {
		doctor_skip(
		    c,
		    "%s runs with its CRI plugin disabled (disabled_plugins in %s, Docker's default): it serves no "
		    "Kubernetes pods",
		    rt_name(c->rt), c->rt->config);
		return false;
	}
	if (!kubelet_here(c)) {
		doctor_skip(c,
			    "%s found (%s) but no kubelet on this node: the RuntimeClass and CDI checks concern pods",
			    rt_name(c->rt), c->rt->source);
		return false;
	}
	return true;
}

static int config_problem(struct doctor_ctx *c, int r)
{
	struct doctor_finding *fd;
	char fix[1024];

	if (r == -ENOENT && (c->rt->kind == RT_K3S || c->rt->kind == RT_RKE2)) {
		fd = doctor_report(c, "runtime.config-missing", DOCTOR_WARN, LINK_RUNTIME, rt_restart(c->rt),
				   "%s has not rendered its containerd config yet (it writes %s at each start): "
				   "its containerd is not running",
				   rt_name(c->rt), c->rt->config);
	} else if (r == -ENOENT) {
		snprintf(fix, sizeof(fix),
			 "containerd config default > %s && nvidia-ctk runtime configure --runtime=containerd && %s",
			 c->rt->config, rt_restart(c->rt));
		fd = doctor_report(c, "runtime.config-missing", DOCTOR_WARN, LINK_RUNTIME, fix,
				   "containerd has no %s: it runs with built-in defaults, which have no nvidia "
				   "runtime (and CDI off before containerd 2.0)",
				   c->rt->config);
	} else {
		snprintf(fix, sizeof(fix),
			 "fix the file at the line:col shown (%s), check with containerd config dump, then %s",
			 rt_edit_target(c->rt), rt_restart(c->rt));
		fd = doctor_report(c, "runtime.config-invalid", DOCTOR_FAIL, LINK_RUNTIME, fix,
				   "%s's config does not parse: containerd refuses to start with it, so no "
				   "container starts on this node",
				   rt_name(c->rt));
	}
	doctor_evidence(fd, "%s", c->ctrd_error);
	doctor_evidence(fd, "%s found by %s", rt_name(c->rt), c->rt->source);
	return 0;
}

/*
 * CDI specs where the runtime does not look (cdi_spec_dirs). key: where cdi_spec_dirs lives in
 * this runtime's config.
 */
static void check_spec_dirs(struct doctor_ctx *c, const char *key)
{
	static const char *const defaults[] = {"/etc/cdi", "/var/run/cdi"};
	const char *dirs[16];
	size_t n_dirs = doctor_cdi_dirs(c, dirs, ELEMENTSOF(dirs));
	const char *used = spec_dir_in_use(c, defaults, ELEMENTSOF(defaults));
	char fix[1024], what[512];
	struct doctor_finding *fd;

	if (!used || dir_listed(used, dirs, n_dirs))
		return;
	snprintf(what, sizeof(what),
		 "add %s to cdi_spec_dirs under %s (default [\"/etc/cdi\", \"/var/run/cdi\"]) or write the specs "
		 "where the runtime looks",
		 used, key);
	fd = doctor_report(c, "runtime.cdi-spec-dirs-mismatch", DOCTOR_FAIL, LINK_RUNTIME,
			   rt_fix(c, fix, sizeof(fix), what),
			   "CDI is on but %s reads other directories than the one holding the specs: nothing is "
			   "injected",
			   rt_name(c->rt));
	doctor_evidence(fd, "specs found in %s", used);
	for (size_t k = 0; k < n_dirs; k++)
		doctor_evidence(fd, "cdi_spec_dirs[%zu] = %s", k, dirs[k]);
}

static bool plugin_spec_in_run(const struct doctor_ctx *c)
{
	char names[32][256];
	size_t n = doctor_cdi_dir_files(c, "/var/run/cdi", names, ELEMENTSOF(names));

	for (size_t k = 0; k < n; k++)
		if (!strncmp(names[k], "k8s.device-plugin.nvidia.com", 28) || !strncmp(names[k], "gpulet", 6))
			return true;
	return false;
}

static void check_default_runtime(struct doctor_ctx *c, const struct ctrd_facts *f, const char *handler)
{
	char fix[1024], what[512];
	struct doctor_finding *fd;
	struct inject_facts inj;
	size_t n;

	/* default runtime: without runtimeClassName pods get it; runc injects nothing unless CDI does */
	if (streq(f->default_runtime, handler) || rt_handler(c, handler) == RTH_MISSING || f->enable_cdi)
		return;
	/* the plugin hands out CDI names only: runc is right for them, and CDI being off is
	 * inject.cdi-disabled's to say (docs/reference/cluster-events.md §1) */
	doctor_inject_facts(c, &inj);
	if (inject_cdi_only(&inj))
		return;
	n = doctor_pods_with_class(c, NULL, NULL);
	if (c->pods && !n)
		return; /* every GPU pod of --pods names a RuntimeClass: the default runtime serves none of them */
	snprintf(what, sizeof(what),
		 "add runtimeClassName: %s to GPU pods; or set default_runtime_name = \"%s\" under "
		 "[plugins.\"%s\".containerd], or enable CDI (enable_cdi = true under [plugins.\"%s\"])",
		 handler, handler, f->plugin_id, f->plugin_id);
	fd = doctor_report(c, "runtime.default-is-runc", n ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME,
			   rt_fix(c, fix, sizeof(fix), what),
			   "%s's default runtime is \"%s\": GPU pods without runtimeClassName: %s start without the "
			   "NVIDIA hook and see no GPU (\"No devices were found\")",
			   rt_name(c->rt), f->default_runtime, handler);
	doctor_evidence(fd, "plugins.\"%s\".containerd.default_runtime_name = \"%s\"", f->plugin_id,
			f->default_runtime);
	files_evidence(c, fd);
	doctor_pods_with_class(c, NULL, fd);
}

static void check_cdi_enabled(struct doctor_ctx *c, const struct ctrd_facts *f)
{
	static const char *const defaults[] = {"/etc/cdi", "/var/run/cdi"};
	const char *used = spec_dir_in_use(c, defaults, ELEMENTSOF(defaults));
	bool plugin = plugin_spec_in_run(c);
	char fix[1024], what[512];
	struct doctor_finding *fd;
	struct inject_facts inj;

	if (f->enable_cdi || !used)
		return;
	/*
	 * "envvar,cdi-cri": Allocate returns the CDI names and NVIDIA_VISIBLE_DEVICES both; with CDI off
	 * containerd drops the names and the nvidia runtime's hook injects from the env var, so the GPU
	 * still arrives. Whether the pods run under that runtime is inject.runtime-class-missing's link.
	 */
	doctor_inject_facts(c, &inj);
	if (plugin && inject_has_env(&inj))
		return;
	if (c->ctrd_version >= 3)
		snprintf(what, sizeof(what),
			 "remove enable_cdi = false (or set it to true) under [plugins.'%s'] (containerd 2.x has "
			 "CDI on by default)",
			 f->plugin_id);
	else
		snprintf(what, sizeof(what),
			 "set enable_cdi = true and cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"] under "
			 "[plugins.\"%s\"]%s",
			 f->plugin_id,
			 c->rt->kind == RT_CONTAINERD
			     ? " (nvidia-ctk runtime configure --runtime=containerd --cdi.enabled)"
			     : "");
	fd = doctor_report(c, "runtime.cdi-disabled", plugin ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME,
			   rt_fix(c, fix, sizeof(fix), what),
			   "CDI specs exist but %s's CDI support is off: CDI device requests are ignored%s",
			   rt_name(c->rt), plugin ? " and the device plugin's CDI devices are never injected" : "");
	doctor_evidence(fd, "plugins.\"%s\".enable_cdi is %s (containerd %s default: %s)", f->plugin_id,
			f->enable_cdi_explicit ? "false" : "unset", c->ctrd_version >= 3 ? "2.x" : "1.7",
			c->ctrd_version >= 3 ? "true" : "false");
	doctor_evidence(fd, "spec files in %s", used);
	files_evidence(c, fd);
}

static void check_legacy_hook(struct doctor_ctx *c, const struct ctrd_facts *f, const char *handler)
{
	const struct toml *rt = runtime_table(f, handler);
	const char *bin = rt ? toml_string(toml_get(rt, "options"), "BinaryName", "") : "";
	char mode[32];
	struct doctor_finding *fd;

	if (!f->enable_cdi || !plugin_spec_in_run(c))
		return;
	nvidia_runtime_mode(c, mode, sizeof(mode));
	if (!strstr(bin, "nvidia-container-runtime") || strstr(bin, ".cdi") || !streq(mode, "legacy"))
		return;
	fd = doctor_report(
	    c, "runtime.cdi-and-legacy-hook", DOCTOR_FAIL, LINK_RUNTIME,
	    "use one mechanism: set mode = \"cdi\" (or \"auto\") under [nvidia-container-runtime] in "
	    "/etc/nvidia-container-runtime/config.toml, or turn off the plugin's CDI "
	    "(deviceListStrategy envvar)",
	    "the device plugin injects GPUs through CDI and the \"%s\" runtime also runs the legacy hook: "
	    "both edit the container and devices end up half-mounted",
	    handler);
	doctor_evidence(fd, "containerd enable_cdi = true; plugin CDI spec in /var/run/cdi");
	doctor_evidence(fd, "runtimes.%s.options.BinaryName = %s", handler, bin);
	doctor_evidence(fd, "/etc/nvidia-container-runtime/config.toml: mode = \"%s\"", mode);
}

/*
 * containerd before 1.7 has no CDI (containerd 1.7.0 release notes: "Add CDI device injection"): an
 * enable_cdi key is ignored without a word, and CDI device names from the plugin are never resolved.
 */
static bool cdi_unsupported(struct doctor_ctx *c, const struct ctrd_facts *f)
{
	char v[64], fix[512];
	struct inject_facts inj;
	struct doctor_finding *fd;

	if ((!doctor_dpkg_version(c, "containerd", v, sizeof(v)) &&
	     !doctor_dpkg_version(c, "containerd.io", v, sizeof(v))) ||
	    version_cmp(v, "1.7") >= 0)
		return false;
	doctor_inject_facts(c, &inj);
	if (!(f->enable_cdi_explicit && f->enable_cdi) && !inject_cdi_names(&inj))
		return false;
	snprintf(
	    fix, sizeof(fix),
	    "upgrade containerd to 1.7 or later (2.x has CDI on by default), then %s; or run the device plugin with "
	    "deviceListStrategy envvar and the nvidia runtime",
	    rt_restart(c->rt));
	fd = doctor_report(c, "runtime.cdi-unsupported", DOCTOR_FAIL, LINK_RUNTIME, fix,
			   "containerd %s has no CDI support (it came in 1.7.0): enable_cdi is ignored and CDI device "
			   "names are never resolved, so CDI-injected GPUs never reach the containers",
			   v);
	doctor_evidence(fd, "dpkg: containerd %s", v);
	if (f->enable_cdi_explicit && f->enable_cdi)
		doctor_evidence(fd, "plugins.\"%s\".enable_cdi = true (ignored by this version)", f->plugin_id);
	if (inject_cdi_names(&inj))
		doctor_evidence(fd, "%s", inj.source);
	files_evidence(c, fd);
	return true;
}

static int check_runtime_links(struct doctor_ctx *c)
{
	const char *handler = c->o->runtime_class ? c->o->runtime_class : "nvidia";
	struct ctrd_facts f;
	char key[128];
	int r = doctor_need_runtime(c);

	if (r < 0)
		return r;
	cluster_find_node(c);
	if (cluster_operator_unlabelled(c)) {
		doctor_skip(
		    c, "the GPU Operator has not set this node up: NFD never labelled it, so the operator's toolkit "
		       "never configured the runtime (see labels.discovery-missing)");
		return 0;
	}
	if (c->rt->kind == RT_NONE)
		return runtime_not_found(c);
	if (!kubelet_here(c)) {
		/* no pods to judge here; but a config containerd itself cannot parse stops it all the same */
		r = rt_is_containerd(c->rt) ? doctor_need_containerd(c) : 0;
		if (r == -ENOMEM)
			return r;
		if (r < 0 && r != -ENOENT)
			return config_problem(c, r);
		doctor_skip(c,
			    "%s found (%s) but no kubelet on this node: the RuntimeClass and CDI checks concern pods",
			    rt_name(c->rt), c->rt->source);
		return 0;
	}
	if (c->rt->kind == RT_DOCKER)
		return doctor_check_docker(c);
	if (c->rt->kind == RT_CRIO) {
		r = doctor_check_crio(c);
		if (r >= 0 && !c->rt->crio_error[0])
			check_spec_dirs(c, "[crio.runtime]");
		return r;
	}
	r = doctor_need_containerd(c);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return config_problem(c, r);
	if (!kubernetes_runtime(c))
		return 0;
	doctor_containerd_facts(c, &f);
	if (cdi_unsupported(c, &f))
		return 0;
	check_handler(c, &f, handler);
	check_cgroup_driver(c, &f, handler);
	check_default_runtime(c, &f, handler);
	check_cdi_enabled(c, &f);
	snprintf(key, sizeof(key), "[plugins.\"%s\"]", f.plugin_id);
	if (f.enable_cdi)
		check_spec_dirs(c, key);
	check_legacy_hook(c, &f, handler);
	return 0;
}

/* Which runtime and which files: said even when all is well, so a reader knows what was checked. */
static void report_ok(struct doctor_ctx *c)
{
	struct doctor_finding *f;
	char line[1024] = "";

	if (rt_is_containerd(c->rt) && c->ctrd_state > 0)
		for (size_t k = 0; c->ctrd_files && c->ctrd_files[k]; k++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", k ? ", " : "",
				 c->ctrd_files[k]);
	else if (c->rt->kind == RT_DOCKER && c->rt->docker)
		snprintf(line, sizeof(line), "%s", c->rt->config);
	else if (c->rt->kind == RT_CRIO)
		for (unsigned k = 0; k < c->rt->n_crio_files && k < RT_MAX_FILES; k++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", k ? ", " : "",
				 c->rt->crio_files[k]);
	if (c->rt->kind == RT_CRIO && c->rt->n_crio_files > RT_MAX_FILES)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " and %u more",
			 c->rt->n_crio_files - RT_MAX_FILES);
	f = doctor_report(c, "runtime.ok", DOCTOR_OK, LINK_RUNTIME, NULL, "%s: read %s", rt_name(c->rt),
			  line[0] ? line : "no config file (built-in defaults)");
	doctor_evidence(f, "found by %s", c->rt->source);
	if (line[0])
		doctor_evidence(f, "files read, in merge order: %s", line);
}

int doctor_check_runtime(struct doctor_ctx *c)
{
	size_t before = c->n_findings;
	int r = check_runtime_links(c);

	if (r < 0 || c->n_findings != before || c->skip_reason[0] || !c->rt || c->rt->kind == RT_NONE)
		return r;
	report_ok(c);
	return 0;
}
