/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the cluster says (--pods / --node): the device plugin pod and NVIDIA's other components on
 * this node (plugin crash-looping or OOMKilled, MPS control daemon, GFD/NFD, GPU Operator operands),
 * and pods that can never fit or get GPUs they should not (docs/reference/cluster-events.md §3–5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "util/macro.h"

/* The first pod here of this component; *unhealthy gets why it is not well ("" when it is). */
static const json_t *component_pod(const struct doctor_ctx *c, enum nv_component comp, char *why, size_t size)
{
	const json_t *found = NULL;
	size_t i;
	json_t *pod;

	why[0] = '\0';
	json_array_foreach (c->pods, i, pod) {
		char w[512];

		if (!cluster_pod_here(c, pod) || cluster_component(pod) != comp || doctor_pod_is_terminating(pod))
			continue;
		if (cluster_pod_healthy(pod, w, sizeof(w)))
			return pod; /* a healthy one wins */
		if (!found) {
			found = pod;
			snprintf(why, size, "%s", w);
		}
	}
	return found;
}

static bool anywhere(const struct doctor_ctx *c, enum nv_component comp)
{
	size_t i;
	json_t *pod;

	json_array_foreach (c->pods, i, pod)
		if (cluster_is_pod(pod) && cluster_component(pod) == comp)
			return true;
	return false;
}

/* How the plugin pod fails, and what to do: the first row whose word is in the pod's state wins. */
static const struct {
	const char *word, *what, *fix;
} pod_failures[] = {
    {"OOMKilled", "OOMKilled",
     "raise the device plugin container's memory limit (its DaemonSet resources.limits.memory), then check "
     "kubectl logs --previous for what grew"},
    {"ImagePull", "not starting: its image does not pull",
     "kubectl -n NAMESPACE describe pod POD: fix the image name/tag or the registry credentials"},
    {"CreateContainer", "not starting: its container cannot be created",
     "kubectl -n NAMESPACE describe pod POD: a missing ConfigMap/volume or a runtime error is named there"},
    {"", "crash-looping",
     "kubectl -n NAMESPACE logs POD --previous shows why it exits; the usual causes are NVML not loadable in "
     "the pod (runtime class / driver root), a bad config file, or MPS without --mps-root"},
};

static void plugin_pod(struct doctor_ctx *c)
{
	char why[512];
	const json_t *pod = component_pod(c, NV_DEVICE_PLUGIN, why, sizeof(why));
	struct doctor_finding *f;
	size_t k = 0;

	if (!pod || !why[0])
		return;
	while (!strstr(why, pod_failures[k].word))
		k++; /* the last row's "" matches */
	f = doctor_report(c, "plugin.pod-crashing", DOCTOR_FAIL, LINK_PLUGIN, pod_failures[k].fix,
			  "the device plugin pod itself is %s: while it is down, kubelet has no one to ask for GPUs "
			  "(GPUs are not unhealthy; nothing advertises them)",
			  pod_failures[k].what);
	doctor_evidence(f, "pod %s/%s: %s", cluster_pod_ns(pod), cluster_pod_name(pod), why);
}

static bool not_dot(const char *name)
{
	return name[0] != '.' && !streq(name, "shm");
}

/*
 * The MPS root on the node (the plugin's --mps-root / MPS_ROOT, else the charts' /run/nvidia/mps): the
 * control daemon makes <root>/<resource>/pipe and, once every daemon runs, <root>/.ready, and takes .ready
 * away when it stops (docs/reference/device-plugin.md §5.1). Resource dirs without .ready: MPS is in use
 * and no control daemon serves it now.
 */
static bool mps_root_stale(struct doctor_ctx *c, const struct plugin_cfg *p, char *why, size_t size)
{
	const char *root = p->mps_root[0] ? p->mps_root : "/run/nvidia/mps";
	char ready[300], names[8][256];
	_cleanup_free_ char *rp = NULL;
	size_t n = doctor_dir_names(c, root, not_dot, names, ELEMENTSOF(names));

	snprintf(ready, sizeof(ready), "%s/.ready", root);
	rp = doctor_path(c, ready);
	if (!n || !rp || access(rp, F_OK) == 0)
		return false;
	snprintf(why, size, "%s/%s/ exists (a control daemon set it up) but %s does not: none runs now", root, names[0],
		 ready);
	return true;
}

static void mps_daemon(struct doctor_ctx *c, const struct plugin_cfg *p)
{
	const char *label = cluster_node_label(c, "nvidia.com/gpu.sharing-strategy");
	char why[512], stale[700];
	const json_t *pod;
	struct doctor_finding *f;
	bool files = mps_root_stale(c, p, stale, sizeof(stale));

	if (!streq(p->sharing, "mps") && !(label && streq(label, "mps")) && !files)
		return;
	pod = component_pod(c, NV_MPS_DAEMON, why, sizeof(why));
	if (pod && !why[0])
		return;
	if (!c->pods && !files)
		return;
	f = doctor_report(c, "plugin.mps-daemon-missing", DOCTOR_FAIL, LINK_PLUGIN,
			  "deploy the MPS control daemon DaemonSet with the plugin (helm chart: it is created when the "
			  "config has sharing.mps; it runs on nodes labelled nvidia.com/mps.capable=true) and check "
			  "its logs",
			  "MPS sharing is configured but no MPS control daemon runs on this node: the plugin waits for "
			  "it and pods asking for shared GPUs never start");
	if (streq(p->sharing, "mps"))
		doctor_evidence(f, "%s: sharing.mps is set", p->config_src[0] ? p->config_src : p->pod);
	if (label)
		doctor_evidence(f, "--node label nvidia.com/gpu.sharing-strategy=%s", label);
	if (files)
		doctor_evidence(f, "%s", stale);
	if (c->pods)
		doctor_evidence(f, pod ? "MPS control daemon pod %s/%s: %s" : "--pods: no %s%s%s pod on this node",
				pod ? cluster_pod_ns(pod) : "nvidia-device-plugin-mps-control-daemon",
				pod ? cluster_pod_name(pod) : "", pod ? why : "");
}

static long long node_quantity(const struct doctor_ctx *c, const char *list, const char *res)
{
	const json_t *v = json_object_get(json_object_get(json_object_get(c->node_obj, "status"), list), res);

	return json_is_string(v) ? atoll(json_string_value(v)) : json_is_integer(v) ? json_integer_value(v) : -1;
}

static bool operator_cluster(const struct doctor_ctx *c)
{
	return anywhere(c, NV_OPERATOR) || anywhere(c, NV_VALIDATOR) || anywhere(c, NV_DRIVER) ||
	       anywhere(c, NV_TOOLKIT);
}

/* NFD's NVIDIA PCI labels the operator takes for a GPU node (controllers/state_manager.go gpuNodeLabels) */
static bool nfd_gpu_label(const struct doctor_ctx *c)
{
	static const char *const keys[] = {"feature.node.kubernetes.io/pci-10de.present",
					   "feature.node.kubernetes.io/pci-0302_10de.present",
					   "feature.node.kubernetes.io/pci-0300_10de.present"};

	for (size_t k = 0; k < ELEMENTSOF(keys); k++)
		if (cluster_node_label(c, keys[k]))
			return true;
	return false;
}

/* An nvidia.com/ label key in a nodeSelector or a required node affinity term. */
static const char *selected_label(const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec"), *terms, *term;
	const char *key;
	json_t *v, *e;
	size_t i, j;

	json_object_foreach (json_object_get(spec, "nodeSelector"), key, v)
		if (!strncmp(key, "nvidia.com/", 11))
			return key;
	terms = json_object_get(json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
						"requiredDuringSchedulingIgnoredDuringExecution"),
				"nodeSelectorTerms");
	json_array_foreach (terms, i, term)
		json_array_foreach (json_object_get(term, "matchExpressions"), j, e) {
			key = json_string_value(json_object_get(e, "key"));
			if (key && !strncmp(key, "nvidia.com/", 11))
				return key;
		}
	return NULL;
}

