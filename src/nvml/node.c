/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "nvml/node.h"

#define MIG_MINORS_PATH "/proc/driver/nvidia-caps/mig-minors"
#define MIG_MINORS_MAX  (1u << 20)

/* ---- /proc/driver/nvidia-caps/mig-minors ---- */

struct mig_minor_entry {
	unsigned gpu, gi;
	int ci; /* -1 for the GI access line */
	int minor;
};

struct mig_minors {
	struct mig_minor_entry *e;
	size_t n;
};

void mig_minors_free(struct mig_minors *m)
{
	if (!m)
		return;
	free(m->e);
	free(m);
}

/* 1 to 9 decimal digits at *p (no sign, no blank: what the driver writes), advancing *p. */
static bool digits(const char **p, unsigned *ret)
{
	unsigned v = 0;
	size_t n = 0;

	while (n < 9 && (*p)[n] >= '0' && (*p)[n] <= '9')
		v = v * 10 + (unsigned)((*p)[n++] - '0');
	if (!n || ((*p)[n] >= '0' && (*p)[n] <= '9'))
		return false;
	*p += n;
	*ret = v;
	return true;
}

static bool literal(const char **p, const char *word)
{
	size_t l = strlen(word);

	if (strncmp(*p, word, l))
		return false;
	*p += l;
	return true;
}

/*
 * The driver's own spelling of an access line, "gpu<G>/gi<I>[/ci<C>]/access <minor>", read without
 * sscanf: the table has 4322 lines on every node and this is the doctor's hottest loop. A line it does
 * not take goes to the sscanf reading below, which gives the same answer for every line this takes.
 */
static bool fast_entry(const char *s, struct mig_minor_entry *e)
{
	unsigned gpu, gi, ci, minor;

	if (!literal(&s, "gpu") || !digits(&s, &gpu) || !literal(&s, "/gi") || !digits(&s, &gi))
		return false;
	e->ci = -1;
	if (literal(&s, "/ci")) {
		if (!digits(&s, &ci))
			return false;
		e->ci = (int)ci;
	}
	if (!literal(&s, "/access ") || !digits(&s, &minor) || *s)
		return false;
	e->gpu = gpu;
	e->gi = gi;
	e->minor = (int)minor;
	return true;
}

/*
 * Lines look like "gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13", "config 1", "monitor 2"
 * (docs/reference/device-plugin.md §6). Only the access lines matter; others are skipped.
 */
int mig_minors_parse(const char *text, struct mig_minors **ret, struct gerr *err)
{
	_cleanup_(mig_minors_freep) struct mig_minors *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	unsigned line = 0;

	if (!m)
		return gerr_set(err, ENOMEM, "out of memory");
	for (const char *p = text; *p;) {
		const char *eol = strchrnul(p, '\n');
		char buf[128];
		size_t len = (size_t)(eol - p);
		struct mig_minor_entry e = {.ci = -1};
		unsigned ci;
		int consumed = 0;

		line++;
		if (len >= sizeof(buf))
			return gerr_set(err, EINVAL, "%s:%u: line too long", MIG_MINORS_PATH, line);
		memcpy(buf, p, len);
		buf[len] = 0;
		p = *eol ? eol + 1 : eol;
		if (strncmp(buf, "gpu", 3) != 0)
			continue;
		if (!fast_entry(buf, &e)) { /* not the usual spelling: sscanf decides */
			if (sscanf(buf, "gpu%u/gi%u/ci%u/access %d%n", &e.gpu, &e.gi, &ci, &e.minor, &consumed) == 4 &&
			    consumed == (int)len)
				e.ci = (int)ci;
			else if (!(sscanf(buf, "gpu%u/gi%u/access %d%n", &e.gpu, &e.gi, &e.minor, &consumed) == 3 &&
				   consumed == (int)len))
				continue; /* gpuN/gi/… other capability lines */
		}
		if (e.minor < 0)
			return gerr_set(err, EINVAL, "%s:%u: negative minor in '%s'", MIG_MINORS_PATH, line, buf);
		if (m->n == cap) {
			struct mig_minor_entry *ne = grow_alloc(m->e, &cap, sizeof(*ne), 64);

			if (!ne)
				return gerr_set(err, ENOMEM, "out of memory");
			m->e = ne;
		}
		m->e[m->n++] = e;
	}
	*ret = TAKE_PTR(m);
	return 0;
}

