/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceClaim -> this driver's allocated devices and their configs. Rules: kubeletplugin's
 * getResourceClaims() (uid, allocation), NVIDIA's prepareDevices()/GetOpaqueDeviceConfigs() (configs of
 * our driver, class before claim, the last match wins, type checks), the API's config.requests
 * semantics for subrequests (k8s.io/api v0.34.4 resource/v1 DeviceClaimConfiguration);
 * docs/reference/dra.md §4.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/claim.h"

struct cfg {
	const json_t *requests;     /* array of names, empty or absent: all */
	struct dra_sharing sharing; /* moved into its group when a result first uses it */
	enum dra_cfg_kind kind;
	char source[48];
	size_t group; /* +1; 0: no group yet */
};

void dra_request_main(const char *request, char *buf, size_t size)
{
	const char *slash = strchr(request, '/');

	snprintf(buf, size, "%.*s", slash ? (int)(slash - request) : (int)strlen(request), request);
}

void dra_claim_clear(struct dra_claim *c)
{
	for (size_t i = 0; i < c->n_results; i++) {
		free(c->results[i].request);
		free(c->results[i].device);
	}
	for (size_t i = 0; i < c->n_groups; i++) {
		dra_sharing_clear(&c->groups[i].sharing);
		free(c->groups[i].source);
	}
	free(c->results);
	free(c->groups);
	free(c->ns);
	free(c->name);
	free(c->uid);
	*c = (struct dra_claim){0};
}

