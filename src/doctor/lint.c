/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet lint: the workload-side mistakes of the field guide, one table row per rule, each run on
 * every container (or pod) that asks for an nvidia.com resource.
 */
#include <stdio.h>
#include <string.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "kube/k8sobj.h"

struct lint_target {
	struct doctor_ctx *c;
	const struct lint_options *lo;
	const char *file;
	size_t doc;
	const json_t *obj;  /* the workload */
	const json_t *spec; /* its pod spec */
	const json_t *ctr;  /* the container, NULL for pod-level rules */
	char where[512];    /* "file doc N: Kind ns/name container C" */
};

struct lint_rule {
	const char *id;
	enum doctor_severity severity;
	bool per_container;
	const char *summary;
	const char *fix;
	/* returns true (and may add text to why) when the target breaks the rule */
	bool (*broken)(const struct lint_target *t, char *why, size_t size);
	/* node facts (--node, --root) that turn a possible problem into a certain one: then it fails */
	bool (*certain)(const struct lint_target *t);
	/* optional: a fix naming what this target asked for, instead of fix */
	void (*fix_for)(const struct lint_target *t, char *fix, size_t size);
};

static bool node_given(const struct lint_target *t)
{
	return t->lo->node != NULL;
}
static bool node_devs_closed(const struct lint_target *t)
{
	return t->lo->node_dev_nonworld;
}

/* ---- rules ---- */

/*
 * Extended resources are set in limits; requests alone are rejected or ignored (docs/reference/field-guide.md §5.2).
 * Returns the offending nvidia.com/<name> resource (why says how), NULL when none.
 */
static const char *requested_without_limit(const struct lint_target *t, char *why, size_t size)
{
	const json_t *res = json_object_get(t->ctr, "resources");
	const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)req, k, v) {
		json_t *l = json_object_get(lim, k);
		char a[32], b[32];

		if (strncmp(k, "nvidia.com/", 11))
			continue;
		if (!l) {
			snprintf(why, size, "requests %s without a limit", k);
			return k;
		}
		snprintf(a, sizeof(a), "%s", json_is_string(v) ? json_string_value(v) : "");
		snprintf(b, sizeof(b), "%s", json_is_string(l) ? json_string_value(l) : "");
		if (json_is_integer(v))
			snprintf(a, sizeof(a), "%lld", (long long)json_integer_value(v));
		if (json_is_integer(l))
			snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(l));
		if (!streq(a, b)) {
			snprintf(why, size, "%s request %s differs from limit %s", k, a, b);
			return k;
		}
	}
	return NULL;
}

static bool requests_only(const struct lint_target *t, char *why, size_t size)
{
	return requested_without_limit(t, why, size) != NULL;
}

/* The fix names what was requested (nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb, ...). */
static void requests_only_fix(const struct lint_target *t, char *fix, size_t size)
{
	char why[256];
	const char *res = requested_without_limit(t, why, sizeof(why));

	snprintf(fix, size,
		 "put %s under resources.limits with the same count (requests default to the limit; an extended "
		 "resource in requests alone is not allocated)",
		 res ? res : "the nvidia.com/* resource");
}

static bool missing_runtime_class(const struct lint_target *t, char *why, size_t size)
{
	const char *want = t->lo->runtime_class;
	const char *rc = json_string_value(json_object_get(t->spec, "runtimeClassName"));

	if (!want || !*want || (rc && streq(rc, want)))
		return false;
	snprintf(why, size, "runtimeClassName is %s, the node needs %s", rc ? rc : "not set", want);
	return true;
}

static bool tolerates(const json_t *spec, const char *key, const char *effect)
{
	size_t i;
	json_t *t;

	json_array_foreach (json_object_get(spec, "tolerations"), i, t) {
		const char *k = json_string_value(json_object_get(t, "key"));
		const char *op = json_string_value(json_object_get(t, "operator"));
		const char *e = json_string_value(json_object_get(t, "effect"));

		if ((!k || !*k) && op && streq(op, "Exists") && (!e || !*e || streq(e, effect)))
			return true; /* tolerates everything */
		if (k && streq(k, key) && (!e || !*e || streq(e, effect)))
			return true;
	}
	return false;
}

/* GPU nodes are tainted nvidia.com/gpu:NoSchedule (GPU Operator, docs/reference/field-guide.md §6.2); --node gives the
 * real taints. */