int mig_minors_lookup(const struct mig_minors *m, unsigned gpu, unsigned gi, int ci)
{
	if (!m)
		return -ENOENT;
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].gpu == gpu && m->e[i].gi == gi && m->e[i].ci == ci)
			return m->e[i].minor;
	return -ENOENT;
}

/* ---- MIG profile naming (go-nvlib rule, docs/reference/nvml-abi.md "MIG profile names") ---- */

void node_mig_profile_name(unsigned gi_slices, unsigned ci_slices, uint64_t mig_memory_mb, uint64_t gpu_memory_bytes,
			   char *buf, size_t size)
{
	double frac, gib;
	unsigned gb;

	if (gpu_memory_bytes == 0) {
		snprintf(buf, size, "%ug.%" PRIu64 "gb", gi_slices, (mig_memory_mb + 1023) / 1024);
		return;
	}
	frac = ceil((double)mig_memory_mb * 1048576.0 / (double)gpu_memory_bytes * 8.0) / 8.0;
	gib = ceil((double)gpu_memory_bytes / 1073741824.0);
	gb = (unsigned)llround(frac * gib);
	if (ci_slices && ci_slices != gi_slices)
		snprintf(buf, size, "%uc.%ug.%ugb", ci_slices, gi_slices, gb);
	else
		snprintf(buf, size, "%ug.%ugb", gi_slices, gb);
}

/* GI profile index -> name suffix (nvml.h NVML_GPU_INSTANCE_PROFILE_* comments; go-nvlib mig_profile.go). */
static const struct {
	unsigned profile;
	const char *suffix;
} gi_profile_suffixes[] = {
    {0x7, "+me"}, {0x8, "+me"}, {0xA, "+gfx"},    {0xB, "+gfx"},     {0xC, "+gfx"},
    {0xD, "-me"}, {0xE, "-me"}, {0xF, "+me.all"}, {0x10, "+me.all"}, {0x11, "+gfx"},
};

/* The GI's suffix by its profile; fills m's GI info (profile id, placement) when NVML answers. */
static const char *mig_profile_suffix(struct nvml *nv, nvmlDevice_t parent, struct node_mig *m)
{
	nvmlGpuInstance_t ginst;
	nvmlGpuInstanceInfo_t info;

	if (!NVML_HAS(nv, device_get_gpu_instance_by_id) || !NVML_HAS(nv, gpu_instance_get_info))
		return "";
	if (nv->device_get_gpu_instance_by_id(parent, m->gi, &ginst) != NVML_SUCCESS ||
	    nv->gpu_instance_get_info(ginst, &info) != NVML_SUCCESS)
		return "";
	m->gi_info_known = true;
	m->gi_profile_id = info.profileId;
	m->placement_start = info.placement.start;
	m->placement_size = info.placement.size;
	if (!NVML_HAS(nv, device_get_gpu_instance_profile_info))
		return "";
	for (size_t i = 0; i < ELEMENTSOF(gi_profile_suffixes); i++) {
		nvmlGpuInstanceProfileInfo_t pi;

		if (nv->device_get_gpu_instance_profile_info(parent, gi_profile_suffixes[i].profile, &pi) ==
			NVML_SUCCESS &&
		    pi.id == info.profileId)
			return gi_profile_suffixes[i].suffix;
	}
	return "";
}

/* ---- loading ---- */

void node_free(struct node *n)
{
	if (!n)
		return;
	free_members(n->gpus, n->n_gpus, migs);
	free(n->nvlinks);
	free(n->pcie_level);
	free(n);
}

