/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resources advertised to kubelet, built from the node model. Facts: docs/reference/device-plugin.md
 * §2 (built-in resources, sharing rules), §3.1 (socket names), §5 (replica IDs), §6 (MIG strategies).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/resources.h"
#include "util/enumtab.h"

#define RES_PREFIX   "nvidia.com/"
#define RES_NAME_MAX 63 /* full name limit upstream checks (rm.go, §2) */

/* Words of upstream's --shared-devices-allocation-policy (docs/reference/device-plugin.md §5). */
const struct enum_name replica_policy_names[2] = {
    {REPLICA_DISTRIBUTED, "distributed"},
    {REPLICA_PACKED, "packed"},
};

int replica_policy_from_name(const char *name, enum replica_policy *ret)
{
	return enum_from_name(replica_policy_names, name, ret);
}

void resource_set_free(struct resource_set *s)
{
	if (!s)
		return;
	free_members(s->res, s->n, devices);
	free(s);
}

const struct resource *resources_find(const struct resource_set *s, const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (streq(s->res[i].name, name))
			return &s->res[i];
	return NULL;
}

const struct rdevice *resource_find_device(const struct resource *r, const char *id)
{
	for (size_t i = 0; r && i < r->n_devices; i++)
		if (streq(r->devices[i].id, id))
			return &r->devices[i];
	return NULL;
}

/* The resource called name, appended (empty) when absent. NULL on ENOMEM. */
static struct resource *set_get(struct resource_set *s, const char *name)
{
	struct resource *r;

	for (size_t i = 0; i < s->n; i++)
		if (streq(s->res[i].name, name))
			return &s->res[i];
	r = realloc(s->res, (s->n + 1) * sizeof(*r));
	if (!r)
		return NULL;
	s->res = r;
	r = &s->res[s->n++];
	*r = (struct resource){0};
	snprintf(r->name, sizeof(r->name), "%s", name);
	return r;
}

static int res_push(struct resource *r, const struct rdevice *d)
{
	/* capacity doubles at powers of two, so n_devices alone tells when to grow */
	if ((r->n_devices & (r->n_devices - 1)) == 0) {
		size_t cap = r->n_devices;
		struct rdevice *p = grow_alloc(r->devices, &cap, sizeof(*p), 1);
		if (!p)
			return -ENOMEM;
		r->devices = p;
	}
	r->devices[r->n_devices++] = *d;
	return 0;
}

static void device_fill(struct rdevice *d, const struct node *n, unsigned g, int m)
{
	const struct node_gpu *gpu = &n->gpus[g];

	assert(g < n->n_gpus && (m < 0 || ((size_t)m < gpu->n_migs && gpu->migs))); /* callers walk the node */
	*d = (struct rdevice){.gpu = g, .mig = m, .replica = -1, .numa_node = gpu->numa_node, .healthy = !gpu->lost};
	if (m < 0) {
		snprintf(d->uuid, sizeof(d->uuid), "%s", gpu->uuid);
		snprintf(d->index, sizeof(d->index), "%u", gpu->index);
	} else {
		snprintf(d->uuid, sizeof(d->uuid), "%s", gpu->migs[m].uuid);
		snprintf(d->index, sizeof(d->index), "%u:%u", gpu->index, gpu->migs[m].index);
	}
	snprintf(d->id, sizeof(d->id), "%s", d->uuid);
	if (gpu->lost)
		snprintf(d->reason, sizeof(d->reason), "GPU %u (%s) is lost: NVML answered GPU_IS_LOST", gpu->index,
			 gpu->uuid);
}

static int add_device(struct resource_set *s, const char *name, const struct node *n, unsigned g, int m)
{
	struct resource *r = set_get(s, name);
	struct rdevice d;

	if (!r)
		return -ENOMEM;
	device_fill(&d, n, g, m);
	if (!d.uuid[0]) {
		/* lost before NVML named it: kubelet cannot tell an empty ID from no device (issue 23 §5) */
		size_t len = strlen(s->left_out);
		if (s->n_left_out++ < 4)
			snprintf(s->left_out + len, sizeof(s->left_out) - len, "%sGPU %u (%s)", len ? ", " : "",
				 n->gpus[g].index, n->gpus[g].error[0] ? n->gpus[g].error : "no UUID");
		return 0;
	}
	return res_push(r, &d);
}

/* "nvidia.com/mig-1g.10gb.me" from profile "1g.10gb+me": upstream replaces '+' by '.' (§2). */
static void mig_resource_name(const char *profile, char *buf, size_t size)
{
	snprintf(buf, size, RES_PREFIX "mig-%s", profile);
	for (char *p = buf; *p; p++)
		if (*p == '+')
			*p = '.';
}

static int add_whole_gpus(struct resource_set *s, const struct node *n, bool skip_mig)
{
	for (unsigned g = 0; g < n->n_gpus; g++) {
		if (skip_mig && n->gpus[g].mig_enabled)
			continue;
		int r = add_device(s, RES_PREFIX "gpu", n, g, -1);
		if (r < 0)
			return r;
	}
	return 0;
}

