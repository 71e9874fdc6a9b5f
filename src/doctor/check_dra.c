/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA chain for gpu.nvidia.com (docs/reference/doctor-classes.md §14, docs/reference/dra.md): the driver
 * registers with kubelet through <root-dir>/plugins_registry/gpu.nvidia.com-reg.sock, publishes this
 * node's ResourceSlices, prepares each claim allocated here (its checkpoint, §7) and writes the claim's
 * CDI spec (§8) that the runtime reads. Runs only when the driver is in play: its registration socket or
 * plugin dir on the node, or its claims and slices in --pods.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/kubelet_root.h"

#define DRA_DRIVER "gpu.nvidia.com"
/* gpulet's own checkpoint and its claim states (docs/reference/dra.md §7, src/dra/checkpoint.h) */
#define DRA_CHECKPOINT      "gpulet-checkpoint.json"
#define DRA_STATE_COMPLETED "PrepareCompleted"
/* where `gpulet dra` writes a claim's spec by default (docs/reference/dra.md §8, §11) */
#define DRA_CDI_ROOT "/var/run/cdi"

struct dra_node {
	char reg[600];    /* <root-dir>/plugins_registry/gpu.nvidia.com-reg.sock */
	char dir[600];    /* <root-dir>/plugins/gpu.nvidia.com */
	bool reg_exists;  /* the registration socket is there */
	bool dir_exists;  /* the plugin dir is there: the driver ran here */
	json_t *ckpt;     /* its checkpoint's "claims", NULL none */
	json_t *ckpt_doc; /* owns ckpt */
};

static bool node_exists(struct doctor_ctx *c, const char *path, struct stat *st)
{
	_cleanup_free_ char *p = doctor_path(c, path);

	return p && stat(p, st) == 0;
}

