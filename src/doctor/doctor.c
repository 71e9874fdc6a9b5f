/* SPDX-License-Identifier: Apache-2.0 */
/* The check table, the runner that attributes symptoms to the earliest broken link, shared facts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/checkpoint.h"
#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/kubelet_root.h"
#include "doctor/runtime_find.h"
#include "util/enumtab.h"
#include "util/fileio.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "parse/toml.h"

/*
 * The chain, in order. requires: links whose failure already explains this check's symptom
 * (docs/reference/monitoring-doctor.md B12: "each step's failure explains every later symptom").
 */
const struct doctor_check doctor_checks[] = {
    {"driver", LINK_DRIVER, 0,
     "/proc/driver/nvidia/version, /sys/module/nvidia; when not loaded: PCI drivers, kernel log, "
     "/lib/modules/<release>, DKMS, efivars SecureBoot and MokListRT; WSL2's /dev/dxg",
     "driver.not-loaded driver.version-unreadable driver.nouveau driver.secure-boot-unsigned "
     "driver.open-module-no-gsp driver.no-module-for-kernel",
     doctor_check_driver},
    {"devnode", LINK_DEVNODE, L(LINK_DRIVER), "/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia<minor>",
     "devnode.missing devnode.permissions devnode.no-gpus", doctor_check_devnodes},
    {"devchar", LINK_DEVNODE, L(LINK_DRIVER),
     "/dev/char/<major>:<minor> of each NVIDIA device node, kubelet cgroupDriver, the runtime's systemd cgroups",
     "devnode.char-links-missing", doctor_check_devchar},
    {"kernel-log", LINK_GPU, 0, "--kernel-log, /var/log/kern.log or /dev/kmsg",
     "gpu.unhealthy-xid gpu.fallen-off-bus gpu.ecc-dbe", doctor_check_kernel_log},
    {"nvml", LINK_NVML, L(LINK_DRIVER) | L(LINK_DEVNODE), "libnvidia-ml.so.1 (--nvml-library)",
     "nvml.load-failed nvml.version-mismatch", doctor_check_nvml},
    {"gpu-health", LINK_GPU, L(LINK_NVML), "NVML per GPU: lost, ECC volatile uncorrected",
     "gpu.fallen-off-bus gpu.ecc-dbe", doctor_check_gpu_health},
    {"gpu-state", LINK_GPU, L(LINK_NVML),
     "NVML per GPU: MIG mode and pending mode, MIG instances, remapped rows, retired pages pending",
     "mig.mode-change-pending mig.no-instances mig.caps-unknown gpu.row-remap-failed gpu.row-remap-pending "
     "gpu.retired-pages-pending",
     doctor_check_gpu_state},
    {"pci", LINK_GPU, L(LINK_DRIVER),
     "/sys/bus/pci/devices (vendor 0x10de, class 0x03) vs /proc/driver/nvidia/gpus and NVML, kernel log, "
     "driverctl, modprobe.d",
     "gpu.bound-to-vfio gpu.bound-to-other-driver gpu.bar-unassigned driver.gsp-firmware-missing "
     "gpu.fallen-off-bus gpu.init-failed gpu.not-probed",
     doctor_check_pci},
    {"fabric", LINK_GPU, L(LINK_DRIVER),
     "/dev/nvidia-nvswitch*, /run/nvidia-fabricmanager/socket, nv-fabricmanager process, dpkg, its unit and log, "
     "NVML fabric state",
     "fabric.manager-not-running fabric.version-mismatch fabric.not-ready", doctor_check_fabric},
    {"toolkit", LINK_TOOLKIT, 0, "/var/lib/dpkg/status, nvidia-ctk, /etc/nvidia-container-runtime/config.toml",
     "toolkit.too-old-for-driver", doctor_check_toolkit},
    {"toolkit-config", LINK_TOOLKIT, 0,
     "/etc/nvidia-container-runtime/config.toml (and the GPU Operator's copy): root, ldconfig, no-cgroups; "
     "cgroup v2, libnvidia-container version",
     "toolkit.driver-root-missing toolkit.ldconfig-missing toolkit.cgroup-v2-unsupported", doctor_check_toolkit_config},
    {"inject", LINK_RUNTIME, 0, "kubelet_internal_checkpoint AllocResp, --pods plugin pod + ConfigMap, RuntimeClasses",
     "inject.cdi-disabled inject.runtime-class-missing inject.handler-missing inject.kubelet-too-old-for-cdi",
     doctor_check_inject},
    {"runtime", LINK_RUNTIME, 0,
     "the runtime under /proc (containerd -c, k3s/RKE2, crio) or its well-known config + imports/drop-ins, "
     "RuntimeClass handler",
     "runtime.not-found runtime.config-invalid runtime.config-missing runtime.nvidia-handler-missing "
     "runtime.binary-missing runtime.default-missing runtime.cdi-unsupported "
     "runtime.cgroup-driver-mismatch "
     "runtime.default-is-runc runtime.cdi-disabled runtime.cdi-spec-dirs-mismatch runtime.cdi-and-legacy-hook",
     doctor_check_runtime},
    {"cdi", LINK_CDI, 0, "CDI spec dirs (/etc/cdi, /var/run/cdi or cdi_spec_dirs)",
     "cdi.spec-missing cdi.spec-invalid cdi.spec-unreadable cdi.version-too-new cdi.duplicate-device "
     "cdi.stale-devices cdi.hook-missing cdi.libs-not-loadable",
     doctor_check_cdi},
    {"kubelet", LINK_KUBELET, 0,
     "kubelet's --root-dir (/proc, kubelet.service, kubeadm-flags.env, k3s/rke2/k0s/microk8s config), "
     "<root-dir>/device-plugins/kubelet.sock, pod-resources socket",
     "kubelet.not-running kubelet.root-dir-conflict kubelet.config-unreadable", doctor_check_kubelet},
    {"plugin-pods", LINK_PLUGIN, 0, "--pods (plugin, MPS daemon, GFD/NFD, GPU Operator pods), --node labels",
     "plugin.pod-crashing plugin.mps-daemon-missing labels.discovery-missing operator.driver-on-preinstalled "
     "operator.validator-failing operator.upgrade-cordoned",
     doctor_check_plugin_pods},
    {"plugin-dup", LINK_PLUGIN, L(LINK_KUBELET), "--pods plugin pods, nvidia-gpu.sock / nvidiaGPU-*.sock, checkpoint",
     "plugin.duplicate", doctor_check_duplicate_plugins},
    {"dra", LINK_PLUGIN, L(LINK_KUBELET),
     "<root-dir>/plugins_registry/gpu.nvidia.com-reg.sock, plugins/gpu.nvidia.com/gpulet-checkpoint.json, "
     "/var/run/cdi claim specs, --pods ResourceClaims and ResourceSlices",
     "dra.not-registered dra.no-slices dra.claim-not-prepared dra.cdi-spec-missing dra.with-device-plugin",
     doctor_check_dra},
    {"plugin", LINK_PLUGIN, L(LINK_KUBELET) | L(LINK_NVML) | L(LINK_DRIVER),
     "device-plugins/nvidia-*.sock, kubelet_internal_checkpoint, --node",
     "plugin.not-registered plugin.socket-dir-mismatch plugin.allocatable-short", doctor_check_plugin},
    /* what is advertised comes from the plugin through kubelet: with either link down it is unknown */
    {"mig", LINK_MIG, L(LINK_NVML) | L(LINK_DRIVER) | L(LINK_KUBELET) | L(LINK_PLUGIN),
     "NVML MIG instances vs advertised resources, CDI", "mig.layout-stale mig.without-cdi", doctor_check_mig},
    {"alloc", LINK_ALLOC, L(LINK_KUBELET), "kubelet_internal_checkpoint vs <root-dir>/pods, --pods",
     "alloc.held-by-terminated-pod", doctor_check_alloc},
    {"cuda", LINK_VERSIONS, L(LINK_DRIVER), "--cuda-version, CUDA_VERSION of --pods images, driver",
     "cuda.driver-too-old", doctor_check_cuda},
    {"cluster", LINK_ALLOC, 0, "--pods, --node, --events",
     "sched.wrong-resource sched.taint-not-tolerated sched.too-many-gpus sched.node-lost-gpus "
     "sched.replicas-over-one "
     "alloc.visible-devices-all alloc.shared-gpu-oom events.failed-scheduling events.admission-error "
     "events.runtime-failed",
     doctor_check_cluster},
};
const size_t doctor_n_checks = ELEMENTSOF(doctor_checks);

