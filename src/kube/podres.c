/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet PodResources v1 client and its refresh thread; see podres.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/fileio.h"
#include "gpulet_podres.pb-c.h"
#include "kube/grpc_client.h"
#include "kube/podres.h"
#include "util/thread.h"

#define PODRES_LIST_METHOD "/v1.PodResourcesLister/List"
/* kubelet answers List from memory; 10 s is dcgm-exporter's dial timeout (monitoring-doctor.md A4). */
#define PODRES_TIMEOUT_MS 10000
/* Bound what a confused or hostile peer can make us hold (a node has at most a few hundred pods). */
#define PODRES_MAX_DEVICES 65536

static void podres_device_clear(struct podres_device *d)
{
	free(d->id);
	free(d->base);
	free(d->resource);
	free(d->pod);
	free(d->ns);
	free(d->container);
	free(d->claim);
	free(d->claim_ns);
	free(d->driver);
	free(d->pool);
	free(d->dra_device);
}

void podres_map_free(struct podres_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		podres_device_clear(&m->v[i]);
	free(m->v);
	free(m);
}

static bool resource_wanted(const char *name, const char *const *extra)
{
	if (!name)
		return false;
	if (strncmp(name, "nvidia.com/", strlen("nvidia.com/")) == 0)
		return true;
	for (size_t i = 0; extra && extra[i]; i++)
		if (streq(name, extra[i]))
			return true;
	return false;
}

/*
 * "<uuid>::<n>" (NVIDIA's device plugin) or GKE's "nvidia0/vgpu<n>" → base, replica n; anything
 * else is its own base with replica -1.
 */
static int split_replica(const char *id, char **ret_base, int *ret_replica)
{
	const char *sep = strstr(id, "::");
	size_t sep_len = 2;
	int replica = -1;
	size_t base_len = strlen(id);
	if (!sep && (sep = strstr(id, "/vgpu")))
		sep_len = 5;
	if (sep && sep[sep_len]) {
		char *end;
		errno = 0;
		long n = strtol(sep + sep_len, &end, 10);
		if (!*end && errno == 0 && n >= 0 && n < 1000000) {
			replica = (int)n;
			base_len = (size_t)(sep - id);
		}
	}
	char *base = strndup(id, base_len);
	if (!base)
		return -ENOMEM;
	*ret_base = base;
	*ret_replica = replica;
	return 0;
}

