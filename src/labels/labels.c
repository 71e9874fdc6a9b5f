/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GFD-compatible labels; see labels.h. The rules are GFD v0.20's internal/lm labelers, in our
 * words in docs/reference/gfd-labels.md (each function names the section it implements).
 * Like GFD, labelers run in a fixed order and a later one overwrites a key an earlier one wrote.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "labels/labels.h"

#define NV             "nvidia.com/"
#define GPU_RES        NV "gpu"
#define LABEL_PART_MAX 256

void label_set_free(struct label_set *s)
{
	if (!s)
		return;
	free_members(s->v, s->n, key, value);
	free(s);
}

struct builder {
	struct label_set *s;
	size_t cap;
	int r;
};

/* Set key (printf format) to value; a key already set is overwritten, as GFD's label merge does. */
static void add(struct builder *b, const char *value, const char *keyfmt, ...) _printf_(3, 4);
static void add(struct builder *b, const char *value, const char *keyfmt, ...)
{
	char *key = NULL, *val;
	va_list ap;
	int k;

	if (b->r < 0)
		return;
	va_start(ap, keyfmt);
	k = vasprintf(&key, keyfmt, ap);
	va_end(ap);
	if (k < 0) {
		b->r = -ENOMEM;
		return;
	}
	val = strdup(value);
	if (!val) {
		free(key);
		b->r = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < b->s->n; i++)
		if (streq(b->s->v[i].key, key)) {
			free(key);
			free(b->s->v[i].value);
			b->s->v[i].value = val;
			return;
		}
	if (b->s->n == b->cap) {
		struct label *v = grow_alloc(b->s->v, &b->cap, sizeof(*v), 64);

		if (!v) {
			free(key);
			free(val);
			b->r = -ENOMEM;
			return;
		}
		b->s->v = v;
	}
	b->s->v[b->s->n++] = (struct label){key, val};
}

static void addu(struct builder *b, unsigned long long value, const char *res, const char *suffix)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", value);
	add(b, buf, "%s.%s", res, suffix);
}

void labels_sanitize(const char *in, char *out, size_t size)
{
	size_t o = 0;
	bool gap = false;

	if (!size)
		return;
	for (const char *p = in; *p && o + 1 < size; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == ' ') {
			gap = o > 0; /* a run of blanks becomes one '-', none at either end */
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			continue;
		if (gap && o + 2 < size)
			out[o++] = '-';
		gap = false;
		out[o++] = (char)c;
	}
	out[o] = '\0';
}

/* Compute capability → family (gfd-labels.md "Architecture"). */
const char *labels_gpu_family(int major, int minor)
{
	static const struct {
		int major, minor_below; /* row matches major and minor < minor_below */
		const char *family;
	} families[] = {
	    {1, 100, "tesla"},        {2, 100, "fermi"},  {3, 100, "kepler"},     {5, 100, "maxwell"},
	    {6, 100, "pascal"},       {7, 5, "volta"},    {7, 100, "turing"},     {8, 9, "ampere"},
	    {8, 100, "ada-lovelace"}, {9, 100, "hopper"}, {10, 100, "blackwell"}, {12, 100, "blackwell"},
	    {13, 100, "rubin"},
	};
	for (size_t i = 0; i < ELEMENTSOF(families); i++)
		if (families[i].major == major && minor < families[i].minor_below)
			return families[i].family;
	return "undefined";
}