static const struct enum_name link_names[] = {
    {LINK_DRIVER, "driver"},   {LINK_DEVNODE, "devnode"}, {LINK_NVML, "nvml"},   {LINK_GPU, "gpu"},
    {LINK_TOOLKIT, "toolkit"}, {LINK_RUNTIME, "runtime"}, {LINK_CDI, "cdi"},     {LINK_KUBELET, "kubelet"},
    {LINK_PLUGIN, "plugin"},   {LINK_MIG, "mig"},         {LINK_ALLOC, "alloc"}, {LINK_VERSIONS, "versions"},
    {LINK_LINT, "lint"},
};

static const struct enum_name severity_names[] = {
    {DOCTOR_OK, "ok"},
    {DOCTOR_WARN, "warn"},
    {DOCTOR_FAIL, "fail"},
};

const char *doctor_link_name(enum doctor_link l)
{
	return enum_to_name(link_names, l, "?");
}

const char *doctor_severity_name(enum doctor_severity s)
{
	return enum_to_name(severity_names, s, "ok");
}

static struct doctor_finding *vreport(struct doctor_ctx *c, const char *id, enum doctor_severity sev,
				      enum doctor_link link, const char *fix, const char *fmt, va_list ap)
{
	static struct doctor_finding oom; /* evidence into it is dropped; keeps callers simple */
	struct doctor_finding *f;

