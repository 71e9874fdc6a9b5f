/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DevicePlugin service logic. Every reply is built in an arena, packed, and the arena released.
 * The Allocate steps follow docs/reference/device-plugin.md §3.4 in upstream's order: CDI names, MPS,
 * GDRCopy/GDS/MOFED envs, (stop if only CDI strategies), envvar, volume-mounts, device specs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "host/driver.h"
#include "plugin/alloc.h"
#include "plugin/arena.h"
#include "plugin/dp.h"
#include "plugin/mps.h"
#include "util/fileio.h"
#include "util/macro.h"

const struct gsrv_method dp_methods[DP_N_METHODS] = {
    [DP_GET_OPTIONS] = {"/v1beta1.DevicePlugin/GetDevicePluginOptions", false},
    [DP_LIST_AND_WATCH] = {"/v1beta1.DevicePlugin/ListAndWatch", true},
    [DP_GET_PREFERRED] = {"/v1beta1.DevicePlugin/GetPreferredAllocation", false},
    [DP_ALLOCATE] = {"/v1beta1.DevicePlugin/Allocate", false},
    [DP_PRESTART] = {"/v1beta1.DevicePlugin/PreStartContainer", false},
};

#define MAX_IDS 4096

/* An ordered map with set semantics, in the arena. */
struct kv {
	const char **k, **v;
	size_t n, cap;
};

/* A container response under construction: small ordered maps and lists with set semantics. */
struct build {
	struct arena *a;
	struct kv env, ann;
	V1beta1__Mount **mounts;
	size_t n_mounts, cap_mounts;
	V1beta1__DeviceSpec **devs;
	size_t n_devs, cap_devs;
};

/* Grow an arena array of pointers (old blocks stay in the arena until release; replies are small). */
static void **grow(struct arena *a, void **arr, size_t n, size_t *cap)
{
	void **p;

	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 8;
	p = arena_alloc(a, *cap * sizeof(void *));
	if (p && n)
		memcpy(p, arr, n * sizeof(void *));
	return p;
}

/* key = val, replacing an earlier value of key; the map grows, no entry is ever dropped (an arena failure,
 * a NULL key or value from a failed arena_printf() included, fails the whole reply: a->failed). */
static void kv_set(struct arena *a, struct kv *m, const char *key, const char *val)
{
	size_t cap = m->cap;

	if (!key || !val) {
		a->failed = 1;
		return;
	}
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->k[i], key)) {
			m->v[i] = val;
			return;
		}
	m->k = (const char **)grow(a, (void **)m->k, m->n, &cap);
	m->v = (const char **)grow(a, (void **)m->v, m->n, &m->cap);
	if (!m->k || !m->v)
		return;
	m->k[m->n] = key;
	m->v[m->n++] = val;
}

static void env_set(struct build *b, const char *key, const char *val)
{
	kv_set(b->a, &b->env, key, val);
}

static void mount_add(struct build *b, const char *ctr, const char *host, bool ro)
{
	V1beta1__Mount *m;

	if (!ctr || !host) { /* an arena_printf() that failed: so does the reply */
		b->a->failed = 1;
		return;
	}
	m = arena_alloc(b->a, sizeof(*m));
	b->mounts = (V1beta1__Mount **)grow(b->a, (void **)b->mounts, b->n_mounts, &b->cap_mounts);
	if (!m || !b->mounts)
		return;
	v1beta1__mount__init(m);
	m->container_path = arena_strdup(b->a, ctr);
	m->host_path = arena_strdup(b->a, host);
	m->read_only = ro;
	b->mounts[b->n_mounts++] = m;
}

/* "<dev_root><path>" as the host sees it (host_join()); dev_root "/" leaves the path alone. */
static const char *host_dev_path(struct build *b, const struct plugin_config *cfg, const char *path)
{
	_cleanup_free_ char *p = host_join(cfg->host->dev_root, path);

	return p ? arena_strdup(b->a, p) : NULL;
}

static void devspec_add(struct build *b, const struct plugin_config *cfg, const char *path)
{
	V1beta1__DeviceSpec *d;

	for (size_t i = 0; i < b->n_devs; i++)
		if (streq(b->devs[i]->container_path, path))
			return;
	d = arena_alloc(b->a, sizeof(*d));
	b->devs = (V1beta1__DeviceSpec **)grow(b->a, (void **)b->devs, b->n_devs, &b->cap_devs);
	if (!d || !b->devs)
		return;
	v1beta1__device_spec__init(d);
	d->container_path = arena_strdup(b->a, path);
	d->host_path = (char *)host_dev_path(b, cfg, path);
	d->permissions = (char *)"rw";
	b->devs[b->n_devs++] = d;
}

