/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --events (kubectl get events -A -o json): the Warning events of GPU pods mapped onto the chain
 * (docs/reference/cluster-events.md §5 lists the reasons and message texts, with their sources).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor/cluster.h"
#include "kube/k8sobj.h"
#include "util/macro.h"

static const struct event_row {
	const char *reason;
	const char *needle; /* in the message; "" any */
	const char *id;
	enum doctor_link link;
	const char *meaning;
	const char *fix;
} event_rows[] = {
    {"FailedScheduling", "Insufficient nvidia.com/", "events.failed-scheduling", LINK_PLUGIN,
     "no node has enough free GPUs of that resource: the plugin does not advertise them here, they are all "
     "allocated (or held by gone pods), or the request is larger than a node",
     "kubectl describe node: Capacity/Allocatable nvidia.com/gpu; gpulet doctor's plugin.* and alloc.* findings"},
    {"FailedScheduling", "untolerated taint", "events.failed-scheduling", LINK_ALLOC,
     "the GPU nodes' taint is not tolerated by the pod", "add the toleration for the node's nvidia.com/gpu taint"},
    {"FailedScheduling", "node affinity/selector", "events.failed-scheduling", LINK_PLUGIN,
     "the pod selects node labels no node has (GPU labels come from gpu-feature-discovery)",
     "kubectl get node --show-labels; check gpu-feature-discovery runs"},
    {"UnexpectedAdmissionError", "maximum request size for shared resources", "events.admission-error", LINK_ALLOC,
     "the plugin refused more than one shared-GPU replica (failRequestsGreaterThanOne)",
     "request 1 shared GPU per container"},
    {"UnexpectedAdmissionError", "requested number of devices unavailable", "events.admission-error", LINK_ALLOC,
     "kubelet's device manager had fewer healthy free devices than the scheduler counted: devices held by "
     "gone pods, or marked unhealthy after scheduling",
     "see gpulet doctor's alloc.* and gpu.* findings; delete the stuck pod and let it reschedule"},
    {"UnexpectedAdmissionError", "", "events.admission-error", LINK_PLUGIN, "the device plugin's Allocate failed",
     "kubectl logs of the device plugin pod at that time"},
    {"FailedCreatePodSandBox", "no runtime for", "events.runtime-failed", LINK_RUNTIME,
     "the pod's RuntimeClass handler is not a runtime containerd has",
     "add the runtime (nvidia-ctk runtime configure) or fix the RuntimeClass handler"},
    {"FailedCreatePodSandBox", "", "events.runtime-failed", LINK_RUNTIME,
     "the runtime could not create the pod sandbox", "journalctl -u containerd around the event's time"},
    {"Failed", "unresolvable CDI devices", "events.runtime-failed", LINK_CDI,
     "the runtime has CDI on but no spec defines the devices the plugin named",
     "regenerate the CDI spec into a dir the runtime reads (see gpulet doctor's cdi.* findings)"},
    {"Failed", "nvidia-container-cli", "events.runtime-failed", LINK_TOOLKIT,
     "the NVIDIA hook failed in the container's prestart (driver, NVML or toolkit)",
     "run gpulet doctor's driver, nvml and toolkit checks; the text after 'nvidia-container-cli:' says which"},
};

static const struct event_row *classify(const struct k8s_event *ev)
{
	for (size_t k = 0; k < ELEMENTSOF(event_rows); k++)
		if (streq(ev->reason, event_rows[k].reason) && strstr(ev->message, event_rows[k].needle))
			return &event_rows[k];
	return NULL;
}

/* The pod of --pods an event is about, NULL when it is not there (deleted). */
static const json_t *event_pod(const struct doctor_ctx *c, const struct k8s_event *ev)
{
	size_t i;
	json_t *pod;

	json_array_foreach (c->pods, i, pod)
		if (cluster_is_pod(pod) && streq(cluster_pod_name(pod), ev->name) && streq(cluster_pod_ns(pod), ev->ns))
			return pod;
	return NULL;
}

static bool running_well(const json_t *pod)
{
	const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
	char why[256];

	return phase && (streq(phase, "Running") || streq(phase, "Succeeded")) &&
	       cluster_pod_healthy(pod, why, sizeof(why));
}

static int load_events(struct doctor_ctx *c)
{
	struct gerr err = {0};
	int r;

	if (c->events || !c->o->events_file)
		return c->events ? 0 : -ENOENT;
	r = k8sobj_load(c->o->events_file, &c->events, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		doctor_evidence(doctor_report(c, "input.events-invalid", DOCTOR_WARN, LINK_ALLOC,
					      "kubectl get events -A -o json > events.json",
					      "--events file is not kubectl JSON; events are ignored"),
				"%s", err.msg);
	return r;
}

void doctor_cluster_events(struct doctor_ctx *c)
{
	size_t i;
	json_t *obj;

	if (load_events(c) < 0)
		return;
	json_array_foreach (c->events, i, obj) {
		struct k8s_event ev;
		const struct event_row *row;
		const json_t *pod;
		bool gpu;
		struct doctor_finding *f;

		if (!k8sobj_event(obj, &ev) || !streq(ev.type, "Warning") || !(row = classify(&ev)))
			continue;
		pod = c->pods ? event_pod(c, &ev) : NULL;
		gpu =
		    (pod && doctor_pod_requests_gpu(pod)) || strstr(ev.message, "nvidia") || strstr(ev.message, "CDI");
		/* with --pods, an event of a pod that is gone or now runs is history */
		if (!gpu || (c->pods && (!pod || running_well(pod) || !cluster_pod_here(c, pod))))
			continue;
		f = doctor_report_once(c, row->id, c->pods ? DOCTOR_FAIL : DOCTOR_WARN, row->link, row->fix,
				       "%s events of GPU pods: %s", row->reason, row->meaning);
		doctor_evidence(f, "%s %s/%s (x%lld): %.300s", ev.reason, ev.ns, ev.name, ev.count, ev.message);
	}
}
