/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods that can never fit on this node (wrong resource name, untolerated GPU taint, more GPUs than it
 * has, replicas over one under failRequestsGreaterThanOne) and pods that get GPUs they did not ask
 * for (NVIDIA_VISIBLE_DEVICES in a pod under the nvidia runtime) — docs/reference/cluster-events.md §4.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doctor/cluster.h"
#include "doctor/pci.h"
#include "doctor/runtime_find.h"
#include "nvml/node.h"
#include "parse/toml.h"
#include "util/macro.h"

static long long qty(const json_t *v)
{
	return json_is_string(v) ? atoll(json_string_value(v)) : json_is_integer(v) ? json_integer_value(v) : 0;
}

/* What a container asks for: limits, else requests (extended resources must have equal ones). */
static long long ctr_request(const json_t *ctr, const char *res)
{
	const json_t *r = json_object_get(ctr, "resources");
	const json_t *v = json_object_get(json_object_get(r, "limits"), res);

	return qty(v ? v : json_object_get(json_object_get(r, "requests"), res));
}

/* The pod's effective request: sum of containers, at least the largest init container. */
static long long pod_request(const json_t *pod, const char *res)
{
	const json_t *spec = json_object_get(pod, "spec");
	long long sum = 0, init = 0;
	size_t i;
	json_t *ctr;

	json_array_foreach (json_object_get(spec, "containers"), i, ctr)
		sum += ctr_request(ctr, res);
	json_array_foreach (json_object_get(spec, "initContainers"), i, ctr)
		if (ctr_request(ctr, res) > init)
			init = ctr_request(ctr, res);
	return sum > init ? sum : init;
}

static bool pending(const json_t *pod)
{
	const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

	return !doctor_pod_is_terminating(pod) && (!phase || streq(phase, "Pending"));
}

/*
 * A near miss of nvidia.com/gpu (nvidia.com/gpus, nvidia.com/GPU, nvidia.com/gpu.count) that this node does
 * not advertise. Other nvidia.com/ names are left alone: MIG profiles, renamed shared resources and
 * the KubeVirt sandbox plugin's per-model names live on other nodes (docs/reference/cluster-events.md §4).
 */
static bool wrong_name(const struct doctor_ctx *c, const char *res)
{
	const json_t *cap = json_object_get(json_object_get(c->node_obj, "status"), "capacity");

	return !strncasecmp(res, "nvidia.com/gpu", 14) && !streq(res, "nvidia.com/gpu") &&
	       !streq(res, "nvidia.com/gpu.shared") && !json_object_get(cap, res);
}

static void pod_evidence(struct doctor_finding *f, const json_t *pod, const char *what)
{
	doctor_evidence(f, "pod %s/%s %s", cluster_pod_ns(pod), cluster_pod_name(pod), what);
}

static void wrong_resource(struct doctor_ctx *c, const json_t *pod)
{
	static const char *const lists[] = {"limits", "requests"};
	size_t i;
	json_t *ctr;

	json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), i, ctr)
		for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
			const char *res;
			json_t *v;
			char what[320];

			json_object_foreach (json_object_get(json_object_get(ctr, "resources"), lists[l]), res, v) {
				if (!wrong_name(c, res))
					continue;
				snprintf(what, sizeof(what),
					 "asks for %.100s: %.100s, which no NVIDIA device plugin advertises", lists[l],
					 res);
				pod_evidence(doctor_report_once(
						 c, "sched.wrong-resource", DOCTOR_FAIL, LINK_ALLOC,
						 "fix the resource name in the pod spec: nvidia.com/gpu (or the "
						 "nvidia.com/mig-<profile> / renamed shared resource the node lists "
						 "under kubectl describe node, Capacity)",
						 "a pod asks for a GPU resource name nothing advertises: it stays "
						 "Pending forever (FailedScheduling: Insufficient %s)",
						 res),
					     pod, what);
			}
		}
}

static bool tolerates(const json_t *pod, const json_t *taint)
{
	const char *key = json_string_value(json_object_get(taint, "key")) ?: "";
	const char *effect = json_string_value(json_object_get(taint, "effect")) ?: "";
	size_t i;
	json_t *t;

	json_array_foreach (json_object_get(json_object_get(pod, "spec"), "tolerations"), i, t) {
		const char *k = json_string_value(json_object_get(t, "key")) ?: "";
		const char *op = json_string_value(json_object_get(t, "operator")) ?: "Equal";
		const char *e = json_string_value(json_object_get(t, "effect")) ?: "";
		const char *v = json_string_value(json_object_get(t, "value")) ?: "";
		const char *tv = json_string_value(json_object_get(taint, "value")) ?: "";

		/* k8s.io/api/core/v1 toleration.go ToleratesTaint */
		if ((*e && !streq(e, effect)) || (*k && !streq(k, key)) || (!*k && !streq(op, "Exists")))
			continue;
		if (streq(op, "Exists") || streq(v, tv))
			return true;
	}
	return false;
}

