/* SPDX-License-Identifier: Apache-2.0 */
/* Exporter renderer: dcgm-exporter names and labels, pod attribution, XID/health, promtool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "exporter/exporter.h"
#include "exporter_testlib.h"

#define GPU0  "GPU-0aaaaaaa-1111-2222-3333-444444444444"
#define GPU1  "GPU-1bbbbbbb-1111-2222-3333-444444444444"
#define MIG_A "MIG-aaaaaaaa-1111-2222-3333-444444444444"
#define MIG_B "MIG-bbbbbbbb-1111-2222-3333-444444444444"

static struct node_mig migs[2];
static struct node_gpu gpus[2];
static struct node test_node;

static void make_node(void)
{
	memset(&test_node, 0, sizeof(test_node));
	memset(gpus, 0, sizeof(gpus));
	memset(migs, 0, sizeof(migs));
	snprintf(test_node.driver_version, sizeof(test_node.driver_version), "550.54.15");
	for (unsigned i = 0; i < 2; i++) {
		gpus[i].index = i;
		gpus[i].minor = i;
		snprintf(gpus[i].pci_bus_id, sizeof(gpus[i].pci_bus_id), "00000000:0%u:00.0", 7 + i);
		snprintf(gpus[i].name, sizeof(gpus[i].name), "NVIDIA A100-SXM4-40GB");
	}
	snprintf(gpus[0].uuid, sizeof(gpus[0].uuid), GPU0);
	snprintf(gpus[1].uuid, sizeof(gpus[1].uuid), GPU1);
	const char *mu[] = {MIG_A, MIG_B};
	for (unsigned j = 0; j < 2; j++) {
		migs[j].gi = 1 + j * 4;
		migs[j].ci = 0;
		migs[j].index = j;
		snprintf(migs[j].uuid, sizeof(migs[j].uuid), "%s", mu[j]);
		snprintf(migs[j].profile, sizeof(migs[j].profile), j ? "3g.20gb" : "1g.5gb");
	}
	gpus[1].mig_enabled = true;
	gpus[1].migs = migs;
	gpus[1].n_migs = 2;
	test_node.gpus = gpus;
	test_node.n_gpus = 2;
}

static void set_value(struct exporter *e, size_t dev, enum exp_metric_id id, double v)
{
	struct exp_gpu *g = &e->gpus[e->devs[dev].gpu];
	struct exp_values *x = &g->vals[dev - g->first_dev];
	x->v[id] = v;
	exp_mask_set(&x->valid, id);
	g->st.sampled_at = exp_now_monotonic();
}

/* Entries must be added in podres order (base, replica, ns, pod, container). */
#define LABELS0                                                                                              \
	"gpu=\"0\",UUID=\"" GPU0 "\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\",modelName=\"NVIDIA " \
	"A100-SXM4-40GB\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\""
#define LABELS_MIG_A                                                                                           \
	"gpu=\"1\",UUID=\"" GPU1 "\",pci_bus_id=\"00000000:08:00.0\",device=\"nvidia1\",modelName=\"NVIDIA "   \
	"A100-SXM4-40GB\",GPU_I_PROFILE=\"1g.5gb\",GPU_I_ID=\"1\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=" \
	"\"550.54.15\""