	if (c->n_findings == c->cap_findings) {
		struct doctor_finding *nf = grow_alloc(c->findings, &c->cap_findings, sizeof(*nf), 16);

		if (!nf) {
			memset(&oom, 0, sizeof(oom));
			oom.n_evidence = DOCTOR_MAX_EVIDENCE;
			return &oom;
		}
		c->findings = nf;
	}
	f = &c->findings[c->n_findings++];
	memset(f, 0, sizeof(*f));
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->severity = sev;
	f->link = link;
	snprintf(f->fix, sizeof(f->fix), "%s", fix ? fix : "");
	vsnprintf(f->summary, sizeof(f->summary), fmt, ap);
	if (sev == DOCTOR_FAIL)
		c->failed_links |= L(link);
	return f;
}

struct doctor_finding *doctor_report(struct doctor_ctx *c, const char *id, enum doctor_severity sev,
				     enum doctor_link link, const char *fix, const char *fmt, ...)
{
	struct doctor_finding *f;
	va_list ap;

	va_start(ap, fmt);
	f = vreport(c, id, sev, link, fix, fmt, ap);
	va_end(ap);
	return f;
}

struct doctor_finding *doctor_report_once(struct doctor_ctx *c, const char *id, enum doctor_severity sev,
					  enum doctor_link link, const char *fix, const char *fmt, ...)
{
	struct doctor_finding *f = doctor_find(c, id);
	va_list ap;

	if (f)
		return f;
	va_start(ap, fmt);
	f = vreport(c, id, sev, link, fix, fmt, ap);
	va_end(ap);
	return f;
}

void doctor_evidence(struct doctor_finding *f, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (f->n_evidence >= DOCTOR_MAX_EVIDENCE)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		f->evidence[f->n_evidence++] = s;
	va_end(ap);
}