static void untolerated_taint(struct doctor_ctx *c, const json_t *pod)
{
	size_t i;
	json_t *t;

	json_array_foreach (json_object_get(json_object_get(c->node_obj, "spec"), "taints"), i, t) {
		const char *key = json_string_value(json_object_get(t, "key")) ?: "";
		const char *effect = json_string_value(json_object_get(t, "effect")) ?: "";
		char what[320];

		if (strncmp(key, "nvidia.com/", 11) || streq(effect, "PreferNoSchedule") || tolerates(pod, t))
			continue;
		snprintf(what, sizeof(what), "has no toleration for taint %.100s=%.60s:%.30s", key,
			 json_string_value(json_object_get(t, "value")) ?: "", effect);
		pod_evidence(doctor_report_once(c, "sched.taint-not-tolerated", DOCTOR_FAIL, LINK_ALLOC,
						"add a toleration to the GPU pods: tolerations: [{key: nvidia.com/gpu, "
						"operator: Exists, effect: NoSchedule}] (or enable the "
						"ExtendedResourceToleration admission plugin, which adds it for pods "
						"requesting nvidia.com/gpu)",
						"GPU pods do not tolerate the GPU node's taint: they stay Pending "
						"(FailedScheduling: untolerated taint)"),
			     pod, what);
	}
}

/*
 * The GPUs the node has, whatever it advertises now: on its PCI bus, else what NVML lists. A pod that
 * asks for no more than that fits the hardware: when the node advertises fewer, the node lost GPUs
 * (check_pci.c says why) and lowering the request is the wrong advice (docs/reference/doctor-classes.md §2).
 */
static long long node_gpus(struct doctor_ctx *c)
{
	long long pci = (long long)doctor_pci_gpu_count(c);
	long long nvml = doctor_need_nvml(c) > 0 ? (long long)c->node->n_gpus : 0;

	return pci > nvml ? pci : nvml;
}

/* The finding that says why the node has fewer GPUs than its hardware, NULL unknown. */
static const struct doctor_finding *why_lost(const struct doctor_ctx *c)
{
	for (size_t k = 0; k < c->n_findings; k++)
		if (c->findings[k].severity == DOCTOR_FAIL &&
		    (c->findings[k].link == LINK_DRIVER || c->findings[k].link == LINK_GPU ||
		     c->findings[k].link == LINK_PLUGIN))
			return &c->findings[k];
	return NULL;
}

static void lost_gpus(struct doctor_ctx *c, const json_t *pod, const char *res, long long want, long long have,
		      long long hw)
{
	const struct doctor_finding *why = why_lost(c);
	struct doctor_finding *f;
	char fix[700], what[300];

	snprintf(fix, sizeof(fix),
		 "bring the node's GPUs back (%s%s), not the request down: the pod fits the node's %lld GPU(s) once "
		 "they are advertised",
		 why ? "fix "
		     : "see why the device plugin advertises fewer: gpulet doctor's driver, gpu and plugin "
		       "findings",
		 why ? why->id : "", hw);
	f = doctor_report_once(c, "sched.node-lost-gpus", DOCTOR_FAIL, LINK_ALLOC, fix,
			       "a pod asks for no more GPUs than the node has, but the node advertises fewer: it stays "
			       "Pending (FailedScheduling: Insufficient %s) until the node's GPUs are back",
			       res);
	snprintf(what, sizeof(what), "asks for %lld %.100s; the node advertises %lld of the %lld GPU(s) it has", want,
		 res, have, hw);
	pod_evidence(f, pod, what);
	if (why && f->n_evidence == 1)
		doctor_evidence(f, "explained by %s: %s", why->id, why->summary);
}

static void too_many(struct doctor_ctx *c, const json_t *pod)
{
	const json_t *cap = json_object_get(json_object_get(c->node_obj, "status"), "capacity");
	const char *res;
	json_t *v;

	json_object_foreach ((json_t *)cap, res, v) {
		long long want = pod_request(pod, res), have = qty(v), hw;
		char what[200];

		if (strncmp(res, "nvidia.com/", 11) || want <= have)
			continue;
		hw = streq(res, "nvidia.com/gpu") ? node_gpus(c) : 0;
		if (want <= hw) {
			lost_gpus(c, pod, res, want, have, hw);
			continue;
		}
		snprintf(what, sizeof(what), "asks for %lld %.100s; the node has %lld", want, res, have);
		pod_evidence(doctor_report_once(c, "sched.too-many-gpus", DOCTOR_FAIL, LINK_ALLOC,
						"lower the pod's GPU request to what one node has (a pod cannot span "
						"nodes), or add a node with more GPUs",
						"a pod asks for more GPUs than the node has in all: it can never be "
						"scheduled (FailedScheduling: Insufficient %s)",
						res),
			     pod, what);
	}
}