static void test_dcgm_names_and_labels(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	assert_int_equal(e.n_devs, 4);
	set_value(&e, 0, EXP_GPU_UTIL, 42);
	set_value(&e, 0, EXP_POWER_USAGE, 61.5);
	set_value(&e, 0, EXP_FB_USED, 1024);
	set_value(&e, 2, EXP_FB_USED, 512); /* MIG A */
	_cleanup_free_ char *t = exp_test_render(&e, NULL);
	assert_non_null(strstr(t, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
	assert_non_null(strstr(t, "\nDCGM_FI_DEV_GPU_UTIL{" LABELS0 "} 42\n"));
	assert_non_null(strstr(t, "\nDCGM_FI_DEV_POWER_USAGE{" LABELS0 "} 61.5\n"));
	assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_USED{" LABELS_MIG_A "} 512\n"));
	/* unsampled values produce no series (never a made-up 0) */
	assert_null(strstr(t, "DCGM_FI_DEV_GPU_TEMP"));
	assert_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""));
	/* last XID gauge: 0 for every GPU until one happens; health per device incl. MIG */
	assert_non_null(strstr(t, "\nDCGM_FI_DEV_XID_ERRORS{" LABELS0 ",err_code=\"0\",err_msg=\"No Error\"} 0\n"));
	assert_non_null(strstr(t, "\ngpulet_gpu_healthy{" LABELS_MIG_A "} 1\n"));
	assert_non_null(strstr(t, "\ngpulet_exporter_ready 1\n"));
	assert_null(strstr(t, "pod=")); /* no attribution without a map */
	exporter_free(&e);
}

static void test_no_hostname_and_escaping(void **state)
{
	make_node();
	snprintf(gpus[0].name, sizeof(gpus[0].name), "Odd \"GPU\"\\x\ny");
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, NULL, NULL), 0);
	set_value(&e, 0, EXP_GPU_TEMP, 40);
	_cleanup_free_ char *t = exp_test_render(&e, NULL);
	assert_non_null(strstr(t, "modelName=\"Odd \\\"GPU\\\"\\\\x\\ny\""));
	assert_null(strstr(t, "Hostname="));
	exporter_free(&e);
}

static void test_pod_attribution(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	set_value(&e, 0, EXP_GPU_UTIL, 3);
	set_value(&e, 2, EXP_FB_USED, 100);
	set_value(&e, 3, EXP_FB_USED, 200);
	struct podres_map m = {0};
	exp_test_add_holder(&m, GPU0, "nvidia.com/gpu", "ml", "train-0", "worker");
	exp_test_add_holder(&m, MIG_A, "nvidia.com/mig-1g.5gb", "web", "infer-a", "srv");
	exp_test_add_holder(&m, MIG_B "::0", "nvidia.com/mig-3g.20gb", "web", "infer-b", "srv");
	exp_test_add_holder(&m, MIG_B "::1", "nvidia.com/mig-3g.20gb", "web", "infer-c", "srv");
	_cleanup_free_ char *t = exp_test_render(&e, &m);
	assert_non_null(
	    strstr(t, "\nDCGM_FI_DEV_GPU_UTIL{" LABELS0 ",container=\"worker\",namespace=\"ml\",pod=\"train-0\"} 3\n"));
	assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_USED{" LABELS_MIG_A
				  ",container=\"srv\",namespace=\"web\",pod=\"infer-a\"} 100\n"));
	/* MIG B shared by two pods: as dcgm-exporter, one series for one of them (the highest replica) */
	assert_non_null(strstr(t, "GPU_I_ID=\"5\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\","
				  "container=\"srv\",namespace=\"web\",pod=\"infer-c\"} 200\n"));
	assert_null(strstr(t, "pod=\"infer-b\"} 200"));
	/* ... but the allocation metric names every holder, with the replica */
	assert_non_null(strstr(t, "pod=\"infer-b\",vgpu=\"0\",resource=\"nvidia.com/mig-3g.20gb\"} 1\n"));
	assert_non_null(strstr(t, "pod=\"infer-c\",vgpu=\"1\",resource=\"nvidia.com/mig-3g.20gb\"} 1\n"));
	assert_non_null(
	    strstr(t, "\ngpulet_pod_gpu_allocated{" LABELS0
		      ",container=\"worker\",namespace=\"ml\",pod=\"train-0\",resource=\"nvidia.com/gpu\"} 1\n"));
	/* GPU 1 itself is held by nobody */
	assert_null(strstr(t, "gpulet_pod_gpu_allocated{gpu=\"1\",UUID=\"" GPU1 "\",pci_bus_id=\"00000000:08:00.0\","
			      "device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-40GB\",Hostname"));

	/* --kubernetes-virtual-gpus: one series per sharing pod, label vgpu */
	e.virtual_gpus = true;
	_cleanup_free_ char *v = exp_test_render(&e, &m);
	assert_non_null(strstr(v, ",container=\"srv\",namespace=\"web\",pod=\"infer-b\",vgpu=\"0\"} 200\n"));
	assert_non_null(strstr(v, ",container=\"srv\",namespace=\"web\",pod=\"infer-c\",vgpu=\"1\"} 200\n"));
	struct podres_map *mp = malloc(sizeof(*mp));
	*mp = m;
	podres_map_free(mp);
	exporter_free(&e);
}