/* sysfs wants "0000:07:00.0" (lowercase, 4-digit domain); NVML gives "00000000:07:00.0". */
static void pci_sysfs_id(const char *nvml_id, char *buf, size_t size)
{
	const char *p = nvml_id;
	size_t i;

	if (strlen(p) == 16 && strncmp(p, "0000", 4) == 0)
		p += 4;
	for (i = 0; p[i] && i + 1 < size; i++)
		buf[i] = (char)tolower((unsigned char)p[i]);
	buf[i] = 0;
}

static int read_numa_node(const char *root, const char *bus_id)
{
	_cleanup_free_ char *path = NULL, *rel = NULL;
	char sysid[32], buf[32];
	long v;
	char *end;

	pci_sysfs_id(bus_id, sysid, sizeof(sysid));
	if (asprintf(&rel, "/sys/bus/pci/devices/%s/numa_node", sysid) < 0) {
		rel = NULL;
		return -1;
	}
	path = root_path(root, rel);
	if (!path || read_line_file(path, buf, sizeof(buf)) < 0)
		return -1;
	v = strtol(buf, &end, 10);
	if (end == buf || v < 0 || v > 4096)
		return -1;
	return (int)v;
}

static void gpu_note(struct node_gpu *g, struct nvml *nv, const char *what, nvmlReturn_t r)
{
	if (r == NVML_ERROR_GPU_IS_LOST)
		g->lost = true;
	if (!g->error[0])
		snprintf(g->error, sizeof(g->error), "%s: %s", what, nvml_strerror(nv, r));
}

static void load_mig(struct nvml *nv, nvmlDevice_t parent, struct node_gpu *g, const struct mig_minors *mm)
{
	unsigned max = 0;
	nvmlReturn_t r;

	if (!NVML_HAS(nv, device_get_max_mig_device_count) || !NVML_HAS(nv, device_get_mig_device_handle_by_index))
		return;
	r = nv->device_get_max_mig_device_count(parent, &max);
	if (r != NVML_SUCCESS) {
		gpu_note(g, nv, "nvmlDeviceGetMaxMigDeviceCount", r);
		return;
	}
	if (max > 64)
		max = 64;
	g->migs = calloc(max ? max : 1, sizeof(*g->migs));
	if (!g->migs)
		return;
	for (unsigned j = 0; j < max; j++) {
		struct node_mig *m = &g->migs[g->n_migs];
		nvmlDeviceAttributes_t attr = {0};
		nvmlDevice_t mh;

		r = nv->device_get_mig_device_handle_by_index(parent, j, &mh);
		if (r == NVML_ERROR_NOT_FOUND)
			continue;
		if (r != NVML_SUCCESS) {
			gpu_note(g, nv, "nvmlDeviceGetMigDeviceHandleByIndex", r);
			continue;
		}
		r = nv->device_get_uuid(mh, m->uuid, sizeof(m->uuid));
		if (r != NVML_SUCCESS) {
			gpu_note(g, nv, "nvmlDeviceGetUUID (MIG)", r);
			continue;
		}
		m->index = j;
		if (NVML_HAS(nv, device_get_gpu_instance_id))
			(void)nv->device_get_gpu_instance_id(mh, &m->gi);
		if (NVML_HAS(nv, device_get_compute_instance_id))
			(void)nv->device_get_compute_instance_id(mh, &m->ci);
		if (NVML_HAS(nv, device_get_attributes) && nv->device_get_attributes(mh, &attr) == NVML_SUCCESS) {
			char base[24];

			m->gi_slices = attr.gpuInstanceSliceCount;
			m->ci_slices = attr.computeInstanceSliceCount;
			m->memory_mb = attr.memorySizeMB;
			/* labels block: GFD's MIG attribute labels */
			m->multiprocessors = attr.multiprocessorCount;
			m->engines_copy = attr.sharedCopyEngineCount;
			m->engines_decoder = attr.sharedDecoderCount;
			m->engines_encoder = attr.sharedEncoderCount;
			m->engines_jpeg = attr.sharedJpegCount;
			m->engines_ofa = attr.sharedOfaCount;
			node_mig_profile_name(m->gi_slices, m->ci_slices, m->memory_mb, g->memory_total, base,
					      sizeof(base));
			snprintf(m->profile, sizeof(m->profile), "%s%s", base, mig_profile_suffix(nv, parent, m));
		}
		m->gi_cap_minor = mig_minors_lookup(mm, g->minor, m->gi, -1);
		m->ci_cap_minor = mig_minors_lookup(mm, g->minor, m->gi, (int)m->ci);
		if (m->gi_cap_minor < 0)
			m->gi_cap_minor = -1;
		if (m->ci_cap_minor < 0)
			m->ci_cap_minor = -1;
		g->n_migs++;
	}
}

