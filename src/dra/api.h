/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's side of the API server, on gpulet's one client (kapi/kapi.h): it fills the two
 * seams of dra.h. Claims are read with a GET each (kubelet asks for a claim once it is allocated and
 * reserved for a pod: a cached copy could be older than that). Two informers follow what
 * publishing relies on: this node's ResourceSlices of this driver (fieldSelector spec.nodeName,
 * spec.driver: the ones kubelet wipes) and this Node (its uid for the owner reference, and the
 * device-plugin resources it advertises); both wake the daemon through one eventfd.
 *
 * RBAC it needs (deploy/helm/gpulet/templates/dra-rbac.yaml): resourceclaims get; resourceslices
 * list, watch, create, update, delete; nodes get, list, watch (one Node, by field selector).
 */
#pragma once

#include <stdbool.h>

#include "dra/dra.h"
#include "kapi/kapi.h"
#include "util/err.h"

struct dra_api_options {
	const char *kubeconfig;     /* --kubeconfig or $KUBECONFIG; NULL: the pod's service account */
	const struct kapi_env *env; /* in a pod: where the API server is (borrowed) */
	double qps;                 /* --kube-api-qps (client-go's meaning: 0 is 5, < 0 no limit) */
	int burst;                  /* --kube-api-burst */
	const char *driver, *node_name;
};

struct dra_api;

/*
 * Open the client (libcurl is loaded here) and start the informers. -ENOENT when there is no API
 * server to talk to (no kubeconfig, not in a pod), other -errno as kapi_open(); err says what to do.
 */
int dra_api_open(const struct dra_api_options *o, struct dra_api **ret, struct gerr *err);
/* Stop the informers, close the client. NULL is fine. */
void dra_api_close(struct dra_api *a);
DEFINE_CLEANUP_FUNC(struct dra_api, dra_api_close)

/* The seams of dra.h backed by a; valid until dra_api_close(). */
const struct dra_claim_source *dra_api_claims(struct dra_api *a);
const struct dra_slice_publisher *dra_api_publisher(struct dra_api *a);
/* The warning to log once (kapi_warning(): insecure-skip-tls-verify), NULL when none. */
const char *dra_api_warning(const struct dra_api *a);