/* Does a device node exist below --root and the dev root (as the plugin sees the host)? */
static bool dev_present(const struct plugin_config *cfg, const char *path)
{
	_cleanup_free_ char *full = root_path(cfg->host->dev_dir, path);
	struct stat st;

	return full && stat(full, &st) == 0;
}

static char *join_ids(struct arena *a, const char *const *ids, size_t n, const char *prefix)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(prefix) + strlen(ids[i]) + 1;
	s = p = arena_alloc(a, len);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s%s", i ? "," : "", prefix, ids[i]);
	return s;
}

/* Random UUID text for the CDI annotation key (one per response, as upstream). */
static void random_uuid(char out[37])
{
	unsigned char r[16] = {0};

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		FILE *f = fopen("/dev/urandom", "re");

		if (f) {
			if (fread(r, 1, sizeof(r), f) != sizeof(r))
				memset(r, 0x5a, sizeof(r));
			fclose(f);
		}
	}
	r[6] = (r[6] & 0x0f) | 0x40;
	r[8] = (r[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
		 r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

/* Append to err's message, as much as fits (err is never NULL here: see dp_unary). */
static void append(struct gerr *err, const char *sep, const char *s)
{
	size_t off = strlen(err->msg);

	snprintf(err->msg + off, sizeof(err->msg) - off, "%s%s", sep, s);
}

static int validate(const struct dp_ctx *c, const V1beta1__ContainerAllocateRequest *req, struct gerr *err)
{
	const struct resource *r = c->res;
	size_t n_bad = 0;

	if (req->n_devices_ids == 0)
		return gerr_set(err, EINVAL, "invalid request for %s: a container request lists no device IDs",
				r->name);
	if (req->n_devices_ids > MAX_IDS)
		return gerr_set(err, EINVAL, "invalid request for %s: %zu device IDs, at most %d", r->name,
				req->n_devices_ids, MAX_IDS);
	for (size_t i = 0; i < req->n_devices_ids; i++) {
		if (resource_find_device(r, req->devices_ids[i]))
			continue;
		if (n_bad++ == 0)
			gerr_set(err, EINVAL, "invalid request for %s: unknown device IDs: %s", r->name,
				 req->devices_ids[i]);
		else
			append(err, ", ", req->devices_ids[i]);
	}
	if (n_bad)
		return -EINVAL;
	if (r->replicas > 1 && c->cfg->sharing.fail_requests_greater_than_one && req->n_devices_ids > 1) {
		gerr_set(err, EINVAL,
			 "invalid request for %s: maximum request size for shared resources is 1; found %zu (IDs: ",
			 r->name, req->n_devices_ids);
		for (size_t i = 0; i < req->n_devices_ids; i++)
			append(err, i ? ", " : "", req->devices_ids[i]);
		append(err, "", ")");
		return -EINVAL;
	}
	return 0;
}

/*
 * The IDs the container gets: replica suffix stripped (uuid strategy) or the index ("0", "0:1"),
 * de-duplicated in request order. Also returns the backing devices, same order.
 */
static size_t map_ids(const struct dp_ctx *c, const V1beta1__ContainerAllocateRequest *req, struct arena *a,
		      const char **ids, const struct rdevice **devs)
{
	bool by_index = c->cfg->device_id_strategy == DEVICE_ID_INDEX;
	size_t n = 0;

	for (size_t i = 0; i < req->n_devices_ids; i++) {
		const struct rdevice *d = resource_find_device(c->res, req->devices_ids[i]);
		const char *id = by_index ? d->index : d->uuid;
		bool dup = false;

		for (size_t j = 0; j < n && !dup; j++)
			dup = streq(ids[j], id);
		if (dup)
			continue;
		ids[n] = id;
		devs[n] = d;
		n++;
	}
	(void)a;
	return n;
}

bool dp_cdi_names_has(const struct dp_cdi_names *c, const char *name)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (streq(c->names[i], name))
			return true;
	return false;
}

/*
 * Every CDI name Allocate returns must be one the plugin's spec defines: a name no spec defines
 * fails the container in the runtime ("unresolvable CDI devices"), far from the cause and after
 * kubelet has counted the device as taken. Refuse the request instead, naming the device.
 */
static int check_cdi_defined(const struct dp_ctx *c, const char **ids, size_t n, struct gerr *err)
{
	for (size_t i = 0; i < n; i++)
		if (!dp_cdi_names_has(c->cdi_names, ids[i]))
			return gerr_set(err, EPROTO,
					"CDI device %s=%s is not defined in the plugin's CDI spec %s; the runtime "
					"could not inject it (see the plugin's 'The CDI spec leaves this out' and "
					"'Cannot write the CDI spec' lines)",
					DP_CDI_KIND, ids[i],
					c->cdi_names && c->cdi_names->file[0] ? c->cdi_names->file : "(none written)");
	return 0;
}

static void add_cdi(const struct dp_ctx *c, struct build *b, V1beta1__ContainerAllocateResponse *resp, const char **ids,
		    size_t n)
{
	const struct plugin_config *cfg = c->cfg;
	static const struct {
		unsigned bit;
		const char *name;
	} extra[] = {
	    /* upstream's order: gpu names, IMEX channels, then the gated modes as they are enabled */
	    {DP_CDI_EXTRA_GDRCOPY, DP_CDI_VENDOR "/gdrcopy=all"},
	    {DP_CDI_EXTRA_GDS, DP_CDI_VENDOR "/gds=all"},
	    {DP_CDI_EXTRA_MOFED, DP_CDI_VENDOR "/mofed=all"},
	};
	const char **names = arena_alloc(b->a, (n + 2 + ELEMENTSOF(extra)) * sizeof(*names));
	size_t nn = 0;

	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		names[nn++] = arena_printf(b->a, DP_CDI_KIND "=%s", ids[i]);
	if (c->imex)
		names[nn++] = arena_printf(b->a, DP_CDI_IMEX_KIND "=%s", cfg->imex_channel_ids);
	for (size_t i = 0; i < ELEMENTSOF(extra); i++)
		if (c->cdi_extra & extra[i].bit)
			names[nn++] = extra[i].name;
	for (size_t i = 0; i < nn; i++)
		if (!names[i])
			return;
	if (cfg->device_list_strategy & DLS_CDI_ANNOTATIONS) {
		char uuid[37];

		random_uuid(uuid);
		kv_set(b->a, &b->ann, arena_printf(b->a, "%snvidia-device-plugin_%s", cfg->cdi_annotation_prefix, uuid),
		       join_ids(b->a, names, nn, ""));
	}
	if (cfg->device_list_strategy & DLS_CDI_CRI) {
		resp->cdi_devices = arena_alloc(b->a, nn * sizeof(*resp->cdi_devices));
		if (!resp->cdi_devices)
			return;
		for (size_t i = 0; i < nn; i++) {
			V1beta1__CDIDevice *d = arena_alloc(b->a, sizeof(*d));

			if (!d)
				return;
			v1beta1__cdidevice__init(d);
			d->name = (char *)names[i];
			resp->cdi_devices[resp->n_cdi_devices++] = d;
		}
	}
}

static void add_device_specs(const struct dp_ctx *c, struct build *b, const struct rdevice *const *devs, size_t n)
{
	const struct plugin_config *cfg = c->cfg;

	/* the control nodes, when present (§3.4, passDeviceSpecs row) */
	for (size_t i = 0; i < driver_n_control_nodes; i++)
		if (dev_present(cfg, driver_control_nodes[i].path))
			devspec_add(b, cfg, driver_control_nodes[i].path);
	for (size_t i = 0; i < n; i++) {
		const struct node_gpu *g =
		    c->node && devs[i]->gpu < c->node->n_gpus ? &c->node->gpus[devs[i]->gpu] : NULL;
		char path[64];

		if (!g)
			continue;
		snprintf(path, sizeof(path), "/dev/nvidia%u", g->minor);
		devspec_add(b, cfg, path);
		if (devs[i]->mig >= 0 && (size_t)devs[i]->mig < g->n_migs) {
			const struct node_mig *m = &g->migs[devs[i]->mig];

			/* MIG access caps, from /proc/driver/nvidia-caps/mig-minors (§6) */
			if (m->gi_cap_minor >= 0) {
				snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%d", m->gi_cap_minor);
				devspec_add(b, cfg, path);
			}
			if (m->ci_cap_minor >= 0) {
				snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%d", m->ci_cap_minor);
				devspec_add(b, cfg, path);
			}
		}
	}
	if (c->imex) {
		char path[96];

		snprintf(path, sizeof(path), "/dev/nvidia-caps-imex-channels/channel%s", cfg->imex_channel_ids);
		devspec_add(b, cfg, path);
	}
}

/* Map entries for protobuf-c: envs and annotations have the same layout. */
#define FILL_MAP(a, resp, field, entry_t, init_fn, keys, vals, count)                   \
	do {                                                                            \
		(resp)->field = arena_alloc((a), (count) * sizeof(*(resp)->field) + 1); \
		for (size_t i_ = 0; (resp)->field && i_ < (count); i_++) {              \
			entry_t *e_ = arena_alloc((a), sizeof(*e_));                    \
			if (!e_)                                                        \
				break;                                                  \
			init_fn(e_);                                                    \
			e_->key = (char *)(keys)[i_];                                   \
			e_->value = (char *)(vals)[i_];                                 \
			(resp)->field[(resp)->n_##field++] = e_;                        \
		}                                                                       \
	} while (0)

int dp_allocate_container(const struct dp_ctx *c, const V1beta1__ContainerAllocateRequest *req, struct arena *a,
			  V1beta1__ContainerAllocateResponse *resp, struct gerr *err)
{
	const struct plugin_config *cfg = c->cfg;
	unsigned dls = cfg->device_list_strategy;
	struct build b = {.a = a};
	_cleanup_free_ const char **ids = NULL;
	_cleanup_free_ const struct rdevice **devs = NULL;
	struct gerr local;
	size_t n;
	int r;

	if (!err)
		err = &local; /* validate() appends to the message */
	r = validate(c, req, err);
	if (r < 0)
		return r;
	ids = calloc(req->n_devices_ids, sizeof(*ids));
	devs = calloc(req->n_devices_ids, sizeof(*devs));
	if (!ids || !devs)
		return gerr_set(err, ENOMEM, "out of memory");
	n = map_ids(c, req, a, ids, devs);
	if ((dls & DLS_CDI_ANY) && (r = check_cdi_defined(c, ids, n, err)) < 0)
		return r;

	v1beta1__container_allocate_response__init(resp);
	if (dls & DLS_CDI_ANY)
		add_cdi(c, &b, resp, ids, n);
	if (cfg->sharing.strategy == SHARING_MPS) {
		/* the resource's pipe dir and the shm dir, from the host's MPS root to the container's */
		char pipe[PATH_MAX], host_pipe[PATH_MAX], shm[PATH_MAX];

		if (mps_path(MPS_CONTAINER_ROOT, c->res->name, MPS_PIPE, pipe, sizeof(pipe)) < 0 ||
		    mps_path(cfg->mps_root, c->res->name, MPS_PIPE, host_pipe, sizeof(host_pipe)) < 0 ||
		    mps_path(cfg->mps_root, NULL, MPS_SHM, shm, sizeof(shm)) < 0)
			return gerr_set(err, ENAMETOOLONG, "--mps-root %s: the pipe dir of %s is too long",
					cfg->mps_root, c->res->name);
		env_set(&b, "CUDA_MPS_PIPE_DIRECTORY", arena_strdup(a, pipe));
		mount_add(&b, pipe, host_pipe, false);
		mount_add(&b, MPS_CONTAINER_SHM, shm, false);
	}
	if (cfg->gdrcopy_enabled)
		env_set(&b, "NVIDIA_GDRCOPY", "enabled");
	if (cfg->gds_enabled)
		env_set(&b, "NVIDIA_GDS", "enabled");
	if (cfg->mofed_enabled)
		env_set(&b, "NVIDIA_MOFED", "enabled");
	if (dls & DLS_ENVVAR) {
		env_set(&b, "NVIDIA_VISIBLE_DEVICES", join_ids(a, ids, n, ""));
		if (c->imex)
			env_set(&b, "NVIDIA_IMEX_CHANNELS", cfg->imex_channel_ids);
	}
	if (dls & DLS_VOLUME_MOUNTS) {
		/* as upstream, this replaces the envvar list when both strategies are set */
		env_set(&b, "NVIDIA_VISIBLE_DEVICES", DP_VISIBLE_DEVICES_ROOT);
		for (size_t i = 0; i < n; i++)
			mount_add(&b, arena_printf(a, DP_VISIBLE_DEVICES_ROOT "/%s", ids[i]), "/dev/null", false);
		if (c->imex)
			mount_add(&b, arena_printf(a, DP_VISIBLE_DEVICES_ROOT "/imex/%s", cfg->imex_channel_ids),
				  "/dev/null", false);
	}
	if (cfg->pass_device_specs && (dls & (DLS_ENVVAR | DLS_VOLUME_MOUNTS)))
		add_device_specs(c, &b, devs, n);

	FILL_MAP(a, resp, envs, V1beta1__ContainerAllocateResponse__EnvsEntry,
		 v1beta1__container_allocate_response__envs_entry__init, b.env.k, b.env.v, b.env.n);
	FILL_MAP(a, resp, annotations, V1beta1__ContainerAllocateResponse__AnnotationsEntry,
		 v1beta1__container_allocate_response__annotations_entry__init, b.ann.k, b.ann.v, b.ann.n);
	resp->mounts = b.mounts;
	resp->n_mounts = b.n_mounts;
	resp->devices = b.devs;
	resp->n_devices = b.n_devs;
	if (a->failed)
		return gerr_set(err, ENOMEM, "out of memory building the Allocate response");
	return 0;
}

/* Pack any protobuf-c message into a malloc'ed buffer. */
static int pack(const ProtobufCMessage *m, uint8_t **out, size_t *outlen)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(m, buf);
	*out = buf;
	*outlen = len;
	return 0;
}

/* Decode a request message; -EINVAL naming the message when the bytes do not decode. */
static int unpack(const ProtobufCMessageDescriptor *d, const uint8_t *in, size_t inlen, void *ret, struct gerr *err)
{
	ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, inlen, in);

	if (!m)
		return gerr_set(err, EINVAL, "cannot decode %s (%zu bytes)", d->short_name, inlen);
	*(ProtobufCMessage **)ret = m;
	return 0;
}

