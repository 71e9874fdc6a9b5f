/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet lint: the workload-side mistakes of the field guide, one table row per rule, each run on
 * every container (or pod) that asks for an nvidia.com resource.
 */
#include <ctype.h>
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

/* What a rule looks at: the pod spec, each app container asking for a GPU, every container (apps and init,
 * GPU or not: a wrong name is exactly what keeps it from asking), each init container. */
enum lint_scope { LINT_POD, LINT_GPU_CONTAINER, LINT_ANY_CONTAINER, LINT_INIT_CONTAINER };

struct lint_rule {
	const char *id;
	enum doctor_severity severity;
	enum lint_scope scope;
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
static const char *requested_without_limit(const struct lint_target *t, bool differ, char *why, size_t size)
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
			if (differ)
				continue;
			snprintf(why, size, "requests %s without a limit", k);
			return k;
		}
		snprintf(a, sizeof(a), "%s", json_is_string(v) ? json_string_value(v) : "");
		snprintf(b, sizeof(b), "%s", json_is_string(l) ? json_string_value(l) : "");
		if (json_is_integer(v))
			snprintf(a, sizeof(a), "%lld", (long long)json_integer_value(v));
		if (json_is_integer(l))
			snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(l));
		if (!streq(a, b) && differ) {
			snprintf(why, size, "%s request %s differs from limit %s", k, a, b);
			return k;
		}
	}
	return NULL;
}

static bool requests_only(const struct lint_target *t, char *why, size_t size)
{
	return requested_without_limit(t, false, why, size) != NULL;
}

/* Both set and different: the API server rejects the pod ("must be equal to nvidia.com/gpu limit"). */
static bool requests_differ(const struct lint_target *t, char *why, size_t size)
{
	return requested_without_limit(t, true, why, size) != NULL;
}

/* The fix names what was requested (nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb, ...). */
static void requests_fix(const struct lint_target *t, bool differ, char *fix, size_t size)
{
	char why[256];
	const char *res = requested_without_limit(t, differ, why, sizeof(why));

	snprintf(fix, size,
		 differ ? "set %s's request equal to its limit, or drop the request (it defaults to the limit); an "
			  "extended resource cannot be overcommitted"
			: "put %s under resources.limits with the same count (requests default to the limit; an "
			  "extended resource in requests alone is not allocated)",
		 res ? res : "the nvidia.com/* resource");
}

static void requests_differ_fix(const struct lint_target *t, char *fix, size_t size)
{
	requests_fix(t, true, fix, size);
}

static void requests_only_fix(const struct lint_target *t, char *fix, size_t size)
{
	requests_fix(t, false, fix, size);
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

/* ---- names, counts and places of GPU requests (docs/reference/doctor-classes.md §13) ---- */

/* NVIDIA's resource names: nvidia.com/gpu, its shared form, MIG profiles (k8s-device-plugin's naming). */
static bool valid_gpu_name(const char *res)
{
	return streq(res, "nvidia.com/gpu") || streq(res, "nvidia.com/gpu.shared") ||
	       !strncmp(res, "nvidia.com/mig-", 15);
}

/*
 * A resource name meant for NVIDIA's GPUs but spelled so no plugin advertises it: nvidia/gpu (no domain),
 * nvidia.com/gpus, case errors (NVIDIA.com/gpu, nvidia.com/GPU; resource names are case-sensitive), a bare
 * gpu. The right spelling goes to right.
 */
static const char *misspelled_gpu(const char *res, char *right, size_t size)
{
	static const struct {
		const char *wrong, *right;
	} known[] = {
	    {"nvidia/gpu", "nvidia.com/gpu"},
	    {"nvidia.com/gpus", "nvidia.com/gpu"},
	    {"nvidia.com/gpu.count", "nvidia.com/gpu"},
	    {"nvidia.io/gpu", "nvidia.com/gpu"},
	    {"gpu", "nvidia.com/gpu"},
	    {"nvidia-gpu", "nvidia.com/gpu"},
	    {"nvidia.com/gpus.shared", "nvidia.com/gpu.shared"},
	};
	char lower[256];
	size_t l = strlen(res);

	if (l >= sizeof(lower))
		return NULL;
	for (size_t k = 0; k <= l; k++)
		lower[k] = (char)tolower((unsigned char)res[k]);
	for (size_t k = 0; k < ELEMENTSOF(known); k++)
		if (streq(lower, known[k].wrong) && !streq(res, known[k].right)) {
			snprintf(right, size, "%s", known[k].right);
			return res;
		}
	if (!streq(lower, res) && valid_gpu_name(lower)) { /* a case error of a valid name */
		snprintf(right, size, "%s", lower);
		return res;
	}
	return NULL;
}

/*
 * The first resource of the container (limits, then requests) that bad() holds against; *list gets
 * "limits" or "requests" and *value the quantity. NULL when none.
 */
static const char *first_resource(const struct lint_target *t, bool (*bad)(const char *k, const json_t *v, void *arg),
				  void *arg, const char **list, const json_t **value)
{
	static const char *const lists[] = {"limits", "requests"};
	const json_t *res = json_object_get(t->ctr, "resources");

	for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
		const char *k;
		json_t *v;

		json_object_foreach (json_object_get(res, lists[l]), k, v) {
			if (!bad(k, v, arg))
				continue;
			*list = lists[l];
			*value = v;
			return k;
		}
	}
	return NULL;
}