struct doctor_finding *doctor_find(struct doctor_ctx *c, const char *id)
{
	for (size_t k = 0; k < c->n_findings; k++)
		if (streq(c->findings[k].id, id))
			return &c->findings[k];
	return NULL;
}

const char *doctor_root(const struct doctor_options *o)
{
	return o->host ? o->host->root : "/";
}

const char *doctor_driver_root(const struct doctor_options *o)
{
	return o->host && !streq(o->host->driver_root, "/") ? o->host->driver_root : NULL;
}

const char *doctor_nvml_library(const struct doctor_options *o)
{
	return o->host ? o->host->nvml_library : NULL;
}

char *doctor_path(const struct doctor_ctx *c, const char *path)
{
	return root_path(doctor_root(c->o), path);
}

size_t doctor_dir_names(const struct doctor_ctx *c, const char *dir, bool (*keep)(const char *name), char names[][256],
			size_t max)
{
	_cleanup_free_ char *p = doctor_path(c, dir);
	DIR *d = p ? opendir(p) : NULL;
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.' && strlen(de->d_name) < 256 && (!keep || keep(de->d_name)))
			snprintf(names[n++], 256, "%s", de->d_name);
	closedir(d);
	return n;
}

/* ---- lazily loaded facts ---- */

/*
 * Where a driver lives when it is not installed under / (docs/reference/doctor-classes.md §9): the GPU
 * Operator's driver container, GKE's installer on COS, WSL2's mount of the Windows driver's libraries.
 */
static const char *const driver_roots[] = {"/run/nvidia/driver", "/home/kubernetes/bin/nvidia", "/usr/lib/wsl"};

static int open_nvml(struct doctor_ctx *c, struct gerr *err)
{
	/* a library or driver root the user named is the one to read, never a guess */
	bool chosen = doctor_nvml_library(c->o) || doctor_driver_root(c->o);
	int r = c->o->host ? nvml_open_host(c->o->host, &c->nv, err)
			   : gerr_set(err, ENOENT, "no host paths given to read NVML from");

	for (size_t k = 0; r == -ELIBACC && !chosen && k < ELEMENTSOF(driver_roots); k++) {
		_cleanup_free_ char *p = doctor_path(c, driver_roots[k]);
		_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
		struct gerr e2 = {0};

		if (!p || access(p, F_OK) != 0)
			continue;
		if (host_paths_new(
			&(struct host_paths_options){.root = doctor_root(c->o), .driver_root = driver_roots[k]}, &hp,
			&e2) < 0)
			continue;
		if (nvml_open_host(hp, &c->nv, &e2) >= 0) {
			snprintf(c->driver_root_found, sizeof(c->driver_root_found), "%s", driver_roots[k]);
			r = 0;
		}
	}
	return r;
}

int doctor_need_nvml(struct doctor_ctx *c)
{
	struct gerr err = {0};
	int r;

	if (c->nvml_state)
		return c->nvml_state;
	r = open_nvml(c, &err);
	if (r >= 0) {
		r = node_load(c->nv, doctor_root(c->o), &c->node, &err);
		if (r < 0) {
			nvml_close(c->nv);
			c->nv = NULL;
		}
	}
	if (r < 0) {
		snprintf(c->nvml_error, sizeof(c->nvml_error), "%s", err.msg[0] ? err.msg : strerror(-r));
		return c->nvml_state = r;
	}
	return c->nvml_state = 1;
}

/* doctor_need_containerd and doctor_cdi_dirs: doctor/runtime_find.c (which runtime, which config) */