/*
 * An empty reply in the arena and room for n container responses in *ret_list (Allocate and
 * GetPreferredAllocation answer one response per container request). NULL when out of memory.
 */
static void *new_reply(struct arena *a, const ProtobufCMessageDescriptor *d, size_t n, void *ret_list)
{
	ProtobufCMessage *m = arena_alloc(a, d->sizeof_message);
	void *list = arena_alloc(a, (n + 1) * sizeof(void *));

	if (!m || !list)
		return NULL;
	protobuf_c_message_init(d, m);
	*(void **)ret_list = list;
	return m;
}

static int do_allocate(const struct dp_ctx *c, const uint8_t *in, size_t inlen, struct arena *a, ProtobufCMessage **ret,
		       struct gerr *err)
{
	V1beta1__AllocateRequest *req = NULL;
	V1beta1__AllocateResponse *resp;
	void *list = NULL;
	int r = unpack(&v1beta1__allocate_request__descriptor, in, inlen, &req, err);

	if (r < 0)
		return r;
	resp = new_reply(a, &v1beta1__allocate_response__descriptor, req->n_container_requests, &list);
	if (resp)
		resp->container_responses = list;
	if (!resp)
		r = gerr_set(err, ENOMEM, "out of memory");
	else if (req->n_container_requests == 0)
		r = gerr_set(err, EINVAL, "invalid request for %s: no container requests", c->res->name);
	for (size_t i = 0; r == 0 && i < req->n_container_requests; i++) {
		V1beta1__ContainerAllocateResponse *cr = arena_alloc(a, sizeof(*cr));

		r = cr ? dp_allocate_container(c, req->container_requests[i], a, cr, err)
		       : gerr_set(err, ENOMEM, "out of memory");
		if (r == 0)
			resp->container_responses[resp->n_container_responses++] = cr;
	}
	v1beta1__allocate_request__free_unpacked(req, NULL);
	*ret = &resp->base;
	return r;
}
/* GetPreferredAllocation: the policy is src/plugin/alloc.c (topology score, distributed/packed). */
static int do_preferred(const struct dp_ctx *c, const uint8_t *in, size_t inlen, struct arena *a,
			ProtobufCMessage **ret, struct gerr *err)
{
	V1beta1__PreferredAllocationRequest *req = NULL;
	struct resource_options ro;
	V1beta1__PreferredAllocationResponse *resp;
	void *list = NULL;
	int r = unpack(&v1beta1__preferred_allocation_request__descriptor, in, inlen, &req, err);

	if (r < 0)
		return r;
	config_resource_options(c->cfg, &ro); /* the one reading of sharedDevicesAllocationPolicy */
	resp = new_reply(a, &v1beta1__preferred_allocation_response__descriptor, req->n_container_requests, &list);
	if (resp)
		resp->container_responses = list;
	for (size_t i = 0; resp && i < req->n_container_requests; i++) {
		const V1beta1__ContainerPreferredAllocationRequest *cr = req->container_requests[i];
		V1beta1__ContainerPreferredAllocationResponse *o = arena_alloc(a, sizeof(*o));
		_cleanup_free_ const char **ids = NULL;
		struct gerr aerr = {0};
		size_t size = cr->allocation_size > 0 ? (size_t)cr->allocation_size : 0;

		if (!o)
			break;
		if (alloc_preferred(c->node, c->res, ro.replica_policy, (const char *const *)cr->available_deviceids,
				    cr->n_available_deviceids, (const char *const *)cr->must_include_deviceids,
				    cr->n_must_include_deviceids, size, &ids, &aerr) < 0) {
			/* whatever alloc says, the request is what cannot be met */
			r = gerr_set(err, EINVAL, "preferred allocation for %s: %s", c->res->name, aerr.msg);
			break;
		}
		v1beta1__container_preferred_allocation_response__init(o);
		o->deviceids = arena_alloc(a, (size + 1) * sizeof(char *));
		for (size_t k = 0; o->deviceids && k < size; k++)
			o->deviceids[o->n_deviceids++] = arena_strdup(a, ids[k]);
		resp->container_responses[resp->n_container_responses++] = o;
	}
	v1beta1__preferred_allocation_request__free_unpacked(req, NULL);
	if (r == 0 && (!resp || a->failed))
		r = gerr_set(err, ENOMEM, "out of memory");
	*ret = resp ? &resp->base : NULL;
	return r;
}