/* Driver and CUDA versions (gfd-labels.md "Versions"): "550.54.15" is X.Y[.Z]; CUDA 12040 → 12.4. */
static void version_labels(struct builder *b, const struct node *n)
{
	char major[32] = "", minor[32] = "", rev[32] = "", cmaj[16], cmin[16], cfull[32];
	const char *v = n->driver_version, *d1 = strchr(v, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;

	if (d1 && (!d2 || !strchr(d2 + 1, '.'))) {
		snprintf(major, sizeof(major), "%.*s", (int)(d1 - v), v);
		snprintf(minor, sizeof(minor), "%.*s", (int)((d2 ? d2 : d1 + 1 + strlen(d1 + 1)) - d1 - 1), d1 + 1);
		snprintf(rev, sizeof(rev), "%s", d2 ? d2 + 1 : "");
		add(b, v, NV "cuda.driver-version.full");
		add(b, major, NV "cuda.driver-version.major");
		add(b, minor, NV "cuda.driver-version.minor");
		add(b, rev, NV "cuda.driver-version.revision");
		add(b, major, NV "cuda.driver.major");
		add(b, minor, NV "cuda.driver.minor");
		add(b, rev, NV "cuda.driver.rev");
	}
	if (n->cuda_driver_version <= 0)
		return;
	snprintf(cmaj, sizeof(cmaj), "%d", n->cuda_driver_version / 1000);
	snprintf(cmin, sizeof(cmin), "%d", n->cuda_driver_version % 1000 / 10);
	snprintf(cfull, sizeof(cfull), "%s.%s", cmaj, cmin);
	add(b, cfull, NV "cuda.runtime-version.full");
	add(b, cmaj, NV "cuda.runtime-version.major");
	add(b, cmin, NV "cuda.runtime-version.minor");
	add(b, cmaj, NV "cuda.runtime.major");
	add(b, cmin, NV "cuda.runtime.minor");
}

/* The GPUs GFD sees: every NVML device we could read (a lost GPU is left out, gfd-labels.md). */
static bool usable(const struct node_gpu *g)
{
	return !g->lost && g->name[0];
}

/* ---- resource labels (gfd-labels.md "Resources") ---- */

/* A resource's labeler: its name and, unless nil in GFD (MIG-enabled GPUs), the sharing config. */
struct res {
	const char *name; /* "nvidia.com/gpu", "nvidia.com/mig-1g.5gb" */
	const struct nvconfig_sharing *sharing;
};

static const struct replica_rule *rule_for(const struct res *r)
{
	for (size_t i = 0; r->sharing && i < r->sharing->n_rules; i++)
		if (streq(r->sharing->rules[i].name, r->name))
			return &r->sharing->rules[i];
	return NULL;
}

static unsigned replicas_of(const struct res *r)
{
	const struct replica_rule *rule = rule_for(r);

	if (!r->sharing)
		return 0;
	return rule && rule->replicas > 0 ? rule->replicas : 1;
}

/* product, count, replicas, sharing-strategy: parts sanitised and joined by '-', -SHARED when shared and not renamed.
 */
static void base_labels(struct builder *b, const struct res *r, unsigned long long count, const char *const *parts,
			size_t n_parts)
{
	char product[3 * LABEL_PART_MAX] = "", part[LABEL_PART_MAX];
	unsigned replicas = replicas_of(r);
	size_t o = 0;

	assert(replicas <= 1 || r->sharing); /* replicas_of(): no sharing config, no replicas */

	for (size_t i = 0; i < n_parts; i++) {
		labels_sanitize(parts[i], part, sizeof(part));
		if (part[0])
			o += (size_t)snprintf(product + o, o < sizeof(product) ? sizeof(product) - o : 0, "%s%s",
					      o ? "-" : "", part);
	}
	/* renamed: only renameByDefault survives GFD's DisableResourceNamingInConfig */
	if (product[0] && replicas > 1 && !r->sharing->rename_by_default)
		snprintf(product + MIN(o, sizeof(product) - 1), sizeof(product) - MIN(o, sizeof(product) - 1),
			 "-SHARED");
	add(b, product, "%s.product", r->name);
	addu(b, count, r->name, "count");
	addu(b, replicas, r->name, "replicas");
	add(b, sharing_strategy_name(replicas > 1 ? r->sharing->strategy : SHARING_NONE), "%s.sharing-strategy",
	    r->name);
}

/* A whole GPU model under nvidia.com/gpu: base labels, memory when known, architecture when CC > 0. */
static void gpu_resource_labels(struct builder *b, const struct node_gpu *g, unsigned long long count,
				const struct nvconfig_sharing *sharing)
{
	struct res r = {GPU_RES, sharing};
	const char *parts[] = {g->name};

	base_labels(b, &r, count, parts, 1);
	if (g->memory_total / 1048576)
		addu(b, g->memory_total / 1048576, GPU_RES, "memory");
	if (g->cc_major > 0) {
		add(b, labels_gpu_family(g->cc_major, g->cc_minor), GPU_RES ".family");
		addu(b, (unsigned)g->cc_major, GPU_RES, "compute.major");
		addu(b, (unsigned)g->cc_minor, GPU_RES, "compute.minor");
	}
}

/* GFD's count of a model: every usable GPU of that name, in MIG mode or not. */
static size_t name_count(const struct node *n, const char *name)
{
	size_t c = 0;

	for (size_t i = 0; i < n->n_gpus; i++)
		c += usable(&n->gpus[i]) && streq(n->gpus[i].name, name);
	return c;
}

/* gpus[i] is the first usable GPU of its name among those with its MIG mode. */
static bool first_of_name(const struct node *n, size_t i, bool mig_enabled)
{
	for (size_t k = 0; k < i; k++)
		if (usable(&n->gpus[k]) && n->gpus[k].mig_enabled == mig_enabled &&
		    streq(n->gpus[k].name, n->gpus[i].name))
			return false;
	return true;
}

/* GFD keeps the last device of each name (map assignment); its per-name labelers run MIG-enabled first. */
static const struct node_gpu *last_of_name(const struct node *n, size_t i, bool mig_enabled)
{
	const struct node_gpu *last = &n->gpus[i];

	for (size_t k = i + 1; k < n->n_gpus; k++)
		if (usable(&n->gpus[k]) && n->gpus[k].mig_enabled == mig_enabled &&
		    streq(n->gpus[k].name, n->gpus[i].name))
			last = &n->gpus[k];
	return last;
}

/*
 * nvidia.com/gpu.* of whole GPUs: one labeler per model, MIG-enabled models without sharing, then
 * the others with it; the count is every GPU of that model. GFD runs the models of one group in Go
 * map order (random); we run them from the last GPU index to the first, so the lowest-index model wins.
 */
static void full_gpu_labels(struct builder *b, const struct node *n, const struct labels_options *o)
{
	for (int pass = 0; pass < 2; pass++) {
		bool mig_enabled = pass == 0;

		for (size_t i = n->n_gpus; i-- > 0;) {
			const struct node_gpu *g = &n->gpus[i];

			if (!usable(g) || g->mig_enabled != mig_enabled || !first_of_name(n, i, mig_enabled))
				continue;
			gpu_resource_labels(b, last_of_name(n, i, mig_enabled), name_count(n, g->name),
					    mig_enabled ? NULL : &o->sharing);
		}
	}
}

/* GFD's MIG device name: the profile with '+' turned into '.' ("1g.10gb+me" -> "1g.10gb.me"). */
static void mig_name(const struct node_mig *m, char *out, size_t size)
{
	snprintf(out, size, "%s", m->profile);
	for (char *p = out; *p; p++)
		if (*p == '+')
			*p = '.';
}

/* One MIG resource: base labels (model-MIG-profile) and the MIG device's attributes. */
static void mig_resource_labels(struct builder *b, const struct res *r, const struct node_gpu *parent,
				const struct node_mig *m, unsigned long long count)
{
	char name[40];
	const char *parts[] = {parent->name, "MIG", name};
	static const char *const engines[] = {"engines.copy", "engines.decoder", "engines.encoder", "engines.jpeg",
					      "engines.ofa"};
	const unsigned engine_counts[] = {m->engines_copy, m->engines_decoder, m->engines_encoder, m->engines_jpeg,
					  m->engines_ofa};

	mig_name(m, name, sizeof(name));
	base_labels(b, r, count, parts, ELEMENTSOF(parts));
	addu(b, m->memory_mb, r->name, "memory");
	addu(b, m->multiprocessors, r->name, "multiprocessors");
	addu(b, m->gi_slices, r->name, "slices.gi");
	addu(b, m->ci_slices, r->name, "slices.ci");
	for (size_t i = 0; i < ELEMENTSOF(engines); i++)
		addu(b, engine_counts[i], r->name, engines[i]);
}

/* The MIG devices of one name: the first one (and its parent) and how many. */
static size_t mig_group(const struct node *n, const char *want, const struct node_gpu **ret_parent,
			const struct node_mig **ret_first)
{
	size_t count = 0;
	char name[40];

	for (size_t i = 0; i < n->n_gpus; i++)
		for (size_t j = 0; usable(&n->gpus[i]) && j < n->gpus[i].n_migs; j++) {
			mig_name(&n->gpus[i].migs[j], name, sizeof(name));
			if (!streq(name, want))
				continue;
			if (!count++) {
				*ret_parent = &n->gpus[i];
				*ret_first = &n->gpus[i].migs[j];
			}
		}
	return count;
}

/* Mixed: one nvidia.com/mig-<name>.* block per MIG device name (GPUs in MIG mode with no MIG device add nothing). */
static void mixed_labels(struct builder *b, const struct node *n, const struct labels_options *o)
{
	for (size_t i = 0; i < n->n_gpus; i++)
		for (size_t j = 0; usable(&n->gpus[i]) && j < n->gpus[i].n_migs; j++) {
			const struct node_gpu *parent = NULL;
			const struct node_mig *first = NULL;
			char name[40], res[64];
			size_t count;

			mig_name(&n->gpus[i].migs[j], name, sizeof(name));
			count = mig_group(n, name, &parent, &first);
			assert(count > 0 && parent && first); /* the device itself is in its group */
			if (first != &n->gpus[i].migs[j])
				continue; /* labelled at its first occurrence */
			snprintf(res, sizeof(res), NV "mig-%s", name);
			mig_resource_labels(b, &(struct res){res, &o->sharing}, parent, first, count);
		}
}

/* GFD's -MIG-INVALID block: the first MIG-enabled GPU's model, everything else zero and no strategy. */
static void single_invalid(struct builder *b, const struct node_gpu *first_enabled)
{
	char product[LABEL_PART_MAX + 16];

	labels_sanitize(first_enabled->name, product, sizeof(product) - 12);
	if (product[0])
		strcat(product, "-MIG-INVALID");
	else
		snprintf(product, sizeof(product), "MIG-INVALID");
	add(b, product, GPU_RES ".product");
	addu(b, 0, GPU_RES, "count");
	addu(b, 0, GPU_RES, "replicas");
	add(b, "", GPU_RES ".sharing-strategy");
	addu(b, 0, GPU_RES, "memory");
}

/*
 * Single: valid when every GPU is in MIG mode, none of them empty, and all MIG devices have one
 * name; then nvidia.com/gpu.* describes the MIG devices. No GPU in MIG mode: nothing to add.
 */
static void single_labels(struct builder *b, const struct node *n, const struct labels_options *o)
{
	const struct node_gpu *first_enabled = NULL, *parent = NULL;
	const struct node_mig *first = NULL;
	bool empty = false, disabled = false, mixed = false;
	char name[40] = "", other[40];
	size_t count = 0;

	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct node_gpu *g = &n->gpus[i];

		if (!usable(g))
			continue;
		if (!g->mig_enabled) {
			disabled = true;
			continue;
		}
		first_enabled = first_enabled ? first_enabled : g;
		empty |= g->n_migs == 0;
		for (size_t j = 0; j < g->n_migs; j++) {
			mig_name(&g->migs[j], other, sizeof(other));
			if (!first) {
				first = &g->migs[j];
				parent = g;
				snprintf(name, sizeof(name), "%s", other);
			}
			mixed |= !streq(name, other);
			count++;
		}
	}
	if (!first_enabled)
		return;
	if (empty || disabled || mixed) {
		single_invalid(b, first_enabled);
		return;
	}
	mig_resource_labels(b, &(struct res){GPU_RES, &o->sharing}, parent, first, count);
}