/* A pending pod that selects a GPU label this node lacks; why gets "pod NS/NAME selects KEY". */
static bool label_wanted(const struct doctor_ctx *c, char *why, size_t size)
{
	size_t i;
	json_t *pod;

	json_array_foreach (c->pods, i, pod) {
		const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
		const char *key = selected_label(pod);

		if (key && !cluster_node_label(c, key) && phase && streq(phase, "Pending")) {
			snprintf(why, size, "pod %s/%s is Pending and selects node label %s", cluster_pod_ns(pod),
				 cluster_pod_name(pod), key);
			return true;
		}
	}
	return false;
}

bool cluster_operator_unlabelled(const struct doctor_ctx *c)
{
	char why[512];

	return c->node_obj && c->pods && operator_cluster(c) && !nfd_gpu_label(c) &&
	       !cluster_node_label(c, "nvidia.com/gpu.present") && !component_pod(c, NV_NFD, why, sizeof(why));
}

/* GFD labels the node (nvidia.com/gpu.product ...); under the GPU Operator, NFD's PCI label schedules everything. */
static void discovery(struct doctor_ctx *c)
{
	bool op = operator_cluster(c);
	struct doctor_finding *f;
	char why[512];

	if (!c->node_obj || !c->pods)
		return;
	if (cluster_operator_unlabelled(c)) {
		f = doctor_report(
		    c, "labels.discovery-missing", DOCTOR_FAIL, LINK_PLUGIN,
		    "deploy Node Feature Discovery (the operator's nfd.enabled=true, or your own NFD) or "
		    "label the node nvidia.com/gpu.present=true",
		    "the GPU Operator runs but this node has neither NFD's PCI label nor "
		    "nvidia.com/gpu.present: the operator deploys none of its operands (no driver, no plugin) here");
		doctor_evidence(
		    f, "--node labels lack feature.node.kubernetes.io/pci-10de.present and nvidia.com/gpu.present");
		doctor_evidence(f, "--pods: no node-feature-discovery worker on this node");
		return;
	}
	if (node_quantity(c, "capacity", "nvidia.com/gpu") <= 0 || cluster_node_label(c, "nvidia.com/gpu.product") ||
	    component_pod(c, NV_GFD, why, sizeof(why)) || (!op && !label_wanted(c, why, sizeof(why))))
		return; /* without the operator GFD is optional: missing only when some pod selects its labels */
	f = doctor_report(c, "labels.discovery-missing", DOCTOR_WARN, LINK_PLUGIN,
			  "deploy gpu-feature-discovery (the device plugin helm chart's gfd.enabled=true, or the GPU "
			  "Operator's), which needs Node Feature Discovery for its own scheduling",
			  "the node has GPUs but no nvidia.com/gpu.product label and no gpu-feature-discovery pod: "
			  "workloads selecting GPU labels (product, memory, MIG) never schedule here");
	doctor_evidence(f, "--node: capacity nvidia.com/gpu %lld, no nvidia.com/gpu.* labels",
			node_quantity(c, "capacity", "nvidia.com/gpu"));
	doctor_evidence(f, "--pods: no gpu-feature-discovery pod on this node");
	if (!op)
		doctor_evidence(f, "%s", why);
}