int doctor_need_checkpoint(struct doctor_ctx *c)
{
	_cleanup_free_ char *p = NULL;
	char rel[300];
	struct gerr err = {0};
	int r;

	if (c->ckpt_state)
		return c->ckpt_state;
	/* next to kubelet's device-plugin sockets (doctor/kubelet_root.h) */
	snprintf(rel, sizeof(rel), "%s/kubelet_internal_checkpoint", doctor_device_plugin_dir(c));
	p = doctor_path(c, rel);
	if (!p)
		return -ENOMEM;
	r = checkpoint_load(p, &c->ckpt, &err);
	if (r < 0) {
		snprintf(c->ckpt_error, sizeof(c->ckpt_error), "%s", err.msg);
		return c->ckpt_state = r;
	}
	return c->ckpt_state = 1;
}

/*
 * containerd's CRI keys (docs/reference/monitoring-doctor.md B4): v2 under io.containerd.grpc.v1.cri,
 * v3 (containerd 2.x) under io.containerd.cri.v1.runtime. enable_cdi defaults to false in 1.7 and
 * true in 2.x (docs/reference/cdi.md §6, containerd PR #9621).
 */
void doctor_containerd_facts(const struct doctor_ctx *c, struct ctrd_facts *f)
{
	const struct toml *plugins = toml_get(c->ctrd, "plugins");
	const struct toml *v;

	memset(f, 0, sizeof(*f));
	f->plugin_id = c->ctrd_version >= 3 ? "io.containerd.cri.v1.runtime" : "io.containerd.grpc.v1.cri";
	f->cri = toml_get(plugins, f->plugin_id);
	f->containerd = toml_get(f->cri, "containerd");
	f->default_runtime = toml_string(f->containerd, "default_runtime_name", "runc");
	v = toml_get(f->cri, "enable_cdi");
	f->enable_cdi_explicit = v && v->type == TOML_BOOL;
	f->enable_cdi = f->enable_cdi_explicit ? v->b : c->ctrd_version >= 3;
}

/* Version of a dpkg package under root ("1.7.24" from "1.7.24~ds1-1"), "" when absent. */
bool doctor_dpkg_version(const struct doctor_ctx *c, const char *pkg, char *buf, size_t size)
{
	_cleanup_free_ char *p = doctor_path(c, "/var/lib/dpkg/status");
	_cleanup_free_ char *status = NULL;
	char key[128];
	const char *s;

	snprintf(key, sizeof(key), "Package: %s\n", pkg);
	if (!p || read_file(p, 64u << 20, &status, NULL, NULL) < 0)
		return false;
	for (s = strstr(status, key); s; s = strstr(s + 1, key)) {
		const char *v = strstr(s, "\nVersion: "), *end = strstr(s, "\n\n");

		if ((s == status || s[-1] == '\n') && v && (!end || v < end)) {
			v += 10;
			if (v[strspn(v, "0123456789")] == ':')
				v += strspn(v, "0123456789") + 1; /* Debian epoch "1:" */
			snprintf(buf, size, "%.*s", (int)strcspn(v, "~-+\n"), v);
			return true;
		}
	}
	return false;
}

/* ---- pods (--pods) ---- */

static bool resources_have_gpu(const json_t *res)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)res, k, v) {
		if (!strncmp(k, "nvidia.com/", 11))
			return true;
	}
	return false;
}

bool doctor_container_wants_gpu(const json_t *ctr)
{
	const json_t *res = json_object_get(ctr, "resources");

	return resources_have_gpu(json_object_get(res, "limits")) ||
	       resources_have_gpu(json_object_get(res, "requests"));
}

bool doctor_pod_requests_gpu(const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	static const char *const lists[] = {"containers", "initContainers"};

	for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
		size_t i;
		json_t *ctr;

		json_array_foreach (json_object_get(spec, lists[l]), i, ctr) {
			if (doctor_container_wants_gpu(ctr))
				return true;
		}
	}
	return false;
}

bool doctor_pod_is_terminating(const json_t *pod)
{
	const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

	return json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") ||
	       (phase && (streq(phase, "Succeeded") || streq(phase, "Failed")));
}