static const char *str_at(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Does config request name r match allocation result request q ("main" names every "main/sub")? */
static bool request_matches(const char *r, const char *q)
{
	size_t l = strlen(r);

	return streq(r, q) || (strncmp(r, q, l) == 0 && q[l] == '/' && !strchr(r, '/'));
}

static bool names_request(const json_t *requests, const char *q)
{
	size_t i;
	json_t *r;

	json_array_foreach (requests, i, r)
		if (json_is_string(r) && request_matches(json_string_value(r), q))
			return true;
	return false;
}

/* our driver's configs: class ones, then the claim's (GetOpaqueDeviceConfigs()) */
static int read_configs(const json_t *configs, const struct dra_claim_check *c, struct cfg **ret, size_t *ret_n,
			struct gerr *err)
{
	static const char *const sources[] = {"FromClass", "FromClaim"};
	struct cfg *v = calloc(json_array_size(configs) + 1, sizeof(*v));
	size_t n = 0, i;
	json_t *e;
	int r;

	if (!v)
		return gerr_set(err, ENOMEM, "out of memory");
	*ret = v;
	for (size_t pass = 0; pass < ELEMENTSOF(sources); pass++)
		json_array_foreach (configs, i, e) {
			const char *source = str_at(e, "source");
			const json_t *opaque = json_object_get(e, "opaque");

			if (!source || (!streq(source, sources[0]) && !streq(source, sources[1])))
				return gerr_set(err, EINVAL, "config %zu: invalid config source \"%s\"", i,
						source ?: "");
			if (!streq(source, sources[pass]))
				continue;
			/* a config this version cannot read is refused, not skipped: it may be ours */
			if (!json_is_object(opaque))
				return gerr_set(err, EINVAL,
						"config %zu (%s): only opaque parameters are supported by this driver",
						i, source);
			if (!str_at(opaque, "driver") || !streq(str_at(opaque, "driver"), c->driver))
				continue; /* another driver's: a request may be served by several drivers */
			v[n].requests = json_object_get(e, "requests");
			snprintf(v[n].source, sizeof(v[n].source), "%s config %zu", source, i);
			v[n].sharing = (struct dra_sharing){.thread_pct = -1, .pinned = -1};
			r = dra_gpuconfig_parse(json_object_get(opaque, "parameters"), c->gates, &v[n].sharing, err);
			v[n].kind = v[n].sharing.kind;
			n++; /* cleared by the caller even when half-filled */
			*ret_n = n;
			if (r < 0)
				return gerr_prefix(err, "config %zu (%s, driver %s): ", i, source, c->driver);
		}
	*ret_n = n;
	return 0;
}

static int add_group(struct dra_claim *c, struct dra_sharing *take, const char *source, size_t *ret)
{
	struct dra_group *g = realloc(c->groups, (c->n_groups + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	c->groups = g;
	g = &c->groups[c->n_groups];
	*g = (struct dra_group){.sharing = *take, .source = strdup(source)};
	*take = (struct dra_sharing){.thread_pct = -1, .pinned = -1};
	if (!g->source)
		return -ENOMEM;
	*ret = c->n_groups++;
	return 0;
}

/* The config of result q on a device of kind k: index into cfgs, or -1 for none. */
static int pick_config(const struct cfg *cfgs, size_t n, const char *q, enum dra_cfg_kind k, struct gerr *err)
{
	for (size_t j = n; j-- > 0;) {
		const struct cfg *f = &cfgs[j];
		bool all = json_array_size(f->requests) == 0;

		if (!all && !names_request(f->requests, q))
			continue;
		if (f->kind == k)
			return (int)j;
		if (!all) /* named for this request: a wrong kind is the user's error */
			return gerr_set(err, EINVAL, "%s: cannot apply %s to a %s device (request %s)", f->source,
					dra_cfg_kind_name(f->kind), k == DRA_CFG_GPU ? "GPU" : "MIG", q);
	}
	return -1;
}

static int read_results(const json_t *results, const struct dra_claim_check *c, struct cfg *cfgs, size_t n_cfgs,
			struct dra_claim *out, struct gerr *err)
{
	struct dra_sharing none = {.thread_pct = -1, .pinned = -1};
	size_t none_group = 0, i;
	bool have_none = false;
	json_t *e;

	if (!(out->results = calloc(json_array_size(results) + 1, sizeof(*out->results))))
		return gerr_set(err, ENOMEM, "out of memory");
	json_array_foreach (results, i, e) {
		const char *driver = str_at(e, "driver"), *pool = str_at(e, "pool"), *dev = str_at(e, "device");
		const char *req = str_at(e, "request");
		const struct dra_device *d;
		struct dra_result *res;
		int j;

		if (!driver || !streq(driver, c->driver))
			continue;
		if (!pool || !dev || !req)
			return gerr_set(err, EINVAL, "allocation result %zu lacks its request, pool or device", i);
		if (!streq(pool, c->pool))
			return gerr_set(err, EINVAL,
					"device %s was allocated from pool %s, but this node's pool is %s: the claim "
					"belongs to another node",
					dev, pool, c->pool);
		if (!(d = dra_devices_find(c->devices, dev)))
			return gerr_set(err, ENODEV,
					"device %s is not a device of this node (any more): it was allocated from a "
					"ResourceSlice published before a MIG re-partition or a GPU was lost",
					dev);
		j = pick_config(cfgs, n_cfgs, req, d->type == DRA_DEV_MIG ? DRA_CFG_MIG : DRA_CFG_GPU, err);
		if (j < -1)
			return j;
		res = &out->results[out->n_results++];
		res->type = d->type;
		res->admin = json_is_true(json_object_get(e, "adminAccess"));
		if (!(res->request = strdup(req)) || !(res->device = strdup(dev)))
			return gerr_set(err, ENOMEM, "out of memory");
		if (j >= 0 && !cfgs[j].group) {
			if (add_group(out, &cfgs[j].sharing, cfgs[j].source, &cfgs[j].group) < 0)
				return gerr_set(err, ENOMEM, "out of memory");
			cfgs[j].group++;
		} else if (j < 0 && !have_none) {
			if (add_group(out, &none, "no config", &none_group) < 0)
				return gerr_set(err, ENOMEM, "out of memory");
			have_none = true;
		}
		res->group = j >= 0 ? cfgs[j].group - 1 : none_group;
	}
	return 0;
}

int dra_claim_parse(const json_t *claim, const struct dra_claim_ref *want, const struct dra_claim_check *c,
		    struct dra_claim *ret, struct gerr *err)
{
	const json_t *meta = json_object_get(claim, "metadata");
	const json_t *alloc = json_object_get(json_object_get(claim, "status"), "allocation");
	const json_t *devices = json_object_get(alloc, "devices");
	const char *uid = str_at(meta, "uid"), *ns = str_at(meta, "namespace"), *name = str_at(meta, "name");
	struct dra_claim out = {0};
	struct cfg *cfgs = NULL;
	size_t n_cfgs = 0;
	int r;

	if (!json_is_object(claim) || !uid || !name)
		return gerr_set(err, EINVAL,
				"ResourceClaim %s/%s: not a ResourceClaim object (no metadata.uid or name)", want->ns,
				want->name);
	if (!streq(uid, want->uid) || !streq(name, want->name) || !streq(ns ?: "", want->ns))
		return gerr_set(err, ESTALE,
				"ResourceClaim %s/%s: the API has uid %s, kubelet asked for %s: the claim was replaced "
				"(deleted and created again)",
				want->ns, want->name, uid, want->uid);
	if (!json_is_object(alloc))
		return gerr_set(err, EINVAL, "ResourceClaim %s/%s: not allocated", want->ns, want->name);
	r = read_configs(json_object_get(devices, "config"), c, &cfgs, &n_cfgs, err);
	if (r >= 0)
		r = read_results(json_object_get(devices, "results"), c, cfgs, n_cfgs, &out, err);
	for (size_t i = 0; i < n_cfgs; i++)
		dra_sharing_clear(&cfgs[i].sharing);
	free(cfgs);
	if (r >= 0 && (!(out.ns = strdup(want->ns)) || !(out.name = strdup(want->name)) || !(out.uid = strdup(uid))))
		r = gerr_set(err, ENOMEM, "out of memory");
	if (r < 0) {
		dra_claim_clear(&out);
		return gerr_prefix(err, "ResourceClaim %s/%s: ", want->ns, want->name);
	}
	*ret = out;
	return 0;
}
