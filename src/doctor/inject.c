/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who injects the GPU, then one link judged (docs/reference/cluster-events.md §1–2). The device
 * plugin's Allocate answer decides who must act: CDI names (cdi-cri, cdi-annotations) need the
 * runtime's CDI support and nothing else — runc as the default runtime is right for them; an
 * NVIDIA_VISIBLE_DEVICES list (envvar, volume-mounts) needs the nvidia runtime's hook, so GPU pods
 * must run under it (RuntimeClass or default). Evidence, strongest first: what kubelet's checkpoint
 * says Allocate returned, the plugin pod's flags / ConfigMap (--pods), the plugin's CDI spec file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/cluster.h"
#include "doctor/cudatable.h"
#include "doctor/kubelet_root.h"
#include "doctor/runtime_find.h"
#include "parse/toml.h"
#include "util/macro.h"

static bool is_cdi(enum allocresp_mode m)
{
	return m == ALLOCRESP_CDI_CRI || m == ALLOCRESP_CDI_ANNOTATIONS;
}

/* kubelet_internal_checkpoint: the strongest mode any nvidia.com/ entry's AllocResp shows. */
static void from_checkpoint(struct doctor_ctx *c, struct inject_facts *f)
{
	char rel[320];
	_cleanup_free_ char *p = NULL;
	json_auto_t *ck = NULL;
	size_t i;
	json_t *e;

	snprintf(rel, sizeof(rel), "%s/kubelet_internal_checkpoint", doctor_device_plugin_dir(c));
	p = doctor_path(c, rel);
	ck = p ? json_load_file(p, 0, NULL) : NULL;
	json_array_foreach (json_object_get(json_object_get(ck, "Data"), "PodDeviceEntries"), i, e) {
		const char *res = json_string_value(json_object_get(e, "ResourceName"));
		const char *b64 = json_string_value(json_object_get(e, "AllocResp"));
		struct allocresp a;

		if (!res || strncmp(res, "nvidia.com/", 11) || !b64 || allocresp_decode(b64, &a, NULL) < 0 ||
		    a.mode <= f->mode)
			continue;
		f->mode = a.mode;
		f->also_env = a.envvar || a.volume_mounts;
		if (is_cdi(a.mode) && strchr(a.example, '/') && strchr(a.example, '='))
			snprintf(f->cdi_name, sizeof(f->cdi_name), "%s", a.example);
		snprintf(f->source, sizeof(f->source),
			 "%s: Allocate for pod %.40s container %.60s (%.60s) returned %s (%.100s)", rel,
			 json_string_value(json_object_get(e, "PodUID")) ?: "?",
			 json_string_value(json_object_get(e, "ContainerName")) ?: "?", res,
			 a.mode == ALLOCRESP_CDI_CRI           ? "CDI device names (cdi_devices)"
			 : a.mode == ALLOCRESP_CDI_ANNOTATIONS ? "CDI annotations"
			 : a.mode == ALLOCRESP_VOLUME_MOUNTS   ? "volume-mount device list"
							       : "NVIDIA_VISIBLE_DEVICES",
			 a.example);
	}
}

/* The strategy list's strongest member ("envvar,cdi-cri" returns both: CDI names win at the runtime). */
static enum allocresp_mode strategy_mode(const char *s)
{
	static const struct {
		const char *name;
		enum allocresp_mode m;
	} names[] = {{"cdi-cri", ALLOCRESP_CDI_CRI},
		     {"cdi-annotations", ALLOCRESP_CDI_ANNOTATIONS},
		     {"volume-mounts", ALLOCRESP_VOLUME_MOUNTS},
		     {"envvar", ALLOCRESP_ENVVAR}};

	for (size_t k = 0; k < ELEMENTSOF(names); k++)
		if (strstr(s, names[k].name))
			return names[k].m;
	return ALLOCRESP_NONE;
}

static void from_plugin_pod(struct doctor_ctx *c, struct inject_facts *f)
{
	struct plugin_cfg p;

	cluster_plugin_cfg(c, &p);
	if (!p.found || p.gke || (!p.strategy[0] && p.config_unread))
		return; /* its config file may set the strategy: unknown; GKE's plugin injects by itself */
	f->mode = p.strategy[0] ? strategy_mode(p.strategy) : ALLOCRESP_ENVVAR;
	f->also_env = strstr(p.strategy, "envvar") || strstr(p.strategy, "volume-mounts");
	if (p.strategy[0])
		snprintf(f->source, sizeof(f->source), "%s says deviceListStrategy %s", p.strategy_src, p.strategy);
	else
		snprintf(f->source, sizeof(f->source),
			 "device plugin pod %s sets no device-list strategy: the default is envvar", p.pod);
}

