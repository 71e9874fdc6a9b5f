/* SPDX-License-Identifier: Apache-2.0 */
/* GFD-compatible labels; see labels.h. Each rule cites docs/reference/device-plugin.md §9 (GFD). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "labels/labels.h"

#define NV "nvidia.com/"

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

static void add(struct builder *b, const char *value, const char *keyfmt, ...) _printf_(3, 4);
static void add(struct builder *b, const char *value, const char *keyfmt, ...)
{
	if (b->r < 0)
		return;
	if (b->s->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 32;
		struct label *v = realloc(b->s->v, ncap * sizeof(*v));
		if (!v) {
			b->r = -ENOMEM;
			return;
		}
		b->s->v = v;
		b->cap = ncap;
	}
	va_list ap;
	va_start(ap, keyfmt);
	char *key = NULL;
	int k = vasprintf(&key, keyfmt, ap);
	va_end(ap);
	char *val = strdup(value);
	if (k < 0 || !val) {
		free(k < 0 ? NULL : key);
		free(val);
		b->r = -ENOMEM;
		return;
	}
	b->s->v[b->s->n++] = (struct label){key, val};
}

static void addu(struct builder *b, unsigned long long value, const char *key_prefix, const char *key)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%llu", value);
	add(b, buf, "%s%s", key_prefix, key);
}

void labels_sanitize(const char *in, char *out, size_t size)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 1 < size; p++) {
		unsigned char c = (unsigned char)*p;
		if (isalnum(c) || c == '-' || c == '_' || c == '.')
			out[o++] = (char)c;
		else if (c == ' ')
			out[o++] = '-';
	}
	if (size)
		out[o] = '\0';
}

/* Compute capability → family (GFD internal/lm/resource.go getArchFamily; device-plugin.md §9). */
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

/* nvidia.com/cuda.driver-version.* and the deprecated cuda.driver.* from "550.54.15". */
static void driver_labels(struct builder *b, const char *version)
{
	char major[16] = "", minor[16] = "", rev[16] = "";
	if (!version[0] || sscanf(version, "%15[0-9].%15[0-9].%15[0-9]", major, minor, rev) < 2)
		return;
	add(b, version, NV "cuda.driver-version.full");
	add(b, major, NV "cuda.driver-version.major");
	add(b, minor, NV "cuda.driver-version.minor");
	add(b, rev, NV "cuda.driver-version.revision");
	add(b, major, NV "cuda.driver.major");
	add(b, minor, NV "cuda.driver.minor");
	add(b, rev, NV "cuda.driver.rev");
}

/* nvmlSystemGetCudaDriverVersion 12040 → 12, 4, "12.4" (runtime-version is GFD's name for it). */
static void cuda_labels(struct builder *b, int v)
{
	if (v <= 0)
		return;
	char major[16], minor[16], full[32];
	snprintf(major, sizeof(major), "%d", v / 1000);
	snprintf(minor, sizeof(minor), "%d", (v % 1000) / 10);
	snprintf(full, sizeof(full), "%s.%s", major, minor);
	add(b, full, NV "cuda.runtime-version.full");
	add(b, major, NV "cuda.runtime-version.major");
	add(b, minor, NV "cuda.runtime-version.minor");
	add(b, major, NV "cuda.runtime.major");
	add(b, minor, NV "cuda.runtime.minor");
}

static bool shared(const struct labels_options *o)
{
	return o->sharing != SHARING_NONE && o->replicas > 1;
}

/* count / replicas / sharing-strategy / product under one resource prefix (GFD resource labeler). */
static void resource_labels(struct builder *b, const char *prefix, const char *product, unsigned long long count,
			    unsigned long long memory_mib, const struct labels_options *o)
{
	char prod[256];
	snprintf(prod, sizeof(prod), "%s%s", product, shared(o) && !o->rename_by_default ? "-SHARED" : "");
	add(b, prod, "%sproduct", prefix);
	addu(b, count, prefix, "count");
	addu(b, shared(o) ? o->replicas : 1, prefix, "replicas");
	add(b, sharing_strategy_name(shared(o) ? o->sharing : SHARING_NONE), "%ssharing-strategy", prefix);
	addu(b, memory_mib, prefix, "memory");
}