static void dra_node_load(struct doctor_ctx *c, struct dra_node *d)
{
	const char *kd = doctor_kubelet_dir(c);
	char cp[700];
	_cleanup_free_ char *p = NULL;
	struct stat st;

	snprintf(d->reg, sizeof(d->reg), "%s/plugins_registry/%s-reg.sock", kd, DRA_DRIVER);
	snprintf(d->dir, sizeof(d->dir), "%s/plugins/%s", kd, DRA_DRIVER);
	d->reg_exists = node_exists(c, d->reg, &st);
	d->dir_exists = node_exists(c, d->dir, &st) && S_ISDIR(st.st_mode);
	snprintf(cp, sizeof(cp), "%s/%s", d->dir, DRA_CHECKPOINT);
	p = doctor_path(c, cp);
	d->ckpt_doc = p ? json_load_file(p, 0, NULL) : NULL;
	d->ckpt = json_object_get(d->ckpt_doc, "claims");
	if (!json_is_object(d->ckpt))
		d->ckpt = NULL;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

static bool is_kind(const json_t *o, const char *kind)
{
	const char *k = json_string_value(json_object_get(o, "kind"));

	return k && streq(k, kind);
}

/* The results of a claim's allocation that gpu.nvidia.com gives from this node's pool (node NULL: any). */
static bool claim_allocated_here(const json_t *claim, const char *node)
{
	json_t *results = json_object_get(
	    json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"), "devices"), "results");
	json_t *r;
	size_t i;

	json_array_foreach (results, i, r) {
		const char *drv = json_string_value(json_object_get(r, "driver"));
		const char *pool = json_string_value(json_object_get(r, "pool"));

		if (drv && streq(drv, DRA_DRIVER) && (!node || (pool && streq(pool, node))))
			return true;
	}
	return false;
}

static bool slice_of(const json_t *slice, const char *node)
{
	const char *drv = str_at(slice, "spec", "driver");
	const char *on = str_at(slice, "spec", "nodeName");

	return drv && streq(drv, DRA_DRIVER) && (!node || (on && streq(on, node)));
}

/* The ResourceSlices and ResourceClaims of gpu.nvidia.com that --pods holds (any node). */
static size_t cluster_dra_objects(const struct doctor_ctx *c, size_t *n_slices)
{
	size_t i, n = 0;
	json_t *o;

	*n_slices = 0;
	json_array_foreach (c->pods, i, o) {
		if (is_kind(o, "ResourceSlice") && slice_of(o, NULL)) {
			(*n_slices)++;
			n++;
		} else if (is_kind(o, "ResourceClaim") && claim_allocated_here(o, NULL))
			n++;
	}
	return n;
}

/* The driver's registration socket: missing, or on the live node nobody answers it. */
static void check_registered(struct doctor_ctx *c, const struct dra_node *d)
{
	struct doctor_finding *f;

	if (d->reg_exists || (!d->dir_exists && !d->ckpt_doc))
		return;
	f = doctor_report(c, "dra.not-registered", DOCTOR_FAIL, LINK_PLUGIN,
			  "the DRA driver's kubelet plugin is not running here: check its DaemonSet is scheduled on "
			  "this node and mounts kubelet's plugins_registry and plugins dirs (kubectl -n NAMESPACE logs "
			  "ds/NAME); restart it so it registers again",
			  "the DRA driver for " DRA_DRIVER " ran on this node but is not registered with kubelet: "
			  "pods with ResourceClaims for its GPUs stay in ContainerCreating");
	doctor_evidence(f, "%s does not exist", d->reg);
	doctor_evidence(f, "%s exists%s", d->dir, d->ckpt ? " with its checkpoint " DRA_CHECKPOINT : "");
}

/* No slice for this node in what --pods lists: the scheduler can allocate none of its GPUs. */
static void check_slices(struct doctor_ctx *c, const struct dra_node *d, size_t n_objs, size_t n_slices)
{
	const char *node = cluster_node_name(c);
	struct doctor_finding *f;
	size_t i;
	json_t *o;

	if (!node || !n_objs || !d->reg_exists)
		return;
	json_array_foreach (c->pods, i, o)
		if (is_kind(o, "ResourceSlice") && slice_of(o, node))
			return;
	f = doctor_report(c, "dra.no-slices", DOCTOR_FAIL, LINK_PLUGIN,
			  "the driver publishes its slices through the API server: check its logs for the slice "
			  "writes (kubectl -n NAMESPACE logs ds/NAME), its RBAC on resourceslices, and that it runs "
			  "with this node's name (NODE_NAME); kubectl get resourceslices --field-selector "
			  "spec.nodeName=NODE",
			  "no ResourceSlice of " DRA_DRIVER " for node %s: the scheduler sees none of its GPUs, so "
			  "claims for them stay unallocated",
			  node);
	doctor_evidence(f, "%s is registered here", d->reg);
	doctor_evidence(f, "--pods lists %zu ResourceSlice(s) of " DRA_DRIVER ", none with spec.nodeName %s", n_slices,
			node);
}

/* The pod of claim's reservedFor that runs here and waits in ContainerCreating, NULL none. */
static const json_t *waiting_pod(const struct doctor_ctx *c, const json_t *claim)
{
	json_t *reserved = json_object_get(json_object_get(claim, "status"), "reservedFor"), *r, *pod, *cs;
	size_t i, j, k;

	json_array_foreach (reserved, i, r)
		json_array_foreach (c->pods, j, pod) {
			const char *uid = json_string_value(json_object_get(r, "uid"));
			const char *puid = str_at(pod, "metadata", "uid");

			if (!uid || !puid || !streq(uid, puid) || !cluster_pod_here(c, pod))
				continue;
			json_array_foreach (json_object_get(json_object_get(pod, "status"), "containerStatuses"), k,
					    cs) {
				const char *w = json_string_value(json_object_get(
				    json_object_get(json_object_get(cs, "state"), "waiting"), "reason"));

				if (w && streq(w, "ContainerCreating"))
					return pod;
			}
		}
	return NULL;
}

static const char *ckpt_state(const struct dra_node *d, const char *uid)
{
	return str_at(d->ckpt, uid, "state");
}

/* A claim allocated from this node's pool, its pod stuck creating, that the driver never prepared. */
static void check_unprepared(struct doctor_ctx *c, const struct dra_node *d)
{
	const char *node = cluster_node_name(c);
	size_t i;
	json_t *claim;

	if (!node)
		return;
	json_array_foreach (c->pods, i, claim) {
		const char *uid = str_at(claim, "metadata", "uid"), *state;
		const json_t *pod;
		struct doctor_finding *f;

		if (!is_kind(claim, "ResourceClaim") || !uid || !claim_allocated_here(claim, node) ||
		    !(pod = waiting_pod(c, claim)))
			continue;
		state = ckpt_state(d, uid);
		if (state && streq(state, DRA_STATE_COMPLETED))
			continue;
		f = doctor_report_once(
		    c, "dra.claim-not-prepared", DOCTOR_FAIL, LINK_ALLOC,
		    "kubelet asks the driver to prepare a claim before the pod's containers start: read the "
		    "driver's log for this claim's uid (kubectl -n NAMESPACE logs ds/NAME) and the pod's events "
		    "(kubectl describe pod); a driver that is not registered or failed the prepare leaves it so",
		    "a ResourceClaim allocated to this node is not prepared by the DRA driver: its pod waits in "
		    "ContainerCreating");
		doctor_evidence(f, "claim %s/%s (uid %s) is allocated from pool %s of " DRA_DRIVER,
				str_at(claim, "metadata", "namespace") ?: "", str_at(claim, "metadata", "name") ?: "",
				uid, node);
		doctor_evidence(f, "pod %s/%s waits in ContainerCreating", cluster_pod_ns(pod), cluster_pod_name(pod));
		doctor_evidence(f, "%s/%s: %s", d->dir, DRA_CHECKPOINT,
				!d->ckpt ? "missing or unreadable"
				: state  ? "the claim is only PrepareStarted"
					 : "the claim is not there");
	}
}

/* A claim the checkpoint says is prepared whose CDI spec is gone (a wiped /var/run/cdi, kubernetes#141433). */
static void check_specs(struct doctor_ctx *c, const struct dra_node *d)
{
	const char *uid;
	json_t *rec;

	json_object_foreach (d->ckpt, uid, rec) {
		const char *state = json_string_value(json_object_get(rec, "state"));
		char spec[600];
		struct stat st;
		struct doctor_finding *f;

		if (!state || !streq(state, DRA_STATE_COMPLETED))
			continue;
		snprintf(spec, sizeof(spec), "%s/k8s.%s-claim_%s.yaml", DRA_CDI_ROOT, DRA_DRIVER, uid);
		if (node_exists(c, spec, &st))
			continue;
		f = doctor_report_once(c, "dra.cdi-spec-missing", DOCTOR_FAIL, LINK_CDI,
				       "restart the DRA driver's pod on this node: kubelet prepares every running "
				       "pod's claims again and the driver writes their CDI specs anew (docs/reference/"
				       "dra.md §7); a pod that failed meanwhile needs deleting once",
				       "a claim the DRA driver prepared has no CDI spec: its containers fail with an "
				       "unresolvable CDI device (CreateContainerError)");
		doctor_evidence(f, "claim %s/%s (uid %s) is PrepareCompleted in %s/%s",
				json_string_value(json_object_get(rec, "namespace")) ?: "",
				json_string_value(json_object_get(rec, "name")) ?: "", uid, d->dir, DRA_CHECKPOINT);
		doctor_evidence(f, "%s does not exist", spec);
	}
}

/* The device plugin and DRA both hand out this node's GPUs: the two do not see each other's grants. */
static void check_both(struct doctor_ctx *c, const struct dra_node *d)
{
	const char *dp = doctor_device_plugin_dir(c);
	char rel[700];
	struct stat st;
	struct doctor_finding *f;

	snprintf(rel, sizeof(rel), "%s/nvidia-gpu.sock", dp);
	if (!d->reg_exists || !node_exists(c, rel, &st))
		return;
	f = doctor_report(c, "dra.with-device-plugin", DOCTOR_WARN, LINK_PLUGIN,
			  "run one of the two on this node: disable the device plugin where DRA serves the GPUs "
			  "(GPU Operator: devicePlugin.enabled=false, or a nodeSelector that keeps its DaemonSet off "
			  "DRA nodes), or keep DRA to other devices",
			  "the device plugin and the DRA driver both advertise this node's GPUs: neither knows what "
			  "the other granted, so one GPU can go to two pods");
	doctor_evidence(f, "%s: the device plugin's socket (nvidia.com/gpu)", rel);
	doctor_evidence(f, "%s: the DRA driver's registration (" DRA_DRIVER ")", d->reg);
}

bool doctor_dra_registered(struct doctor_ctx *c)
{
	char reg[600];
	struct stat st;

	snprintf(reg, sizeof(reg), "%s/plugins_registry/%s-reg.sock", doctor_kubelet_dir(c), DRA_DRIVER);
	return node_exists(c, reg, &st);
}

int doctor_check_dra(struct doctor_ctx *c)
{
	struct dra_node d = {};
	size_t n_slices, n_objs = cluster_dra_objects(c, &n_slices);

	dra_node_load(c, &d);
	if (!d.reg_exists && !d.dir_exists && !n_objs) { /* no DRA driver here: nothing to check */
		json_decref(d.ckpt_doc);
		return 0;
	}
	check_registered(c, &d);
	check_slices(c, &d, n_objs, n_slices);
	check_unprepared(c, &d);
	check_specs(c, &d);
	check_both(c, &d);
	if (!doctor_find(c, "dra.not-registered") && !doctor_find(c, "dra.no-slices"))
		doctor_report(c, "dra.ok", DOCTOR_OK, LINK_PLUGIN, NULL, "DRA driver " DRA_DRIVER " registered in %s",
			      d.reg);
	json_decref(d.ckpt_doc);
	return 0;
}
