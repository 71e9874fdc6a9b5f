/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm-exporter 4.8's pod and job attribution and health status, as gpulet renders them
 * (docs/reference/dcgm-exporter.md section 9): the label allowlist and label names, pod UIDs and labels
 * from the pods table, FB_USED/GPU_UTIL per pod from its processes, a process's pod from its cgroup, the
 * HPC job mapping files, and DCGM_EXP_GPU_HEALTH_STATUS's verdicts.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "exporter/exporter.h"
#include "exporter/hpc.h"
#include "exporter/procs.h"
#include "exporter_testlib.h"
#include "podres_testlib.h"

#define GPU0 "GPU-0aaaaaaa-1111-2222-3333-444444444444"
#define UIDA "1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d"
#define UIDB "2b3c4d5e-6f70-4b1c-9d2e-3f4a5b6c7d8e"

static struct node_gpu gpu;
static struct node one_gpu;

static void make_node(void)
{
	memset(&one_gpu, 0, sizeof(one_gpu));
	memset(&gpu, 0, sizeof(gpu));
	snprintf(one_gpu.driver_version, sizeof(one_gpu.driver_version), "550.54.15");
	snprintf(gpu.pci_bus_id, sizeof(gpu.pci_bus_id), "00000000:07:00.0");
	snprintf(gpu.name, sizeof(gpu.name), "NVIDIA A100-SXM4-40GB");
	snprintf(gpu.uuid, sizeof(gpu.uuid), GPU0);
	gpu.arch = 7; /* Ampere */
	one_gpu.gpus = &gpu;
	one_gpu.n_gpus = 1;
}

static void set_value(struct exporter *e, enum exp_metric_id id, double v)
{
	struct exp_values *x = &e->gpus[0].vals[0];
	x->v[id] = v;
	exp_mask_set(&x->valid, id);
	e->gpus[0].st.sampled_at = exp_now_monotonic();
}

static void test_allowlist(void **state)
{
	static const char *const refused[] = {"\\d+", "(?i)app", "", "app.*?", "[\\.]x", "tier\\"};
	static const char *const ok[] = {"^app$", "^app\\.kubernetes\\.io/.*", "tier|env"};
	struct exp_allowlist a;
	struct gerr err = {0};

	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		assert_int_equal(exp_allowlist_compile(&refused[i], 1, &a, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "'"));
	}
	assert_int_equal(exp_allowlist_compile((const char *const[]){"("}, 1, &a, &err), -EINVAL);
	assert_int_equal(exp_allowlist_compile(ok, ELEMENTSOF(ok), &a, &err), 0);
	assert_true(exp_allowlist_match(&a, "app"));
	assert_false(exp_allowlist_match(&a, "apps"));
	assert_true(exp_allowlist_match(&a, "app.kubernetes.io/name"));
	assert_true(exp_allowlist_match(&a, "my-tier")); /* unanchored, as Go's MatchString */
	assert_false(exp_allowlist_match(&a, "team"));
	exp_allowlist_free(&a);
	/* no pattern: every key */
	assert_int_equal(exp_allowlist_compile(NULL, 0, &a, &err), 0);
	assert_true(exp_allowlist_match(&a, "anything"));
}

static void test_label_names(void **state)
{
	char n[64];

	assert_true(exp_pod_label_name("app.kubernetes.io/name", n, sizeof(n)));
	assert_string_equal(n, "app_kubernetes_io_name");
	assert_true(exp_pod_label_name("3d", n, sizeof(n)));
	assert_string_equal(n, "_3d");
	assert_false(exp_pod_label_name("pod", n, sizeof(n))); /* gpulet's own label */
	assert_false(exp_pod_label_name("UUID", n, sizeof(n)));
	assert_false(exp_pod_label_name("hpc_job", n, sizeof(n)));
	assert_false(exp_pod_label_name("DCGM_FI_DEV_NAME", n, sizeof(n)));
	assert_false(exp_pod_label_name("x", n, 1));
}