int dp_unary(const struct dp_ctx *c, unsigned method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
	     struct gerr *err)
{
	struct arena a = {0};
	ProtobufCMessage *reply = NULL;
	V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	V1beta1__PreStartContainerResponse pre = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
	struct gerr local;
	int r = 0;

	if (!err)
		err = &local;
	if (!c->res || c->empty)
		return gerr_set(err, ESHUTDOWN, "the device plugin is stopping");
	if (c->mps_unready && *c->mps_unready && method != DP_GET_OPTIONS)
		return gerr_set(err, EPROTO, "%s: waiting for its MPS control daemon: %s", c->res->name,
				c->mps_unready);
	switch (method) {
	case DP_GET_OPTIONS:
		opts.get_preferred_allocation_available = true;
		reply = &opts.base;
		break;
	case DP_PRESTART:
		reply = &pre.base;
		break;
	case DP_ALLOCATE:
		r = do_allocate(c, in, inlen, &a, &reply, err);
		break;
	case DP_GET_PREFERRED:
		r = do_preferred(c, in, inlen, &a, &reply, err);
		break;
	default:
		r = gerr_set(err, EOPNOTSUPP, "method %u not implemented", method);
	}
	if (r == 0 && pack(reply, out, outlen) < 0)
		r = gerr_set(err, ENOMEM, "out of memory");
	arena_release(&a);
	return r;
}

