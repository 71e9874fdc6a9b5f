/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Node model -> DRA devices -> ResourceSlice JSON. Names, attributes and capacities are NVIDIA's
 * gpu-kubelet-plugin's (docs/reference/dra.md §5: deviceinfo.go, partitions.go, mig.go at v25.12.0,
 * plus the index/minor attributes of v25.3 and the pcieBusID name of v25.8 that NVIDIA's own example
 * claims still select on). The API's limits are k8s.io/api v0.34.4 resource/v1 types.go.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dra/devices.h"
#include "dra/quantity.h"
#include "util/fileio.h"

#define SLICE_MAX_DEVICES   128 /* ResourceSliceMaxDevices */
#define DEVICE_MAX_ATTR_CAP 32  /* ResourceSliceMaxAttributesAndCapacitiesPerDevice */
#define ATTR_VALUE_MAX      64  /* DeviceAttributeMaxValueLength */
#define STD_PREFIX          "resource.kubernetes.io/"

/* go-nvlib device.GetArchitectureAsString() (v0.12.0), by NVML_DEVICE_ARCH_* */
static const char *const arch_names[] = {
    [2] = "Kepler", [3] = "Maxwell",      [4] = "Pascal", [5] = "Volta",      [6] = "Turing",
    [7] = "Ampere", [8] = "Ada Lovelace", [9] = "Hopper", [10] = "Blackwell", [11] = "Rubin",
};
/* go-nvlib device.GetBrandAsString() (v0.12.0), by NVML_BRAND_* */
static const char *const brand_names[] = {
    "Unknown",   "Quadro",      "Tesla",     "NVS",        "Grid",      "GeForce",
    "Titan",     "NvidiaVApps", "NvidiaVPC", "NvidiaVCS",  "NvidiaVWS", "NvidiaCloudGaming",
    "QuadroRTX", "NvidiaRTX",   "Nvidia",    "GeForceRTX", "TitanRTX",
};

/* A device left out, and why: one line of d->left_out. */
#define NOTE(d, ...) (json_array_append_new((d)->left_out, json_sprintf(__VA_ARGS__)) < 0 ? -ENOMEM : 0)

void dra_devices_clear(struct dra_devices *d)
{
	json_decref(d->left_out);
	free(d->v);
	*d = (struct dra_devices){0};
}

const struct dra_device *dra_devices_find(const struct dra_devices *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (streq(d->v[i].name, name))
			return &d->v[i];
	return NULL;
}

const char *dra_device_uuid(const struct dra_device *d)
{
	return d->mig ? d->mig->uuid : d->gpu->uuid;
}