/* kubectl get pods -o json gives a List; one Pod is accepted too. */
static int load_k8s_json(const char *path, json_t **ret, bool want_list, char *errbuf, size_t size)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	json_t *items;

	if (!j) {
		snprintf(errbuf, size, "%s:%d:%d: %s", path, je.line, je.column, je.text);
		return -EINVAL;
	}
	if (!want_list) {
		*ret = j;
		return 0;
	}
	items = json_object_get(j, "items");
	if (json_is_array(items)) {
		json_incref(items);
		json_decref(j);
		*ret = items;
		return 0;
	}
	items = json_array();
	json_array_append_new(items, j);
	*ret = items;
	return 0;
}

/* ---- runner ---- */

/*
 * What explains a skipped check: the first fail in the links it needs, or, for a needed link whose
 * own check was skipped, whatever explained that (so the attribution is transitive).
 */
static const struct doctor_finding *explaining(const struct doctor_ctx *c, unsigned mask)
{
	for (size_t k = 0; k < c->n_findings; k++)
		if (c->findings[k].severity == DOCTOR_FAIL && (L(c->findings[k].link) & mask))
			return &c->findings[k];
	for (int l = 0; l < _LINK_MAX; l++)
		if ((mask & L(l)) && c->blocked_by[l])
			return &c->findings[c->blocked_by[l] - 1];
	return NULL;
}

/* An input file the user named: it must open for reading and not be a directory. */
static int readable_file(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? -EISDIR : 0;
}

/* Inputs named on the command line, with what to do when one is missing (a row per option). */
static const struct {
	const char *option;
	size_t offset;   /* of the path in struct doctor_options */
	bool below_root; /* a path on the node, read below --root */
	const char *fix;
} input_files[] = {
    {"--kernel-log", offsetof(struct doctor_options, kernel_log), false,
     "save the node's kernel log to a file (journalctl -k > kern.log, or dmesg > kern.log) and give that"},
    {"--pods", offsetof(struct doctor_options, pods_file), false,
     "save the pods with: kubectl get pods -A -o json > pods.json"},
    {"--node", offsetof(struct doctor_options, node_file), false,
     "save the node with: kubectl get node NAME -o json > node.json"},
    {"--events", offsetof(struct doctor_options, events_file), false,
     "save the events with: kubectl get events -A -o json > events.json"},
    {"--containerd-config", offsetof(struct doctor_options, containerd_config), true,
     "give the path of containerd's config.toml on the node (default /etc/containerd/config.toml; "
     "see: containerd config dump)"},
};

int doctor_check_options(const struct doctor_options *o, struct gerr *err)
{
	const char *root = doctor_root(o);
	struct stat st;
	int r;

	if (stat(root, &st) < 0)
		return gerr_set(err, EINVAL,
				"--root %s: %s; give the directory where the node's filesystem is mounted "
				"(e.g. --root /host in a container), or leave --root out for this host",
				root, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gerr_set(err, EINVAL,
				"--root %s: not a directory; give the directory where the node's filesystem is "
				"mounted (e.g. --root /host)",
				root);
	for (size_t k = 0; k < ELEMENTSOF(input_files); k++) {
		const char *path = *(const char *const *)((const char *)o + input_files[k].offset);
		_cleanup_free_ char *full = NULL;

		if (!path)
			continue;
		if (input_files[k].below_root) {
			full = root_path(root, path);
			if (!full)
				return -ENOMEM;
		}
		r = readable_file(full ? full : path);
		if (r < 0)
			return gerr_set(err, EINVAL, "%s %s: cannot read %s: %s; %s", input_files[k].option, path,
					full ? full : "it", strerror(-r), input_files[k].fix);
	}
	return 0;
}

int doctor_load_inputs(struct doctor_ctx *c, const struct doctor_options *o)
{
	char ebuf[GERR_MAX];

	c->o = o;
	c->skipped = json_array();
	if (!c->skipped)
		return -ENOMEM;
	if (o->pods_file && load_k8s_json(o->pods_file, &c->pods, true, ebuf, sizeof(ebuf)) < 0) {
		struct doctor_finding *f = doctor_report(c, "input.pods-invalid", DOCTOR_WARN, LINK_ALLOC,
							 "kubectl get pods -A -o json > pods.json",
							 "--pods file is not kubectl JSON; pod facts are ignored");
		doctor_evidence(f, "%s", ebuf);
	}
	if (o->node_file && load_k8s_json(o->node_file, &c->node_obj, false, ebuf, sizeof(ebuf)) < 0) {
		struct doctor_finding *f = doctor_report(c, "input.node-invalid", DOCTOR_WARN, LINK_PLUGIN,
							 "kubectl get node NAME -o json > node.json",
							 "--node file is not kubectl JSON; node facts are ignored");
		doctor_evidence(f, "%s", ebuf);
	}
	return 0;
}

void doctor_skip(struct doctor_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->skip_reason, sizeof(c->skip_reason), fmt, ap);
	va_end(ap);
}

