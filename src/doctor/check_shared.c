/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod that ran out of GPU memory on a GPU it shares by time-slicing (docs/reference/doctor-classes.md
 * §10): time-slicing gives each replica the whole GPU's memory with no limit, so a training job beside a
 * serving pod takes the memory the server needs, and the server dies with "CUDA out of memory" although
 * its own request was right. The co-tenant is named from kubelet's checkpoint: the other pods holding
 * replicas (<uuid>::<n>) of the same GPU.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor/cluster.h"
#include "kube/checkpoint.h"
#include "util/macro.h"

/* What PyTorch, TensorFlow/XLA, JAX and the CUDA runtime print when an allocation on the GPU fails. */
static const char *const oom_words[] = {
    "CUDA out of memory",       "CUDA error: out of memory", "OutOfMemoryError",
    "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation", "RESOURCE_EXHAUSTED: Out of memory",
};

/* The termination message (kubelet puts the log's tail there with FallbackToLogsOnError) that says CUDA OOM. */
static bool cuda_oom(const json_t *pod, char *ctr, size_t csize, char *msg, size_t msize)
{
	static const char *const states[] = {"state", "lastState"};
	size_t i;
	json_t *cs;

	json_array_foreach (json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs)
		for (size_t s = 0; s < ELEMENTSOF(states); s++) {
			const char *m = json_string_value(
			    json_object_get(json_object_get(json_object_get(cs, states[s]), "terminated"), "message"));

			for (size_t w = 0; m && w < ELEMENTSOF(oom_words); w++) {
				const char *hit = strstr(m, oom_words[w]);

				if (!hit)
					continue;
				while (hit > m && hit[-1] != '\n') /* the whole line, as the log has it */
					hit--;
				snprintf(ctr, csize, "%s", json_string_value(json_object_get(cs, "name")) ?: "?");
				snprintf(msg, msize, "%.*s", (int)strcspn(hit, "\n"), hit);
				return true;
			}
		}
	return false;
}

static bool same_gpu(const char *a, const char *b)
{
	size_t la = strcspn(a, ":"), lb = strcspn(b, ":"); /* <uuid>::<replica> */

	return la == lb && !strncmp(a, b, la);
}

/* Checkpoint entries of other pods that hold a replica of a GPU one of mine holds; evidence for each. */
static size_t cotenants(struct doctor_ctx *c, const char *uid, struct doctor_finding *f)
{
	size_t n = 0;

	for (size_t i = 0; i < c->ckpt->n_entries; i++) {
		const struct checkpoint_entry *mine = &c->ckpt->entries[i];

		if (!streq(mine->pod_uid, uid))
			continue;
		for (size_t j = 0; j < c->ckpt->n_entries; j++) {
			const struct checkpoint_entry *other = &c->ckpt->entries[j];
			const json_t *op;

			if (streq(other->pod_uid, uid))
				continue;
			for (size_t a = 0; a < mine->n_ids; a++)
				for (size_t b = 0; b < other->n_ids; b++) {
					if (!same_gpu(mine->device_ids[a], other->device_ids[b]))
						continue;
					op = cluster_pod_where(c, "metadata", "uid", other->pod_uid);
					n++;
					if (f)
						doctor_evidence(f, "GPU %.*s: %s, and pod %s%s%s (container %s) %s",
								(int)strcspn(mine->device_ids[a], ":"),
								mine->device_ids[a], mine->device_ids[a],
								op ? cluster_pod_ns(op) : "", op ? "/" : "",
								op ? cluster_pod_name(op) : other->pod_uid,
								other->container, other->device_ids[b]);
					a = mine->n_ids;
					break;
				}
		}
	}
	return n;
}

void doctor_shared_gpu_oom(struct doctor_ctx *c)
{
	struct plugin_cfg p;
	size_t i;
	json_t *pod;

	if (!c->pods || doctor_need_checkpoint(c) <= 0)
		return;
	cluster_plugin_cfg(c, &p);
	json_array_foreach (c->pods, i, pod) {
		const char *uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
		char ctr[128], msg[300];
		struct doctor_finding *f;

		if (!uid || !cluster_pod_here(c, pod) || !cuda_oom(pod, ctr, sizeof(ctr), msg, sizeof(msg)) ||
		    !cotenants(c, uid, NULL))
			continue;
		f = doctor_report_once(c, "alloc.shared-gpu-oom", DOCTOR_FAIL, LINK_ALLOC,
				       "give the pod that ran out a GPU of its own (a resource without time-slicing, "
				       "e.g. request nvidia.com/gpu "
				       "where the shared one is renamed nvidia.com/gpu.shared), a MIG instance, or "
				       "share by MPS (sharing.mps "
				       "caps each client's memory); or move the co-tenant to another GPU",
				       "a pod ran out of GPU memory on a GPU it shares by time-slicing with another "
				       "pod: time-slicing puts no "
				       "limit on each replica's memory, so the co-tenant took what this pod needed");
		doctor_evidence(f, "pod %s/%s container %s: %s", cluster_pod_ns(pod), cluster_pod_name(pod), ctr, msg);
		cotenants(c, uid, f);
		if (p.sharing[0])
			doctor_evidence(f, "%s: sharing.%s, %lld replicas per GPU",
					p.config_src[0] ? p.config_src : p.pod, p.sharing, p.replicas);
	}
}