struct right_name {
	char buf[64];
};

static bool misspelled(const char *k, const json_t *v, void *arg)
{
	struct right_name *r = arg;

	(void)v;
	return misspelled_gpu(k, r->buf, sizeof(r->buf)) != NULL;
}

/* The first misspelled GPU resource of the container (limits, then requests). */
static const char *wrong_name_of(const struct lint_target *t, char *right, size_t rsize)
{
	struct right_name r;
	const char *list, *k;
	const json_t *v;

	k = first_resource(t, misspelled, &r, &list, &v);
	if (k)
		snprintf(right, rsize, "%s", r.buf);
	return k;
}

static bool wrong_name(const struct lint_target *t, char *why, size_t size)
{
	char right[64];
	const char *k = wrong_name_of(t, right, sizeof(right));

	if (k)
		snprintf(why, size, "asks for %s; NVIDIA's device plugin advertises %s", k, right);
	return k != NULL;
}

static void wrong_name_fix(const struct lint_target *t, char *fix, size_t size)
{
	char right[64];
	const char *k = wrong_name_of(t, right, sizeof(right));

	snprintf(fix, size,
		 "write %s instead of %s (resource names are case-sensitive; kubectl describe node lists what the node "
		 "has under Capacity)",
		 right, k ? k : "the misspelled name");
}

/* "1", 1: a whole count; "0.5", "500m", 1.5: not (extended resources are integers). */
static bool whole(const json_t *v)
{
	const char *s = json_string_value(v);

	if (json_is_integer(v))
		return json_integer_value(v) >= 0;
	return s && *s && s[strspn(s, "0123456789")] == '\0';
}

static bool not_whole(const char *k, const json_t *v, void *arg)
{
	(void)arg;
	return !strncmp(k, "nvidia.com/", 11) && !whole(v);
}

static bool fractional(const struct lint_target *t, char *why, size_t size)
{
	const char *list, *k;
	const json_t *v;
	char text[64];

	k = first_resource(t, not_whole, NULL, &list, &v);
	if (!k)
		return false;
	if (json_is_number(v))
		snprintf(text, sizeof(text), "%g", json_number_value(v));
	else
		snprintf(text, sizeof(text), "%s", json_string_value(v) ?: "?");
	snprintf(why, size, "%s %s: %s", list, k, text);
	return true;
}

static bool init_gpu(const struct lint_target *t, char *why, size_t size)
{
	const json_t *lim = json_object_get(json_object_get(t->ctr, "resources"), "limits");
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)lim, k, v) {
		if (!strncmp(k, "nvidia.com/", 11)) {
			snprintf(why, size, "init container limits %s", k);
			return true;
		}
	}
	return false;
}

/*
 * NVIDIA_VISIBLE_DEVICES set by hand in a container that asks for no GPU: under the nvidia runtime's hook
 * it gets the GPUs it names ("all": every GPU of the node) that the scheduler gave to other pods.
 * "void" and "none" ask for no GPU (nvidia-container-toolkit's reserved values).
 */
static bool visible_without_gpu(const struct lint_target *t, char *why, size_t size)
{
	size_t i;
	json_t *e;

	if (doctor_container_wants_gpu(t->ctr))
		return false;
	json_array_foreach (json_object_get(t->ctr, "env"), i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		const char *v = json_string_value(json_object_get(e, "value"));

		if (!n || !streq(n, "NVIDIA_VISIBLE_DEVICES") || (v && (streq(v, "void") || streq(v, "none"))))
			continue;
		snprintf(why, size, "sets NVIDIA_VISIBLE_DEVICES=%s%s and has no nvidia.com/* limit",
			 v ? v : "(from a reference)", v && streq(v, "all") ? " (every GPU of the node)" : "");
		return true;
	}
	return false;
}