/*
 * ---- labels block: fabric membership (GFD's gpu.clique) ----
 * NOT_SUPPORTED (no NVLink fabric) and an old driver without the call leave fabric_known false;
 * other errors are noted like any failed query.
 */
static void load_fabric(struct nvml *nv, nvmlDevice_t h, struct node_gpu *g)
{
	nvmlGpuFabricInfo_t fi;
	nvmlReturn_t r;

	if (!NVML_HAS(nv, device_get_gpu_fabric_info) || g->lost)
		return;
	memset(&fi, 0, sizeof(fi));
	r = nv->device_get_gpu_fabric_info(h, &fi);
	if (r == NVML_ERROR_NOT_SUPPORTED)
		return;
	if (r != NVML_SUCCESS) {
		gpu_note(g, nv, "nvmlDeviceGetGpuFabricInfo", r);
		return;
	}
	g->fabric_known = true;
	g->fabric_state = fi.state;
	g->fabric_status = fi.status;
	g->fabric_clique = fi.cliqueId;
	memcpy(g->fabric_cluster_uuid, fi.clusterUuid, sizeof(g->fabric_cluster_uuid));
}

/*
 * The GPU's virtualization mode (labels' vgpu.present where the PCI config space is not readable in full,
 * docs/reference/gfd-labels.md "vGPU"). Not answered: virt_mode stays -1, and nothing is noted (an old
 * driver or a GPU without the query is not a failed read).
 */
static void load_virt_mode(struct nvml *nv, nvmlDevice_t h, struct node_gpu *g)
{
	nvmlGpuVirtualizationMode_t m = 0;

	if (NVML_HAS(nv, device_get_virtualization_mode) && !g->lost &&
	    nv->device_get_virtualization_mode(h, &m) == NVML_SUCCESS && m >= 0)
		g->virt_mode = m;
}

/* The sysfs name of a GPU's PCI function, for readers of sys/bus/pci/devices (labels' gpu.mode). */
void node_pci_sysfs_id(const char *nvml_bus_id, char *buf, size_t size)
{
	pci_sysfs_id(nvml_bus_id, buf, size);
}
/* ---- end labels block ---- */