/* The plugin's own CDI spec (k8s.device-plugin.nvidia.com-*.json, gpulet*) in /var/run/cdi. */
static void from_spec_file(struct doctor_ctx *c, struct inject_facts *f)
{
	char names[32][256];
	size_t n = doctor_cdi_dir_files(c, "/var/run/cdi", names, ELEMENTSOF(names));

	for (size_t k = 0; k < n; k++)
		if (!strncmp(names[k], "k8s.device-plugin.nvidia.com", 28) || !strncmp(names[k], "gpulet", 6)) {
			f->mode = ALLOCRESP_CDI_CRI;
			snprintf(f->source, sizeof(f->source),
				 "/var/run/cdi/%.200s: the device plugin writes its own CDI spec only with a CDI "
				 "device-list strategy",
				 names[k]);
			return;
		}
}

bool inject_cdi_only(const struct inject_facts *f)
{
	return is_cdi(f->mode) && !f->also_env;
}

bool inject_cdi_names(const struct inject_facts *f)
{
	return is_cdi(f->mode);
}

size_t cluster_handler_users(const struct doctor_ctx *c, const char *handler, struct doctor_finding *f)
{
	size_t i, n = 0;
	json_t *pod;

	json_array_foreach (c->pods, i, pod) {
		const char *cls = json_string_value(json_object_get(json_object_get(pod, "spec"), "runtimeClassName"));

		if (!cls || !cluster_pod_here(c, pod) || doctor_pod_is_terminating(pod) ||
		    !streq(cluster_class_handler(c, cls), handler))
			continue;
		n++;
		if (f && f->n_evidence < DOCTOR_MAX_EVIDENCE - 1)
			doctor_evidence(f, "pod %s/%s uses runtimeClassName %s (handler %s)%s", cluster_pod_ns(pod),
					cluster_pod_name(pod), cls, handler,
					doctor_pod_requests_gpu(pod) ? " and requests a GPU" : "");
	}
	return n;
}

bool inject_has_env(const struct inject_facts *f)
{
	return f->mode != ALLOCRESP_NONE && (!is_cdi(f->mode) || f->also_env);
}

void doctor_inject_facts(struct doctor_ctx *c, struct inject_facts *f)
{
	memset(f, 0, sizeof(*f));
	from_checkpoint(c, f);
	if (f->mode == ALLOCRESP_NONE)
		from_plugin_pod(c, f);
	if (f->mode == ALLOCRESP_NONE)
		from_spec_file(c, f);
}

/* The runtime handler of a RuntimeClass: its object in --pods, else the name (kubeadm clusters name them alike). */
const char *cluster_class_handler(const struct doctor_ctx *c, const char *cls)
{
	const json_t *rc = cluster_object(c, "RuntimeClass", NULL, cls);
	const char *h = json_string_value(json_object_get(rc, "handler"));

	return h ? h : cls;
}

/* GPU pods on this node, not terminating; each gets fn. */
#define FOREACH_GPU_POD(c, i, pod)             \
	json_array_foreach ((c)->pods, i, pod) \
		if (cluster_pod_here(c, pod) && !doctor_pod_is_terminating(pod) && doctor_pod_requests_gpu(pod))

/* Only containerd has CDI off (CRI-O always resolves CDI names). */
static void cdi_disabled(struct doctor_ctx *c, const struct inject_facts *f, const struct rt_facts *rf)
{
	char fix[1024];
	struct doctor_finding *fd;

	snprintf(fix, sizeof(fix),
		 "turn CDI on in the runtime: enable_cdi = true (and cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]) "
		 "under the CRI plugin in %s (nvidia-ctk runtime configure --runtime=containerd --cdi.enabled), "
		 "then %s; or switch the plugin to deviceListStrategy envvar with the nvidia runtime",
		 rt_edit_target(c->rt), rt_restart(c->rt));
	fd = doctor_report(
	    c, "inject.cdi-disabled", DOCTOR_FAIL, LINK_RUNTIME, fix,
	    "the device plugin answers Allocate with CDI device names but the runtime's CDI support is off: "
	    "the names are dropped and containers start without a GPU (the default runtime being runc is "
	    "right for CDI and not the cause)");

	doctor_evidence(fd, "%s", f->source);
	doctor_evidence(fd, "%s", rf->cdi_where);
}