/* "/a/b/../c/./d" -> "/a/c/d" in place (the path a relative symlink names). */
static void normalize(char *p)
{
	char *out = p, *s = p;

	while (*s) {
		while (*s == '/')
			s++;
		char *e = strchrnul(s, '/');
		size_t l = (size_t)(e - s);

		if (l == 2 && s[0] == '.' && s[1] == '.') {
			while (out > p && *--out != '/')
				;
		} else if (l && !(l == 1 && s[0] == '.')) {
			*out++ = '/';
			memmove(out, s, l);
			out += l;
		}
		s = e;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

int dra_pcie_root(const char *root, const char *bus_id, char *buf, size_t size)
{
	char rel[96], target[PATH_MAX], joined[PATH_MAX * 2];
	_cleanup_free_ char *link = NULL;
	const char *after, *slash, *base;
	ssize_t n;

	if (snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s", bus_id) >= (int)sizeof(rel) ||
	    !(link = root_path(root, rel)))
		return -ENAMETOOLONG;
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	/* relative to the link's dir; absolute: a path of the host (the root prefix is not in it) */
	if (target[0] == '/')
		snprintf(joined, sizeof(joined), "%s", target);
	else
		snprintf(joined, sizeof(joined), "/sys/bus/pci/devices/%s", target);
	normalize(joined);
	if (strncmp(joined, "/sys/devices/pci", 16) != 0)
		return -EINVAL;
	base = strrchr(joined, '/') + 1;
	if (!streq(base, bus_id))
		return -EINVAL;
	after = joined + strlen("/sys/devices/");
	slash = strchr(after, '/');
	if (!slash || (size_t)(slash - after) >= size)
		return -EINVAL;
	snprintf(buf, size, "%.*s", (int)(slash - after), after);
	return 0;
}

/* NVIDIA's toRFC1123Compliant() of the profile without dots: "1g.10gb+me" -> "1g10gb-me". */
static void profile_label(const char *profile, char *buf, size_t size)
{
	size_t o = 0;

	for (const char *p = profile; *p && o + 1 < size; p++) {
		char c = (char)tolower((unsigned char)*p);

		if (c == '.')
			continue;
		buf[o++] = (isalnum((unsigned char)c) || c == '-') ? c : '-';
	}
	buf[o] = '\0';
	/* trim '-' at both ends, as strings.Trim(name, "-") */
	while (o && buf[o - 1] == '-')
		buf[--o] = '\0';
	o = strspn(buf, "-");
	if (o) /* glibc's checked memmove shares memcpy's entry, which valgrind checks for overlap */
		memmove(buf, buf + o, strlen(buf + o) + 1);
}

static bool publishable(struct dra_devices *d, const struct node_gpu *g, int *r)
{
	const char *h = node_gpu_health(g);

	*r = 0;
	if (streq(h, "lost") || streq(h, "unhealthy")) {
		*r = NOTE(d, "GPU %s (index %u) is %s: not published%s", g->uuid[0] ? g->uuid : "?", g->index, h,
			  g->mig_enabled ? ", nor its MIG devices" : "");
		return false;
	}
	return true;
}

/* More than one MIG device (compute instance) of g lives in GPU instance gi. */
static bool gi_split(const struct node_gpu *g, unsigned gi)
{
	size_t n = 0;

	for (size_t k = 0; k < g->n_migs; k++)
		n += g->migs[k].gi == gi;
	return n > 1;
}

static struct dra_device *add(struct dra_devices *d, size_t *cap)
{
	struct dra_device *v = grow_alloc(d->v, cap, sizeof(*d->v), 16);

	if (!v)
		return NULL;
	d->v = v;
	memset(&d->v[d->n], 0, sizeof(d->v[d->n]));
	return &d->v[d->n++];
}

bool dra_device_name(const struct node_gpu *g, const struct node_mig *m, char *buf, size_t size)
{
	char label[40];

	if (!m) {
		snprintf(buf, size, "gpu-%u", g->minor);
		return true;
	}
	if (!m->gi_info_known || !m->profile[0])
		return false;
	profile_label(m->profile, label, sizeof(label));
	snprintf(buf, size, "gpu-%u-mig-%s-%u-%u", g->minor, label, m->gi_profile_id, m->placement_start);
	/* NVIDIA's name has no compute instance: a GPU instance split into several would give them
	 * one name (the API refuses a slice with a name twice); they get their CI's id appended */
	if (gi_split(g, m->gi))
		snprintf(buf + strlen(buf), size - strlen(buf), "-ci%u", m->ci);
	return true;
}

int dra_devices_build(const struct node *n, const char *root, struct dra_devices *ret, struct gerr *err)
{
	struct dra_devices d = {.node = n, .left_out = json_array()};
	size_t cap = 0;
	int r = d.left_out ? 0 : -ENOMEM;

	for (size_t i = 0; i < n->n_gpus && r >= 0; i++) {
		const struct node_gpu *g = &n->gpus[i];
		char pcie_root[64] = "";

		if (!publishable(&d, g, &r))
			continue;
		if (g->pci_bus_id[0]) {
			char sysid[32];

			node_pci_sysfs_id(g->pci_bus_id, sysid, sizeof(sysid));
			if (dra_pcie_root(root, sysid, pcie_root, sizeof(pcie_root)) < 0)
				pcie_root[0] = '\0';
		}
		if (!g->mig_enabled) {
			struct dra_device *dev = add(&d, &cap);

			if (!dev) {
				r = -ENOMEM;
				break;
			}
			dra_device_name(g, NULL, dev->name, sizeof(dev->name));
			dev->type = DRA_DEV_GPU;
			dev->gpu = g;
			snprintf(dev->pcie_root, sizeof(dev->pcie_root), "%s", pcie_root);
			continue;
		}
		if (!g->n_migs)
			r = NOTE(&d, "GPU %s (index %u) has MIG mode on and no MIG devices: nothing to publish",
				 g->uuid, g->index);
		for (size_t k = 0; k < g->n_migs && r >= 0; k++) {
			const struct node_mig *m = &g->migs[k];
			struct dra_device *dev;

			if (!m->gi_info_known || !m->profile[0]) {
				r = NOTE(
				    &d,
				    "MIG device %s (GPU %u GI %u) not published: NVML did not give its GPU-instance "
				    "profile and placement",
				    m->uuid, g->index, m->gi);
				continue;
			}
			if (!(dev = add(&d, &cap))) {
				r = -ENOMEM;
				break;
			}
			dra_device_name(g, m, dev->name, sizeof(dev->name));
			dev->type = DRA_DEV_MIG;
			dev->gpu = g;
			dev->mig = m;
			snprintf(dev->pcie_root, sizeof(dev->pcie_root), "%s", pcie_root);
		}
	}
	if (r < 0) {
		dra_devices_clear(&d);
		return gerr_set(err, -r, "out of memory listing the DRA devices");
	}
	*ret = d;
	return 0;
}

/* ---- ResourceSlice JSON ---- */

/* "8.0" -> "8.0.0", "535.161.08" -> "535.161.8": Masterminds semver's String() of NewVersion(). */
static void semver(const char *v, char *buf, size_t size)
{
	unsigned long part[3] = {0, 0, 0};
	const char *p = v;

	for (int i = 0; i < 3 && *p; i++) {
		char *end;

		part[i] = strtoul(p, &end, 10);
		if (end == p)
			break;
		p = *end == '.' ? end + 1 : end;
		if (*end != '.')
			break;
	}
	snprintf(buf, size, "%lu.%lu.%lu", part[0], part[1], part[2]);
}

struct attrs {
	json_t *attr, *cap;
	const char *device;
	int r;
	struct gerr *err;
};

static void put(struct attrs *a, json_t *obj, const char *name, json_t *value)
{
	if (!value || json_object_set_new(obj, name, value) < 0)
		a->r = -ENOMEM;
}

static void attr_str(struct attrs *a, const char *name, const char *v)
{
	if (!v || !*v)
		return;
	if (strlen(v) > ATTR_VALUE_MAX) { /* the API refuses the whole slice for it */
		a->r = gerr_set(a->err, EINVAL, "device %s: attribute %s is longer than %d characters: %s", a->device,
				name, ATTR_VALUE_MAX, v);
		return;
	}
	put(a, a->attr, name, json_pack("{s:s}", "string", v));
}

static void attr_int(struct attrs *a, const char *name, long long v)
{
	put(a, a->attr, name, json_pack("{s:I}", "int", (json_int_t)v));
}

static void attr_ver(struct attrs *a, const char *name, const char *v)
{
	char buf[48];

	semver(v, buf, sizeof(buf));
	put(a, a->attr, name, json_pack("{s:s}", "version", buf));
}

static void cap_bytes(struct attrs *a, const char *name, uint64_t v)
{
	char buf[32];

	quantity_format_binary(v, buf, sizeof(buf));
	put(a, a->cap, name, json_pack("{s:s}", "value", buf));
}

/* What a GPU and its MIG devices share: product, driver, PCI (partitions.go PartDevAttributes()). */
static void common_attrs(struct attrs *a, const struct node *n, const struct dra_device *d)
{
	const struct node_gpu *g = d->gpu;
	char bus[32], cc[16], cuda[16];

	attr_str(a, "uuid", dra_device_uuid(d));
	attr_str(a, "productName", g->name);
	if (g->brand >= 0 && (size_t)g->brand < ELEMENTSOF(brand_names))
		attr_str(a, "brand", brand_names[g->brand]);
	if (g->arch < ELEMENTSOF(arch_names) && arch_names[g->arch])
		attr_str(a, "architecture", arch_names[g->arch]);
	if (g->cc_major >= 0) {
		snprintf(cc, sizeof(cc), "%d.%d", g->cc_major, g->cc_minor);
		attr_ver(a, "cudaComputeCapability", cc);
	}
	if (n->driver_version[0])
		attr_ver(a, "driverVersion", n->driver_version);
	if (n->cuda_driver_version > 0) {
		snprintf(cuda, sizeof(cuda), "%d.%d", n->cuda_driver_version / 1000,
			 (n->cuda_driver_version % 1000) / 10);
		attr_ver(a, "cudaDriverVersion", cuda);
	}
	if (g->pci_bus_id[0]) {
		node_pci_sysfs_id(g->pci_bus_id, bus, sizeof(bus));
		attr_str(a, "pcieBusID", bus);           /* v25.8's name */
		attr_str(a, STD_PREFIX "pciBusID", bus); /* v25.12's */
	}
	attr_str(a, STD_PREFIX "pcieRoot", d->pcie_root);
	if (g->numa_node >= 0)
		attr_int(a, STD_PREFIX "numaNode", g->numa_node);
}

static int device_json(const struct node *n, const struct dra_device *d, json_t **ret, struct gerr *err)
{
	json_auto_t *dev = NULL;
	struct attrs a = {.attr = json_object(), .cap = json_object(), .device = d->name, .err = err};

	dev = json_pack("{s:s, s:o, s:o}", "name", d->name, "attributes", a.attr, "capacity", a.cap);
	if (!dev)
		return gerr_set(err, ENOMEM, "out of memory");
	if (!d->mig) {
		attr_str(&a, "type", "gpu");
		attr_int(&a, "index", d->gpu->index);
		attr_int(&a, "minor", d->gpu->minor);
		common_attrs(&a, n, d);
		if (d->gpu->memory_total)
			cap_bytes(&a, "memory", d->gpu->memory_total);
	} else {
		const struct node_mig *m = d->mig;
		char slice[24];

		attr_str(&a, "type", "mig");
		attr_str(&a, "parentUUID", d->gpu->uuid);
		attr_int(&a, "index", m->index);
		attr_int(&a, "parentIndex", d->gpu->index);
		attr_str(&a, "profile", m->profile);
		common_attrs(&a, n, d);
		cap_bytes(&a, "multiprocessors", m->multiprocessors);
		cap_bytes(&a, "copyEngines", m->engines_copy);
		cap_bytes(&a, "decoders", m->engines_decoder);
		cap_bytes(&a, "encoders", m->engines_encoder);
		cap_bytes(&a, "jpegEngines", m->engines_jpeg);
		cap_bytes(&a, "ofaEngines", m->engines_ofa);
		cap_bytes(&a, "memory", m->memory_mb * 1024 * 1024); /* MemorySizeMB is MiB (NVML) */
		for (unsigned s = m->placement_start; s < m->placement_start + m->placement_size; s++) {
			snprintf(slice, sizeof(slice), "memorySlice%u", s);
			cap_bytes(&a, slice, 1);
		}
	}
	if (a.r == -ENOMEM)
		return gerr_set(err, ENOMEM, "out of memory");
	if (a.r < 0)
		return a.r;
	if (json_object_size(a.attr) + json_object_size(a.cap) > DEVICE_MAX_ATTR_CAP)
		return gerr_set(err, EINVAL, "device %s has %zu attributes and capacities; the API takes at most %d",
				d->name, json_object_size(a.attr) + json_object_size(a.cap), DEVICE_MAX_ATTR_CAP);
	*ret = TAKE_PTR(dev);
	return 0;
}

/* The devices the pool shows: all but the unhealthy ones unless they are tainted, none when withheld. */
static size_t published(const struct dra_devices *d, const struct dra_slice_options *o, const struct dra_device **v)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n && !o->withhold; i++)
		if (!d->v[i].unhealthy || o->taints)
			v[n++] = &d->v[i];
	return n;
}

