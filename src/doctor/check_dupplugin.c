/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two device plugins registering the same resource (docs/reference/doctor-classes.md §7), e.g. a static
 * k8s-device-plugin DaemonSet beside the GPU Operator's, or a user's plugin on GKE beside GKE's own.
 * kubelet keeps one endpoint per resource name — the one that registered last — and drops the other's;
 * when either restarts they swap, and deleting the kept one leaves the node without GPUs
 * (k8s-device-plugin issue 255). Found from the plugin pods on the node (--pods), the sockets where
 * kubelet serves plugins, and whose device IDs kubelet's checkpoint holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/kubelet_root.h"
#include "kube/checkpoint.h"

/* Socket names that serve nvidia.com/gpu: NVIDIA's and gpulet's plugin, GKE's (nvidiaGPU-<time>.sock). */
static const struct {
	const char *prefix;
	const char *who;
} gpu_sockets[] = {
    {"nvidia-gpu.sock", "NVIDIA's k8s-device-plugin or gpulet"},
    {"nvidiaGPU-", "GKE's nvidia-gpu-device-plugin"},
};

struct seen_socket {
	char name[256];
	const char *who;
	time_t mtime;
};

static bool gpu_socket(const char *name)
{
	for (size_t k = 0; k < ELEMENTSOF(gpu_sockets); k++)
		if (!strncmp(name, gpu_sockets[k].prefix, strlen(gpu_sockets[k].prefix)))
			return true;
	return false;
}

static size_t sockets(struct doctor_ctx *c, struct seen_socket *out, size_t max)
{
	const char *dp = doctor_device_plugin_dir(c);
	char names[8][256];
	size_t n = doctor_dir_names(c, dp, gpu_socket, names, ELEMENTSOF(names));

	if (n > max)
		n = max;
	for (size_t k = 0; k < n; k++) {
		char rel[600];
		_cleanup_free_ char *p = NULL;
		struct stat st;

		snprintf(out[k].name, sizeof(out[k].name), "%s", names[k]);
		for (size_t i = 0; i < ELEMENTSOF(gpu_sockets); i++)
			if (!strncmp(names[k], gpu_sockets[i].prefix, strlen(gpu_sockets[i].prefix)))
				out[k].who = gpu_sockets[i].who;
		snprintf(rel, sizeof(rel), "%s/%s", dp, names[k]);
		p = doctor_path(c, rel);
		out[k].mtime = p && stat(p, &st) == 0 ? st.st_mtime : 0;
	}
	return n;
}

/* When a pod's plugin container started (RFC 3339 compares as text), "" unknown. */
static const char *started(const json_t *pod)
{
	size_t i;
	json_t *cs;

	json_array_foreach (json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
		const char *t = json_string_value(
		    json_object_get(json_object_get(json_object_get(cs, "state"), "running"), "startedAt"));

		if (t)
			return t;
	}
	return json_string_value(json_object_get(json_object_get(pod, "status"), "startTime")) ?: "";
}

/* Whose device IDs kubelet keeps for nvidia.com/gpu: GKE names devices nvidia<N>, NVIDIA's plugin and gpulet
 * GPU-<uuid>. */
static void checkpoint_owner(struct doctor_ctx *c, struct doctor_finding *f)
{
	const struct checkpoint_registered *reg;

	if (doctor_need_checkpoint(c) <= 0 || !(reg = checkpoint_find_resource(c->ckpt, "nvidia.com/gpu")) ||
	    !reg->n_ids)
		return;
	doctor_evidence(f, "kubelet_internal_checkpoint registers nvidia.com/gpu devices like %s: %s",
			reg->device_ids[0],
			!strncmp(reg->device_ids[0], "GPU-", 4)     ? "UUIDs, as NVIDIA's plugin and gpulet name them"
			: !strncmp(reg->device_ids[0], "nvidia", 6) ? "nvidia<N>, as GKE's plugin names them"
								    : "names of another plugin");
}

int doctor_check_duplicate_plugins(struct doctor_ctx *c)
{
	struct seen_socket socks[8];
	const json_t *pods[8], *last = NULL;
	size_t n_socks = sockets(c, socks, ELEMENTSOF(socks)), n_pods = 0, i, newest = 0;
	struct plugin_ds ds;
	char fix[768];
	struct doctor_finding *f;
	json_t *pod;

	json_array_foreach (c->pods, i, pod)
		if (cluster_pod_here(c, pod) && cluster_component(pod) == NV_DEVICE_PLUGIN &&
		    !doctor_pod_is_terminating(pod) && n_pods < ELEMENTSOF(pods))
			pods[n_pods++] = pod;
	if (n_pods < 2 && n_socks < 2)
		return 0;
	for (size_t k = 0; k < n_pods; k++)
		if (!last || strcmp(started(pods[k]), started(last)) > 0)
			last = pods[k];
	for (size_t k = 1; k < n_socks; k++)
		if (socks[k].mtime > socks[newest].mtime)
			newest = k;
	cluster_plugin_ds(c, &ds);
	snprintf(fix, sizeof(fix),
		 "keep one device plugin per node: delete the DaemonSet you do not want (kubectl -n NAMESPACE delete "
		 "daemonset NAME), or with the GPU Operator set devicePlugin.enabled=false when you run your own "
		 "(%s/%s is one of them); then restart the one you keep so it registers again",
		 ds.ns, ds.name);
	f = doctor_report(c, "plugin.duplicate", DOCTOR_FAIL, LINK_PLUGIN, fix,
			  "two device plugins register nvidia.com/gpu on this node: kubelet keeps only the one that "
			  "registered last%s%s, drops the other's, and swaps whenever one restarts",
			  last ? " (" : "", last ? cluster_pod_name(last) : "");
	for (size_t k = 0; k < n_pods; k++)
		doctor_evidence(f, "pod %s/%s runs a device plugin here, started %s%s", cluster_pod_ns(pods[k]),
				cluster_pod_name(pods[k]), *started(pods[k]) ? started(pods[k]) : "(unknown)",
				pods[k] == last ? ": registered last, kubelet keeps it" : "");
	for (size_t k = 0; k < n_socks; k++)
		doctor_evidence(f, "%s/%s (%s)%s", doctor_device_plugin_dir(c), socks[k].name, socks[k].who,
				n_socks > 1 && k == newest ? ": the newest socket, the last to register" : "");
	checkpoint_owner(c, f);
	return 0;
}