static bool missing_toleration(const struct lint_target *t, char *why, size_t size)
{
	const json_t *taints = json_object_get(json_object_get(t->lo->node, "spec"), "taints");
	size_t i;
	json_t *taint;

	if (!t->lo->node) {
		if (tolerates(t->spec, "nvidia.com/gpu", "NoSchedule"))
			return false;
		snprintf(why, size, "no toleration for nvidia.com/gpu:NoSchedule");
		return true;
	}
	json_array_foreach (taints, i, taint) {
		const char *k = json_string_value(json_object_get(taint, "key"));
		const char *e = json_string_value(json_object_get(taint, "effect"));

		if (!k || !e || streq(e, "PreferNoSchedule") || tolerates(t->spec, k, e))
			continue;
		snprintf(why, size, "the node has taint %s:%s and the pod does not tolerate it", k, e);
		return true;
	}
	return false;
}

/* Words that say "training": time-slicing has no memory or fault isolation (docs/reference/field-guide.md §6.1). */
static bool training_on_shared(const struct lint_target *t, char *why, size_t size)
{
	static const char *const words[] = {"train",    "torchrun",  "deepspeed",
					    "horovod",  "mpirun",    "accelerate launch",
					    "finetune", "fine-tune", "pretrain"};
	const json_t *lim = json_object_get(json_object_get(t->ctr, "resources"), "limits");
	const char *kind = json_string_value(json_object_get(t->obj, "kind"));
	const char *k, *shared = NULL;
	char *text;
	json_t *v;
	bool hit = false;

	json_object_foreach ((json_t *)lim, k, v) {
		if (!strncmp(k, "nvidia.com/", 11) && strstr(k, ".shared"))
			shared = k;
	}
	if (!shared)
		return false;
	text = json_dumps(t->ctr, JSON_COMPACT);
	for (size_t i = 0; text && i < ELEMENTSOF(words) && !hit; i++)
		if (strcasestr(text, words[i])) {
			snprintf(why, size, "%s (time-slicing) for a container that mentions \"%s\"", shared, words[i]);
			hit = true;
		}
	free(text);
	if (!hit && kind && (streq(kind, "Job") || streq(kind, "CronJob"))) {
		snprintf(why, size, "%s (time-slicing) in a %s", shared, kind);
		hit = true;
	}
	return hit;
}

static const json_t *sc_get(const struct lint_target *t, const char *key)
{
	const json_t *v = json_object_get(json_object_get(t->ctr, "securityContext"), key);

	return v ? v : json_object_get(json_object_get(t->spec, "securityContext"), key);
}

/* A non-root container sees /dev/nvidia* as 0660 root:root on many nodes (docs/reference/field-guide.md §4.2). */
static bool nonroot_no_device_access(const struct lint_target *t, char *why, size_t size)
{
	const json_t *user = sc_get(t, "runAsUser"), *nonroot = sc_get(t, "runAsNonRoot");
	const json_t *groups = json_object_get(json_object_get(t->spec, "securityContext"), "supplementalGroups");
	const json_t *priv = json_object_get(json_object_get(t->ctr, "securityContext"), "privileged");

	if (json_is_true(priv) || json_array_size(groups))
		return false;
	if (!(user && json_integer_value(user) != 0) && !json_is_true(nonroot))
		return false;
	snprintf(why, size, "runs as %s without supplementalGroups%s", user ? "a non-root uid" : "runAsNonRoot",
		 t->lo->node_dev_nonworld ? "; this node's /dev/nvidia* are not world read/writable" : "");
	return true;
}

static bool cuda_too_new(const struct lint_target *t, char *why, size_t size)
{
	char src[512], text[512];
	int cuda;
	enum cuda_verdict v;

	if (!t->lo->driver_version || doctor_container_cuda(t->ctr, &cuda, src, sizeof(src)) < 0)
		return false;
	v = cuda_check(cuda, 0, t->lo->driver_version, text, sizeof(text));
	if (v != CUDA_DRIVER_TOO_OLD && v != CUDA_MINOR_COMPAT)
		return false;
	snprintf(why, size, "%s: %s", src, text);
	return true;
}