static bool host_driver_libs(const struct doctor_ctx *c, char *buf, size_t size)
{
	static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
					   "/usr/lib64/libnvidia-ml.so.1",
					   "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1"};

	for (size_t k = 0; k < ELEMENTSOF(libs); k++) {
		_cleanup_free_ char *p = doctor_path(c, libs[k]);

		if (p && access(p, F_OK) == 0) {
			snprintf(buf, size, "%s", libs[k]);
			return true;
		}
	}
	return false;
}

static void operator_driver(struct doctor_ctx *c)
{
	char why[512], lib[128];
	const json_t *pod = component_pod(c, NV_DRIVER, why, sizeof(why));
	struct doctor_finding *f;

	if (!pod || !host_driver_libs(c, lib, sizeof(lib)))
		return;
	f = doctor_report(
	    c, "operator.driver-on-preinstalled", why[0] ? DOCTOR_FAIL : DOCTOR_WARN, LINK_DRIVER,
	    "the node has its own driver: install the GPU Operator with driver.enabled=false (or label "
	    "the node nvidia.com/gpu.deploy.driver=false) and delete the driver pod",
	    "the GPU Operator's driver DaemonSet runs on a node with a preinstalled driver: its container "
	    "cannot load its own kernel module over the host's%s",
	    why[0] ? " and fails" : "");
	doctor_evidence(f, "pod %s/%s%s%s", cluster_pod_ns(pod), cluster_pod_name(pod), why[0] ? ": " : " runs", why);
	doctor_evidence(f, "host driver library %s (the operator's driver lives under /run/nvidia/driver)", lib);
}

