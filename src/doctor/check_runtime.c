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

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "util/fileio.h"
#include "kube/k8sobj.h"
#include "parse/toml.h"

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
	if (!c->o->root || !*c->o->root || streq(c->o->root, "/")) {
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
	char ver[64], src[128];
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
	f = doctor_report(
	    c, "toolkit.too-old-for-driver", DOCTOR_FAIL, LINK_TOOLKIT,
	    "upgrade nvidia-container-toolkit (apt-get install nvidia-container-toolkit) before or with the "
	    "driver, then restart containerd; upgrade order: toolkit and plugin first, then the driver",
	    "nvidia-container-toolkit %s is older than driver %s needs: %s", ver, c->driver_version, row->what);
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
static size_t pods_with_class(const struct doctor_ctx *c, const char *name, struct doctor_finding *f)
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

static void check_handler(struct doctor_ctx *c, const struct ctrd_facts *f, const char *handler)
{
	const struct toml *rt = runtime_table(f, handler);
	struct doctor_finding *fd;
	size_t users;

	if (!rt) {
		users = pods_with_class(c, handler, NULL);
		if (!users && f->enable_cdi && c->pods)
			return; /* nobody asks for the handler and CDI injects the devices */
		fd = doctor_report(
		    c, "runtime.nvidia-handler-missing", users || !f->enable_cdi ? DOCTOR_FAIL : DOCTOR_WARN,
		    LINK_RUNTIME,
		    "nvidia-ctk runtime configure --runtime=containerd --nvidia-runtime-name=nvidia "
		    "&& systemctl restart containerd (the RuntimeClass handler must equal the runtimes.<name> key)",
		    "containerd has no runtime named \"%s\": pods with runtimeClassName %s fail with "
		    "'no runtime for \"%s\" is configured'%s",
		    handler, handler, handler, f->enable_cdi ? "" : ", and with CDI off nothing else injects the GPU");
		doctor_evidence(fd, "plugins.\"%s\".containerd.runtimes has no \"%s\" (files: %s%s)", f->plugin_id,
				handler, c->ctrd_files[0], c->ctrd_files[1] ? " + imports" : "");
		pods_with_class(c, handler, fd);
		return;
	}
	{
		const char *bin = toml_string(toml_get(rt, "options"), "BinaryName", NULL);
		_cleanup_free_ char *p = bin ? doctor_path(c, bin) : NULL;

		if (bin && p && access(p, X_OK) < 0) {
			fd = doctor_report(c, "runtime.binary-missing", DOCTOR_FAIL, LINK_RUNTIME,
					   "apt-get install nvidia-container-toolkit (or fix BinaryName), then "
					   "systemctl restart containerd",
					   "the \"%s\" runtime's BinaryName %s is not an executable: its containers "
					   "fail to start",
					   handler, bin);
			doctor_evidence(fd, "%s: %s", bin, strerror(errno));
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
	struct doctor_finding *fd;

	if (!opts || !p || k8sobj_load(p, &docs, NULL) < 0)
		return;
	drv = json_string_value(json_object_get(json_array_get(docs, 0), "cgroupDriver"));
	systemd = toml_bool(opts, "SystemdCgroup", 0) == 1;
	if (drv && systemd != streq(drv, "systemd")) {
		fd = doctor_report(c, "runtime.cgroup-driver-mismatch", DOCTOR_FAIL, LINK_RUNTIME,
				   "set SystemdCgroup = true under the runtime's options when kubelet uses "
				   "cgroupDriver: systemd (false for cgroupfs), then systemctl restart containerd",
				   "the \"%s\" runtime's SystemdCgroup does not match kubelet's cgroupDriver: its pods "
				   "fail to start",
				   handler);
		doctor_evidence(fd, "/var/lib/kubelet/config.yaml: cgroupDriver: %s", drv);
		doctor_evidence(fd, "runtimes.%s.options.SystemdCgroup = %s", handler, systemd ? "true" : "false");
	}
	json_decref(docs);
}

int doctor_check_runtime(struct doctor_ctx *c)
{
	const char *handler = c->o->runtime_class ? c->o->runtime_class : "nvidia";
	const char *dirs[16];
	struct ctrd_facts f;
	struct doctor_finding *fd;
	size_t n_dirs;
	int r = doctor_need_containerd(c);

	if (r == -ENOMEM)
		return r;
	if (r == -ENOENT) {
		fd = doctor_report(
		    c, "runtime.config-missing", DOCTOR_WARN, LINK_RUNTIME,
		    "containerd config default > /etc/containerd/config.toml && nvidia-ctk runtime configure "
		    "--runtime=containerd && systemctl restart containerd",
		    "containerd has no config.toml: it runs with built-in defaults, which have no nvidia "
		    "runtime (and CDI off before containerd 2.0)");
		doctor_evidence(fd, "%s", c->ctrd_error);
		return 0;
	}
	if (r < 0) {
		fd = doctor_report(c, "runtime.config-invalid", DOCTOR_FAIL, LINK_RUNTIME,
				   "fix the file at the line:col shown, check with containerd config dump, then "
				   "systemctl restart containerd",
				   "containerd's config does not parse: containerd refuses to start with it, so no "
				   "container starts on this node");
		doctor_evidence(fd, "%s", c->ctrd_error);
		return 0;
	}
	doctor_containerd_facts(c, &f);
	check_handler(c, &f, handler);
	check_cgroup_driver(c, &f, handler);

	/* default runtime: without runtimeClassName pods get it; runc injects nothing unless CDI does */
	if (!streq(f.default_runtime, handler) && runtime_table(&f, handler) && !f.enable_cdi) {
		size_t n = pods_with_class(c, NULL, NULL);

		fd =
		    doctor_report(c, "runtime.default-is-runc", n ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME,
				  "add runtimeClassName: nvidia to GPU pods (kubectl get pod -o yaml | grep "
				  "runtimeClassName), or make nvidia the default: nvidia-ctk runtime configure "
				  "--runtime=containerd --set-as-default, or enable CDI",
				  "containerd's default runtime is \"%s\": GPU pods without runtimeClassName: %s start "
				  "without the NVIDIA hook and see no GPU (\"No devices were found\")",
				  f.default_runtime, handler);
		doctor_evidence(fd, "plugins.\"%s\".containerd.default_runtime_name = \"%s\"", f.plugin_id,
				f.default_runtime);
		pods_with_class(c, NULL, fd);
	}

	n_dirs = doctor_cdi_dirs(c, dirs, ELEMENTSOF(dirs));
	{
		static const char *const defaults[] = {"/etc/cdi", "/var/run/cdi"};
		const char *used = spec_dir_in_use(c, defaults, ELEMENTSOF(defaults));
		const char *plugin_spec_dir = NULL;
		char names[32][256];
		size_t n = doctor_cdi_dir_files(c, "/var/run/cdi", names, ELEMENTSOF(names));

		for (size_t k = 0; k < n; k++)
			if (!strncmp(names[k], "k8s.device-plugin.nvidia.com", 28) || !strncmp(names[k], "gpulet", 6))
				plugin_spec_dir = "/var/run/cdi";

		if (!f.enable_cdi && used) {
			fd = doctor_report(
			    c, "runtime.cdi-disabled", plugin_spec_dir ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME,
			    "set enable_cdi = true and cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"] under "
			    "[plugins.\"io.containerd.grpc.v1.cri\"] (nvidia-ctk runtime configure "
			    "--runtime=containerd "
			    "--cdi.enabled), then systemctl restart containerd",
			    "CDI specs exist but containerd's CDI support is off: CDI device requests are ignored%s",
			    plugin_spec_dir ? " and the device plugin's CDI devices are never injected" : "");
			doctor_evidence(fd, "plugins.\"%s\".enable_cdi is %s (containerd %s default: %s)", f.plugin_id,
					f.enable_cdi_explicit ? "false" : "unset", c->ctrd_version >= 3 ? "2.x" : "1.7",
					c->ctrd_version >= 3 ? "true" : "false");
			doctor_evidence(fd, "spec files in %s", used);
		}
		if (f.enable_cdi && used && !dir_listed(used, dirs, n_dirs)) {
			fd = doctor_report(
			    c, "runtime.cdi-spec-dirs-mismatch", DOCTOR_FAIL, LINK_RUNTIME,
			    "add the directory to cdi_spec_dirs (default [\"/etc/cdi\", \"/var/run/cdi\"]) "
			    "or write the specs where containerd looks, then systemctl restart containerd",
			    "CDI is on but containerd reads other directories than the one holding the "
			    "specs: nothing is injected");
			doctor_evidence(fd, "specs found in %s", used);
			for (size_t k = 0; k < n_dirs; k++)
				doctor_evidence(fd, "cdi_spec_dirs[%zu] = %s", k, dirs[k]);
		}
		if (f.enable_cdi && plugin_spec_dir) {
			const char *rt_name = runtime_table(&f, handler) ? handler : NULL;
			const char *bin =
			    rt_name ? toml_string(toml_get(runtime_table(&f, handler), "options"), "BinaryName", "")
				    : "";
			char mode[32];

			nvidia_runtime_mode(c, mode, sizeof(mode));
			if (strstr(bin, "nvidia-container-runtime") && !strstr(bin, ".cdi") && streq(mode, "legacy")) {
				fd = doctor_report(
				    c, "runtime.cdi-and-legacy-hook", DOCTOR_FAIL, LINK_RUNTIME,
				    "use one mechanism: set mode = \"cdi\" (or \"auto\") under "
				    "[nvidia-container-runtime] "
				    "in /etc/nvidia-container-runtime/config.toml, or turn off the plugin's CDI "
				    "(deviceListStrategy envvar)",
				    "the device plugin injects GPUs through CDI and the \"%s\" runtime also runs the "
				    "legacy hook: both edit the container and devices end up half-mounted",
				    handler);
				doctor_evidence(fd, "containerd enable_cdi = true; plugin CDI spec in %s",
						plugin_spec_dir);
				doctor_evidence(fd, "runtimes.%s.options.BinaryName = %s", handler, bin);
				doctor_evidence(fd, "/etc/nvidia-container-runtime/config.toml: mode = \"%s\"", mode);
			}
		}
	}
	return 0;
}