/* sharing.*.failRequestsGreaterThanOne: the plugin's Allocate refuses >1 replica (internal/rm/rm.go). */
static void replicas_over_one(struct doctor_ctx *c, const json_t *pod, const struct plugin_cfg *p)
{
	const char *label = cluster_node_label(c, "nvidia.com/gpu.sharing-strategy");
	const char *replicas = cluster_node_label(c, "nvidia.com/gpu.replicas");
	bool mps_label = label && streq(label, "mps") && replicas && atoll(replicas) > 1;
	static const char *const res[] = {"nvidia.com/gpu", "nvidia.com/gpu.shared"};
	char what[200];

	if (!(p->fail_gt_one && p->replicas > 1) && !mps_label)
		return;
	for (size_t k = 0; k < ELEMENTSOF(res); k++) {
		long long want = pod_request(pod, res[k]);
		struct doctor_finding *f;

		if (want <= 1)
			continue;
		snprintf(what, sizeof(what), "asks for %lld %s", want, res[k]);
		f = doctor_report_once(
		    c, "sched.replicas-over-one", DOCTOR_FAIL, LINK_ALLOC,
		    "request 1 shared GPU per container (more replicas of one GPU give no more "
		    "compute), or set failRequestsGreaterThanOne: false in the plugin's sharing config",
		    "GPUs are shared with failRequestsGreaterThanOne: a request for more than one "
		    "replica is refused at admission (UnexpectedAdmissionError: maximum request size "
		    "for shared resources is 1)");
		if (f->n_evidence == 0 && p->sharing[0])
			doctor_evidence(f, "%s: sharing.%s, replicas %lld, failRequestsGreaterThanOne true",
					p->config_src[0] ? p->config_src : p->pod, p->sharing, p->replicas);
		else if (f->n_evidence == 0)
			doctor_evidence(
			    f,
			    "--node labels: nvidia.com/gpu.sharing-strategy=mps, nvidia.com/gpu.replicas=%s "
			    "(MPS refuses >1 unless failRequestsGreaterThanOne: false)",
			    replicas);
		pod_evidence(f, pod, what);
	}
}

/* A pod that requests no GPU but names devices in NVIDIA_VISIBLE_DEVICES, under the nvidia runtime. */
static void visible_devices(struct doctor_ctx *c, const json_t *pod, const struct rt_facts *rf)
{
	const char *nvidia = c->o->runtime_class ? c->o->runtime_class : "nvidia";
	const char *cls = json_string_value(json_object_get(json_object_get(pod, "spec"), "runtimeClassName"));
	const json_t *rc = cls ? cluster_object(c, "RuntimeClass", NULL, cls) : NULL;
	const char *h = cls  ? json_string_value(json_object_get(rc, "handler")) ?: cls
			: rf ? rf->default_handler
			     : NULL;
	size_t i;
	json_t *ctr;

	if (doctor_pod_requests_gpu(pod) || doctor_pod_is_terminating(pod) || cluster_component(pod) != NV_NONE || !h ||
	    !(streq(h, nvidia) || (rf && rt_handler(c, h) == RTH_NVIDIA)))
		return;
	json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), i, ctr) {
		const char *v = cluster_env(ctr, "NVIDIA_VISIBLE_DEVICES");
		char what[320];

		/* void / none / empty: the hook injects no GPU (docs/reference/cluster-events.md §4) */
		if (!v || !*v || streq(v, "void") || streq(v, "none"))
			continue;
		snprintf(what, sizeof(what),
			 "container %.60s sets NVIDIA_VISIBLE_DEVICES=%.60s, requests no GPU, runs under runtime "
			 "handler %.60s",
			 json_string_value(json_object_get(ctr, "name")) ?: "?", v, h);
		pod_evidence(
		    doctor_report_once(c, "alloc.visible-devices-all", DOCTOR_FAIL, LINK_ALLOC,
				       "remove NVIDIA_VISIBLE_DEVICES from pods that request no GPU (set it to "
				       "void), and run the plugin with a CDI strategy or "
				       "accept-nvidia-visible-devices-envvar-when-unprivileged = false in the "
				       "toolkit's config so only allocated GPUs are injected",
				       "a pod that requests no GPU gets GPUs through NVIDIA_VISIBLE_DEVICES under the "
				       "nvidia runtime: it uses GPUs the scheduler gave to other pods"),
		    pod, what);
	}
}

int doctor_check_cluster(struct doctor_ctx *c)
{
	struct plugin_cfg p;
	struct rt_facts rf;
	int have_rf;
	size_t i;
	json_t *pod;

	cluster_find_node(c);

	if (!c->pods && !c->o->events_file) {
		doctor_skip(c, "no --pods / --events: what the cluster says was not read");
		return 0;
	}
	have_rf = rt_facts_get(c, &rf);
	if (have_rf < 0)
		return have_rf;
	cluster_plugin_cfg(c, &p);
	json_array_foreach (c->pods, i, pod) {
		if (!cluster_pod_here(c, pod))
			continue;
		if (pending(pod)) {
			wrong_resource(c, pod);
			if (c->node_obj) {
				untolerated_taint(c, pod);
				too_many(c, pod);
			}
		}
		if (!json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
			replicas_over_one(c, pod, &p);
		visible_devices(c, pod, have_rf > 0 ? &rf : NULL);
	}
	doctor_shared_gpu_oom(c);
	doctor_cluster_events(c);
	return 0;
}