static int strcmp0(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int device_cmp(const void *a, const void *b)
{
	const struct podres_device *x = a, *y = b;
	int r;

	if ((r = strcmp(x->base, y->base)) || (r = CMP(x->replica, y->replica)) || (r = strcmp0(x->ns, y->ns)) ||
	    (r = strcmp0(x->pod, y->pod)))
		return r;
	return strcmp0(x->container, y->container);
}

int podres_dra_key(char *buf, size_t size, const char *driver, const char *pool, const char *device)
{
	int n = snprintf(buf, size, "%s/%s/%s", driver, pool, device);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The claim of a DRA device, borrowed; NULL for a device-plugin device. */
struct dra_ref {
	const V1__DynamicResource *claim;
	const V1__ClaimResource *res;
};

static char *strdup0(const char *s)
{
	return strdup(s ? s : "");
}

/* d's claim fields and its key from dra: 0, 1 when no device can have that key (left out), or -ENOMEM. */
static int set_claim(struct podres_device *d, const struct dra_ref *dra)
{
	char key[1024];

	d->claim = strdup0(dra->claim->claim_name);
	d->claim_ns = strdup0(dra->claim->claim_namespace);
	d->driver = strdup0(dra->res->driver_name);
	d->pool = strdup0(dra->res->pool_name);
	d->dra_device = strdup0(dra->res->device_name);
	if (!d->claim || !d->claim_ns || !d->driver || !d->pool || !d->dra_device)
		return -ENOMEM;
	if (podres_dra_key(key, sizeof(key), d->driver, d->pool, d->dra_device) < 0)
		return 1;
	d->base = strdup(key);
	return d->base ? 0 : -ENOMEM;
}

static int map_add(struct podres_map *m, size_t *cap, const char *id, const char *resource, const char *pod,
		   const char *ns, const char *container, const struct dra_ref *dra)
{
	if (m->n >= PODRES_MAX_DEVICES)
		return -E2BIG;
	if (m->n == *cap) {
		struct podres_device *v = grow_alloc(m->v, cap, sizeof(*v), 16);
		if (!v)
			return -ENOMEM;
		m->v = v;
	}
	struct podres_device d = {.replica = -1};
	d.id = strdup(id);
	d.resource = strdup(resource);
	d.pod = strdup(pod ? pod : "");
	d.ns = strdup(ns ? ns : "");
	d.container = strdup(container ? container : "");
	int r = d.id && d.resource && d.pod && d.ns && d.container ? 0 : -ENOMEM;
	if (r >= 0 && dra)
		r = set_claim(&d, dra);
	else if (r >= 0)
		r = split_replica(id, &d.base, &d.replica);
	if (r != 0) {
		podres_device_clear(&d);
		return r;
	}
	m->v[m->n++] = d;
	return 0;
}

/* The devices of the container's DRA claims that name a driver, pool and device. */
static int add_claims(struct podres_map *m, size_t *cap, const V1__PodResources *pod, const V1__ContainerResources *c)
{
	for (size_t k = 0; k < c->n_dynamic_resources; k++) {
		const V1__DynamicResource *dr = c->dynamic_resources[k];
		for (size_t l = 0; dr && l < dr->n_claim_resources; l++) {
			const V1__ClaimResource *res = dr->claim_resources[l];
			if (!res || !res->driver_name || !res->driver_name[0] || !res->pool_name ||
			    !res->pool_name[0] || !res->device_name || !res->device_name[0])
				continue;
			struct dra_ref ref = {dr, res};
			int r = map_add(m, cap, res->device_name, res->driver_name, pod->name, pod->namespace_, c->name,
					&ref);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int add_container(struct podres_map *m, size_t *cap, const V1__PodResources *pod,
			 const V1__ContainerResources *c, const char *const *extra)
{
	for (size_t k = 0; k < c->n_devices; k++) {
		const V1__ContainerDevices *dev = c->devices[k];
		if (!dev || !resource_wanted(dev->resource_name, extra))
			continue;
		for (size_t l = 0; l < dev->n_device_ids; l++) {
			if (!dev->device_ids[l] || !dev->device_ids[l][0])
				continue;
			int r = map_add(m, cap, dev->device_ids[l], dev->resource_name, pod->name, pod->namespace_,
					c->name, NULL);
			if (r < 0)
				return r;
		}
	}
	return add_claims(m, cap, pod, c);
}

int podres_map_from_list(const void *buf, size_t len, const char *const *extra_resources, struct podres_map **ret,
			 struct gerr *err)
{
	V1__ListPodResourcesResponse *resp = v1__list_pod_resources_response__unpack(NULL, len, buf);
	if (!resp)
		return gerr_set(err, EBADMSG,
				"PodResources List: response of %zu bytes is not a ListPodResourcesResponse", len);
	struct podres_map *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	int r = m ? 0 : -ENOMEM;
	for (size_t i = 0; r >= 0 && i < resp->n_pod_resources; i++) {
		const V1__PodResources *pod = resp->pod_resources[i];
		for (size_t j = 0; r >= 0 && pod && j < pod->n_containers; j++)
			if (pod->containers[j])
				r = add_container(m, &cap, pod, pod->containers[j], extra_resources);
	}
	v1__list_pod_resources_response__free_unpacked(resp, NULL);
	if (r < 0) {
		podres_map_free(m);
		return gerr_set(err, -r, "PodResources List: %s",
				r == -E2BIG ? "more than 65536 devices in the answer" : strerror(-r));
	}
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), device_cmp);
	*ret = m;
	return 0;
}

int podres_list(const char *root, const char *socket, int timeout_ms, const char *const *extra_resources,
		struct podres_map **ret, struct gerr *err)
{
	_cleanup_free_ char *path = root_path(root, socket ? socket : PODRES_DEFAULT_SOCKET);
	if (!path)
		return gerr_set(err, ENOMEM, "PodResources: out of memory");
	struct stat st;
	if (stat(path, &st) < 0 && errno == ENOENT)
		return gerr_set(
		    err, ENOENT,
		    "PodResources socket %s is missing: is kubelet running, and is /var/lib/kubelet/pod-resources "
		    "mounted into this pod (hostPath)?",
		    path);
	_cleanup_free_ char *target = NULL;
	if (asprintf(&target, "unix://%s", path) < 0)
		return gerr_set(err, ENOMEM, "PodResources: out of memory");
	V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
	uint8_t reqbuf[16];
	size_t reqlen = v1__list_pod_resources_request__pack(&req, reqbuf);
	_cleanup_free_ void *resp = NULL;
	size_t resp_len = 0;
	int r = grpc_unary_call(target, PODRES_LIST_METHOD, reqbuf, reqlen, &resp, &resp_len,
				timeout_ms > 0 ? timeout_ms : PODRES_TIMEOUT_MS, err);
	if (r < 0)
		return r;
	return podres_map_from_list(resp, resp_len, extra_resources, ret, err);
}

size_t podres_find(const struct podres_map *m, const char *uuid, const struct podres_device **ret_first)
{
	if (!m || !m->n || !uuid)
		return 0;
	/* lower bound on base */
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(m->v[mid].base, uuid) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < m->n && streq(m->v[end].base, uuid))
		end++;
	if (end == lo)
		return 0;
	*ret_first = &m->v[lo];
	return end - lo;
}

static double now_realtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cache_refresh(struct podres_cache *c)
{
	struct gerr err = {0};
	struct podres_map *m = NULL;
	int r = podres_list(c->root, c->socket, c->timeout_ms, c->extra, &m, &err);
	struct podres_map *old = NULL;
	pthread_mutex_lock(&c->lock);
	if (r >= 0) {
		old = c->map;
		c->map = m;
		c->refreshes++;
		c->last_success = now_realtime();
		c->last_error[0] = '\0';
	} else {
		/*
		 * keep the last good map through a kubelet restart, but not forever: after
		 * PODRES_STALE_REFRESHES intervals without an answer the pods may be gone, and labels
		 * naming them would charge their GPUs to the wrong owner
		 */
		c->errors++;
		snprintf(c->last_error, sizeof(c->last_error), "%s", err.msg);
		if (c->map->n && c->last_success > 0 &&
		    now_realtime() - c->last_success > PODRES_STALE_REFRESHES * c->interval_ms / 1000.0) {
			struct podres_map *empty = calloc(1, sizeof(*empty));
			if (empty) {
				old = c->map;
				c->map = empty;
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
	podres_map_free(old);
}

static void *cache_thread(void *arg)
{
	struct podres_cache *c = arg;
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct timespec ts = deadline_after_ms(CLOCK_MONOTONIC, c->interval_ms);
		int r = 0;
		while (!c->stop && r != ETIMEDOUT)
			r = pthread_cond_timedwait(&c->wake, &c->lock, &ts);
		if (c->stop)
			break;
		pthread_mutex_unlock(&c->lock);
		cache_refresh(c);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int podres_cache_start(struct podres_cache *c, const char *root, const char *socket, int interval_ms,
		       const char *const *extra_resources, struct gerr *err)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	cond_init_monotonic(&c->wake);
	c->root = strdup(root ? root : "/");
	c->socket = strdup(socket ? socket : PODRES_DEFAULT_SOCKET);
	c->map = calloc(1, sizeof(*c->map));
	c->extra = extra_resources;
	c->interval_ms = interval_ms > 0 ? interval_ms : 10000;
	/* a refresh must finish well before the next one is due */
	c->timeout_ms = MIN(PODRES_TIMEOUT_MS, MAX(c->interval_ms, 1000));
	if (!c->root || !c->socket || !c->map) {
		podres_cache_stop(c);
		return gerr_set(err, ENOMEM, "PodResources cache: out of memory");
	}
	cache_refresh(c);
	int r = pthread_create(&c->thread, NULL, cache_thread, c);
	if (r != 0) {
		podres_cache_stop(c);
		return gerr_set(err, r, "PodResources cache: cannot start its thread: %s", strerror(r));
	}
	c->running = true;
	return 0;
}

void podres_cache_stop(struct podres_cache *c)
{
	if (c->running) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_signal(&c->wake);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
		c->running = false;
	}
	podres_map_free(c->map);
	c->map = NULL;
	free(c->root);
	free(c->socket);
	c->root = c->socket = NULL;
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
}