static const struct lint_rule rules[] = {
    {"lint.gpu-requests-without-limits", DOCTOR_FAIL, true,
     "GPUs must be set in resources.limits: extended resources in requests alone do not work",
     "put the nvidia.com/* resource under resources.limits", requests_only, NULL, requests_only_fix},
    {"lint.missing-runtime-class", DOCTOR_FAIL, false,
     "GPU pod without the RuntimeClass the node needs: it starts with runc and sees no GPU "
     "(\"No devices were found\")",
     "set spec.runtimeClassName (e.g. nvidia), or enable CDI on the node", missing_runtime_class, NULL, NULL},
    {"lint.missing-gpu-toleration", DOCTOR_WARN, false,
     "GPU pod does not tolerate the GPU nodes' taint: it stays Pending on tainted GPU nodes",
     "add tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]", missing_toleration, node_given,
     NULL},
    {"lint.time-slicing-for-training", DOCTOR_WARN, true,
     "a training job on a time-sliced GPU: no memory or fault isolation, one job can take down the others",
     "request a whole GPU (nvidia.com/gpu) or a MIG instance (nvidia.com/mig-<profile>) for training",
     training_on_shared, NULL, NULL},
    {"lint.nonroot-without-device-access", DOCTOR_WARN, true,
     "a non-root GPU container cannot open /dev/nvidia* when the node's device files are 0660 root",
     "add the device files' group to securityContext.supplementalGroups, or set NVreg_DeviceFileMode=0666 "
     "on the nodes",
     nonroot_no_device_access, node_devs_closed, NULL},
    {"lint.cuda-too-new-for-driver", DOCTOR_FAIL, true,
     "the image needs a newer driver than the node has: \"CUDA driver version is insufficient\"",
     "use an image built for the node's CUDA, or upgrade the driver", cuda_too_new, NULL, NULL},
};

static void run_rule(const struct lint_rule *r, struct lint_target *t)
{
	char why[600] = "", fix[1024];
	enum doctor_severity sev = r->severity;
	struct doctor_finding *f;

	if (!r->broken(t, why, sizeof(why)))
		return;
	if (r->certain && r->certain(t))
		sev = DOCTOR_FAIL;
	snprintf(fix, sizeof(fix), "%s", r->fix);
	if (r->fix_for)
		r->fix_for(t, fix, sizeof(fix));
	f = doctor_find(t->c, r->id);
	if (!f)
		f = doctor_report(t->c, r->id, sev, LINK_LINT, fix, "%s", r->summary);
	else if (r->fix_for && !strstr(f->fix, fix)) /* another resource: say so too */
		snprintf(f->fix + strlen(f->fix), sizeof(f->fix) - strlen(f->fix), "; %s", fix);
	doctor_evidence(f, "%s: %s", t->where, why);
}

int lint_objects(struct doctor_ctx *c, const char *file, const json_t *objs, const struct lint_options *lo)
{
	size_t i;
	json_t *obj;

	json_array_foreach (objs, i, obj) {
		struct lint_target t = {.c = c, .lo = lo, .file = file, .doc = i, .obj = obj};
		const json_t *md = json_object_get(obj, "metadata");
		const char *kind = json_string_value(json_object_get(obj, "kind"));
		bool gpu = false;
		size_t k;
		json_t *ctr;

		t.spec = k8sobj_pod_spec(obj);
		if (!t.spec)
			continue;
		json_array_foreach (json_object_get(t.spec, "containers"), k, ctr)
			gpu |= doctor_container_wants_gpu(ctr);
		if (!gpu)
			continue;
		snprintf(t.where, sizeof(t.where), "%s: %s %s/%s", file, kind,
			 json_string_value(json_object_get(md, "namespace")) ?: "default",
			 json_string_value(json_object_get(md, "name")) ?: "?");
		for (size_t r = 0; r < ELEMENTSOF(rules); r++)
			if (!rules[r].per_container)
				run_rule(&rules[r], &t);
		json_array_foreach (json_object_get(t.spec, "containers"), k, ctr) {
			char base[512];

			if (!doctor_container_wants_gpu(ctr))
				continue;
			snprintf(base, sizeof(base), "%s", t.where);
			t.ctr = ctr;
			snprintf(t.where, sizeof(t.where), "%s container %s", base,
				 json_string_value(json_object_get(ctr, "name")) ?: "?");
			for (size_t r = 0; r < ELEMENTSOF(rules); r++)
				if (rules[r].per_container)
					run_rule(&rules[r], &t);
			snprintf(t.where, sizeof(t.where), "%s", base);
			t.ctr = NULL;
		}
	}
	return 0;
}
