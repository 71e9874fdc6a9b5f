/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's side of the API server (api.h): claims GETs, the pool written through the plan of
 * dra/pool.h, the Node and the pool followed by two informers. The facts about the API (field
 * selectors of ResourceSlices, what kubelet wipes) are in docs/reference/dra.md §2 and §5.4.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dra/api.h"
#include "dra/pool.h"
#include "dra/quantity.h"
#include "kapi/kapi.h"

/* The device plugins whose resources make the driver withhold the pool (docs/reference/dra.md §13). */
#define DEVICE_PLUGIN_DOMAIN "nvidia.com/"

struct dra_api {
	struct kapi *k;
	struct kapi_informer *slices, *node;
	int evfd;
	char *driver, *node_name;
	struct dra_claim_source src;
	struct dra_slice_publisher pub;
	bool slices_synced, node_synced; /* as changed() last saw them */
	/* what the last publish made: the pool's generation, the wanted slices and each slice's
	 * resourceVersion after it (name -> rv); a pool that still is exactly that needs no write */
	int64_t generation;
	json_t *last_wanted, *made;
	unsigned long long made_rv; /* the highest resourceVersion our writes got: the cache is used once past it */
	bool taints_dropped;
};

static void wake(void *userdata)
{
	struct dra_api *a = userdata;
	uint64_t one = 1;

	if (write(a->evfd, &one, sizeof(one)) < 0) {
		/* saturated: a wake-up is pending anyway */
	}
}

static int claims_get(void *data, const char *ns, const char *name, json_t **ret, struct gerr *err)
{
	struct dra_api *a = data;

	return kapi_get(a->k, &kapi_resourceclaims, ns, name, ret, err);
}

/* resourceVersion as a number: etcd's revision (opaque by the API's contract; 0 when it is not one). */
static unsigned long long rv_of(const json_t *obj)
{
	const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	char *end;
	unsigned long long n = rv ? strtoull(rv, &end, 10) : 0;

	return rv && *end == '\0' ? n : 0;
}

/* Both informers have listed, and the slices' watch has shown our last writes. */
static int ready(struct dra_api *a, struct gerr *err)
{
	struct kapi_informer_status ss, ns;

	kapi_informer_status(a->slices, &ss);
	kapi_informer_status(a->node, &ns);
	/* not listed yet: -EAGAIN (the informer wakes the daemon when it is); failing: its error */
	if (!ss.synced)
		return gerr_set(err, ss.error ? ss.error : EAGAIN,
				"waiting for the API server's list of this node's ResourceSlices%s%s",
				ss.error ? ": " : "", ss.error ? ss.message : "");
	if (!ns.synced)
		return gerr_set(err, ns.error ? ns.error : EAGAIN, "waiting for the API server's Node %s%s%s",
				a->node_name, ns.error ? ": " : "", ns.error ? ns.message : "");
	if (a->made_rv && strtoull(ss.resource_version, NULL, 10) < a->made_rv)
		return gerr_set(err, EAGAIN, "waiting for the watch to show the ResourceSlices just written");
	return 0;
}

/* The pool is what the last publish of these slices made: nothing changed it since. */
static bool as_made(const struct dra_api *a, const json_t *existing, const json_t *wanted)
{
	size_t i;
	json_t *s;

	if (!a->last_wanted || !json_equal(a->last_wanted, wanted) ||
	    json_array_size(existing) != json_object_size(a->made))
		return false;
	json_array_foreach (existing, i, s) {
		const json_t *meta = json_object_get(s, "metadata");
		const char *name = json_string_value(json_object_get(meta, "name"));
		const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
		const char *was = name ? json_string_value(json_object_get(a->made, name)) : NULL;

		if (!rv || !was || !streq(rv, was))
			return false;
	}
	return true;
}

/* Any device of obj carries a taint. */
static bool has_taints(const json_t *obj)
{
	size_t i;
	json_t *dev;

	json_array_foreach (json_object_get(json_object_get(obj, "spec"), "devices"), i, dev)
		if (json_array_size(json_object_get(dev, "taints")))
			return true;
	return false;
}