/* ---- node-wide labels ---- */

/* gpu.clique: one cluster UUID and one clique id over the fabric-attached GPUs (gfd-labels.md "Clique"). */
static bool fabric_attached(const struct node_gpu *g)
{
	static const unsigned char zero[16];

	return g->fabric_known && g->fabric_state == NVML_GPU_FABRIC_STATE_COMPLETED &&
	       memcmp(g->fabric_cluster_uuid, zero, sizeof(zero)) != 0 && g->fabric_status == NVML_SUCCESS;
}

static void clique_label(struct builder *b, const struct node *n)
{
	const struct node_gpu *first = NULL;
	char value[64];

	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct node_gpu *g = &n->gpus[i];

		if (!usable(g) || !fabric_attached(g))
			continue;
		if (!first)
			first = g;
		else if (memcmp(first->fabric_cluster_uuid, g->fabric_cluster_uuid, 16) != 0 ||
			 first->fabric_clique != g->fabric_clique)
			return; /* GFD: non-unique cluster UUIDs or clique ids, no label */
	}
	if (!first)
		return;
	const unsigned char *u = first->fabric_cluster_uuid;
	snprintf(value, sizeof(value), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x.%u", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15],
		 first->fabric_clique);
	add(b, value, NV "gpu.clique");
}