static void gpu_arch_labels(struct builder *b, const char *prefix, const struct node_gpu *g)
{
	add(b, labels_gpu_family(g->cc_major, g->cc_minor), "%sfamily", prefix);
	if (g->cc_major >= 0) {
		addu(b, (unsigned)g->cc_major, prefix, "compute.major");
		addu(b, (unsigned)g->cc_minor, prefix, "compute.minor");
	}
}

static void mig_instance_labels(struct builder *b, const char *prefix, const char *product, const struct node_mig *m,
				unsigned long long count, const struct labels_options *o)
{
	char prod[256];
	snprintf(prod, sizeof(prod), "%s-MIG-%s", product, m->profile);
	resource_labels(b, prefix, prod, count, m->memory_mb, o);
	addu(b, m->gi_slices, prefix, "slices.gi");
	addu(b, m->ci_slices, prefix, "slices.ci");
}

/*
 * MIG single (device-plugin.md §6): every MIG device identical, every MIG-enabled GPU has one,
 * no mix of MIG and non-MIG GPUs. Returns the first MIG device, or NULL when the layout is invalid;
 * *ret_count gets the number of MIG devices. *ret_any is false when no GPU has MIG enabled.
 */
static const struct node_mig *single_layout(const struct node *n, size_t *ret_count, bool *ret_any,
					    const struct node_gpu **ret_parent)
{
	const struct node_mig *first = NULL;
	size_t count = 0, mig_gpus = 0;
	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct node_gpu *g = &n->gpus[i];
		if (!g->mig_enabled)
			continue;
		mig_gpus++;
		if (!g->n_migs)
			return *ret_any = true, NULL;
		for (size_t j = 0; j < g->n_migs; j++) {
			if (!first) {
				first = &g->migs[j];
				*ret_parent = g;
			} else if (!streq(first->profile, g->migs[j].profile))
				return *ret_any = true, NULL;
			count++;
		}
	}
	*ret_any = mig_gpus > 0;
	*ret_count = count;
	return mig_gpus && mig_gpus != n->n_gpus ? NULL : first;
}

/* Mixed: one block of labels per MIG profile present (nvidia.com/mig-<profile>.*). */
static void mixed_labels(struct builder *b, const struct node *n, const struct labels_options *o)
{
	for (size_t i = 0; i < n->n_gpus; i++)
		for (size_t j = 0; j < n->gpus[i].n_migs; j++) {
			const struct node_mig *m = &n->gpus[i].migs[j];
			bool seen = false;
			size_t count = 0;
			for (size_t k = 0; k < n->n_gpus; k++)
				for (size_t l = 0; l < n->gpus[k].n_migs; l++) {
					const struct node_mig *x = &n->gpus[k].migs[l];
					if (streq(x->profile, m->profile)) {
						seen |= k < i || (k == i && l < j);
						count++;
					}
				}
			if (seen)
				continue; /* profile already labelled */
			char prefix[96], product[256];
			snprintf(prefix, sizeof(prefix), NV "mig-%s.", m->profile);
			labels_sanitize(n->gpus[i].name, product, sizeof(product)); /* the parent's model */
			mig_instance_labels(b, prefix, product, m, count, o);
		}
}