/* One write's answer: its resourceVersion kept; the taints it lost noticed. */
static void made_one(struct dra_api *a, const json_t *sent, const json_t *answer)
{
	const json_t *meta = json_object_get(answer, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));

	if (name)
		json_object_set(a->made, name, json_object_get(meta, "resourceVersion"));
	a->made_rv = MAX(a->made_rv, rv_of(answer));
	if (has_taints(sent) && !has_taints(answer))
		a->taints_dropped = true;
}

static int apply(struct dra_api *a, const struct dra_pool_plan *p, struct gerr *err)
{
	int writes = 0, r;
	size_t i;
	json_t *s;

	json_array_foreach (p->creates, i, s) {
		json_auto_t *ans = NULL;

		if ((r = kapi_create(a->k, &kapi_resourceslices, NULL, s, &ans, err)) < 0)
			return r;
		made_one(a, s, ans);
		writes++;
	}
	json_array_foreach (p->updates, i, s) {
		json_auto_t *ans = NULL;
		const char *name = json_string_value(json_object_get(json_object_get(s, "metadata"), "name"));

		/* -ESTALE: changed meanwhile; the informer brings the new one and the next publish plans again */
		if ((r = kapi_update(a->k, &kapi_resourceslices, NULL, name, NULL, s, &ans, err)) < 0)
			return r;
		made_one(a, s, ans);
		writes++;
	}
	json_array_foreach (p->deletes, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *uid = json_string_value(json_object_get(s, "uid"));

		r = kapi_delete(a->k, &kapi_resourceslices, NULL, name,
				&(struct kapi_delete_options){.uid = uid && uid[0] ? uid : NULL}, err);
		if (r < 0 && r != -ENOENT)
			return r;
		writes += r >= 0;
	}
	return writes;
}

static int publish(void *data, const json_t *slices, int64_t *ret_generation, struct gerr *err)
{
	struct dra_api *a = data;
	struct dra_pool_plan plan = {0};
	json_auto_t *node = NULL, *existing = NULL;
	const char *uid;
	size_t i;
	json_t *s;
	int r;

	if ((r = ready(a, err)) < 0)
		return r;
	if (!(node = kapi_informer_get(a->node, a->node_name)))
		return gerr_set(err, EAGAIN,
				"Node %s is not in the API server (yet): its ResourceSlices need it as their owner",
				a->node_name);
	uid = json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
	if (!(existing = kapi_informer_list(a->slices)))
		return gerr_set(err, ENOMEM, "out of memory");
	if (as_made(a, existing, slices))
		return 0;
	if ((r = dra_pool_plan(existing, slices, uid, a->generation, &plan, err)) < 0)
		return r;
	/* the slices left as they were keep their resourceVersion in what was made */
	json_object_clear(a->made);
	json_array_foreach (existing, i, s) {
		const char *name = json_string_value(json_object_get(json_object_get(s, "metadata"), "name"));
		size_t k;
		json_t *x;
		bool touched = false;

		json_array_foreach (plan.deletes, k, x)
			touched |= name && streq(name, json_string_value(json_object_get(x, "name")) ?: "");
		if (name && !touched)
			json_object_set(a->made, name,
					json_object_get(json_object_get(s, "metadata"), "resourceVersion"));
	}
	r = apply(a, &plan, err);
	if (r >= 0) {
		a->generation = plan.generation;
		*ret_generation = plan.generation;
		json_decref(a->last_wanted);
		a->last_wanted = json_deep_copy(slices);
	} else {
		/* half of it written: plan again from what the informer shows next */
		json_decref(a->last_wanted);
		a->last_wanted = NULL;
		gerr_prefix(err, "ResourceSlices of node %s: ", a->node_name);
	}
	dra_pool_plan_clear(&plan);
	return r;
}