/* A table of two pods: a (UIDA, labels app, app.kubernetes.io/name, pod, team) and b (UIDB, no labels). */
static void pods(struct exp_podmeta *pm, const struct exp_allowlist *allow)
{
	json_error_t jerr;
	json_t *list = json_loads(
	    "[{\"metadata\":{\"namespace\":\"ml\",\"name\":\"a\",\"uid\":\"" UIDA "\",\"labels\":{\"team\":\"x\\\"y\","
	    "\"app.kubernetes.io/name\":\"trainer\",\"app_kubernetes_io/name\":\"dup\",\"pod\":\"no\"}}},"
	    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"b\",\"uid\":\"" UIDB "\"}}]",
	    0, &jerr);

	assert_non_null(list);
	memset(pm, 0, sizeof(*pm));
	pthread_mutex_init(&pm->lock, NULL);
	pm->allow = allow;
	pm->labels = true;
	assert_int_equal(exp_podmeta_set(pm, list), 0);
	json_decref(list);
}

static void test_pod_uid_and_labels(void **state)
{
	struct exp_allowlist all = {0}, some;
	struct exp_podmeta pm;
	struct podres_map *m = calloc(1, sizeof(*m));
	struct exporter e;
	struct gerr err = {0};

	make_node();
	assert_int_equal(exporter_init(&e, &one_gpu, "node-1", NULL), 0);
	set_value(&e, EXP_GPU_TEMP, 40);
	exp_test_add_holder(m, GPU0, "nvidia.com/gpu", "ml", "a", "main");
	pods(&pm, &all);
	e.podmeta = &pm;
	e.pod_uid = true;
	e.pod_labels = true;
	_cleanup_free_ char *t = exp_test_render(&e, m);
	/* sorted keys; the second key naming app_kubernetes_io_name is left out; "pod" is gpulet's own */
	assert_non_null(strstr(t, ",container=\"main\",namespace=\"ml\",pod=\"a\",pod_uid=\"" UIDA
				  "\",app_kubernetes_io_name=\"trainer\",team=\"x\\\"y\"} 40\n"));
	assert_null(strstr(t, "\"dup\""));
	assert_null(strstr(t, "pod=\"no\""));
	/* the allowlist keeps the keys it matches */
	exp_podmeta_stop(&pm);
	assert_int_equal(exp_allowlist_compile((const char *const[]){"^team$"}, 1, &some, &err), 0);
	pods(&pm, &some);
	e.pod_uid = false;
	_cleanup_free_ char *u = exp_test_render(&e, m);
	assert_non_null(strstr(u, ",container=\"main\",namespace=\"ml\",pod=\"a\",team=\"x\\\"y\"} 40\n"));
	exp_podmeta_stop(&pm);
	exp_allowlist_free(&some);
	podres_map_free(m);
	exporter_free(&e);
}

/* Under --kubernetes-virtual-gpus: FB_USED and GPU_UTIL per pod from its processes (dcgm-exporter PR #594). */
static void test_per_process(void **state)
{
	struct exp_allowlist all = {0};
	struct exp_podmeta pm;
	struct podres_map *m = calloc(1, sizeof(*m));
	struct exporter e;
	struct exp_proc pr[] = {
	    {.pid = 10, .mem_bytes = 1024ull * 1024 * 1024 + 512 * 1024, .sm_util = 30, .uid = UIDA},
	    {.pid = 11, .mem_bytes = 2ull * 1024 * 1024, .sm_util = 5, .uid = UIDA},
	    {.pid = 12, .mem_bytes = 7ull * 1024 * 1024, .sm_util = 0, .uid = ""}, /* not in a pod */
	};

	make_node();
	assert_int_equal(exporter_init(&e, &one_gpu, "node-1", NULL), 0);
	set_value(&e, EXP_FB_USED, 40000);
	set_value(&e, EXP_GPU_UTIL, 87);
	set_value(&e, EXP_GPU_TEMP, 50);
	exp_test_add_holder(m, GPU0 "::0", "nvidia.com/gpu", "ml", "a", "main");
	exp_test_add_holder(m, GPU0 "::1", "nvidia.com/gpu", "ml", "b", "main");
	exp_test_add_holder(m, GPU0 "::2", "nvidia.com/gpu", "ml", "c",
			    "main"); /* not in the pods table: its UID is not known */
	pods(&pm, &all);
	e.podmeta = &pm;
	e.virtual_gpus = e.per_process = true;
	e.gpus[0].procs = calloc(1, sizeof(*e.gpus[0].procs));
	e.gpus[0].procs[0].v = malloc(sizeof(pr));
	memcpy(e.gpus[0].procs[0].v, pr, sizeof(pr));
	e.gpus[0].procs[0].n = ELEMENTSOF(pr);
	_cleanup_free_ char *t = exp_test_render(&e, m);
	/* the device's own line, then one per holder whose UID is known (1024 + 2 MiB, 30 + 5 %); b has none: 0 */
	assert_non_null(strstr(t, "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 40000\n"));
	assert_non_null(strstr(t, ",pod=\"a\",pod_uid=\"" UIDA "\",vgpu=\"0\"} 1026\n"));
	assert_non_null(strstr(t, ",pod=\"b\",pod_uid=\"" UIDB "\",vgpu=\"1\"} 0\n"));
	assert_non_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""));
	assert_non_null(strstr(t, ",pod=\"a\",pod_uid=\"" UIDA "\",vgpu=\"0\"} 35\n"));
	assert_null(strstr(t, "pod=\"c\",pod_uid"));
	/* other fields: one series per pod with the device's value, as before */
	assert_non_null(strstr(t, ",pod=\"c\",vgpu=\"2\"} 50\n"));
	exp_podmeta_stop(&pm);
	podres_map_free(m);
	exporter_free(&e);
}

