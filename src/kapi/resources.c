/* SPDX-License-Identifier: Apache-2.0 */
/* The resources gpulet uses, and the request paths built from them (docs/reference/kube-api.md §3). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kapi/wire.h"
#include "util/macro.h"

const struct kapi_resource kapi_nodes = {"", "v1", "nodes", "Node", false};
const struct kapi_resource kapi_pods = {"", "v1", "pods", "Pod", true};
const struct kapi_resource kapi_events = {"", "v1", "events", "Event", true};
const struct kapi_resource kapi_configmaps = {"", "v1", "configmaps", "ConfigMap", true};
/* resource.k8s.io/v1: DRA, GA in Kubernetes 1.34 */
const struct kapi_resource kapi_resourceclaims = {"resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true};
const struct kapi_resource kapi_resourceslices = {"resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false};
/* node-feature-discovery's CRD (deployment/base/nfd-crds/nfd-api-crds.yaml) */
const struct kapi_resource kapi_nodefeatures = {"nfd.k8s-sigs.io", "v1alpha1", "nodefeatures", "NodeFeature", true};
const struct kapi_resource kapi_selfsubjectreviews = {"authentication.k8s.io", "v1", "selfsubjectreviews",
						      "SelfSubjectReview", false};

/* RFC 3986 unreserved characters pass, everything else is %XX */
static size_t encode(const char *s, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c)) {
			if (out)
				out[n] = (char)c;
			n++;
			continue;
		}
		if (out) {
			out[n] = '%';
			out[n + 1] = hex[c >> 4];
			out[n + 2] = hex[c & 15];
		}
		n += 3;
	}
	return n;
}

/* Append "/" + encoded s to *p (a malloc'd string). */
static int add_segment(char **p, const char *s)
{
	size_t len = strlen(*p), n = encode(s, NULL);
	char *np = realloc(*p, len + n + 2);

	if (!np)
		return -ENOMEM;
	np[len] = '/';
	encode(s, np + len + 1);
	np[len + 1 + n] = '\0';
	*p = np;
	return 0;
}

static int check_segment(const char *what, const char *s, struct gerr *err)
{
	if (!*s || streq(s, ".") || streq(s, "..") || strchr(s, '/'))
		return gerr_set(err, EINVAL, "%s \"%s\" is not a valid object name", what, s);
	return 0;
}

int kapi_path(const struct kapi_resource *r, const char *ns, const char *name, const char *subresource, char **ret,
	      struct gerr *err)
{
	_cleanup_free_ char *p = NULL;
	int e = 0;

	if ((ns && (e = check_segment("namespace", ns, err)) < 0) ||
	    (name && (e = check_segment("name", name, err)) < 0) ||
	    (subresource && (e = check_segment("subresource", subresource, err)) < 0))
		return e;
	if (ns && !r->namespaced)
		return gerr_set(err, EINVAL, "%s are cluster-scoped: no namespace", r->resource);
	if (subresource && !name)
		return gerr_set(err, EINVAL, "a subresource needs an object name");
	if (*r->group)
		p = strdup("/apis"), e = p ? add_segment(&p, r->group) : -ENOMEM;
	else
		p = strdup("/api");
	if (!p || e < 0 || add_segment(&p, r->version) < 0 ||
	    (ns && (add_segment(&p, "namespaces") < 0 || add_segment(&p, ns) < 0)) ||
	    add_segment(&p, r->resource) < 0 || (name && add_segment(&p, name) < 0) ||
	    (subresource && add_segment(&p, subresource) < 0))
		return -ENOMEM;
	*ret = TAKE_PTR(p);
	return 0;
}

int kapi_query_add(char **url, const char *key, const char *value)
{
	size_t len = strlen(*url), kn = encode(key, NULL), vn = encode(value, NULL);
	char *np = realloc(*url, len + kn + vn + 3);

	if (!np)
		return -ENOMEM;
	np[len] = strchr(np, '?') ? '&' : '?';
	encode(key, np + len + 1);
	np[len + 1 + kn] = '=';
	encode(value, np + len + 2 + kn);
	np[len + 2 + kn + vn] = '\0';
	*url = np;
	return 0;
}