/* The device's taint: NVIDIA's key under the driver, its value, NoSchedule (docs/reference/dra.md §12.2). */
static int add_taint(json_t *dev, const struct dra_device *d, const char *driver)
{
	char key[128];
	json_t *t;

	snprintf(key, sizeof(key), "%s/%s", driver, d->taint_key ? d->taint_key : DRA_TAINT_XID);
	t = json_pack("{s:s, s:s}", "key", key, "effect", "NoSchedule");
	if (t && d->taint_value[0])
		json_object_set_new(t, "value", json_string(d->taint_value));
	return t && json_object_set_new(dev, "taints", json_pack("[o]", t)) == 0 ? 0 : -ENOMEM;
}

int dra_slices_build(const struct dra_devices *d, const struct dra_slice_options *o, json_t **ret, struct gerr *err)
{
	_cleanup_free_ const struct dra_device **v = calloc(d->n + 1, sizeof(*v));
	size_t n = v ? published(d, o, v) : 0;
	size_t count = n ? (n + SLICE_MAX_DEVICES - 1) / SLICE_MAX_DEVICES : 1;
	json_auto_t *out = json_array();
	_cleanup_free_ char *gen_name = NULL;

	if (!v || !out || asprintf(&gen_name, "%s-%s-", o->node_name, o->driver) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	/* a pool without devices is still published: it tells the scheduler this node has none now */
	for (size_t s = 0; s < count; s++) {
		json_auto_t *devices = json_array();
		json_t *meta, *slice;

		if (!devices)
			return gerr_set(err, ENOMEM, "out of memory");
		for (size_t i = s * SLICE_MAX_DEVICES; i < n && i < (s + 1) * SLICE_MAX_DEVICES; i++) {
			json_t *dev = NULL;
			int r = device_json(d->node, v[i], &dev, err);

			if (r < 0)
				return r;
			if ((v[i]->unhealthy && add_taint(dev, v[i], o->driver) < 0) ||
			    json_array_append_new(devices, dev) < 0)
				return gerr_set(err, ENOMEM, "out of memory");
		}
		meta = json_pack("{s:s}", "generateName", gen_name);
		if (meta && o->node_uid)
			json_object_set_new(meta, "ownerReferences",
					    json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "v1", "kind", "Node",
						      "name", o->node_name, "uid", o->node_uid, "controller", 1));
		slice = json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:{s:s, s:I, s:I}, s:o}}", "apiVersion",
				  "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", meta, "spec", "driver",
				  o->driver, "nodeName", o->node_name, "pool", "name", o->node_name, "generation",
				  (json_int_t)o->generation, "resourceSliceCount", (json_int_t)count, "devices",
				  json_incref(devices));
		if (!slice || json_array_append_new(out, slice) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(out);
	return 0;
}

