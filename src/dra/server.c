/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registration and DRA gRPC services (server.h). Method paths are "/<proto package>.<service>/<rpc>"
 * of kubelet's api.proto files (v1.34.4; docs/reference/dra.md §3); the v1 and v1beta1 messages are
 * the same fields, so one set of protobuf-c messages serves both. kubeletplugin's helper
 * (dynamic-resource-allocation v0.34.4 draplugin.go) answers every claim in the map and strips
 * subrequest names from request_names; so does this.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include "dra.pb-c.h"
#include "dra/server.h"
#include "dra_health.pb-c.h"
#include "kube/gsrv.h"
#include "pluginregistration.pb-c.h"

/* protobuf-c's names of the v1 messages (package k8s.io.kubelet.pkg.apis.dra.v1) */
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest PrepReq;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse PrepResp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry PrepEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse PrepOne;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device Device;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest UnprepReq;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse UnprepResp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry UnprepEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse UnprepOne;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim Claim;
#define PB(x) k8s__io__kubelet__pkg__apis__dra__v1__##x

/* kubelet's constants: pluginregistration v1 DRAPlugin; dra v1 and v1beta1 DRAPluginService */
#define PLUGIN_TYPE "DRAPlugin"
const char *const dra_services[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth", NULL};

enum { M_GET_INFO, M_NOTIFY };
static const struct gsrv_method reg_methods[] = {
    [M_GET_INFO] = {"/pluginregistration.Registration/GetInfo", false},
    [M_NOTIFY] = {"/pluginregistration.Registration/NotifyRegistrationStatus", false},
};
enum { M_PREPARE, M_UNPREPARE, M_PREPARE_B1, M_UNPREPARE_B1, M_WATCH_HEALTH };
static const struct gsrv_method dra_methods[] = {
    [M_PREPARE] = {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", false},
    [M_UNPREPARE] = {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources", false},
    [M_PREPARE_B1] = {"/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources", false},
    [M_UNPREPARE_B1] = {"/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources", false},
    /* kubelet/pkg/apis/dra-health/v1alpha1/api.proto: package v1alpha1 (docs/reference/dra.md §3.3) */
    [M_WATCH_HEALTH] = {"/v1alpha1.DRAResourceHealth/NodeWatchResources", true},
};

struct dra_server {
	struct dra_server_options o;
	const struct dra_server_ops *ops;
	void *data;
	struct gsrv_group *g;
	struct gsrv *dra; /* dra.sock: the health stream's server */
	bool grpc_up;
};

static int pack(const ProtobufCMessage *m, uint8_t **out, size_t *outlen, struct gerr *err)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return gerr_set(err, ENOMEM, "out of memory");
	protobuf_c_message_pack(m, buf);
	*out = buf;
	*outlen = len;
	return 0;
}

static int reg_unary(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		     struct gerr *err)
{
	struct dra_server *s = data;

	if (method == M_GET_INFO) {
		Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;

		info.type = PLUGIN_TYPE;
		info.name = (char *)s->o.driver;
		info.endpoint = (char *)s->o.endpoint;
		info.supported_versions = (char **)dra_services;
		info.n_supported_versions = s->ops->health ? 3 : 2;
		return pack(&info.base, out, outlen, err);
	}
	Pluginregistration__RegistrationStatus *st = pluginregistration__registration_status__unpack(NULL, inlen, in);
	Pluginregistration__RegistrationStatusResponse resp = PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;

	if (!st)
		return gerr_set(err, EINVAL, "cannot decode RegistrationStatus (%zu bytes)", inlen);
	if (s->ops->registered)
		s->ops->registered(s->data, st->plugin_registered, st->error ? st->error : "");
	pluginregistration__registration_status__free_unpacked(st, NULL);
	return pack(&resp.base, out, outlen, err);
}

/* The claim as the ops see it: a Claim message's fields ("" for an absent one). */
static struct dra_claim_ref ref_of(const Claim *c)
{
	return (struct dra_claim_ref){
	    .ns = c->namespace_ ? c->namespace_ : "", .name = c->name ? c->name : "", .uid = c->uid ? c->uid : ""};
}

/* One claim's NodePrepareResourceResponse from the ops' answer; strings point into devs. */
static int fill_prepared(PrepOne *one, const json_t *devs)
{
	size_t n = json_array_size(devs), i;
	json_t *d;

	if (!n)
		return 0;
	one->devices = calloc(n, sizeof(*one->devices));
	if (!one->devices)
		return -ENOMEM;
	json_array_foreach (devs, i, d) {
		const json_t *reqs = json_object_get(d, "requests"), *ids = json_object_get(d, "cdiDeviceIDs");
		Device *dev = calloc(1, sizeof(*dev));

		if (!dev)
			return -ENOMEM;
		one->devices[one->n_devices++] = dev;
		PB(device__init)(dev);
		dev->pool_name = (char *)json_string_value(json_object_get(d, "poolName"));
		dev->device_name = (char *)json_string_value(json_object_get(d, "deviceName"));
		dev->request_names = calloc(json_array_size(reqs) + 1, sizeof(char *));
		dev->cdi_device_ids = calloc(json_array_size(ids) + 1, sizeof(char *));
		if (!dev->request_names || !dev->cdi_device_ids)
			return -ENOMEM;
		for (size_t k = 0; k < json_array_size(reqs); k++)
			dev->request_names[dev->n_request_names++] = (char *)json_string_value(json_array_get(reqs, k));
		for (size_t k = 0; k < json_array_size(ids); k++)
			dev->cdi_device_ids[dev->n_cdi_device_ids++] =
			    (char *)json_string_value(json_array_get(ids, k));
	}
	return 0;
}

static void free_prepared(PrepOne *one)
{
	for (size_t i = 0; i < one->n_devices; i++) {
		free(one->devices[i]->request_names);
		free(one->devices[i]->cdi_device_ids);
		free(one->devices[i]);
	}
	free(one->devices);
}

/* Every claim of the request gets an entry: its devices, or its error. */
static int prepare(struct dra_server *s, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		   struct gerr *err)
{
	PrepReq *req = PB(node_prepare_resources_request__unpack)(NULL, inlen, in);
	PrepResp resp;
	size_t n;
	int r = 0;

	if (!req)
		return gerr_set(err, EINVAL, "cannot decode NodePrepareResourcesRequest (%zu bytes)", inlen);
	n = req->n_claims;
	PrepEntry *entries = calloc(n + 1, sizeof(*entries)), **eptrs = calloc(n + 1, sizeof(*eptrs));
	PrepOne *ones = calloc(n + 1, sizeof(*ones));
	json_t **answers = calloc(n + 1, sizeof(*answers));
	char **errs = calloc(n + 1, sizeof(*errs));

	PB(node_prepare_resources_response__init)(&resp);
	for (size_t i = 0; entries && eptrs && ones && answers && errs && i < n; i++) {
		struct dra_claim_ref ref = ref_of(req->claims[i]);
		struct gerr cerr = {0};

		PB(node_prepare_resources_response__claims_entry__init)(&entries[i]);
		PB(node_prepare_resource_response__init)(&ones[i]);
		entries[i].key = (char *)ref.uid;
		entries[i].value = &ones[i];
		eptrs[i] = &entries[i];
		if (s->ops->prepare(s->data, &ref, &answers[i], &cerr) < 0)
			ones[i].error = errs[i] = strdup(cerr.msg[0] ? cerr.msg : "prepare failed");
		else if (fill_prepared(&ones[i], answers[i]) < 0)
			r = -ENOMEM;
	}
	resp.n_claims = n;
	resp.claims = eptrs;
	if (!entries || !eptrs || !ones || !answers || !errs || r < 0)
		r = gerr_set(err, ENOMEM, "out of memory");
	else
		r = pack(&resp.base, out, outlen, err);
	for (size_t i = 0; ones && answers && errs && i < n; i++) {
		free_prepared(&ones[i]);
		json_decref(answers[i]);
		free(errs[i]);
	}
	free(entries);
	free(eptrs);
	free(ones);
	free(answers);
	free(errs);
	PB(node_prepare_resources_request__free_unpacked)(req, NULL);
	return r;
}

static int unprepare(struct dra_server *s, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		     struct gerr *err)
{
	UnprepReq *req = PB(node_unprepare_resources_request__unpack)(NULL, inlen, in);
	UnprepResp resp;
	size_t n;
	int r;

	if (!req)
		return gerr_set(err, EINVAL, "cannot decode NodeUnprepareResourcesRequest (%zu bytes)", inlen);
	n = req->n_claims;
	UnprepEntry *entries = calloc(n + 1, sizeof(*entries)), **eptrs = calloc(n + 1, sizeof(*eptrs));
	UnprepOne *ones = calloc(n + 1, sizeof(*ones));
	char **errs = calloc(n + 1, sizeof(*errs));

	PB(node_unprepare_resources_response__init)(&resp);
	for (size_t i = 0; entries && eptrs && ones && errs && i < n; i++) {
		struct dra_claim_ref ref = ref_of(req->claims[i]);
		struct gerr cerr = {0};

		PB(node_unprepare_resources_response__claims_entry__init)(&entries[i]);
		PB(node_unprepare_resource_response__init)(&ones[i]);
		entries[i].key = (char *)ref.uid;
		entries[i].value = &ones[i];
		eptrs[i] = &entries[i];
		if (s->ops->unprepare(s->data, &ref, &cerr) < 0)
			ones[i].error = errs[i] = strdup(cerr.msg[0] ? cerr.msg : "unprepare failed");
	}
	resp.n_claims = n;
	resp.claims = eptrs;
	if (!entries || !eptrs || !ones || !errs)
		r = gerr_set(err, ENOMEM, "out of memory");
	else
		r = pack(&resp.base, out, outlen, err);
	for (size_t i = 0; errs && i < n; i++)
		free(errs[i]);
	free(entries);
	free(eptrs);
	free(ones);
	free(errs);
	PB(node_unprepare_resources_request__free_unpacked)(req, NULL);
	return r;
}

static int dra_unary(void *data, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
		     struct gerr *err)
{
	struct dra_server *s = data;

	/* v1beta1 and v1 are the same messages on the wire */
	if (method == M_PREPARE || method == M_PREPARE_B1)
		return prepare(s, in, inlen, out, outlen, err);
	return unprepare(s, in, inlen, out, outlen, err);
}

/* NodeWatchResourcesResponse: every device with its health (kubelet takes each message as the full list). */
static int health_snapshot(void *data, unsigned method, uint8_t **out, size_t *outlen)
{
	struct dra_server *s = data;
	json_auto_t *list = s->ops->health ? s->ops->health(s->data) : json_array();
	size_t n = json_array_size(list), i;
	V1alpha1__NodeWatchResourcesResponse resp = V1ALPHA1__NODE_WATCH_RESOURCES_RESPONSE__INIT;
	_cleanup_free_ V1alpha1__DeviceHealth *dh = calloc(n + 1, sizeof(*dh));
	_cleanup_free_ V1alpha1__DeviceIdentifier *id = calloc(n + 1, sizeof(*id));
	_cleanup_free_ V1alpha1__DeviceHealth **ptrs = calloc(n + 1, sizeof(*ptrs));
	json_t *d;

	(void)method;
	if (!list || !dh || !id || !ptrs)
		return -ENOMEM;
	json_array_foreach (list, i, d) {
		v1alpha1__device_identifier__init(&id[i]);
		v1alpha1__device_health__init(&dh[i]);
		id[i].pool_name = (char *)json_string_value(json_object_get(d, "pool"));
		id[i].device_name = (char *)json_string_value(json_object_get(d, "device"));
		dh[i].device = &id[i];
		dh[i].health = json_is_true(json_object_get(d, "healthy")) ? V1ALPHA1__HEALTH_STATUS__HEALTHY
									   : V1ALPHA1__HEALTH_STATUS__UNHEALTHY;
		dh[i].last_updated_time = json_integer_value(json_object_get(d, "since"));
		ptrs[i] = &dh[i];
	}
	resp.devices = ptrs;
	resp.n_devices = n;
	return pack(&resp.base, out, outlen, NULL);
}

int dra_server_start(const struct dra_server_options *o, const struct dra_server_ops *ops, void *data,
		     struct dra_server **ret, struct gerr *err)
{
	static const struct gsrv_handler reg_h = {.unary = reg_unary},
					 dra_h = {.unary = dra_unary, .snapshot = health_snapshot};
	struct dra_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return gerr_set(err, ENOMEM, "out of memory");
	s->o = *o;
	s->ops = ops;
	s->data = data;
	grpc_init(); /* counted: paired with the grpc_shutdown() of dra_server_stop() */
	s->grpc_up = true;
	/* the DRA service first: kubelet dials it as soon as it reads the registration socket */
	if ((r = gsrv_group_new(&s->g, err)) < 0 ||
	    (r = gsrv_add(s->g, o->dra_socket, dra_methods, ELEMENTSOF(dra_methods), &dra_h, s, &s->dra, err)) < 0 ||
	    (r = gsrv_add(s->g, o->reg_socket, reg_methods, ELEMENTSOF(reg_methods), &reg_h, s, NULL, err)) < 0 ||
	    (r = gsrv_group_run(s->g, err)) < 0) {
		dra_server_stop(s, 0);
		return r;
	}
	*ret = s;
	return 0;
}

void dra_server_stop(struct dra_server *s, int grace_ms)
{
	if (!s)
		return;
	if (s->g)
		gsrv_group_free(s->g, grace_ms);
	if (s->grpc_up)
		grpc_shutdown();
	free(s);
}

void dra_server_lock(struct dra_server *s)
{
	if (s && s->g)
		gsrv_lock(s->g);
}

void dra_server_unlock(struct dra_server *s)
{
	if (s && s->g)
		gsrv_unlock(s->g);
}

void dra_server_health_changed(struct dra_server *s)
{
	if (s && s->dra)
		gsrv_notify(s->dra);
}