static void load_gpu(struct nvml *nv, const char *root, unsigned i, struct node_gpu *g, nvmlDevice_t *ret_h,
		     const struct mig_minors *mm)
{
	nvmlDevice_t h;
	nvmlReturn_t r;
	unsigned cur = 0, pending = 0;

	g->index = i;
	g->cc_major = g->cc_minor = -1;
	g->numa_node = -1;
	g->brand = -1;
	g->virt_mode = -1;
	*ret_h = NULL;
	r = nv->device_get_handle_by_index(i, &h);
	if (r != NVML_SUCCESS) {
		gpu_note(g, nv, "nvmlDeviceGetHandleByIndex", r);
		return;
	}
	*ret_h = h;
	if ((r = nv->device_get_uuid(h, g->uuid, sizeof(g->uuid))) != NVML_SUCCESS)
		gpu_note(g, nv, "nvmlDeviceGetUUID", r);
	if ((r = nv->device_get_name(h, g->name, sizeof(g->name))) != NVML_SUCCESS)
		gpu_note(g, nv, "nvmlDeviceGetName", r);
	if ((r = nv->device_get_minor_number(h, &g->minor)) != NVML_SUCCESS) {
		gpu_note(g, nv, "nvmlDeviceGetMinorNumber", r);
		g->minor = i;
	}
	if (NVML_HAS(nv, device_get_pci_info)) {
		nvmlPciInfo_t pci;

		if ((r = nv->device_get_pci_info(h, &pci)) == NVML_SUCCESS) {
			snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci.busId);
			g->pci_device_id = pci.pciDeviceId;
		} else
			gpu_note(g, nv, "nvmlDeviceGetPciInfo", r);
	}
	if (NVML_HAS(nv, device_get_memory_info)) {
		nvmlMemory_t mem;

		if ((r = nv->device_get_memory_info(h, &mem)) == NVML_SUCCESS)
			g->memory_total = mem.total;
		else
			gpu_note(g, nv, "nvmlDeviceGetMemoryInfo", r);
	}
	if (NVML_HAS(nv, device_get_cuda_compute_capability) &&
	    nv->device_get_cuda_compute_capability(h, &g->cc_major, &g->cc_minor) != NVML_SUCCESS)
		g->cc_major = g->cc_minor = -1;
	if (NVML_HAS(nv, device_get_architecture))
		(void)nv->device_get_architecture(h, &g->arch);
	if (!NVML_HAS(nv, device_get_brand) || nv->device_get_brand(h, &g->brand) != NVML_SUCCESS)
		g->brand = -1;
	if (g->pci_bus_id[0])
		g->numa_node = read_numa_node(root, g->pci_bus_id);
	if (g->numa_node < 0 && NVML_HAS(nv, device_get_numa_node_id)) {
		unsigned nn;

		if (nv->device_get_numa_node_id(h, &nn) == NVML_SUCCESS && nn < 4096)
			g->numa_node = (int)nn;
	}
	if (NVML_HAS(nv, device_get_mig_mode)) {
		r = nv->device_get_mig_mode(h, &cur, &pending);
		if (r == NVML_SUCCESS) {
			g->mig_capable = true;
			g->mig_enabled = cur == NVML_DEVICE_MIG_ENABLE;
			g->mig_pending_change = cur != pending;
		} else if (r != NVML_ERROR_NOT_SUPPORTED)
			gpu_note(g, nv, "nvmlDeviceGetMigMode", r);
	}
	if (NVML_HAS(nv, device_get_total_ecc_errors) &&
	    nv->device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
					    (unsigned long long *)&g->ecc_dbe_volatile) != NVML_SUCCESS)
		g->ecc_dbe_volatile = 0;
	if (NVML_HAS(nv, device_get_remapped_rows)) {
		unsigned corr, unc, pend, fail;

		if (nv->device_get_remapped_rows(h, &corr, &unc, &pend, &fail) == NVML_SUCCESS) {
			g->remap_pending = pend != 0;
			g->remap_failed = fail != 0;
		}
	}
	if (g->mig_enabled && !g->lost)
		load_mig(nv, h, g, mm);
	load_fabric(nv, h, g);
	load_virt_mode(nv, h, g);
}

static int find_gpu_by_bus(const struct node *n, const char *bus)
{
	for (size_t i = 0; i < n->n_gpus; i++)
		if (n->gpus[i].pci_bus_id[0] && strcasecmp(n->gpus[i].pci_bus_id, bus) == 0)
			return (int)i;
	return -1;
}

/* NVLinks from GPU i to one remote that is not a GPU of this node (an NVSwitch). */
struct switch_links {
	char bus[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
	unsigned links;
};

#define SWITCH_MAX 16

static void count_switch_link(struct switch_links *sw, size_t *n, const char *bus)
{
	for (size_t k = 0; k < *n; k++)
		if (strcasecmp(sw[k].bus, bus) == 0) {
			sw[k].links++;
			return;
		}
	if (*n < SWITCH_MAX) {
		snprintf(sw[*n].bus, sizeof(sw[*n].bus), "%s", bus);
		sw[(*n)++].links = 1;
	}
}

/*
 * Links of GPU i, sorted into direct GPU peers (nvlinks[i][j]) and NVSwitch ports. Two GPUs on the
 * same switch talk over min(their links to it); DGX A100/H100 have every GPU on every switch, so
 * each pair gets all 12 (18) links, as go-gpuallocator scores NVSwitch systems.
 */
static void load_gpu_nvlinks(struct nvml *nv, struct node *n, size_t i, nvmlDevice_t h, struct switch_links *sw,
			     size_t *n_sw)
{
	for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
		nvmlPciInfo_t pci;
		int active = 0, j;

		if (nv->device_get_nvlink_state(h, link, &active) != NVML_SUCCESS)
			break; /* NOT_SUPPORTED / INVALID_ARGUMENT past the last link */
		if (active != NVML_FEATURE_ENABLED ||
		    nv->device_get_nvlink_remote_pci_info(h, link, &pci) != NVML_SUCCESS)
			continue;
		j = find_gpu_by_bus(n, pci.busId);
		if (j < 0)
			count_switch_link(sw, n_sw, pci.busId);
		else if ((size_t)j != i)
			n->nvlinks[i * n->n_gpus + (size_t)j]++;
	}
}