#define MIG1 "MIG-1bbbbbbb-1111-2222-3333-444444444444"

/* kubelet's answer for pod ml/job-dra whose container holds claim ml/train of devices (pool, device) */
static uint8_t *pack_claim(const char *const (*dev)[2], size_t n, size_t *len)
{
	V1__ClaimResource res[4], *resp_res[4];
	for (size_t i = 0; i < n; i++) {
		v1__claim_resource__init(&res[i]);
		res[i].driver_name = "gpu.nvidia.com";
		res[i].pool_name = (char *)dev[i][0];
		res[i].device_name = (char *)dev[i][1];
		resp_res[i] = &res[i];
	}
	V1__DynamicResource dr = V1__DYNAMIC_RESOURCE__INIT, *drs[] = {&dr};
	dr.claim_name = "train", dr.claim_namespace = "ml", dr.n_claim_resources = n, dr.claim_resources = resp_res;
	V1__ContainerResources c = V1__CONTAINER_RESOURCES__INIT;
	c.name = "main", c.n_dynamic_resources = 1, c.dynamic_resources = drs;
	return podres_test_pack_one("ml", "job-dra", &c, len);
}

/*
 * A GPU (minor 3) and a MIG device of another GPU allocated through a DRA claim of gpu.nvidia.com: found by
 * the names gpulet's DRA driver publishes them under in this node's pool, with dcgm-exporter's dra_* labels;
 * the same names in another node's pool are not ours.
 */
static void test_dra_claims(void **state)
{
	static const char *const here[][2] = {{"node-1", "gpu-3"}, {"node-1", "gpu-1-mig-1g5gb-19-6"}};
	static const char *const elsewhere[][2] = {{"node-2", "gpu-3"}, {"node-2", "gpu-1-mig-1g5gb-19-6"}};
	struct node_gpu g[2] = {0};
	struct node_mig mig = {.gi = 2,
			       .uuid = MIG1,
			       .profile = "1g.5gb",
			       .gi_info_known = true,
			       .gi_profile_id = 19,
			       .placement_start = 6};
	struct node n = {.gpus = g, .n_gpus = 2, .driver_version = "550.54.15"};
	struct exporter e;
	size_t len;

	snprintf(g[0].uuid, sizeof(g[0].uuid), GPU0);
	g[0].minor = 3;
	snprintf(g[1].uuid, sizeof(g[1].uuid), "GPU-1aaaaaaa-1111-2222-3333-444444444444");
	g[1].index = g[1].minor = 1;
	g[1].mig_enabled = true;
	g[1].migs = &mig;
	g[1].n_migs = 1;
	assert_int_equal(exporter_init(&e, &n, "node-1", NULL), 0);
	exporter_configure(&e, &(struct exp_config){.dra = true, .dra_pool = "node-1"});
	for (size_t i = 0; i < 2; i++) {
		e.gpus[i].vals[0].v[EXP_GPU_TEMP] = 40 + (double)i;
		exp_mask_set(&e.gpus[i].vals[0].valid, EXP_GPU_TEMP);
		e.gpus[i].st.sampled_at = exp_now_monotonic();
	}
	_cleanup_free_ uint8_t *buf = pack_claim(here, 2, &len);
	_cleanup_(podres_map_freep) struct podres_map *m = NULL;
	assert_int_equal(podres_map_from_list(buf, len, NULL, &m, NULL), 0);
	_cleanup_free_ char *t = exp_test_render(&e, m);
	const char *line = strstr(t, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"");
	assert_non_null(line);
	assert_non_null(strstr(t,
			       ",container=\"main\",namespace=\"ml\",pod=\"job-dra\",dra_claim_name=\"train\","
			       "dra_claim_namespace=\"ml\",dra_driver_name=\"gpu.nvidia.com\",dra_pool_name=\"node-1\","
			       "dra_device_name=\"gpu-3\"} 40\n"));
	assert_non_null(strstr(t, "dra_device_name=\"gpu-1-mig-1g5gb-19-6\""));
	/* the MIG device's series are the ones attributed: its own UUID on the line */
	/* the MIG instance's series are the ones attributed (dcgm-exporter: its GPU's UUID, its GPU_I_ID) */
	const char *mig_line = strstr(t, "dra_device_name=\"gpu-1-mig-1g5gb-19-6\"");
	while (mig_line > t && mig_line[-1] != '\n')
		mig_line--;
	const char *gi = strstr(mig_line, "GPU_I_ID=\"2\"");
	assert_non_null(gi);
	assert_true(gi < strchr(mig_line, '\n'));

	_cleanup_free_ uint8_t *other = pack_claim(elsewhere, 2, &len);
	_cleanup_(podres_map_freep) struct podres_map *o = NULL;
	assert_int_equal(podres_map_from_list(other, len, NULL, &o, NULL), 0);
	_cleanup_free_ char *u = exp_test_render(&e, o);
	assert_null(strstr(u, "job-dra"));
	/* without --kubernetes-enable-dra, as dcgm-exporter: claims are not attributed */
	exporter_configure(&e, NULL);
	_cleanup_free_ char *w = exp_test_render(&e, m);
	assert_null(strstr(w, "job-dra"));
	exporter_free(&e);
}