static void test_replicas_of_one_pod_are_one_holder(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	set_value(&e, 0, EXP_GPU_UTIL, 7);
	struct podres_map *m = calloc(1, sizeof(*m));
	exp_test_add_holder(m, GPU0 "::2", "nvidia.com/gpu", "ml", "p", "c");
	exp_test_add_holder(m, GPU0 "::5", "nvidia.com/gpu", "ml", "p", "c");
	_cleanup_free_ char *t = exp_test_render(&e, m);
	assert_non_null(
	    strstr(t, "\nDCGM_FI_DEV_GPU_UTIL{" LABELS0 ",container=\"c\",namespace=\"ml\",pod=\"p\"} 7\n"));
	podres_map_free(m);
	exporter_free(&e);
}

static void test_xid_and_health(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	exporter_record_xid(&e, 0, 13); /* application error: counted, still healthy */
	_cleanup_free_ char *a = exp_test_render(&e, NULL);
	assert_non_null(strstr(a, "\nDCGM_FI_DEV_XID_ERRORS{" LABELS0
				  ",err_code=\"13\",err_msg=\"Graphics Engine Exception\"} 13\n"));
	assert_non_null(strstr(a, "\ngpulet_xid_errors_total{" LABELS0 ",xid=\"13\"} 1\n"));
	assert_non_null(strstr(a, "\ngpulet_gpu_healthy{" LABELS0 "} 1\n"));
	exporter_record_xid(&e, 0, 79);
	exporter_record_xid(&e, 0, 13);
	exporter_record_xid(&e, 1, 48);
	_cleanup_free_ char *b = exp_test_render(&e, NULL);
	assert_non_null(strstr(b, "\nDCGM_FI_DEV_XID_ERRORS{" LABELS0
				  ",err_code=\"13\",err_msg=\"Graphics Engine Exception\"} 13\n"));
	assert_non_null(strstr(b, "\ngpulet_xid_errors_total{" LABELS0 ",xid=\"13\"} 2\n"));
	assert_non_null(strstr(b, "\ngpulet_xid_errors_total{" LABELS0 ",xid=\"79\"} 1\n"));
	assert_non_null(strstr(b, "\ngpulet_gpu_healthy{" LABELS0 "} 0\n"));
	/* XID 48 on GPU 1 makes its MIG instances unhealthy too */
	assert_non_null(strstr(b, "\ngpulet_gpu_healthy{" LABELS_MIG_A "} 0\n"));
	/* more distinct codes than slots: counted codes stay bounded, the last XID still shows */
	for (unsigned x = 100; x < 100 + 2 * EXP_XID_CODES; x++)
		exporter_record_xid(&e, 0, x);
	assert_int_equal(e.gpus[0].st.n_xids, EXP_XID_CODES);
	assert_int_equal(e.gpus[0].st.last_xid, 100 + 2 * EXP_XID_CODES - 1);
	exporter_free(&e);
}

static void test_sample_age(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	double now = exp_now_monotonic();
	e.gpus[0].st.sampled_at = now - 12.5;
	e.gpus[1].st.sampled_at = 0; /* never sampled: as old as the exporter */
	e.started_at = now - 3;
	struct strbuf b = {0};
	assert_int_equal(exporter_render(&e, NULL, now, &b), 0);
	assert_non_null(strstr(b.s, "\ngpulet_sample_age_seconds{" LABELS0 "} 12.5\n"));
	assert_non_null(strstr(b.s, "gpulet_sample_age_seconds{gpu=\"1\""));
	assert_non_null(strstr(b.s, "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 3\n"));
	strbuf_free(&b);
	exporter_free(&e);
}