/* envvar / volume-mounts: each GPU pod must run under a runtime with the NVIDIA hook. */
static void runtime_class_link(struct doctor_ctx *c, const struct inject_facts *f, const struct rt_facts *rf,
			       const char *nvidia)
{
	struct doctor_finding *fd = NULL;
	size_t i;
	json_t *pod;

	FOREACH_GPU_POD(c, i, pod)
	{
		const char *cls = json_string_value(json_object_get(json_object_get(pod, "spec"), "runtimeClassName"));
		const char *h = cls ? cluster_class_handler(c, cls) : rf->default_handler;
		enum rt_handler_state st = rt_handler(c, h);

		if (streq(h, nvidia) || st == RTH_NVIDIA || (cls && st == RTH_MISSING))
			continue; /* the nvidia runtime, or a handler missing_handlers() names */
		if (!fd) {
			fd = doctor_report(
			    c, "inject.runtime-class-missing", DOCTOR_FAIL, LINK_RUNTIME,
			    "add runtimeClassName: nvidia to the GPU pods (or make nvidia the default runtime: "
			    "nvidia-ctk runtime configure --set-as-default), or run the plugin "
			    "with deviceListStrategy cdi-cri and CDI on",
			    "the device plugin hands GPUs over as NVIDIA_VISIBLE_DEVICES, which only the nvidia "
			    "runtime's hook acts on, but GPU pods run under \"%s\": they start without a GPU",
			    h);
			doctor_evidence(fd, "%s", f->source);
			doctor_evidence(fd, "%s's default runtime is \"%s\"", rt_name(c->rt), rf->default_handler);
		}
		doctor_evidence(fd, "pod %s/%s runtimeClassName %s → handler %s", cluster_pod_ns(pod),
				cluster_pod_name(pod), cls ? cls : "(none)", h);
	}
}

/* A RuntimeClass GPU pods use whose handler the runtime lacks (the --runtime-class one is runtime.*'s). */
static void missing_handlers(struct doctor_ctx *c, const char *nvidia)
{
	struct doctor_finding *fd;
	size_t i;
	json_t *pod;

	FOREACH_GPU_POD(c, i, pod)
	{
		const char *cls = json_string_value(json_object_get(json_object_get(pod, "spec"), "runtimeClassName"));
		const char *h = cls ? cluster_class_handler(c, cls) : NULL;
		char id_fix[512];

		if (!h || streq(h, nvidia) || rt_handler(c, h) != RTH_MISSING)
			continue;
		snprintf(id_fix, sizeof(id_fix),
			 "add a runtimes.%s table to %s's config (nvidia-ctk runtime configure --runtime=%s "
			 "--nvidia-runtime-name=%s) in %s, then %s; or point RuntimeClass %s at a handler that exists",
			 h, rt_name(c->rt), c->rt->kind == RT_CRIO ? "crio" : "containerd", h, rt_edit_target(c->rt),
			 rt_restart(c->rt), cls);
		fd = doctor_report_once(c, "inject.handler-missing", DOCTOR_FAIL, LINK_RUNTIME, id_fix,
					"RuntimeClass %s names handler \"%s\", which %s does not have: its pods "
					"fail in FailedCreatePodSandBox ('no runtime for \"%s\" is configured')",
					cls, h, rt_name(c->rt), h);
		doctor_evidence(fd, "pod %s/%s runtimeClassName %s → handler %s; %s has no runtime \"%s\"",
				cluster_pod_ns(pod), cluster_pod_name(pod), cls, h, rt_name(c->rt), h);
	}
}

/*
 * cdi-cri needs kubelet to pass Allocate's cdi_devices on to the runtime: KEP-4009, alpha in 1.28
 * behind DevicePluginCDIDevices (off by default), beta and on in 1.29 (docs/reference/cdi.md §5.2).
 * An older kubelet drops the names and the container starts without a GPU, unless
 * NVIDIA_VISIBLE_DEVICES came too ("envvar,cdi-cri"). An unknown version is said, never flagged.
 */