/* The field guide's custom label: "a100" from "NVIDIA A100-SXM4-40GB", "t4" from "Tesla T4". */
static void gpu_type_auto(const char *name, char *out, size_t size)
{
	const char *p = name;
	static const char *const vendor_words[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "};
	for (size_t i = 0; i < ELEMENTSOF(vendor_words); i++)
		if (strncmp(p, vendor_words[i], strlen(vendor_words[i])) == 0)
			p += strlen(vendor_words[i]);
	size_t o = 0;
	for (; *p && *p != ' ' && *p != '-' && o + 1 < size; p++)
		out[o++] = (char)tolower((unsigned char)*p);
	out[o] = '\0';
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

int labels_build(const struct node *n, const struct labels_options *o, struct label_set **ret, struct gerr *err)
{
	struct builder b = {.s = calloc(1, sizeof(struct label_set))};
	if (!b.s)
		return gerr_set(err, ENOMEM, "labels: out of memory");
	if (o->mig_strategy == MIG_STRATEGY_SINGLE && o->sharing == SHARING_MPS && o->replicas > 1) {
		label_set_free(b.s);
		return gerr_set(err, EINVAL,
				"labels: MPS sharing is not supported with MIG devices (device-plugin.md §5)");
	}
	if (o->timestamp) {
		char ts[32];
		snprintf(ts, sizeof(ts), "%lld", (long long)o->now);
		add(&b, ts, NV "gfd.timestamp");
	}
	driver_labels(&b, n->driver_version);
	cuda_labels(&b, n->cuda_driver_version);
	if (o->machine && o->machine[0]) {
		char machine[256];
		labels_sanitize(o->machine, machine, sizeof(machine));
		add(&b, machine, NV "gpu.machine");
	}

	/* the GPU whose model names nvidia.com/gpu: the first one advertised whole (GFD labels one model) */
	const struct node_gpu *g0 = n->n_gpus ? &n->gpus[0] : NULL;
	for (size_t i = 0; o->mig_strategy == MIG_STRATEGY_MIXED && i < n->n_gpus; i++)
		if (!n->gpus[i].mig_enabled) {
			g0 = &n->gpus[i];
			break;
		}
	bool mig_capable = false, mig_on = false;
	for (size_t i = 0; i < n->n_gpus; i++) {
		mig_capable |= n->gpus[i].mig_capable;
		mig_on |= n->gpus[i].mig_enabled;
	}
	if (g0) {
		char product[256];
		const char *res = o->rename_by_default && shared(o) ? NV "gpu.shared." : NV "gpu.";
		labels_sanitize(g0->name, product, sizeof(product));
		add(&b, mig_capable ? "true" : "false", NV "mig.capable");
		add(&b, o->sharing == SHARING_MPS && !mig_on ? "true" : "false", NV "mps.capable");
		gpu_arch_labels(&b, res, g0);

		size_t count = 0;
		bool any = false;
		const struct node_gpu *parent = g0;
		const struct node_mig *single =
		    o->mig_strategy == MIG_STRATEGY_SINGLE ? single_layout(n, &count, &any, &parent) : NULL;
		if (o->mig_strategy != MIG_STRATEGY_NONE)
			add(&b, o->mig_strategy == MIG_STRATEGY_SINGLE ? "single" : "mixed", NV "mig.strategy");
		if (o->mig_strategy == MIG_STRATEGY_SINGLE && any && !single) {
			/* GFD: an unusable single layout is announced, not hidden (device-plugin.md §9) */
			char bad[300];
			snprintf(bad, sizeof(bad), "%s-MIG-INVALID", product);
			add(&b, bad, "%sproduct", res);
			addu(&b, 0, res, "count");
			addu(&b, 0, res, "replicas");
			add(&b, "none", "%ssharing-strategy", res);
			addu(&b, 0, res, "memory");
		} else if (single) {
			labels_sanitize(parent->name, product, sizeof(product));
			mig_instance_labels(&b, res, product, single, count, o);
		} else {
			/* mixed: MIG-enabled GPUs are advertised per profile, only the others as nvidia.com/gpu */
			size_t whole = 0;
			for (size_t i = 0; i < n->n_gpus; i++)
				whole += o->mig_strategy != MIG_STRATEGY_MIXED || !n->gpus[i].mig_enabled;
			resource_labels(&b, res, product, whole, g0->memory_total / 1048576, o);
		}
		if (o->mig_strategy == MIG_STRATEGY_MIXED)
			mixed_labels(&b, n, o);
		if (o->gpu_type && o->gpu_type[0]) {
			char type[64];
			if (streq(o->gpu_type, "auto"))
				gpu_type_auto(g0->name, type, sizeof(type));
			else
				labels_sanitize(o->gpu_type, type, sizeof(type));
			add(&b, type, "gpu-type");
		}
	}
	if (o->gpu_mig)
		add(&b, mig_on ? "enabled" : "disabled", "gpu-mig");
	if (b.r < 0) {
		label_set_free(b.s);
		return gerr_set(err, -b.r, "labels: out of memory");
	}
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
	/* NFD reads '#' lines as comments (only '# +' starts a directive) */
	fputs("# gpulet labels: GPU Feature Discovery compatible node labels\n", f);
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, "%s=%s\n", s->v[i].key, s->v[i].value);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}