/* Drain both informers' queues: true when a key changed or an informer finished its first list. */
static bool changed(void *data)
{
	struct dra_api *a = data;
	struct kapi_informer_status ss, ns;
	struct kapi_informer *infs[] = {a->slices, a->node};
	bool any = false;
	uint64_t cnt;

	if (read(a->evfd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: read the queues anyway */
	}
	for (size_t i = 0; i < ELEMENTSOF(infs); i++) {
		char *key;
		json_t *obj;

		while (kapi_informer_next(infs[i], &key, &obj) > 0) {
			any = true;
			free(key);
			json_decref(obj);
		}
	}
	kapi_informer_status(a->slices, &ss);
	kapi_informer_status(a->node, &ns);
	any |= ss.synced != a->slices_synced || ns.synced != a->node_synced;
	a->slices_synced = ss.synced;
	a->node_synced = ns.synced;
	return any;
}

static int device_plugin(void *data, char *buf, size_t size)
{
	struct dra_api *a = data;
	json_auto_t *node = kapi_informer_get(a->node, a->node_name);
	const char *name;
	json_t *v;
	size_t len = 0;

	if (!node)
		return -EAGAIN;
	buf[0] = '\0';
	json_object_foreach (json_object_get(json_object_get(node, "status"), "allocatable"), name, v) {
		int64_t n = 0;

		if (strncmp(name, DEVICE_PLUGIN_DOMAIN, strlen(DEVICE_PLUGIN_DOMAIN)) != 0 || !json_string_value(v) ||
		    quantity_parse(json_string_value(v), &n, NULL) < 0 || n <= 0)
			continue;
		len += (size_t)snprintf(buf + MIN(len, size), size - MIN(len, size), "%s%s=%s", len ? " " : "", name,
					json_string_value(v));
	}
	return len ? 1 : 0;
}

static bool taints_dropped(void *data)
{
	return ((struct dra_api *)data)->taints_dropped;
}

static int start_informer(struct dra_api *a, const struct kapi_resource *r, const char *selector,
			  struct kapi_informer **ret, struct gerr *err)
{
	return kapi_informer_start(
	    a->k,
	    &(struct kapi_informer_options){.resource = r, .field_selector = selector, .notify = wake, .userdata = a},
	    ret, err);
}

int dra_api_open(const struct dra_api_options *o, struct dra_api **ret, struct gerr *err)
{
	_cleanup_(dra_api_closep) struct dra_api *a = calloc(1, sizeof(*a));
	_cleanup_free_ char *slice_sel = NULL, *node_sel = NULL;
	int r;

	if (!a)
		return gerr_set(err, ENOMEM, "out of memory");
	a->evfd = -1;
	if (!(a->driver = strdup(o->driver)) || !(a->node_name = strdup(o->node_name)) || !(a->made = json_object()) ||
	    asprintf(&slice_sel, "spec.nodeName=%s,spec.driver=%s", o->node_name, o->driver) < 0 ||
	    asprintf(&node_sel, "metadata.name=%s", o->node_name) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if ((a->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return gerr_set(err, errno, "eventfd: %s", strerror(errno));
	r = kapi_open(
	    &(struct kapi_options){.kubeconfig = o->kubeconfig,
				   .env = o->env,
				   .qps = o->qps,
				   .burst = o->burst,
				   /* within kubelet's 45 s call timeout, with room for the rest of a prepare */
				   .timeout_s = 20,
				   .field_manager = "gpulet-dra"},
	    &a->k, err);
	if (r < 0)
		return r;
	if ((r = start_informer(a, &kapi_resourceslices, slice_sel, &a->slices, err)) < 0 ||
	    (r = start_informer(a, &kapi_nodes, node_sel, &a->node, err)) < 0)
		return r;
	a->src = (struct dra_claim_source){.get = claims_get, .data = a};
	a->pub = (struct dra_slice_publisher){.publish = publish,
					      .changed = changed,
					      .device_plugin = device_plugin,
					      .taints_dropped = taints_dropped,
					      .fd = a->evfd,
					      .data = a};
	*ret = TAKE_PTR(a);
	return 0;
}

void dra_api_close(struct dra_api *a)
{
	if (!a)
		return;
	kapi_informer_stop(a->slices);
	kapi_informer_stop(a->node);
	kapi_close(a->k);
	if (a->evfd >= 0)
		close(a->evfd);
	json_decref(a->last_wanted);
	json_decref(a->made);
	free(a->driver);
	free(a->node_name);
	free(a);
}

const struct dra_claim_source *dra_api_claims(struct dra_api *a)
{
	return &a->src;
}

const struct dra_slice_publisher *dra_api_publisher(struct dra_api *a)
{
	return &a->pub;
}

const char *dra_api_warning(const struct dra_api *a)
{
	return kapi_warning(a->k);
}