static void kubelet_cdi_link(struct doctor_ctx *c, const struct inject_facts *f, char *note, size_t size)
{
	char v[128], src[256];
	const char *s;
	struct doctor_finding *fd;
	bool alpha;

	note[0] = '\0';
	if (f->mode != ALLOCRESP_CDI_CRI)
		return;
	if (!doctor_kubelet_version(c, v, sizeof(v), src, sizeof(src)) ||
	    !((s = v[0] == 'v' ? v + 1 : v)[0] >= '0' && s[0] <= '9' && strchr(s, '.'))) {
		snprintf(note, size,
			 "kubelet version unknown (no --node, no kubelet package, no live kubelet --version): CDI "
			 "device names need kubelet >= 1.29 (1.28 with DevicePluginCDIDevices)");
		return;
	}
	if (version_cmp(s, "1.29") >= 0) {
		snprintf(note, size, "kubelet %s (%s) passes CDI device names on (>= 1.29)", v, src);
		return;
	}
	alpha = version_cmp(s, "1.28") >= 0;
	fd = doctor_report(
	    c, "inject.kubelet-too-old-for-cdi", alpha || f->also_env ? DOCTOR_WARN : DOCTOR_FAIL, LINK_RUNTIME,
	    alpha ? "upgrade kubelet to >= 1.29, or enable the DevicePluginCDIDevices feature gate on this "
		    "kubelet (featureGates in its config, or --feature-gates=DevicePluginCDIDevices=true), or run "
		    "the plugin with deviceListStrategy envvar (the chart picks it below 1.29) and the nvidia runtime"
		  : "run the plugin with deviceListStrategy envvar (the chart picks it below 1.29) and the nvidia "
		    "runtime, or upgrade kubelet to >= 1.29",
	    alpha ? "the device plugin answers Allocate with CDI device names (cdi-cri), which kubelet %s passes "
		    "on only with the DevicePluginCDIDevices feature gate (alpha, off by default): without it "
		    "containers start without a GPU%s"
		  : "the device plugin answers Allocate with CDI device names (cdi-cri), which kubelet %s does not "
		    "know (the field arrived in 1.28): the names are dropped and containers start without a GPU%s",
	    v, f->also_env ? " unless the nvidia runtime acts on NVIDIA_VISIBLE_DEVICES" : "");
	doctor_evidence(fd, "%s", f->source);
	doctor_evidence(fd, "kubelet %s (%s); KEP-4009: alpha 1.28, beta and on by default 1.29, GA 1.31", v, src);
}

int doctor_check_inject(struct doctor_ctx *c)
{
	const char *nvidia = c->o->runtime_class ? c->o->runtime_class : "nvidia";
	struct inject_facts f;
	struct rt_facts rf;
	size_t before = c->n_findings;
	int r = rt_facts_get(c, &rf);
	char kubelet_note[320];

	cluster_find_node(c);

	if (r == -ENOMEM)
		return r;
	if (cluster_operator_unlabelled(c)) {
		doctor_skip(c, "the GPU Operator has not set this node up (see labels.discovery-missing)");
		return 0;
	}
	doctor_inject_facts(c, &f);
	if (r <= 0) {
		doctor_skip(c, "the runtime's config was not read (see runtime.*): cannot judge who injects");
		return 0;
	}
	kubelet_cdi_link(c, &f, kubelet_note, sizeof(kubelet_note));
	/* both kinds returned: with CDI off the env var still works under the nvidia runtime */
	if (inject_cdi_only(&f) && !rf.cdi)
		cdi_disabled(c, &f, &rf);
	if ((!is_cdi(f.mode) || (f.also_env && !rf.cdi)) && f.mode != ALLOCRESP_NONE && c->pods)
		runtime_class_link(c, &f, &rf, nvidia);
	if (c->pods)
		missing_handlers(c, nvidia);
	if (c->n_findings > before)
		return 0;
	if (f.mode == ALLOCRESP_NONE) {
		doctor_skip(c,
			    "no allocation in kubelet's checkpoint, no plugin pod in --pods, no plugin CDI spec: who "
			    "injects is unknown");
		return 0;
	}
	doctor_evidence(doctor_report(c, "inject.ok", DOCTOR_OK, LINK_RUNTIME, NULL, "GPUs are injected by %s",
				      is_cdi(f.mode) ? "the runtime's CDI" : "the nvidia runtime's hook"),
			"%s%s%s", f.source, kubelet_note[0] ? "; " : "", kubelet_note);
	return 0;
}
