/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Preferred allocation. Facts: docs/reference/device-plugin.md §7 (go-gpuallocator's best-effort policy
 * and upstream's greedy distributed/packed policy). Our own algorithm: for whole GPUs an exact search
 * over all subsets of the right size (when there are few enough), maximizing the summed pair score,
 * ties broken by how well the GPUs left over stay connected (what upstream's partitioning aims at).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/alloc.h"

#define EXACT_MAX_SUBSETS 100000 /* C(16,8) = 12870, C(20,10) = 184756: beyond that, greedy */
#define WHOLE_MAX         64     /* candidates tracked in a 64-bit mask */

/* PCIe path scores by NVML common-ancestor level (go-gpuallocator's link scores, §7). */
static const struct {
	int level;
	int score;
} pcie_scores[] = {
    {NVML_TOPOLOGY_INTERNAL, 60},   /* same board */
    {NVML_TOPOLOGY_SINGLE, 50},     /* one PCIe switch */
    {NVML_TOPOLOGY_MULTIPLE, 40},   /* several PCIe switches */
    {NVML_TOPOLOGY_HOSTBRIDGE, 30}, /* same host bridge */
    {NVML_TOPOLOGY_NODE, 20},       /* same NUMA node */
    {NVML_TOPOLOGY_SYSTEM, 10},     /* across CPUs */
};
#define NVLINK_SCORE 100 /* per link */

int alloc_pair_score(const struct node *n, unsigned a, unsigned b)
{
	int score = 0;

	if (a >= n->n_gpus || b >= n->n_gpus || a == b)
		return 0;
	if (n->nvlinks)
		score += NVLINK_SCORE * (int)n->nvlinks[a * n->n_gpus + b];
	if (n->pcie_level)
		for (size_t i = 0; i < ELEMENTSOF(pcie_scores); i++)
			if (pcie_scores[i].level == n->pcie_level[a * n->n_gpus + b])
				score += pcie_scores[i].score;
	return score;
}

/* ---- ID lookup: an open-addressing table over the resource's device IDs, built per call ---- */

struct id_index {
	const struct resource *r;
	uint32_t *slot; /* device index + 1, 0 = empty */
	size_t mask;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int index_build(struct id_index *ix, const struct resource *r)
{
	size_t cap = 16;

	while (cap < r->n_devices * 2)
		cap *= 2;
	ix->r = r;
	ix->mask = cap - 1;
	ix->slot = calloc(cap, sizeof(*ix->slot));
	if (!ix->slot)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_devices; i++) {
		size_t h = hash_str(r->devices[i].id) & ix->mask;
		while (ix->slot[h])
			h = (h + 1) & ix->mask;
		ix->slot[h] = (uint32_t)i + 1;
	}
	return 0;
}

static long index_find(const struct id_index *ix, const char *id)
{
	for (size_t h = hash_str(id) & ix->mask; ix->slot[h]; h = (h + 1) & ix->mask)
		if (streq(ix->r->devices[ix->slot[h] - 1].id, id))
			return (long)ix->slot[h] - 1;
	return -1;
}

/* The request resolved to device indexes: must first, then the other candidates, deduplicated. */
struct request {
	const struct node *n;
	const struct resource *r;
	long *must;
	size_t n_must;
	long *cand; /* available minus must */
	size_t n_cand;
	size_t size;
	long *out; /* size entries */
	size_t n_out;
};

static bool usable(const struct request *q, long d)
{
	const struct rdevice *dev = &q->r->devices[d];
	return dev->healthy && !(dev->gpu < q->n->n_gpus && q->n->gpus[dev->gpu].lost);
}

/* ---- whole GPUs: topology ---- */

static void whole_exact(struct request *q, const long *c, size_t nc, size_t k, int score[][WHOLE_MAX], const int *w)
{
	int64_t best = INT64_MIN, best_rest = INT64_MIN;
	uint64_t best_set = 0;
	int64_t total = 0;
	int rowsum[WHOLE_MAX] = {0};

	for (size_t i = 0; i < nc; i++)
		for (size_t j = 0; j < nc; j++)
			rowsum[i] += j != i ? score[i][j] : 0;
	for (size_t i = 0; i < nc; i++)
		total += rowsum[i];
	total /= 2;

	if (k == 0) {
		best_set = 0;
	} else {
		/* Gosper's hack: every nc-bit mask with k bits set, in increasing order */
		uint64_t set = (k == 64) ? ~0ULL : ((1ULL << k) - 1);
		uint64_t limit = nc == 64 ? 0 : (1ULL << nc);
		for (;;) {
			int64_t s = 0, rows = 0, pairs = 0;
			for (uint64_t a = set; a; a &= a - 1) {
				int i = __builtin_ctzll(a);
				s += w[i];
				rows += rowsum[i];
				for (uint64_t b = a & (a - 1); b; b &= b - 1)
					pairs += score[i][__builtin_ctzll(b)];
			}
			s += pairs;
			int64_t rest = total - rows + pairs; /* pairs left among the GPUs not taken */
			if (s > best || (s == best && rest > best_rest)) {
				best = s;
				best_rest = rest;
				best_set = set;
			}
			uint64_t lo = set & -set, hi = set + lo;
			if (hi == 0 || (limit && hi >= limit))
				break;
			set = (((hi ^ set) >> 2) / lo) | hi;
			if (limit && set >= limit)
				break;
		}
	}
	for (uint64_t a = best_set; a; a &= a - 1)
		q->out[q->n_out++] = c[__builtin_ctzll(a)];
}

static void whole_greedy(struct request *q, const long *c, size_t nc, size_t k, int score[][WHOLE_MAX], const int *w)
{
	int gain[WHOLE_MAX];
	bool taken[WHOLE_MAX] = {0};

	memcpy(gain, w, nc * sizeof(*gain));
	for (size_t step = 0; step < k; step++) {
		size_t best = nc;
		for (size_t i = 0; i < nc; i++)
			if (!taken[i] && (best == nc || gain[i] > gain[best]))
				best = i;
		taken[best] = true;
		q->out[q->n_out++] = c[best];
		for (size_t i = 0; i < nc; i++)
			gain[i] += score[i][best];
	}
}

static size_t binom_capped(size_t n, size_t k, size_t cap)
{
	size_t v = 1;
	if (k > n)
		return 0;
	k = MIN(k, n - k);
	for (size_t i = 1; i <= k; i++) {
		v = v * (n - k + i) / i;
		if (v > cap)
			return cap + 1;
	}
	return v;
}

static int cmp_gpu(const void *a, const void *b, void *r)
{
	const struct resource *res = r;
	unsigned ga = res->devices[*(const long *)a].gpu, gb = res->devices[*(const long *)b].gpu;
	return ga < gb ? -1 : ga > gb;
}

static int alloc_whole(struct request *q)
{
	long c[WHOLE_MAX];
	size_t nc = 0, k = q->size - q->n_must;
	int w[WHOLE_MAX] = {0};
	int(*sc)[WHOLE_MAX]; /* pair scores among candidates; 16 KiB, so on the heap */

	/* healthy first; fall back to everything kubelet offered only when short */
	for (int pass = 0; pass < 2 && nc < k; pass++)
		for (size_t i = 0; i < q->n_cand && nc < WHOLE_MAX; i++)
			if (usable(q, q->cand[i]) == (pass == 0))
				c[nc++] = q->cand[i];
	if (nc < k)
		return -ENOSPC; /* more candidates than WHOLE_MAX and mostly unusable: greedy path instead */

	sc = calloc(WHOLE_MAX, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++) {
		unsigned gi = q->r->devices[c[i]].gpu;
		for (size_t j = 0; j < nc; j++)
			sc[i][j] = alloc_pair_score(q->n, gi, q->r->devices[c[j]].gpu);
		for (size_t m = 0; m < q->n_must; m++)
			w[i] += alloc_pair_score(q->n, gi, q->r->devices[q->must[m]].gpu);
	}
	for (size_t m = 0; m < q->n_must; m++)
		q->out[q->n_out++] = q->must[m];
	if (binom_capped(nc, k, EXACT_MAX_SUBSETS) <= EXACT_MAX_SUBSETS)
		whole_exact(q, c, nc, k, sc, w);
	else
		whole_greedy(q, c, nc, k, sc, w);
	free(sc);
	/* must first as kubelet sent them, then the chosen GPUs in index order */
	qsort_r(q->out + q->n_must, q->n_out - q->n_must, sizeof(*q->out), cmp_gpu, (void *)q->r);
	return 0;
}

/* ---- replicas and MIG: greedy over the physical (or MIG) device behind each ID ---- */

static int alloc_greedy(struct request *q, enum replica_policy policy)
{
	/* group = the backing device: (gpu, mig) -> gpu * (max_mig + 2) + mig + 1 */
	size_t stride = 1, n_groups;
	int *allocated, *picked;
	bool *used;

	for (size_t i = 0; i < q->r->n_devices; i++)
		stride = MAX(stride, (size_t)(q->r->devices[i].mig + 2));
	n_groups = (q->n->n_gpus + 1) * stride;
	allocated = calloc(n_groups, sizeof(*allocated));
	picked = calloc(n_groups, sizeof(*picked));
	used = calloc(q->n_cand + 1, sizeof(*used));
	if (!allocated || !picked || !used) {
		free(allocated), free(picked), free(used);
		return -ENOMEM;
	}
#define GROUP(d) (MIN((size_t)q->r->devices[d].gpu, q->n->n_gpus) * stride + (size_t)(q->r->devices[d].mig + 1))
	/* allocated = total - available (the replicas kubelet already handed out), as upstream */
	for (size_t i = 0; i < q->r->n_devices; i++)
		allocated[GROUP((long)i)]++;
	for (size_t i = 0; i < q->n_cand; i++)
		allocated[GROUP(q->cand[i])]--;
	for (size_t m = 0; m < q->n_must; m++) {
		allocated[GROUP(q->must[m])]--;
		q->out[q->n_out++] = q->must[m];
		picked[GROUP(q->must[m])]++;
		allocated[GROUP(q->must[m])]++;
	}
	for (int pass = 0; pass < 2; pass++)
		while (q->n_out < q->size) {
			long best = -1;
			size_t best_i = 0;
			for (size_t i = 0; i < q->n_cand; i++) {
				long d = q->cand[i];
				if (used[i] || usable(q, d) != (pass == 0))
					continue;
				if (best >= 0) {
					int a = allocated[GROUP(d)], b = allocated[GROUP(best)];
					bool better = policy == REPLICA_PACKED ? a > b : a < b;
					if (!better && (a != b || picked[GROUP(d)] >= picked[GROUP(best)]))
						continue;
				}
				best = d;
				best_i = i;
			}
			if (best < 0)
				break;
			used[best_i] = true;
			q->out[q->n_out++] = best;
			allocated[GROUP(best)]++;
			picked[GROUP(best)]++;
		}
#undef GROUP
	free(allocated), free(picked), free(used);
	return 0;
}

static bool is_whole_gpus(const struct resource *r)
{
	if (r->replicas > 1)
		return false;
	for (size_t i = 0; i < r->n_devices; i++)
		if (r->devices[i].mig >= 0 || r->devices[i].replica >= 0)
			return false;
	return true;
}

/* Resolve IDs: must_include (error when unknown), then available minus must (unknown skipped). */
static int resolve(struct request *q, const struct id_index *ix, const char *const *available, size_t n_available,
		   const char *const *must_include, size_t n_must_include, struct gerr *err)
{
	bool *seen = calloc(q->r->n_devices + 1, sizeof(*seen));

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < n_must_include; i++) {
		long d = index_find(ix, must_include[i]);
		if (d < 0) {
			free(seen);
			return gerr_set(
			    err, EINVAL,
			    "GetPreferredAllocation for %s: must-include device %s is not one of its devices",
			    q->r->name, must_include[i]);
		}
		if (!seen[d])
			q->must[q->n_must++] = d;
		seen[d] = true;
	}
	for (size_t i = 0; i < n_available; i++) {
		long d = index_find(ix, available[i]);
		if (d >= 0 && !seen[d])
			q->cand[q->n_cand++] = d;
		if (d >= 0)
			seen[d] = true;
	}
	free(seen);
	return 0;
}

int alloc_preferred(const struct node *n, const struct resource *r, enum replica_policy policy,
		    const char *const *available, size_t n_available, const char *const *must_include,
		    size_t n_must_include, size_t size, const char ***ret, struct gerr *err)
{
	struct id_index ix = {0};
	struct request q = {.n = n, .r = r, .size = size};
	const char **out = NULL;
	int rc;

	rc = index_build(&ix, r);
	if (rc < 0)
		return rc;
	q.must = calloc(n_must_include + 1, sizeof(*q.must));
	q.cand = calloc(n_available + 1, sizeof(*q.cand));
	q.out = calloc(size + n_must_include + 1, sizeof(*q.out));
	if (!q.must || !q.cand || !q.out) {
		rc = -ENOMEM;
		goto out;
	}
	rc = resolve(&q, &ix, available, n_available, must_include, n_must_include, err);
	if (rc < 0)
		goto out;
	if (q.n_must > size) {
		rc = gerr_set(err, EINVAL, "GetPreferredAllocation for %s: %zu must-include devices but size %zu",
			      r->name, q.n_must, size);
		goto out;
	}
	if (q.n_must + q.n_cand < size) {
		rc = gerr_set(err, EINVAL,
			      "GetPreferredAllocation for %s: %zu devices requested but only %zu of the available "
			      "are known",
			      r->name, size, q.n_must + q.n_cand);
		goto out;
	}
	rc = -ENOSPC;
	if (is_whole_gpus(r))
		rc = alloc_whole(&q);
	if (rc == -ENOSPC) {
		q.n_out = 0;
		rc = alloc_greedy(&q, policy);
	}
	if (rc < 0)
		goto out;
	out = calloc(size + 1, sizeof(*out));
	if (!out) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < size; i++)
		out[i] = r->devices[q.out[i]].id;
	*ret = out;
	rc = 0;
out:
	free(ix.slot);
	free(q.must);
	free(q.cand);
	free(q.out);
	return rc == -ENOMEM ? gerr_set(err, ENOMEM, "out of memory in GetPreferredAllocation") : rc;
}
