/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet PodResources API v1 client: which pod/namespace/container holds which device.
 * Device IDs are what the device plugin advertised: a GPU UUID, a MIG UUID, or a time-slicing
 * replica "<uuid>::<n>" (docs/reference/monitoring-doctor.md A4, device-plugin.md §5).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define PODRES_DEFAULT_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"

struct podres_device {
	char *id;       /* as kubelet reports it */
	char *base;     /* id without a "::<n>" replica suffix: the GPU or MIG UUID */
	int replica;    /* -1 when id has no replica suffix */
	char *resource; /* "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", ... */
	char *pod, *ns, *container;
	/*
	 * A device of a DRA claim (PodResources' dynamic_resources): the claim, and the driver, pool
	 * and device of the ResourceSlice that published it; base is then their podres_dra_key(), id
	 * the device's name, resource the driver's. All NULL for a device-plugin device.
	 */
	char *claim, *claim_ns, *driver, *pool, *dra_device;
};

/* The key a DRA device is found under (podres_find()): "<driver>/<pool>/<device>". -ENAMETOOLONG: too long. */
int podres_dra_key(char *buf, size_t size, const char *driver, const char *pool, const char *device);

/* Sorted by (base, replica, ns, pod, container) so the holders of one device are adjacent. */
struct podres_map {
	struct podres_device *v;
	size_t n;
};

void podres_map_free(struct podres_map *m);
DEFINE_CLEANUP_FUNC(struct podres_map, podres_map_free)

/*
 * Build the map from a serialized ListPodResourcesResponse. Devices are kept when their resource
 * name starts with "nvidia.com/" or equals one of extra_resources (NULL-terminated, may be NULL),
 * as dcgm-exporter's --nvidia-resource-names; every device of a DRA claim (kubelet fills
 * dynamic_resources with its KubeletPodResourcesDynamicResources gate) is kept under its
 * podres_dra_key(), whatever its driver: the reader looks up the keys of its own driver and pool.
 */
int podres_map_from_list(const void *buf, size_t len, const char *const *extra_resources, struct podres_map **ret,
			 struct gerr *err);

/*
 * Call List on the kubelet socket (a path under root; "unix://" is added). A missing socket is
 * -ENOENT with a message naming the usual cause (hostPath not mounted, dcgm-exporter issue #150s);
 * the cache keeps its last map then and counts the failure, so it shows in the metrics.
 */
int podres_list(const char *root, const char *socket, int timeout_ms, const char *const *extra_resources,
		struct podres_map **ret, struct gerr *err);

/*
 * Holders of the device backed by uuid (whole GPU or MIG UUID, replicas included): returns the
 * count and points *ret_first at the first of that many adjacent entries.
 */
size_t podres_find(const struct podres_map *m, const char *uuid, const struct podres_device **ret_first);

/* Refresh intervals without an answer after which the last map is dropped (pod labels go away). */
#define PODRES_STALE_REFRESHES 6

/*
 * A map kept fresh by its own thread so scrapes never wait on kubelet. Readers take the lock,
 * use c->map, and release it; the refresher only holds the lock to swap in a new map.
 */
struct podres_cache {
	pthread_mutex_t lock;
	struct podres_map *map; /* never NULL after start */
	uint64_t refreshes;     /* successful List calls */
	uint64_t errors;        /* failed List calls */
	double last_success;    /* CLOCK_REALTIME seconds of the last successful refresh, 0 never */
	char last_error[GERR_MAX];
	/* private */
	char *root, *socket;
	const char *const *extra;
	int interval_ms, timeout_ms;
	pthread_t thread;
	bool running;
	pthread_cond_t wake;
	bool stop;
};

/* Start the refresher (first refresh is done before returning, whatever its outcome). */
int podres_cache_start(struct podres_cache *c, const char *root, const char *socket, int interval_ms,
		       const char *const *extra_resources, struct gerr *err);
void podres_cache_stop(struct podres_cache *c);