static void test_cgroup_pod_uid(void **state)
{
	static const struct {
		const char *text, *uid;
	} cases[] = {
	    {"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_5e6f_4a0b_8c1d_2e3f4a5b6c7d"
	     ".slice/cri-containerd-0123.scope\n",
	     UIDA},
	    {"12:memory:/kubepods/besteffort/pod" UIDB "/abc\n11:cpu:/kubepods/besteffort/pod" UIDB "/abc\n", UIDB},
	    {"0::/system.slice/containerd.service\n", NULL},
	    {"0::/kubepods/pod1234/x\n", NULL}, /* too short for a UID */
	    {"", NULL},
	};
	char uid[64];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int r = exp_cgroup_pod_uid(cases[i].text, strlen(cases[i].text), uid, sizeof(uid));
		assert_int_equal(r, cases[i].uid != NULL);
		if (r)
			assert_string_equal(uid, cases[i].uid);
	}
	assert_int_equal(exp_cgroup_pod_uid(cases[0].text, strlen(cases[0].text), uid, 8), 0); /* does not fit */
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void test_hpc_jobs(void **state)
{
	char root[] = "/tmp/gpulet-hpc-XXXXXX", dir[600], path[700];
	struct exp_hpc_entry one = {0};
	struct exp_hpc h;

	{
		const char *text = "job1\njob2\n\njob1\r\nbad\x01id\n\"q\"\nlast";
		assert_int_equal(exp_hpc_parse(text, strlen(text), &one), 0);
	}
	assert_int_equal(one.n, 3);
	assert_string_equal(one.jobs[0], "job1");
	assert_string_equal(one.jobs[1], "job2");
	assert_string_equal(one.jobs[2], "last");
	for (size_t k = 0; k < one.n; k++)
		free(one.jobs[k]);
	free(one.jobs);

	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/run/hpc", root);
	snprintf(path, sizeof(path), "%s/run", root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	put(dir, "0", "1001\n1002\n");
	put(dir, "6.2", "2001\n");
	put(dir, "x", "3001\n");
	put(dir, "secret", "root:x:0:0\n");
	snprintf(path, sizeof(path), "%s/1", dir);
	assert_int_equal(symlink("secret", path), 0); /* never followed */
	snprintf(path, sizeof(path), "%s/2", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(exp_hpc_read(root, "/run/hpc", &h), 0);
	assert_int_equal(h.n, 2);
	assert_int_equal(exp_hpc_find(&h, 0, -1)->n, 2);
	assert_string_equal(exp_hpc_find(&h, 6, 2)->jobs[0], "2001");
	assert_null(exp_hpc_find(&h, 1, -1));
	assert_null(exp_hpc_find(&h, 6, -1));

	/* rendered: one series per job */
	struct exporter e;
	make_node();
	assert_int_equal(exporter_init(&e, &one_gpu, "node-1", NULL), 0);
	set_value(&e, EXP_GPU_TEMP, 41);
	e.root = root;
	e.hpc_dir = "/run/hpc";
	_cleanup_free_ char *t = exp_test_render(&e, NULL);
	assert_non_null(strstr(t, ",hpc_job=\"1001\"} 41\n"));
	assert_non_null(strstr(t, ",hpc_job=\"1002\"} 41\n"));
	e.hpc_dir = "/run/none"; /* not there: no label, no failure */
	_cleanup_free_ char *u = exp_test_render(&e, NULL);
	assert_null(strstr(u, "hpc_job"));
	assert_non_null(strstr(u, "DCGM_FI_DEV_GPU_TEMP{"));
	exporter_free(&e);
	exp_hpc_free(&h);
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	assert_int_equal(system(path), 0);
}

static void test_health_verdicts(void **state)
{
	struct exp_gpu_state st = {0};
	struct exp_health_verdict v[EXP_HEALTH_WATCHES];

	st.health.recovery = st.health.retired_pending = -1;
	exp_health_verdicts(&st, 7, v);
	for (size_t w = 0; w < EXP_HEALTH_WATCHES; w++) {
		assert_int_equal(v[w].result, 0);
		assert_string_equal(v[w].code, "DCGM_FR_OK");
	}
	st.xids[st.n_xids++].code = 31;
	st.xids[st.n_xids++].code = 93; /* Volta only */
	st.health.recovery = 3;
	exp_health_verdicts(&st, 7, v);
	assert_int_equal(v[EXP_HW_MEM].result, 10);
	assert_string_equal(v[EXP_HW_MEM].code, "DCGM_FR_XID_ERROR");
	assert_int_equal(v[EXP_HW_INFOROM].result, 0);
	assert_int_equal(v[EXP_HW_DRIVER].result, 10);
	assert_string_equal(v[EXP_HW_DRIVER].code, "DCGM_FR_GPU_RECOVERY_DRAIN_P2P");
	exp_health_verdicts(&st, 5, v);
	assert_int_equal(v[EXP_HW_INFOROM].result, 10);
	/* a FAIL is not hidden by a WARN of the same watch */
	st.health.bad |= 1u << EXP_HEALTH_DBE_VOLATILE;
	st.lost = true;
	exp_health_verdicts(&st, 7, v);
	assert_int_equal(v[EXP_HW_MEM].result, 20);
	assert_string_equal(v[EXP_HW_MEM].code, "DCGM_FR_VOLATILE_DBE_DETECTED");
	assert_int_equal(v[EXP_HW_ALL].result, 20);
	assert_string_equal(v[EXP_HW_ALL].code, "DCGM_FR_FALLEN_OFF_BUS");
	assert_string_equal(exp_health_watch_names[EXP_HW_ALL], "ALL");

	/* rendered per GPU and watch when a collectors file lists the field */
	struct exporter e;
	make_node();
	assert_int_equal(exporter_init(&e, &one_gpu, "node-1", NULL), 0);
	e.gpus[0].st.sampled_at = exp_now_monotonic();
	e.gpus[0].st.health.recovery = 1;
	e.health_status_enabled = true;
	e.health_status_type = "counter";
	e.health_status_help = "DCGM reported health status";
	_cleanup_free_ char *t = exp_test_render(&e, NULL);
	assert_non_null(strstr(t, "# TYPE DCGM_EXP_GPU_HEALTH_STATUS counter\n"));
	assert_non_null(strstr(t, ",health_watch=\"DRIVER\",health_error_code=\"DCGM_FR_GPU_RECOVERY_RESET\"} 20\n"));
	assert_non_null(strstr(t, ",health_watch=\"PCIE\",health_error_code=\"DCGM_FR_OK\"} 0\n"));
	exporter_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allowlist),          cmocka_unit_test(test_label_names),
	    cmocka_unit_test(test_pod_uid_and_labels), cmocka_unit_test(test_per_process),
	    cmocka_unit_test(test_cgroup_pod_uid),     cmocka_unit_test(test_hpc_jobs),
	    cmocka_unit_test(test_health_verdicts),    cmocka_unit_test(test_dra_claims),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