static void test_not_ready(void **state)
{
	struct strbuf b = {0};
	assert_int_equal(exporter_render(NULL, NULL, 0, &b), 0);
	assert_string_equal(
	    b.s, "# HELP gpulet_exporter_ready Whether NVML is loaded and the GPUs are known: 1 yes, 0 not yet.\n"
		 "# TYPE gpulet_exporter_ready gauge\ngpulet_exporter_ready 0\n");
	strbuf_free(&b);
}

/* promtool (the peer) parses a full render: every metric family, pods, XIDs. */
static void test_promtool(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	for (size_t d = 0; d < e.n_devs; d++)
		for (int i = 0; i < EXP_METRIC_COUNT; i++)
			set_value(&e, d, (enum exp_metric_id)i, d * 100 + i + 0.25);
	exporter_record_xid(&e, 1, 79);
	struct podres_map *m = calloc(1, sizeof(*m));
	exp_test_add_holder(m, GPU0, "nvidia.com/gpu", "ml", "train-0", "worker");
	exp_test_add_holder(m, MIG_B "::0", "nvidia.com/mig-3g.20gb", "web", "b", "srv");
	exp_test_add_holder(m, MIG_B "::1", "nvidia.com/mig-3g.20gb", "web", "c", "srv");
	e.virtual_gpus = true;
	_cleanup_free_ char *t = exp_test_render(&e, m);
	char path[] = "/tmp/metrics-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, t, strlen(t)), (ssize_t)strlen(t));
	close(fd);
	const char *src = getenv("GPULET_SRC");
	assert_non_null(src);
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/integration/promcheck.py < %s", src, path);
	int rc = system(cmd);
	unlink(path);
	assert_int_equal(rc, 0);
	podres_map_free(m);
	exporter_free(&e);
}

/* ---- issue 14: collectors file, served set, MIG series, stale values ---------------------- */

static struct exp_collectors parse_ok(const char *text)
{
	struct exp_collectors c;
	struct gerr err = {0};
	int r = exp_collectors_parse(text, strlen(text), "c.csv", &c, &err);
	if (r < 0)
		fail_msg("%s", err.msg);
	return c;
}

static void parse_fails(const char *text, const char *where, const char *words)
{
	struct exp_collectors c;
	struct gerr err = {0};
	assert_true(exp_collectors_parse(text, strlen(text), "c.csv", &c, &err) < 0);
	if (!strstr(err.msg, where) || !strstr(err.msg, words))
		fail_msg("message '%s' lacks '%s' / '%s'", err.msg, where, words);
}

/* The records dcgm-exporter's Go encoding/csv reader accepts, read the same way. */
static void test_collectors_parse(void **state)
{
	struct exp_collectors c = parse_ok("# comment, with, commas\r\n"
					   "\n"
					   "   \n"
					   "DCGM_FI_DEV_GPU_TEMP,  gauge, GPU temperature (in C).\r\n"
					   "DCGM_FI_DEV_DEC_UTIL ,gauge,\"a, b \"\"quoted\"\"\"\n"
					   "\"DCGM_FI_DEV_FB_USED\",counter,\"two\nlines\"\n"
					   "DCGM_FI_DEV_XID_ERRORS, gauge, x\n"
					   "DCGM_FI_DRIVER_VERSION, label, v\n"
					   "DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, no source\n"
					   "DCGM_EXP_XID_ERRORS_COUNT, counter, exporter-made\n"
					   "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO, gauge, the DCGM 4.6 name");
	assert_int_equal(c.n, 8);
	assert_string_equal(c.v[0].name, "DCGM_FI_DEV_GPU_TEMP");
	assert_string_equal(c.v[0].help, "GPU temperature (in C).");
	assert_int_equal(c.v[0].line, 4);
	assert_int_equal(c.v[0].kind, EXP_COUNTER_METRIC);
	assert_int_equal(c.v[0].metric, EXP_GPU_TEMP);
	assert_string_equal(c.v[1].name, "DCGM_FI_DEV_DEC_UTIL");
	assert_string_equal(c.v[1].help, "a, b \"quoted\"");
	assert_string_equal(c.v[2].help, "two\nlines");
	assert_string_equal(c.v[2].type, "counter");
	assert_int_equal(c.v[3].line, 8); /* after a quoted line break */
	assert_int_equal(c.v[3].kind, EXP_COUNTER_XID);
	assert_int_equal(c.v[4].kind, EXP_COUNTER_DRIVER);
	assert_int_equal(c.v[5].kind, EXP_COUNTER_UNAVAILABLE);
	assert_int_equal(c.v[6].kind, EXP_COUNTER_XID_COUNT);
	assert_int_equal(c.v[7].kind, EXP_COUNTER_UNAVAILABLE);
	exp_collectors_free(&c);
	c = parse_ok("");
	assert_int_equal(c.n, 0);
	exp_collectors_free(&c);
}

