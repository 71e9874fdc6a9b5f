/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs on top of one request (kapi/client.c): GET, LIST with paging, create, update, delete and
 * the patches, their answers decoded and their errors in words. docs/reference/kube-api.md §3-§5.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kapi/internal.h"
#include "util/macro.h"

#define DEFAULT_PAGE 500 /* client-go tools/pager defaultPageSize */

/* -- the verbs ------------------------------------------------------------------------------- */

int kapi_url(const struct kapi *k, const struct kapi_what *w, char **ret, struct gerr *err)
{
	_cleanup_free_ char *path = NULL;
	int r = kapi_path(w->res, w->ns, w->name, w->subresource, &path, err);

	if (r < 0)
		return r;
	return asprintf(ret, "%s%s", k->cfg->server, path) < 0 ? -ENOMEM : 0;
}

static int answer(struct kapi_call *c, json_t **ret, struct gerr *err)
{
	json_error_t jerr;
	json_t *v;

	if (!ret)
		return 0;
	v = json_loadb(c->resp ? c->resp : "", c->resp_len, 0, &jerr);
	if (!v)
		return gerr_set(err, EBADMSG, "%s %s: the answer is not JSON: %s", c->what.verb, c->what.res->resource,
				jerr.text);
	*ret = v;
	return 0;
}

/*
 * One request with a JSON body (may be NULL) and query parameters (key, value pairs up to a NULL key; a
 * NULL value leaves its key out), its JSON answer into *ret (may be NULL).
 */
static int request(struct kapi *k, const struct kapi_what *w, const char *method, const char *content_type,
		   const json_t *body, const char *const *query, struct kapi_cancel *cancel, json_t **ret,
		   struct gerr *err)
{
	struct kapi_call c = {.what = *w, .method = method, .content_type = content_type};
	_cleanup_free_ char *text = NULL;
	int r;

	r = kapi_url(k, w, &c.url, err);
	for (size_t i = 0; r >= 0 && query && query[i]; i += 2)
		if (query[i + 1])
			r = kapi_query_add(&c.url, query[i], query[i + 1]);
	if (r >= 0 && body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			r = -ENOMEM;
		c.body = text;
		c.body_len = text ? strlen(text) : 0;
	}
	if (r >= 0)
		r = kapi_call_run(k, &c, cancel, err);
	if (r >= 0)
		r = answer(&c, ret, err);
	kapi_call_done(&c);
	return r;
}

int kapi_get(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name, json_t **ret,
	     struct gerr *err)
{
	const struct kapi_what w = {.verb = "get", .res = r, .ns = ns, .name = name};

	if (!name)
		return gerr_set(err, EINVAL, "get %s: no name", r->resource);
	return request(k, &w, "GET", NULL, NULL, NULL, NULL, ret, err);
}

int kapi_create(struct kapi *k, const struct kapi_resource *r, const char *ns, const json_t *obj, json_t **ret,
		struct gerr *err)
{
	const struct kapi_what w = {.verb = "create", .res = r, .ns = ns};
	const char *q[] = {"fieldManager", k->field_manager, NULL};

	/* POST to the collection; the server's message names the object */
	return request(k, &w, "POST", "application/json", obj, q, NULL, ret, err);
}

int kapi_update(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name,
		const char *subresource, const json_t *obj, json_t **ret, struct gerr *err)
{
	const struct kapi_what w = {.verb = "update", .res = r, .ns = ns, .name = name, .subresource = subresource};
	const char *q[] = {"fieldManager", k->field_manager, NULL};

	return request(k, &w, "PUT", "application/json", obj, q, NULL, ret, err);
}

int kapi_delete(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name,
		const struct kapi_delete_options *o, struct gerr *err)
{
	const struct kapi_what w = {.verb = "delete", .res = r, .ns = ns, .name = name};
	json_t *body = NULL, *pre;
	int e;

	if (o && (o->uid || o->resource_version || o->propagation)) {
		body = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
		pre = json_object();
		if (!body || !pre || (o->uid && json_object_set_new(pre, "uid", json_string(o->uid)) < 0) ||
		    (o->resource_version &&
		     json_object_set_new(pre, "resourceVersion", json_string(o->resource_version)) < 0) ||
		    (json_object_size(pre) && json_object_set(body, "preconditions", pre) < 0) ||
		    (o->propagation &&
		     json_object_set_new(body, "propagationPolicy", json_string(o->propagation)) < 0)) {
			json_decref(pre);
			json_decref(body);
			return -ENOMEM;
		}
		json_decref(pre);
	}
	e = request(k, &w, "DELETE", body ? "application/json" : NULL, body, NULL, NULL, NULL, err);
	json_decref(body);
	return e;
}