static void machine_label(struct builder *b, const struct labels_host *h)
{
	char raw[512], machine[512];
	const char *p = h && h->machine ? h->machine : "unknown";
	size_t len;

	while (isspace((unsigned char)*p))
		p++;
	snprintf(raw, sizeof(raw), "%s", p);
	for (len = strlen(raw); len && isspace((unsigned char)raw[len - 1]); len--)
		raw[len - 1] = '\0';
	labels_sanitize(raw, machine, sizeof(machine));
	add(b, machine, NV "gpu.machine");
}

/* The field guide's custom label: "a100" from "NVIDIA A100-SXM4-40GB", "t4" from "Tesla T4". */
static void gpu_type_auto(const char *name, char *out, size_t size)
{
	const char *p = name;
	static const char *const vendor_words[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "};
	size_t o = 0;

	for (size_t i = 0; i < ELEMENTSOF(vendor_words); i++)
		if (strncmp(p, vendor_words[i], strlen(vendor_words[i])) == 0)
			p += strlen(vendor_words[i]);
	for (; *p && *p != ' ' && *p != '-' && o + 1 < size; p++)
		out[o++] = (char)tolower((unsigned char)*p);
	out[o] = '\0';
}

static void custom_labels(struct builder *b, const struct node *n, const struct labels_options *o)
{
	const struct node_gpu *g0 = NULL;
	bool mig_on = false;

	for (size_t i = 0; i < n->n_gpus; i++) {
		if (usable(&n->gpus[i]) && !g0)
			g0 = &n->gpus[i];
		mig_on |= n->gpus[i].mig_enabled;
	}
	if (g0 && o->gpu_type && o->gpu_type[0]) {
		char type[64];

		if (streq(o->gpu_type, "auto"))
			gpu_type_auto(g0->name, type, sizeof(type));
		else
			labels_sanitize(o->gpu_type, type, sizeof(type));
		add(b, type, "gpu-type");
	}
	if (o->gpu_mig)
		add(b, mig_on ? "enabled" : "disabled", "gpu-mig");
}

/* Everything GFD's device labeler writes when NVML shows at least one GPU, in its merge order. */
static int device_labels(struct builder *b, const struct node *n, const struct labels_options *o,
			 const struct labels_host *h, struct gerr *err)
{
	bool mig_capable = false, mig_enabled = false;

	for (size_t i = 0; i < n->n_gpus; i++)
		if (usable(&n->gpus[i])) {
			mig_capable |= n->gpus[i].mig_capable;
			mig_enabled |= n->gpus[i].mig_enabled;
		}
	if (o->sharing.strategy == SHARING_MPS && mig_enabled)
		return gerr_set(
		    err, EINVAL,
		    "MPS sharing is not supported with MIG: a GPU of this node is in MIG mode; GFD writes no "
		    "labels then. Disable MIG or use time-slicing (docs/reference/gfd-labels.md)");
	machine_label(b, h);
	version_labels(b, n);
	add(b, mig_capable ? "true" : "false", NV "mig.capable");
	add(b, o->sharing.strategy == SHARING_MPS ? "true" : "false", NV "mps.capable");
	full_gpu_labels(b, n, o);
	if (o->mig_strategy != MIG_STRATEGY_NONE)
		add(b, mig_strategy_name(o->mig_strategy), NV "mig.strategy");
	if (o->mig_strategy == MIG_STRATEGY_SINGLE)
		single_labels(b, n, o);
	else if (o->mig_strategy == MIG_STRATEGY_MIXED)
		mixed_labels(b, n, o);
	add(b, h && h->gpu_mode[0] ? h->gpu_mode : "unknown", NV "gpu.mode");
	clique_label(b, n);
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

int labels_build(const struct node *n, const struct labels_options *o, const struct labels_host *h,
		 struct label_set **ret, struct gerr *err)
{
	struct builder b = {.s = calloc(1, sizeof(struct label_set))};
	size_t usable_gpus = 0;
	int r;

	if (!b.s)
		return gerr_set(err, ENOMEM, "labels: out of memory");
	if (o->timestamp) {
		char ts[32];

		snprintf(ts, sizeof(ts), "%lld", (long long)o->now);
		add(&b, ts, NV "gfd.timestamp");
	}
	for (size_t i = 0; i < n->n_gpus; i++)
		usable_gpus += usable(&n->gpus[i]);
	/* GFD: no GPU, no device labels (not even the driver version), only the vGPU ones */
	if (usable_gpus && (r = device_labels(&b, n, o, h, err)) < 0) {
		label_set_free(b.s);
		return r;
	}
	if (h && h->vgpu_known) {
		add(&b, h->n_vgpu ? "true" : "false", NV "vgpu.present");
		/* a vGPU found through NVML (config space not readable in full): the host driver is not known */
		if (h->n_vgpu && !h->vgpu_host_unknown) {
			add(&b, h->vgpu_host_driver_version, NV "vgpu.host-driver-version");
			add(&b, h->vgpu_host_driver_branch, NV "vgpu.host-driver-branch");
		}
	}
	custom_labels(&b, n, o);
	if (b.r < 0) {
		label_set_free(b.s);
		return gerr_set(err, -b.r, "labels: out of memory");
	}
	if (b.s->n > 1) /* v is NULL when there is no label; qsort() wants an array */
		qsort(b.s->v, b.s->n, sizeof(*b.s->v), label_cmp);
	*ret = b.s;
	return 0;
}

const char *labels_get(const struct label_set *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->v[i].key, key))
			return s->v[i].value;
	return NULL;
}

int labels_format(const struct label_set *s, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	/*
	 * Only key=value lines, as GFD writes them: NFD before v0.14 has no comments in feature files
	 * and would take a '#' line for a label (docs/reference/device-plugin.md §9.1).
	 */
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, "%s=%s\n", s->v[i].key, s->v[i].value);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}