/* single: every MIG device is nvidia.com/gpu, once the node passes upstream's checks (§6). */
static int build_single(struct resource_set *s, const struct node *n, struct gerr *err)
{
	const struct node_gpu *with = NULL, *without = NULL;
	const char *profile = NULL;
	const struct node_gpu *profile_gpu = NULL;

	for (size_t g = 0; g < n->n_gpus; g++) {
		const struct node_gpu *gpu = &n->gpus[g];
		if (gpu->lost)
			continue; /* what a lost GPU had is unknown; it must not fail the whole node */
		if (gpu->mig_enabled)
			with = with ? with : gpu;
		else
			without = without ? without : gpu;
	}
	if (!with)
		return add_whole_gpus(s, n, false);
	if (without)
		return gerr_set(
		    err, EINVAL,
		    "MIG strategy single: all devices on the node must be configured with the same "
		    "migEnabled value, but GPU %u (%s) has MIG enabled and GPU %u (%s) does not; enable MIG "
		    "on every GPU or use --mig-strategy=mixed",
		    with->index, with->uuid, without->index, without->uuid);
	for (size_t g = 0; g < n->n_gpus; g++) {
		const struct node_gpu *gpu = &n->gpus[g];
		if (gpu->lost)
			continue;
		if (gpu->n_migs == 0)
			return gerr_set(err, EINVAL,
					"MIG strategy single: GPU %u (%s) has MIG enabled but no MIG devices; create "
					"them (nvidia-smi mig -cgi <profile> -C) or use --mig-strategy=mixed",
					gpu->index, gpu->uuid);
		for (size_t m = 0; m < gpu->n_migs; m++) {
			if (!profile) {
				profile = gpu->migs[m].profile;
				profile_gpu = gpu;
			} else if (!streq(profile, gpu->migs[m].profile)) {
				return gerr_set(err, EINVAL,
						"MIG strategy single: more than one MIG device type present on node: "
						"%s (GPU %u) and %s (GPU %u); use one profile everywhere or "
						"--mig-strategy=mixed",
						profile, profile_gpu->index, gpu->migs[m].profile, gpu->index);
			}
		}
	}
	for (unsigned g = 0; g < n->n_gpus; g++)
		for (size_t m = 0; !n->gpus[g].lost && m < n->gpus[g].n_migs; m++) {
			int r = add_device(s, RES_PREFIX "gpu", n, g, (int)m);
			if (r < 0)
				return r;
		}
	return 0;
}

/* mixed: non-MIG GPUs are nvidia.com/gpu, each full-GI MIG profile its own resource (§2, §6). */
static int build_mixed(struct resource_set *s, const struct node *n, struct gerr *err)
{
	int r = add_whole_gpus(s, n, true);
	if (r < 0)
		return r;
	for (unsigned g = 0; g < n->n_gpus; g++) {
		const struct node_gpu *gpu = &n->gpus[g];
		for (size_t m = 0; gpu->mig_enabled && m < gpu->n_migs; m++) {
			char name[sizeof(((struct resource *)0)->name)];
			/* upstream only adds resources for profiles whose CI takes the whole GI */
			if (gpu->migs[m].ci_slices != gpu->migs[m].gi_slices)
				continue;
			mig_resource_name(gpu->migs[m].profile, name, sizeof(name));
			if (strlen(name) > RES_NAME_MAX)
				return gerr_set(err, EINVAL,
						"MIG device %s: resource name %s is longer than %d characters",
						gpu->migs[m].uuid, name, RES_NAME_MAX);
			r = add_device(s, name, n, g, (int)m);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int rule_target_name(const struct resource_options *o, const struct replica_rule *rule, const char *name,
			    char *buf, size_t size, struct gerr *err)
{
	if (rule->rename[0])
		snprintf(buf, size, "%s%s", strchr(rule->rename, '/') ? "" : RES_PREFIX, rule->rename);
	else if (o->rename_by_default)
		snprintf(buf, size, "%s.shared", name);
	else
		snprintf(buf, size, "%s", name);
	if (strlen(buf) > RES_NAME_MAX)
		return gerr_set(err, EINVAL, "sharing: resource name %s is longer than %d characters", buf,
				RES_NAME_MAX);
	return 0;
}

/* Replace a resource's devices by `replicas` copies each, "<uuid>::<i>" (§5), and rename it. */
static int apply_rule(struct resource_set *s, const struct resource_options *o, const struct replica_rule *rule,
		      struct gerr *err)
{
	struct resource *r = NULL;
	char target[sizeof(r->name)];
	char name[sizeof(r->name)];
	struct rdevice *devs;
	size_t n = 0;
	int ret;

	/* the config may name "gpu" for "nvidia.com/gpu", as upstream adds the prefix */
	snprintf(name, sizeof(name), "%s%s", strchr(rule->name, '/') ? "" : RES_PREFIX, rule->name);
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->res[i].name, name))
			r = &s->res[i];
	if (!r)
		return 0; /* nothing of that kind on this node */
	if (r->replicas > 1)
		return gerr_set(err, EINVAL, "sharing: resource %s is listed twice; list each resource once", name);
	if (rule->replicas > NVCONFIG_REPLICAS_MAX)
		return gerr_set(err, EINVAL, "sharing: %u replicas for %s is more than the limit of %d", rule->replicas,
				name, NVCONFIG_REPLICAS_MAX);
	if (o->sharing == SHARING_MPS && r->n_devices && r->devices[0].mig >= 0)
		return gerr_set(err, EINVAL, "sharing using MPS is not supported for MIG devices (%s)", name);
	ret = rule_target_name(o, rule, name, target, sizeof(target), err);
	if (ret < 0)
		return ret;
	if (!streq(target, r->name) && resources_find(s, target))
		return gerr_set(err, EINVAL, "sharing: %s would be renamed to %s, which already exists", name, target);
	devs = calloc(r->n_devices ? r->n_devices * rule->replicas : 1, sizeof(*devs)); /* calloc(0) may be NULL */
	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_devices; i++)
		for (unsigned k = 0; k < rule->replicas; k++) {
			struct rdevice *d = &devs[n++];
			*d = r->devices[i];
			d->replica = (int)k;
			snprintf(d->id, sizeof(d->id), "%s::%u", d->uuid, k);
		}
	free(r->devices);
	r->devices = devs;
	r->n_devices = n;
	r->replicas = rule->replicas;
	snprintf(r->name, sizeof(r->name), "%s", target);
	return 0;
}