static const struct lint_rule rules[] = {
    {"lint.gpu-requests-without-limits", DOCTOR_FAIL, LINT_GPU_CONTAINER,
     "GPUs must be set in resources.limits: extended resources in requests alone do not work",
     "put the nvidia.com/* resource under resources.limits", requests_only, NULL, requests_only_fix},
    {"lint.gpu-requests-differ-from-limits", DOCTOR_FAIL, LINT_ANY_CONTAINER,
     "a GPU request differs from its limit: the API server rejects the pod (extended resources cannot be "
     "overcommitted, requests must equal limits)",
     "set the request equal to the limit", requests_differ, NULL, requests_differ_fix},
    {"lint.wrong-resource-name", DOCTOR_FAIL, LINT_ANY_CONTAINER,
     "a GPU resource name no device plugin advertises: the pod stays Pending (Insufficient <name>) or is "
     "rejected",
     "use nvidia.com/gpu", wrong_name, NULL, wrong_name_fix},
    {"lint.gpu-count-not-integer", DOCTOR_FAIL, LINT_ANY_CONTAINER,
     "a fractional GPU count: extended resources are whole numbers, the API server rejects the pod",
     "ask for a whole GPU (nvidia.com/gpu: 1); to share one GPU, request one replica of a time-sliced or MPS "
     "resource, or a MIG instance (nvidia.com/mig-<profile>)",
     fractional, NULL, NULL},
    {"lint.gpu-in-init-container", DOCTOR_WARN, LINT_INIT_CONTAINER,
     "an init container asks for GPUs: they are allocated before the app containers start, count towards the "
     "pod's GPUs (the larger of init and app requests), and are rarely what was meant",
     "move the GPU limit to the container that computes; an init container that downloads or converts a model "
     "needs no GPU",
     init_gpu, NULL, NULL},
    {"lint.visible-devices-without-gpu", DOCTOR_FAIL, LINT_ANY_CONTAINER,
     "a container without a GPU limit sets NVIDIA_VISIBLE_DEVICES: under the nvidia runtime it gets GPUs the "
     "scheduler gave to other pods, and none are counted for it",
     "remove NVIDIA_VISIBLE_DEVICES and ask for nvidia.com/gpu in resources.limits (or set it to void in a "
     "container that must not see GPUs)",
     visible_without_gpu, NULL, NULL},
    {"lint.missing-runtime-class", DOCTOR_FAIL, LINT_POD,
     "GPU pod without the RuntimeClass the node needs: it starts with runc and sees no GPU "
     "(\"No devices were found\")",
     "set spec.runtimeClassName (e.g. nvidia), or enable CDI on the node", missing_runtime_class, NULL, NULL},
    {"lint.missing-gpu-toleration", DOCTOR_WARN, LINT_POD,
     "GPU pod does not tolerate the GPU nodes' taint: it stays Pending on tainted GPU nodes",
     "add tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]", missing_toleration, node_given,
     NULL},
    {"lint.time-slicing-for-training", DOCTOR_WARN, LINT_GPU_CONTAINER,
     "a training job on a time-sliced GPU: no memory or fault isolation, one job can take down the others",
     "request a whole GPU (nvidia.com/gpu) or a MIG instance (nvidia.com/mig-<profile>) for training",
     training_on_shared, NULL, NULL},
    {"lint.nonroot-without-device-access", DOCTOR_WARN, LINT_GPU_CONTAINER,
     "a non-root GPU container cannot open /dev/nvidia* when the node's device files are 0660 root",
     "add the device files' group to securityContext.supplementalGroups, or set NVreg_DeviceFileMode=0666 "
     "on the nodes",
     nonroot_no_device_access, node_devs_closed, NULL},
    {"lint.cuda-too-new-for-driver", DOCTOR_FAIL, LINT_GPU_CONTAINER,
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

/* The rules of one scope over the containers of one list ("containers" or "initContainers"). */
static void run_containers(struct lint_target *t, const char *list, enum lint_scope scope)
{
	char base[512];
	size_t k;
	json_t *ctr;

	snprintf(base, sizeof(base), "%s", t->where);
	json_array_foreach (json_object_get(t->spec, list), k, ctr) {
		if (scope == LINT_GPU_CONTAINER && !doctor_container_wants_gpu(ctr))
			continue;
		t->ctr = ctr;
		snprintf(t->where, sizeof(t->where), "%s %s %s", base,
			 streq(list, "initContainers") ? "init container" : "container",
			 json_string_value(json_object_get(ctr, "name")) ?: "?");
		for (size_t r = 0; r < ELEMENTSOF(rules); r++)
			if (rules[r].scope == scope)
				run_rule(&rules[r], t);
	}
	snprintf(t->where, sizeof(t->where), "%s", base);
	t->ctr = NULL;
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
		snprintf(t.where, sizeof(t.where), "%s: %s %s/%s", file, kind,
			 json_string_value(json_object_get(md, "namespace")) ?: "default",
			 json_string_value(json_object_get(md, "name")) ?: "?");
		/* names, counts and stray env vars matter in every workload: a misspelled name is why it asks for no
		 * GPU */
		run_containers(&t, "containers", LINT_ANY_CONTAINER);
		run_containers(&t, "initContainers", LINT_ANY_CONTAINER);
		run_containers(&t, "initContainers", LINT_INIT_CONTAINER);
		if (!gpu)
			continue;
		for (size_t r = 0; r < ELEMENTSOF(rules); r++)
			if (rules[r].scope == LINT_POD)
				run_rule(&rules[r], &t);
		run_containers(&t, "containers", LINT_GPU_CONTAINER);
	}
	return 0;
}