static void test_collectors_errors(void **state)
{
	parse_fails("# x\nDCGM_FI_DEV_GPU_TEMPERATURE, gauge, t\n",
		    "c.csv:2:", "unknown field 'DCGM_FI_DEV_GPU_TEMPERATURE'");
	parse_fails("DCGM_FI_DEV_GPU_TEMP, gage, t\n", "c.csv:1:", "unknown Prometheus type 'gage'");
	parse_fails("DCGM_FI_DEV_GPU_TEMP, gauge\n", "c.csv:1:", "2 fields");
	parse_fails("DCGM_FI_DEV_GPU_TEMP, gauge, a, b\n", "c.csv:1:", "4 fields");
	parse_fails("DCGM_FI_DEV_GPU_TEMP, gauge, a \"b\"\n", "c.csv:1:", "inside an unquoted field");
	/* Go's reader does not trim before a quote either: a space then '"' is a bare quote */
	parse_fails("DCGM_FI_DEV_GPU_TEMP, gauge, \"b\"\n", "c.csv:1:", "inside an unquoted field");
	parse_fails("\n\nDCGM_FI_DEV_GPU_TEMP, gauge,\"open\n", "c.csv:3:", "not closed");
	parse_fails("DCGM_FI_DEV_GPU_TEMP, gauge,\"a\"b\n", "c.csv:1:", "after a closing");
	parse_fails(", gauge, x\n", "c.csv:1:", "field name is empty");
	struct exp_collectors c;
	struct gerr err = {0};
	assert_true(exp_collectors_parse("DCGM_FI_DEV_GPU_TEMP, gauge, x\0y\n", 33, "c.csv", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "binary"));
}