static void add_switch_links(struct node *n, struct switch_links (*sw)[SWITCH_MAX], const size_t *n_sw)
{
	size_t c = n->n_gpus;

	for (size_t i = 0; i < c; i++)
		for (size_t j = i + 1; j < c; j++)
			for (size_t a = 0; a < n_sw[i]; a++)
				for (size_t b = 0; b < n_sw[j]; b++)
					if (strcasecmp(sw[i][a].bus, sw[j][b].bus) == 0) {
						unsigned l = MIN(sw[i][a].links, sw[j][b].links);

						n->nvlinks[i * c + j] += l;
						n->nvlinks[j * c + i] += l;
					}
}

static void load_topology(struct nvml *nv, struct node *n, nvmlDevice_t *h)
{
	size_t c = n->n_gpus;
	_cleanup_free_ struct switch_links(*sw)[SWITCH_MAX] = calloc(c ? c : 1, sizeof(*sw));
	_cleanup_free_ size_t *n_sw = calloc(c ? c : 1, sizeof(*n_sw));
	bool links = NVML_HAS(nv, device_get_nvlink_state) && NVML_HAS(nv, device_get_nvlink_remote_pci_info);

	for (size_t i = 0; i < c * c; i++)
		n->pcie_level[i] = -1;
	if (!sw || !n_sw)
		return;
	for (size_t i = 0; i < c; i++) {
		if (!h[i] || n->gpus[i].lost)
			continue;
		for (size_t j = i + 1; j < c && NVML_HAS(nv, device_get_topology_common_ancestor); j++) {
			int level;

			if (h[j] && !n->gpus[j].lost &&
			    nv->device_get_topology_common_ancestor(h[i], h[j], &level) == NVML_SUCCESS)
				n->pcie_level[i * c + j] = n->pcie_level[j * c + i] = level;
		}
		if (links)
			load_gpu_nvlinks(nv, n, i, h[i], sw[i], &n_sw[i]);
	}
	add_switch_links(n, sw, n_sw);
}

static struct mig_minors *load_mig_minors(const char *root)
{
	_cleanup_free_ char *path = root_path(root, MIG_MINORS_PATH), *text = NULL;
	struct mig_minors *mm = NULL;

	if (!path || read_file(path, MIG_MINORS_MAX, &text, NULL, NULL) < 0)
		return NULL;
	if (mig_minors_parse(text, &mm, NULL) < 0)
		return NULL;
	return mm;
}

