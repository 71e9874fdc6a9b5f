/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet side of the DRA driver on the wire (docs/reference/dra.md §2, §3): the registration
 * server on <registry dir>/<driver>-reg.sock (pluginregistration.Registration: GetInfo,
 * NotifyRegistrationStatus) and the DRA service on <plugins dir>/<driver>/dra.sock
 * (k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and the same for v1beta1, and kubelet's alpha device health
 * stream v1alpha1.DRAResourceHealth), on kube/gsrv's C-core servers.
 * Each claim of a request is answered on its own: one that fails gets its error in the reply, the
 * others are still prepared; only a request that does not decode fails the call.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "dra/claim.h"
#include "util/err.h"

struct dra_server_ops {
	/* One claim of NodePrepareResources: *ret the devices (dra_prepare()'s answer), or -errno with err. */
	int (*prepare)(void *data, const struct dra_claim_ref *ref, json_t **ret, struct gerr *err);
	int (*unprepare)(void *data, const struct dra_claim_ref *ref, struct gerr *err);
	/* kubelet's NotifyRegistrationStatus */
	void (*registered)(void *data, bool ok, const char *error);
	/*
	 * NodeWatchResources (v1alpha1.DRAResourceHealth): the health of every device now, a JSON array of
	 * {"pool", "device", "healthy": bool, "since": Unix seconds}; NULL when out of memory.
	 */
	json_t *(*health)(void *data);
};

struct dra_server_options {
	const char *driver;
	const char *reg_socket; /* where to listen, as this process opens it (under --root) */
	const char *dra_socket;
	const char *endpoint; /* dra.sock as kubelet dials it (the host path): GetInfo's endpoint */
};

struct dra_server;

/* Serve both sockets (a stale socket file is replaced; one another process serves is -EADDRINUSE). */
int dra_server_start(const struct dra_server_options *o, const struct dra_server_ops *ops, void *data,
		     struct dra_server **ret, struct gerr *err);
/* Stop serving (calls in flight get grace_ms) and remove the sockets. NULL is fine. */
void dra_server_stop(struct dra_server *s, int grace_ms);

/* The lock every call runs under: what the ops read is changed only with it held. No-ops on NULL. */
void dra_server_lock(struct dra_server *s);
void dra_server_unlock(struct dra_server *s);
/* The devices' health changed: every NodeWatchResources stream sends the list again (lock held). */
void dra_server_health_changed(struct dra_server *s);

/* The gRPC services this driver lists in GetInfo's supported_versions, most recent first. */
extern const char *const dra_services[];