static int run_checks(struct doctor_ctx *c, const struct doctor_check *checks, size_t n);

/* The chain: the inputs, what the API server says where no file does (not for probe and versions, which
 * never read the cluster: gpulet-probe stays free of the client), then the checks. */
int doctor_run(struct doctor_ctx *c, const struct doctor_options *o)
{
	int r = doctor_load_inputs(c, o);

	if (r >= 0)
		r = doctor_api_load(c);
	return r < 0 ? r : run_checks(c, doctor_checks, doctor_n_checks);
}

int doctor_run_table(struct doctor_ctx *c, const struct doctor_options *o, const struct doctor_check *checks, size_t n)
{
	int r = doctor_load_inputs(c, o);

	return r < 0 ? r : run_checks(c, checks, n);
}

static int run_checks(struct doctor_ctx *c, const struct doctor_check *checks, size_t n)
{
	int r;

	for (size_t k = 0; k < n; k++) {
		const struct doctor_check *ch = &checks[k];
		const struct doctor_finding *why = explaining(c, ch->requires);
		size_t before = c->n_findings;

		if (why) {
			c->blocked_by[ch->link] = (int)(why - c->findings) + 1;
			json_array_append_new(c->skipped, json_pack("{s:s, s:s, s:s}", "check", ch->name, "ids",
								    ch->ids, "explained_by", why->id));
			continue;
		}
		c->skip_reason[0] = '\0';
		r = ch->run(c);
		if (r == -ENOMEM)
			return r;
		if (c->skip_reason[0]) {
			json_array_append_new(c->skipped, json_pack("{s:s, s:s, s:s}", "check", ch->name, "ids",
								    ch->ids, "reason", c->skip_reason));
			c->skip_reason[0] = '\0';
		} else if (c->n_findings == before) {
			char id[64];

			snprintf(id, sizeof(id), "%s.ok", ch->name);
			doctor_report(c, id, DOCTOR_OK, ch->link, NULL, "checked %s", ch->inputs);
		}
	}
	return 0;
}

void doctor_ctx_done(struct doctor_ctx *c)
{
	for (size_t k = 0; k < c->n_findings; k++) {
		for (size_t e = 0; e < c->findings[k].n_evidence; e++)
			free(c->findings[k].evidence[e]);
		free(c->findings[k].run);
		free(c->findings[k].run_here);
	}
	free(c->findings);
	free(c->klog);
	json_decref(c->skipped);
	node_free(c->node);
	nvml_close(c->nv);
	toml_free(c->ctrd);
	for (size_t k = 0; c->ctrd_files && c->ctrd_files[k]; k++)
		free(c->ctrd_files[k]);
	free(c->ctrd_files);
	checkpoint_free(c->ckpt);
	kubelet_root_free(c->kroot);
	runtime_found_free(c->rt);
	json_decref(c->pods);
	json_decref(c->node_obj);
	json_decref(c->events);
	doctor_api_close(c->api);
	memset(c, 0, sizeof(*c));
}