int node_load(struct nvml *nv, const char *root, struct node **ret, struct gerr *err)
{
	_cleanup_(node_freep) struct node *n = calloc(1, sizeof(*n));
	_cleanup_(mig_minors_freep) struct mig_minors *mm = NULL;
	_cleanup_free_ nvmlDevice_t *handles = NULL;
	unsigned count = 0;
	nvmlReturn_t r;

	if (!n)
		return gerr_set(err, ENOMEM, "out of memory");
	r = nv->system_get_driver_version(n->driver_version, sizeof(n->driver_version));
	if (r != NVML_SUCCESS)
		n->driver_version[0] = 0;
	if (NVML_HAS(nv, system_get_nvml_version))
		(void)nv->system_get_nvml_version(n->nvml_version, sizeof(n->nvml_version));
	if (NVML_HAS(nv, system_get_cuda_driver_version) &&
	    nv->system_get_cuda_driver_version(&n->cuda_driver_version) != NVML_SUCCESS)
		n->cuda_driver_version = 0;
	r = nv->device_get_count(&count);
	if (r != NVML_SUCCESS)
		return gerr_set(err, -nvml_errno(r),
				"NVML from %s cannot count GPUs: %s; check 'nvidia-smi' and the kernel log", nv->path,
				nvml_strerror(nv, r));
	if (count > 256)
		return gerr_set(err, ERANGE, "NVML reports %u GPUs, more than the 256 gpulet supports", count);
	mm = load_mig_minors(root);
	n->gpus = calloc(count ? count : 1, sizeof(*n->gpus));
	handles = calloc(count ? count : 1, sizeof(*handles));
	n->nvlinks = calloc(count ? (size_t)count * count : 1, sizeof(*n->nvlinks));
	n->pcie_level = calloc(count ? (size_t)count * count : 1, sizeof(*n->pcie_level));
	if (!n->gpus || !handles || !n->nvlinks || !n->pcie_level)
		return gerr_set(err, ENOMEM, "out of memory");
	n->n_gpus = count;
	for (unsigned i = 0; i < count; i++)
		load_gpu(nv, root, i, &n->gpus[i], &handles[i], mm);
	load_topology(nv, n, handles);
	*ret = TAKE_PTR(n);
	return 0;
}

const struct node_gpu *node_find_gpu(const struct node *n, const char *uuid)
{
	for (size_t i = 0; i < n->n_gpus; i++)
		if (streq(n->gpus[i].uuid, uuid))
			return &n->gpus[i];
	return NULL;
}

const struct node_mig *node_find_mig(const struct node *n, const char *uuid, const struct node_gpu **ret_parent)
{
	for (size_t i = 0; i < n->n_gpus; i++)
		for (size_t j = 0; j < n->gpus[i].n_migs; j++)
			if (streq(n->gpus[i].migs[j].uuid, uuid)) {
				if (ret_parent)
					*ret_parent = &n->gpus[i];
				return &n->gpus[i].migs[j];
			}
	return NULL;
}

bool node_equal_layout(const struct node *a, const struct node *b)
{
	if (a->n_gpus != b->n_gpus)
		return false;
	for (size_t i = 0; i < a->n_gpus; i++) {
		const struct node_gpu *x = &a->gpus[i], *y = &b->gpus[i];

		if (!streq(x->uuid, y->uuid) || x->mig_enabled != y->mig_enabled || x->n_migs != y->n_migs)
			return false;
		for (size_t j = 0; j < x->n_migs; j++)
			if (!streq(x->migs[j].uuid, y->migs[j].uuid) || !streq(x->migs[j].profile, y->migs[j].profile))
				return false;
	}
	return true;
}

/* ---- JSON ---- */

static json_t *mig_to_json(const struct node_mig *m)
{
	return json_pack("{s:s, s:s, s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:i}", "uuid", m->uuid, "profile", m->profile,
			 "index", (int)m->index, "gi", (int)m->gi, "ci", (int)m->ci, "memory_mib",
			 (json_int_t)m->memory_mb, "gi_slices", (int)m->gi_slices, "ci_slices", (int)m->ci_slices,
			 "gi_cap_minor", m->gi_cap_minor, "ci_cap_minor", m->ci_cap_minor);
}

const char *node_gpu_health(const struct node_gpu *g)
{
	if (g->lost)
		return "lost";
	if (g->ecc_dbe_volatile || g->remap_failed || g->remap_pending)
		return "unhealthy";
	return g->error[0] ? "degraded" : "healthy";
}

/*
 * A PCIe path as `nvidia-smi topo -m` names it (docs/reference/nvml-abi.md, "Topology names"); an
 * on-board pair (INTERNAL, dual-GPU boards) shares the board's one switch: PIX.
 */