static int cmp_resource(const void *a, const void *b)
{
	return strcmp(((const struct resource *)a)->name, ((const struct resource *)b)->name);
}

int resources_build(const struct node *n, const struct resource_options *o, struct resource_set **ret, struct gerr *err)
{
	_cleanup_(resource_set_freep) struct resource_set *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	switch (o->mig_strategy) {
	case MIG_STRATEGY_NONE:
		r = add_whole_gpus(s, n, false);
		break;
	case MIG_STRATEGY_SINGLE:
		r = build_single(s, n, err);
		break;
	case MIG_STRATEGY_MIXED:
		r = build_mixed(s, n, err);
		break;
	default:
		return gerr_set(err, EINVAL, "unknown MIG strategy %d", (int)o->mig_strategy);
	}
	if (r < 0)
		return r == -ENOMEM ? gerr_set(err, ENOMEM, "out of memory building resources") : r;
	for (size_t i = 0; o->sharing != SHARING_NONE && i < o->n_rules; i++) {
		if (o->rules[i].replicas < 2)
			continue;
		r = apply_rule(s, o, &o->rules[i], err);
		if (r < 0)
			return r;
	}
	if (s->n > 1) /* res is NULL on a node without GPUs; qsort() wants an array */
		qsort(s->res, s->n, sizeof(*s->res), cmp_resource);
	for (size_t i = 0; i < s->n; i++) {
		const char *slash = strrchr(s->res[i].name, '/');
		snprintf(s->res[i].socket, sizeof(s->res[i].socket), "nvidia-%s.sock",
			 slash ? slash + 1 : s->res[i].name);
	}
	*ret = TAKE_PTR(s);
	return 0;
}

/* Does a health event on (gpu g, gi, ci) concern device d? */
static bool event_hits(const struct rdevice *d, const struct node *n, unsigned g, int gi, int ci)
{
	const struct node_mig *m;

	if (d->gpu != g)
		return false;
	if (gi < 0 || d->mig < 0)
		return true; /* whole-GPU event, or a whole-GPU device containing the faulty instance */
	if ((size_t)d->mig >= n->gpus[g].n_migs)
		return false;
	m = &n->gpus[g].migs[d->mig];
	return m->gi == (unsigned)gi && (ci < 0 || m->ci == (unsigned)ci);
}

int resources_set_health(struct resource_set *s, const struct node *n, const char *gpu_uuid, int gi, int ci,
			 bool healthy, const char *reason)
{
	size_t g;
	int changed = 0;

	for (g = 0; g < n->n_gpus; g++)
		if (streq(n->gpus[g].uuid, gpu_uuid))
			break;
	if (g == n->n_gpus && gi < 0) {
		/* a MIG UUID names its parent and instance */
		for (g = 0; g < n->n_gpus; g++) {
			size_t m;
			for (m = 0; m < n->gpus[g].n_migs && !streq(n->gpus[g].migs[m].uuid, gpu_uuid); m++)
				;
			if (m < n->gpus[g].n_migs) {
				gi = (int)n->gpus[g].migs[m].gi;
				ci = (int)n->gpus[g].migs[m].ci;
				break;
			}
		}
	}
	if (g == n->n_gpus)
		return -ENOENT;
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->res[i].n_devices; k++) {
			struct rdevice *d = &s->res[i].devices[k];
			if (!event_hits(d, n, (unsigned)g, gi, ci))
				continue;
			if (d->healthy != healthy)
				changed++;
			d->healthy = healthy;
			snprintf(d->reason, sizeof(d->reason), "%s", healthy || !reason ? "" : reason);
		}
	return changed;
}