int dp_snapshot(const struct dp_ctx *c, uint8_t **out, size_t *outlen)
{
	V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
	struct arena a = {0};
	size_t n = c->res && !c->empty && !(c->mps_unready && *c->mps_unready) ? c->res->n_devices : 0;
	int r;

	resp.devices = arena_alloc(&a, (n + 1) * sizeof(void *));
	for (size_t i = 0; resp.devices && i < n; i++) {
		const struct rdevice *d = &c->res->devices[i];
		V1beta1__Device *pd = arena_alloc(&a, sizeof(*pd));

		if (!pd)
			break;
		v1beta1__device__init(pd);
		pd->id = (char *)d->id;
		pd->health = (char *)(d->healthy ? "Healthy" : "Unhealthy");
		if (d->numa_node >= 0) {
			V1beta1__TopologyInfo *t = arena_alloc(&a, sizeof(*t));
			V1beta1__NUMANode *nn = arena_alloc(&a, sizeof(*nn));

			if (t && nn) {
				v1beta1__topology_info__init(t);
				v1beta1__numanode__init(nn);
				t->nodes = arena_alloc(&a, sizeof(void *));
				nn->id = d->numa_node;
				if (t->nodes) {
					t->nodes[0] = nn;
					t->n_nodes = 1;
					pd->topology = t;
				}
			}
		}
		resp.devices[resp.n_devices++] = pd;
	}
	r = a.failed ? -ENOMEM : pack(&resp.base, out, outlen);
	arena_release(&a);
	return r;
}
