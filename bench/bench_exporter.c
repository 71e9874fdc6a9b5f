/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Render cost at the server: one scrape of 8 GPUs + 14 MIG instances (fake NVML bench fixture),
 * with pod attribution and every field gpulet can serve (a collectors file listing them all, read
 * by the real reader), against a floor measured in the same run: formatting the same number of
 * sample lines with one snprintf each into a preallocated buffer (what any exporter must at least do).
 * usage: FAKE_NVML_FIXTURE=bench.json bench_exporter LIBNVML [ITERATIONS]
 *        bench_exporter --csv   (print that collectors file: the HTTP benchmark passes it with -f)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/exporter.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Floor: the same lines, label text and values, one snprintf per line, no registry, no locks. */
static size_t floor_render(const struct exporter *e, char *buf, size_t size, size_t lines)
{
	size_t len = 0;
	for (size_t i = 0; i < lines; i++) {
		const struct exp_device *d = &e->devs[i % e->n_devs];
		len += (size_t)snprintf(buf + len, size - len, "DCGM_FI_DEV_FB_USED{%s%s} %.0f\n", d->labels,
					e->hostname_labels, (double)i);
		if (len > size - 4096)
			len = 0;
	}
	return len;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A collectors file with every field gpulet serves, the XID gauge and the driver label. */
static void all_fields_csv(struct strbuf *b)
{
	strbuf_printf(b, "# every field gpulet serves (bench_exporter --csv)\n");
	for (int i = 0; i < EXP_METRIC_COUNT; i++)
		strbuf_printf(b, "%s, %s, %s\n", exp_metrics[i].name, exp_metrics[i].type, "bench");
	strbuf_printf(b, "DCGM_FI_DEV_XID_ERRORS, gauge, last XID\nDCGM_FI_DRIVER_VERSION, label, driver\n");
}

int main(int argc, char **argv)
{
	struct strbuf csv = {0};
	all_fields_csv(&csv);
	if (argc == 2 && !strcmp(argv[1], "--csv")) {
		fputs(csv.s, stdout);
		strbuf_free(&csv);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: FAKE_NVML_FIXTURE=bench.json %s LIBNVML [ITERATIONS]\n", argv[0]);
		return 2;
	}
	int iters = argc > 2 ? atoi(argv[2]) : 2000;
	struct gerr err = {0};
	struct nvml *nv = NULL;
	struct node *n = NULL;
	if (nvml_open(argv[1], "/", &nv, &err) < 0 || node_load(nv, "/nonexistent", &n, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return 1;
	}
	struct exporter e;
	if (exporter_init(&e, n, "bench-node", &err) < 0)
		return 1;
	struct exp_collectors all;
	if (exp_collectors_parse(csv.s, csv.len, "all-fields.csv", &all, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return 1;
	}
	struct exp_config cfg = {.collectors = &all};
	exporter_configure(&e, &cfg);
	e.nv = nv;
	for (int round = 0; round < 2; round++) /* two rounds: GPM reads need two samples */
		for (size_t g = 0; g < e.n_gpus; g++)
			exporter_sample_gpu(&e, g);
	/* every device held by a pod, so attribution is on the measured path */
	struct podres_map map = {.v = calloc(e.n_devs, sizeof(struct podres_device)), .n = 0};
	for (size_t d = 0; d < e.n_devs; d++) {
		struct podres_device *p = &map.v[map.n++];
		p->id = strdup(e.devs[d].attr_uuid);
		p->base = strdup(e.devs[d].attr_uuid);
		p->replica = -1;
		p->resource = strdup("nvidia.com/gpu");
		p->pod = strdup("training-job-7d9f8b6c5-x2x9z");
		p->ns = strdup("ml-team");
		p->container = strdup("trainer");
	}
	for (size_t i = 1; i < map.n; i++) /* insertion sort by base: podres_find needs order */
		for (size_t j = i; j > 0 && strcmp(map.v[j - 1].base, map.v[j].base) > 0; j--) {
			struct podres_device t = map.v[j];
			map.v[j] = map.v[j - 1];
			map.v[j - 1] = t;
		}

	struct strbuf b = {0};
	exporter_render(&e, &map, now(), &b); /* warm up */
	size_t lines = 0;
	for (size_t i = 0; i < b.len; i++)
		lines += b.s[i] == '\n';
	double *each = calloc((size_t)iters, sizeof(double));
	double t0 = now(), c0 = cpu();
	for (int i = 0; i < iters; i++) {
		double s = now();
		exporter_render(&e, &map, s, &b);
		each[i] = now() - s;
	}
	double t_render = (now() - t0) / iters, c_render = (cpu() - c0) / iters;
	qsort(each, (size_t)iters, sizeof(double), cmp_double);
	double p50 = each[iters / 2], p99 = each[iters * 99 / 100];
	free(each);

	size_t fsize = b.len * 2 + 65536;
	char *fbuf = malloc(fsize);
	volatile size_t sink = 0;
	double *feach = calloc((size_t)iters, sizeof(double));
	t0 = now();
	for (int i = 0; i < iters; i++) {
		double s = now();
		sink += floor_render(&e, fbuf, fsize, lines);
		feach[i] = now() - s;
	}
	double t_floor = (now() - t0) / iters;
	qsort(feach, (size_t)iters, sizeof(double), cmp_double);
	double f50 = feach[iters / 2], f99 = feach[iters * 99 / 100];
	free(feach);

	int fields = 0;
	for (int i = 0; i < EXP_METRIC_COUNT; i++)
		fields += exp_mask_has(&e.enabled, (size_t)i);
	printf("bench_exporter: %zu GPUs + %zu MIG instances, %d fields enabled, %zu lines, %zu bytes per scrape\n",
	       e.n_gpus, e.n_devs - e.n_gpus, fields, lines, b.len);
	printf("render   %8.1f us/scrape (cpu %.1f us)   p50 %.1f us  p99 %.1f us   goal p99 < 2000 us\n",
	       t_render * 1e6, c_render * 1e6, p50 * 1e6, p99 * 1e6);
	printf("floor    %8.1f us (one snprintf per line, same lines)   p50 %.1f us  p99 %.1f us\n", t_floor * 1e6,
	       f50 * 1e6, f99 * 1e6);
	printf("ratio    %8.2f x floor (mean)   p50 %.2f x   p99 %.2f x\n", t_render / t_floor, p50 / f50, p99 / f99);
	free(fbuf);
	strbuf_free(&b);
	struct podres_map *mp = malloc(sizeof(*mp));
	*mp = map;
	podres_map_free(mp);
	exporter_free(&e);
	exp_collectors_free(&all);
	strbuf_free(&csv);
	node_free(n);
	nvml_close(nv);
	return 0;
}