/* apimachinery pkg/types/patch.go */
static const struct {
	const char *content_type;
	bool force;
} patch_types[] = {
    [KAPI_MERGE_PATCH] = {"application/merge-patch+json", false},
    [KAPI_STRATEGIC_PATCH] = {"application/strategic-merge-patch+json", false},
    [KAPI_JSON_PATCH] = {"application/json-patch+json", false},
    [KAPI_APPLY] = {"application/apply-patch+yaml", false},
    [KAPI_APPLY_FORCE] = {"application/apply-patch+yaml", true},
};

int kapi_patch(struct kapi *k, const struct kapi_resource *r, const char *ns, const char *name, const char *subresource,
	       enum kapi_patch type, const json_t *patch, json_t **ret, struct gerr *err)
{
	const struct kapi_what w = {.verb = "patch", .res = r, .ns = ns, .name = name, .subresource = subresource};
	const char *q[] = {"fieldManager", k->field_manager, "force", NULL, NULL};

	if ((unsigned)type >= ELEMENTSOF(patch_types))
		return gerr_set(err, EINVAL, "patch %s: unknown patch type %d", r->resource, (int)type);
	if (!name)
		return gerr_set(err, EINVAL, "patch %s: no name", r->resource);
	if (patch_types[type].force)
		q[3] = "true";
	return request(k, &w, "PATCH", patch_types[type].content_type, patch, q, NULL, ret, err);
}

/* One page of a LIST: selectors, limit (0: none) and continue token; its answer into *ret. */
static int list_page(struct kapi *k, const struct kapi_what *w, const struct kapi_list_options *o, unsigned limit,
		     const char *cont, struct kapi_cancel *cancel, json_t **ret, struct gerr *err)
{
	char lim[16];
	const char *q[] = {"labelSelector",
			   o->label_selector,
			   "fieldSelector",
			   o->field_selector,
			   "limit",
			   limit ? lim : NULL,
			   "continue",
			   cont,
			   NULL};

	snprintf(lim, sizeof(lim), "%u", limit);
	return request(k, w, "GET", NULL, NULL, q, cancel, ret, err);
}

int kapi_list_all(struct kapi *k, const struct kapi_resource *r, const char *ns, const struct kapi_list_options *o,
		  struct kapi_cancel *cancel, json_t **ret, struct gerr *err)
{
	static const struct kapi_list_options none = {0};
	const struct kapi_what w = {.verb = "list", .res = r, .ns = ns};
	_cleanup_free_ char *cont = NULL;
	json_t *list = NULL, *page, *items, *meta;
	unsigned limit;
	int e;

	if (!o)
		o = &none;
	limit = o->limit ? o->limit : DEFAULT_PAGE;
	for (;;) {
		page = NULL;
		e = list_page(k, &w, o, limit, cont, cancel, &page, err);
		if (e == -ETIME && cont) {
			/* the continue token expired (410): one LIST without paging, as client-go's pager does */
			json_decref(list);
			list = NULL;
			free(cont);
			cont = NULL;
			limit = 0;
			continue;
		}
		if (e < 0)
			break;
		items = json_object_get(page, "items");
		meta = json_object_get(page, "metadata");
		if (!json_is_object(page) || (items && !json_is_array(items) && !json_is_null(items))) {
			json_decref(page);
			e = gerr_set(err, EBADMSG, "list %s: the answer is not a list", r->resource);
			break;
		}
		free(cont);
		cont = NULL;
		if (json_string_length(json_object_get(meta, "continue")) &&
		    !(cont = strdup(json_string_value(json_object_get(meta, "continue"))))) {
			json_decref(page);
			e = -ENOMEM;
			break;
		}
		if (!list) {
			list = page;
			if (!json_is_array(items) && json_object_set_new(list, "items", json_array()) < 0)
				e = -ENOMEM;
		} else {
			e = json_is_array(items) && json_array_extend(json_object_get(list, "items"), items) < 0
				? -ENOMEM
				: 0;
			json_decref(page);
		}
		if (e < 0 || !cont)
			break;
	}
	if (e < 0) {
		json_decref(list);
		return e;
	}
	/* one list now: no continue token, nothing remaining */
	meta = json_object_get(list, "metadata");
	json_object_del(meta, "continue");
	json_object_del(meta, "remainingItemCount");
	*ret = list;
	return 0;
}

int kapi_list(struct kapi *k, const struct kapi_resource *r, const char *ns, const struct kapi_list_options *o,
	      json_t **ret, struct gerr *err)
{
	return kapi_list_all(k, r, ns, o, NULL, ret, err);
}
