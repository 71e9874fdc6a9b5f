/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1beta1.DevicePlugin service for one resource: request bytes in, reply bytes out.
 * Pure functions of (config, node, resource) so unit tests drive them without sockets.
 * Facts: docs/reference/device-plugin.md §3.3 (methods, ValidateRequest) and §3.4 (Allocate).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/config.h"
#include "deviceplugin.pb-c.h"
#include "kube/gsrv.h"
#include "nvml/node.h"
#include "plugin/resources.h"

struct arena;

/* The device names a written CDI spec defines (after "<kind>="), as the plugin's Allocate checks them. */
struct dp_cdi_names {
	char **names;
	size_t n;
	char file[256]; /* the spec, for messages */
};
bool dp_cdi_names_has(const struct dp_cdi_names *c, const char *name);

enum dp_method { DP_GET_OPTIONS, DP_LIST_AND_WATCH, DP_GET_PREFERRED, DP_ALLOCATE, DP_PRESTART, DP_N_METHODS };
extern const struct gsrv_method dp_methods[DP_N_METHODS];

/* CDI vendor and class of the devices the plugin hands out (docs/reference/device-plugin.md §8). */
#define DP_CDI_VENDOR    "k8s.device-plugin.nvidia.com"
#define DP_CDI_CLASS     "gpu"
#define DP_CDI_KIND      DP_CDI_VENDOR "/" DP_CDI_CLASS
#define DP_CDI_SPEC_FILE DP_CDI_VENDOR "-" DP_CDI_CLASS ".json" /* in /var/run/cdi */
#define DP_CDI_IMEX_KIND "k8s.device-plugin.nvidia.com/imex-channel"
/* The gated classes whose spec was written: Allocate adds "<vendor>/<class>=all" (§8.1). */
#define DP_CDI_EXTRA_GDRCOPY    1u
#define DP_CDI_EXTRA_GDS        2u
#define DP_CDI_EXTRA_MOFED      4u
#define DP_VISIBLE_DEVICES_ROOT "/var/run/nvidia-container-devices"

struct dp_ctx {
	const struct plugin_config *cfg;
	const struct node *node;
	const struct resource *res;
	bool empty;         /* stopping: ListAndWatch sends no devices so kubelet drops the capacity */
	bool imex;          /* the configured IMEX channel exists (else it is not handed out) */
	unsigned cdi_extra; /* DP_CDI_EXTRA_* */
	/* MPS: why the resource's MPS control daemon is not ready ("" ready, NULL not MPS); while it is
	 * not, no devices are listed and requests fail (docs/reference/device-plugin.md §5.1) */
	const char *mps_unready;
	/* CDI strategies: the device names the plugin's written spec defines; Allocate refuses to hand
	 * out any other (a container asking for it would fail in the runtime, far from the cause) */
	const struct dp_cdi_names *cdi_names;
};

/*
 * gsrv unary handler: 0 with the packed reply in out, or -errno with err (may be NULL) saying why;
 * the server answers the gRPC status of that errno (kube/grpc_client.h): -EINVAL a bad request
 * (INVALID_ARGUMENT), -ENOMEM (RESOURCE_EXHAUSTED), -ESHUTDOWN stopping (UNAVAILABLE),
 * -EOPNOTSUPP an unknown method (UNIMPLEMENTED).
 */
int dp_unary(const struct dp_ctx *c, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
	     struct gerr *err);
/* gsrv snapshot handler: the packed ListAndWatchResponse. */
int dp_snapshot(const struct dp_ctx *c, uint8_t **out, size_t *outlen);

/*
 * One container's Allocate: validates the IDs and fills resp from the arena. Returns 0, -ENOMEM,
 * -EINVAL with err naming the offending IDs (the RPC then fails with INVALID_ARGUMENT), or, with a
 * CDI strategy, -EPROTO naming a device c->cdi_names lacks (FAILED_PRECONDITION).
 */
int dp_allocate_container(const struct dp_ctx *c, const V1beta1__ContainerAllocateRequest *req, struct arena *a,
			  V1beta1__ContainerAllocateResponse *resp, struct gerr *err);