/* A collectors file decides the served fields, their type and help, and the driver label. */
static void test_configure_from_collectors(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	struct exp_collectors c = parse_ok("DCGM_FI_DEV_GPU_TEMP, counter, my help\n"
					   "DCGM_FI_DEV_POWER_USAGE, histogram, p\n"
					   "DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, v\n");
	struct exp_config cfg = {.collectors = &c};
	exporter_configure(&e, &cfg);
	struct exp_mask want = {0};
	exp_mask_set(&want, EXP_GPU_TEMP);
	exp_mask_set(&want, EXP_POWER_USAGE);
	assert_memory_equal(&e.enabled, &want, sizeof(want));
	set_value(&e, 0, EXP_GPU_TEMP, 40);
	set_value(&e, 0, EXP_POWER_USAGE, 70);
	set_value(&e, 0, EXP_FB_USED, 1); /* sampled but not asked for: not served */
	_cleanup_free_ char *t = exp_test_render(&e, NULL);
	assert_non_null(strstr(t, "# HELP DCGM_FI_DEV_GPU_TEMP my help\n# TYPE DCGM_FI_DEV_GPU_TEMP counter\n"));
	assert_non_null(strstr(t, "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"));
	assert_null(strstr(t, "DCGM_FI_DEV_FB_USED"));
	assert_null(strstr(t, "DCGM_FI_DEV_XID_ERRORS"));
	assert_null(strstr(t, "DCGM_FI_DRIVER_VERSION=")); /* not listed: no label */
	assert_non_null(strstr(t, "gpulet_exporter_field_unavailable{field=\"DCGM_FI_DEV_VGPU_LICENSE_STATUS\","
				  "reason=\"not sampled by gpulet\"} 1\n"));
	exporter_free(&e);
	exp_collectors_free(&c);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* dcgm-exporter's -d f: a MIG GPU's series are its instances'; device-wide values inherited. */
static void test_mig_series(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	set_value(&e, 1, EXP_GPU_TEMP, 61);  /* GPU 1 (MIG) */
	set_value(&e, 1, EXP_FB_USED, 5000); /* the parent's own memory figure */
	set_value(&e, 1, EXP_GPU_UTIL, 50);  /* GPU-wide utilisation, not per instance */
	set_value(&e, 2, EXP_FB_USED, 100);  /* MIG A */
	set_value(&e, 3, EXP_FB_USED, 200);  /* MIG B */
	_cleanup_free_ char *t = exp_test_render(&e, NULL);
	assert_int_equal(count(t, "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\""), 2);
	assert_int_equal(count(t, "GPU_I_ID=\"5\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 61\n"), 1);
	assert_int_equal(count(t, "DCGM_FI_DEV_FB_USED{gpu=\"1\""), 2);
	assert_null(strstr(t, "} 5000\n"));
	assert_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""));
	assert_int_equal(count(t, "DCGM_FI_DEV_XID_ERRORS{gpu=\"1\""), 2);

	struct exp_config cfg = {.mig_parent = true};
	exporter_configure(&e, &cfg);
	_cleanup_free_ char *p = exp_test_render(&e, NULL);
	assert_int_equal(count(p, "DCGM_FI_DEV_FB_USED{gpu=\"1\""), 3);
	assert_non_null(strstr(p, "} 5000\n"));
	assert_non_null(strstr(p, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""));

	cfg = (struct exp_config){.devices = EXP_DEVICES_GPUS};
	exporter_configure(&e, &cfg);
	_cleanup_free_ char *g = exp_test_render(&e, NULL);
	assert_int_equal(count(g, "DCGM_FI_DEV_FB_USED{gpu=\"1\""), 1);
	assert_null(strstr(g, "GPU_I_ID=\"1\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 100"));
	exporter_free(&e);
}

/* A GPU whose sampler is stuck serves no values once they are older than stale_s. */
static void test_stale_values_left_out(void **state)
{
	make_node();
	struct exporter e;
	assert_int_equal(exporter_init(&e, &test_node, "node-1", NULL), 0);
	set_value(&e, 0, EXP_GPU_TEMP, 40);
	e.stale_s = 1.6;
	struct strbuf b = {0};
	double now = exp_now_monotonic();
	assert_int_equal(exporter_render(&e, NULL, now + 1.0, &b), 0);
	assert_non_null(strstr(b.s, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""));
	assert_int_equal(exporter_render(&e, NULL, now + 2.0, &b), 0);
	assert_null(strstr(b.s, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""));
	assert_non_null(strstr(b.s, "gpulet_sample_age_seconds{gpu=\"0\""));
	strbuf_free(&b);
	exporter_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dcgm_names_and_labels),
	    cmocka_unit_test(test_no_hostname_and_escaping),
	    cmocka_unit_test(test_pod_attribution),
	    cmocka_unit_test(test_replicas_of_one_pod_are_one_holder),
	    cmocka_unit_test(test_xid_and_health),
	    cmocka_unit_test(test_sample_age),
	    cmocka_unit_test(test_not_ready),
	    cmocka_unit_test(test_promtool),
	    cmocka_unit_test(test_collectors_parse),
	    cmocka_unit_test(test_collectors_errors),
	    cmocka_unit_test(test_configure_from_collectors),
	    cmocka_unit_test(test_mig_series),
	    cmocka_unit_test(test_stale_values_left_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