static const struct {
	int level;
	const char *name;
} pcie_names[] = {
    {NVML_TOPOLOGY_INTERNAL, "PIX"},   {NVML_TOPOLOGY_SINGLE, "PIX"}, {NVML_TOPOLOGY_MULTIPLE, "PXB"},
    {NVML_TOPOLOGY_HOSTBRIDGE, "PHB"}, {NVML_TOPOLOGY_NODE, "NODE"},  {NVML_TOPOLOGY_SYSTEM, "SYS"},
};

static json_t *pcie_name(int level)
{
	for (size_t k = 0; k < ELEMENTSOF(pcie_names); k++)
		if (pcie_names[k].level == level)
			return json_string(pcie_names[k].name);
	return json_null(); /* NVML did not say */
}

/* One cell of `nvidia-smi topo -m`: NV# over # NVLinks, else the PCIe path's name. */
static json_t *topo_pair(const struct node *n, size_t i, size_t j)
{
	unsigned links = n->nvlinks[i * n->n_gpus + j];
	int level = n->pcie_level[i * n->n_gpus + j];
	json_t *pcie = pcie_name(level), *cell;
	char nv[16];

	snprintf(nv, sizeof(nv), "NV%u", links);
	cell = links ? json_string(nv) : json_incref(pcie);
	return json_pack("{s:o, s:i, s:o}", "topo", cell, "nvlinks", (int)links, "pcie", pcie);
}

static json_t *gpu_to_json(const struct node *n, size_t i)
{
	const struct node_gpu *g = &n->gpus[i];
	json_t *o, *migs, *links;
	char cc[16] = "";

	if (g->cc_major >= 0)
		snprintf(cc, sizeof(cc), "%d.%d", g->cc_major, g->cc_minor);
	o = json_pack("{s:i, s:i, s:s, s:s, s:s, s:I, s:s, s:i, s:b, s:b, s:b, s:s}", "index", (int)g->index, "minor",
		      (int)g->minor, "uuid", g->uuid, "name", g->name, "pci_bus_id", g->pci_bus_id, "memory_mib",
		      (json_int_t)(g->memory_total / 1048576), "compute_capability", cc, "numa_node", g->numa_node,
		      "mig_capable", g->mig_capable, "mig_enabled", g->mig_enabled, "mig_pending_change",
		      g->mig_pending_change, "health", node_gpu_health(g));
	if (!o)
		return NULL;
	if (g->error[0])
		json_object_set_new(o, "error", json_string(g->error));
	json_object_set_new(o, "ecc_dbe_volatile", json_integer((json_int_t)g->ecc_dbe_volatile));
	json_object_set_new(o, "remap_pending", json_boolean(g->remap_pending));
	json_object_set_new(o, "remap_failed", json_boolean(g->remap_failed));
	migs = json_array();
	for (size_t j = 0; j < g->n_migs; j++)
		json_array_append_new(migs, mig_to_json(&g->migs[j]));
	json_object_set_new(o, "mig_devices", migs);
	links = json_object();
	for (size_t j = 0; j < n->n_gpus; j++) {
		char key[16];

		if (j == i)
			continue;
		snprintf(key, sizeof(key), "%zu", j);
		json_object_set_new(links, key, topo_pair(n, i, j));
	}
	json_object_set_new(o, "topology", links);
	return o;
}

struct json_t *node_to_json(const struct node *n)
{
	json_t *gpus = json_array(), *o;
	char cuda[16] = "";

	if (!gpus)
		return NULL;
	for (size_t i = 0; i < n->n_gpus; i++)
		json_array_append_new(gpus, gpu_to_json(n, i));
	if (n->cuda_driver_version > 0)
		snprintf(cuda, sizeof(cuda), "%d.%d", n->cuda_driver_version / 1000,
			 (n->cuda_driver_version % 1000) / 10);
	o = json_pack("{s:s, s:s, s:s, s:i, s:o}", "driver_version", n->driver_version, "nvml_version", n->nvml_version,
		      "cuda_driver_version", cuda, "gpu_count", (int)n->n_gpus, "gpus", gpus);
	return o;
}