bool dra_device_matches(const struct dra_device *v, const char *uuid, int gi, int ci)
{
	return streq(v->gpu->uuid, uuid) &&
	       (gi < 0 || (v->mig && (int)v->mig->gi == gi && (ci < 0 || (int)v->mig->ci == ci)));
}

size_t dra_devices_set_health(struct dra_devices *d, const char *uuid, int gi, int ci, bool healthy,
			      const char *taint_key, const char *taint_value, const char *reason, long long now)
{
	size_t changed = 0;

	for (size_t i = 0; i < d->n; i++) {
		struct dra_device *v = &d->v[i];

		if (!dra_device_matches(v, uuid, gi, ci))
			continue;
		changed += v->unhealthy == healthy;
		if (v->unhealthy == healthy)
			v->health_since = now;
		v->unhealthy = !healthy;
		v->taint_key = healthy ? NULL : taint_key ? taint_key : DRA_TAINT_XID;
		snprintf(v->taint_value, sizeof(v->taint_value), "%s", healthy || !taint_value ? "" : taint_value);
		snprintf(v->health_reason, sizeof(v->health_reason), "%s", healthy || !reason ? "" : reason);
	}
	return changed;
}

/* The devices of every slice of a pool, by name (a sorted object), to compare two versions. */
static json_t *devices_of(const json_t *slices)
{
	json_t *all = json_object(), *slice, *dev;
	size_t i, k;

	json_array_foreach (slices, i, slice)
		json_array_foreach (json_object_get(json_object_get(slice, "spec"), "devices"), k, dev)
			json_object_set(all, json_string_value(json_object_get(dev, "name")) ?: "", dev);
	return all;
}

int64_t dra_slices_next_generation(const json_t *published, const json_t *wanted, int64_t prev)
{
	json_auto_t *a = published ? devices_of(published) : NULL, *b = devices_of(wanted);

	return a && b && json_equal(a, b) ? prev : prev + 1;
}