static void operator_validator(struct doctor_ctx *c)
{
	char why[512];
	const json_t *pod = component_pod(c, NV_VALIDATOR, why, sizeof(why));
	struct doctor_finding *f;

	if (!pod || !why[0])
		return;
	f = doctor_report(
	    c, "operator.validator-failing", DOCTOR_FAIL, LINK_PLUGIN,
	    "kubectl -n NAMESPACE logs POD -c CONTAINER for the failing validation (driver-validation, "
	    "toolkit-validation, cuda-validation, plugin-validation): the first failing one names the broken "
	    "operand; the device plugin waits for these validations",
	    "the GPU Operator's validator fails on this node: the operands after the failing validation "
	    "(toolkit, device plugin) wait and never advertise GPUs");
	doctor_evidence(f, "pod %s/%s: %s", cluster_pod_ns(pod), cluster_pod_name(pod), why);
}

static void operator_upgrade(struct doctor_ctx *c)
{
	const char *state = cluster_node_label(c, "nvidia.com/gpu-driver-upgrade-state");
	const json_t *unsched = json_object_get(json_object_get(c->node_obj, "spec"), "unschedulable");
	bool failed = state && streq(state, "upgrade-failed");
	struct doctor_finding *f;

	if (!state || streq(state, "upgrade-done") || !json_is_true(unsched))
		return;
	f = doctor_report(c, "operator.upgrade-cordoned", failed ? DOCTOR_FAIL : DOCTOR_WARN, LINK_PLUGIN,
			  failed ? "find why in the driver pod's log, fix it, then set the label "
				   "nvidia.com/gpu-driver-upgrade-state=upgrade-required to retry (or kubectl uncordon)"
				 : "wait for the GPU Operator's driver upgrade to finish (kubectl get node -L "
				   "nvidia.com/gpu-driver-upgrade-state); it uncordons the node itself",
			  "the node is cordoned by the GPU Operator's driver upgrade (state %s): no new pod schedules "
			  "here%s",
			  state, failed ? " and the upgrade failed, so it stays cordoned" : " until it finishes");
	doctor_evidence(f, "--node: spec.unschedulable true, label nvidia.com/gpu-driver-upgrade-state=%s", state);
}

int doctor_check_plugin_pods(struct doctor_ctx *c)
{
	struct plugin_cfg p;

	cluster_find_node(c);

	cluster_plugin_cfg(c, &p);
	if (!c->pods) {
		mps_daemon(c, &p); /* the MPS root on the node tells without --pods */
		if (!doctor_find(c, "plugin.mps-daemon-missing"))
			doctor_skip(c, "no --pods: the device plugin and GPU Operator pods are not known");
		return 0;
	}
	plugin_pod(c);
	mps_daemon(c, &p);
	discovery(c);
	operator_driver(c);
	operator_validator(c);
	if (c->node_obj)
		operator_upgrade(c);
	return 0;
}
