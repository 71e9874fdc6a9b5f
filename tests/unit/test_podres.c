/* SPDX-License-Identifier: Apache-2.0 */
/* PodResources client: map building from protobuf-c bytes, and the wire against python3-grpcio. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "util/fileio.h"
#include "gpulet_podres.pb-c.h"
#include "kube/grpc_client.h"
#include "kube/podres.h"
#include "podres_testlib.h"

#define GPU0 "GPU-11111111-2222-3333-4444-555555555555"
#define GPU1 "GPU-aaaaaaaa-2222-3333-4444-555555555555"
#define MIG0 "MIG-99999999-2222-3333-4444-555555555555"

/* Pack one pod with one container holding device_ids of resource res. */
static uint8_t *pack_response(size_t *len)
{
	char *ids_a[] = {GPU0};
	char *ids_b[] = {GPU1 "::3", GPU1 "::0"};
	char *ids_c[] = {MIG0};
	char *ids_d[] = {"0000:3b:00.0"};
	V1__ContainerDevices da = V1__CONTAINER_DEVICES__INIT, db = V1__CONTAINER_DEVICES__INIT,
			     dc = V1__CONTAINER_DEVICES__INIT, dd = V1__CONTAINER_DEVICES__INIT;
	da.resource_name = "nvidia.com/gpu", da.n_device_ids = 1, da.device_ids = ids_a;
	db.resource_name = "nvidia.com/gpu.shared", db.n_device_ids = 2, db.device_ids = ids_b;
	dc.resource_name = "nvidia.com/mig-1g.5gb", dc.n_device_ids = 1, dc.device_ids = ids_c;
	dd.resource_name = "example.com/nic", dd.n_device_ids = 1, dd.device_ids = ids_d;
	V1__ContainerDevices *devs1[] = {&da, &dd}, *devs2[] = {&db}, *devs3[] = {&dc};
	V1__ContainerResources c1 = V1__CONTAINER_RESOURCES__INIT, c2 = V1__CONTAINER_RESOURCES__INIT,
			       c3 = V1__CONTAINER_RESOURCES__INIT;
	c1.name = "trainer", c1.n_devices = 2, c1.devices = devs1;
	c2.name = "infer", c2.n_devices = 1, c2.devices = devs2;
	c3.name = "mig", c3.n_devices = 1, c3.devices = devs3;
	V1__ContainerResources *cs1[] = {&c1}, *cs2[] = {&c2, &c3};
	V1__PodResources p1 = V1__POD_RESOURCES__INIT, p2 = V1__POD_RESOURCES__INIT;
	p1.name = "job-a", p1.namespace_ = "ml", p1.n_containers = 1, p1.containers = cs1;
	p2.name = "svc-b", p2.namespace_ = "web", p2.n_containers = 2, p2.containers = cs2;
	V1__PodResources *pods[] = {&p1, &p2};
	V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
	resp.n_pod_resources = 2, resp.pod_resources = pods;
	*len = v1__list_pod_resources_response__get_packed_size(&resp);
	uint8_t *buf = malloc(*len);
	v1__list_pod_resources_response__pack(&resp, buf);
	return buf;
}

static void check_map(const struct podres_map *m)
{
	const struct podres_device *d = NULL;
	assert_int_equal(m->n, 4); /* example.com/nic filtered out */
	assert_int_equal(podres_find(m, GPU0, &d), 1);
	assert_string_equal(d->pod, "job-a");
	assert_string_equal(d->ns, "ml");
	assert_string_equal(d->container, "trainer");
	assert_int_equal(d->replica, -1);
	assert_int_equal(podres_find(m, GPU1, &d), 2);
	assert_int_equal(d[0].replica, 0); /* sorted by replica */
	assert_int_equal(d[1].replica, 3);
	assert_string_equal(d[1].id, GPU1 "::3");
	assert_string_equal(d[0].resource, "nvidia.com/gpu.shared");
	assert_int_equal(podres_find(m, MIG0, &d), 1);
	assert_string_equal(d->container, "mig");
	assert_int_equal(podres_find(m, "GPU-none", &d), 0);
	assert_int_equal(podres_find(m, "0000:3b:00.0", &d), 0);
}

static void test_map_from_bytes(void **state)
{
	size_t len;
	_cleanup_free_ uint8_t *buf = pack_response(&len);
	_cleanup_(podres_map_freep) struct podres_map *m = NULL;
	struct gerr err = {0};
	assert_int_equal(podres_map_from_list(buf, len, NULL, &m, &err), 0);
	check_map(m);
}

static void test_extra_resource_names(void **state)
{
	size_t len;
	_cleanup_free_ uint8_t *buf = pack_response(&len);
	_cleanup_(podres_map_freep) struct podres_map *m = NULL;
	const char *extra[] = {"example.com/nic", NULL};
	assert_int_equal(podres_map_from_list(buf, len, extra, &m, NULL), 0);
	assert_int_equal(m->n, 5);
}

#define CDI_NAME "k8s.gpu.nvidia.com/claim=0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f-gpu-3"

/*
 * A container holding one DRA claim (kubelet's dynamic_resources): a GPU of gpu.nvidia.com, a
 * device of another driver, and two resources without a pool or device name (left out).
 */
static uint8_t *pack_dynamic(size_t *len)
{
	V1__CDIDevice cdi = V1__CDIDEVICE__INIT;
	cdi.name = CDI_NAME;
	V1__CDIDevice *cdis[] = {&cdi};
	V1__ClaimResource gpu = V1__CLAIM_RESOURCE__INIT, nic = V1__CLAIM_RESOURCE__INIT,
			  nopool = V1__CLAIM_RESOURCE__INIT, nodev = V1__CLAIM_RESOURCE__INIT;
	gpu.driver_name = "gpu.nvidia.com", gpu.pool_name = "node-1", gpu.device_name = "gpu-3";
	gpu.n_cdi_devices = 1, gpu.cdi_devices = cdis;
	nic.driver_name = "nic.example.com", nic.pool_name = "node-1", nic.device_name = "nic-0";
	nopool.driver_name = "gpu.nvidia.com", nopool.device_name = "gpu-4";
	nodev.driver_name = "gpu.nvidia.com", nodev.pool_name = "node-1";
	V1__ClaimResource *res[] = {&gpu, &nic, &nopool, &nodev};
	V1__DynamicResource dr = V1__DYNAMIC_RESOURCE__INIT;
	dr.claim_name = "train-gpu", dr.claim_namespace = "ml", dr.n_claim_resources = 4, dr.claim_resources = res;
	V1__DynamicResource *drs[] = {&dr};
	V1__ContainerResources c = V1__CONTAINER_RESOURCES__INIT;
	c.name = "trainer", c.n_dynamic_resources = 1, c.dynamic_resources = drs;
	return podres_test_pack_one("ml", "job-dra", &c, len);
}

static void test_dynamic_resources(void **state)
{
	size_t len;
	_cleanup_free_ uint8_t *buf = pack_dynamic(&len);
	_cleanup_(podres_map_freep) struct podres_map *m = NULL;
	const struct podres_device *d = NULL;
	char key[128];

	assert_int_equal(podres_map_from_list(buf, len, NULL, &m, NULL), 0);
	assert_int_equal(m->n, 2); /* the GPU and the NIC; no pool or no device name: left out */
	assert_int_equal(podres_dra_key(key, sizeof(key), "gpu.nvidia.com", "node-1", "gpu-3"), 0);
	assert_string_equal(key, "gpu.nvidia.com/node-1/gpu-3");
	assert_int_equal(podres_find(m, key, &d), 1);
	assert_string_equal(d->pod, "job-dra");
	assert_string_equal(d->ns, "ml");
	assert_string_equal(d->container, "trainer");
	assert_string_equal(d->claim, "train-gpu");
	assert_string_equal(d->claim_ns, "ml");
	assert_string_equal(d->driver, "gpu.nvidia.com");
	assert_string_equal(d->pool, "node-1");
	assert_string_equal(d->dra_device, "gpu-3");
	assert_int_equal(d->replica, -1);
	assert_int_equal(podres_find(m, "nic.example.com/node-1/nic-0", &d), 1);
	assert_int_equal(podres_find(m, "gpu-3", &d), 0); /* never under the bare name */
	assert_int_equal(podres_dra_key(key, 8, "gpu.nvidia.com", "node-1", "gpu-3"), -ENAMETOOLONG);
}

static void test_garbage(void **state)
{
	struct podres_map *m = NULL;
	struct gerr err = {0};
	const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01};
	assert_int_equal(podres_map_from_list(junk, sizeof(junk), NULL, &m, &err), -EBADMSG);
	assert_null(m);
	assert_non_null(strstr(err.msg, "ListPodResourcesResponse"));
}

static void test_missing_socket(void **state)
{
	struct podres_map *m = NULL;
	struct gerr err = {0};
	assert_int_equal(podres_list("/nonexistent-root", NULL, 1000, NULL, &m, &err), -ENOENT);
	assert_null(m);
	assert_non_null(strstr(err.msg, "/nonexistent-root/var/lib/kubelet/pod-resources/kubelet.sock"));
	assert_non_null(strstr(err.msg, "hostPath"));
}

/* A socket file nobody listens on: the call fails fast with UNAVAILABLE, not a hang. */
static void test_dead_socket(void **state)
{
	char dir[] = "/tmp/podres-dead-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/kubelet.sock", dir);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd); /* bound, never listened: connect gets ECONNREFUSED */
	struct podres_map *m = NULL;
	struct gerr err = {0};
	int r = podres_list(NULL, path, 3000, NULL, &m, &err);
	assert_true(r == -ECONNREFUSED || r == -ETIMEDOUT);
	assert_null(m);
	assert_non_null(strstr(err.msg, "/v1.PodResourcesLister/List"));
	unlink(path);
	rmdir(dir);
}

struct standin {
	pid_t pid;
	char dir[64];
	char sock[128];
	char pods[128];
};

static void standin_start(struct standin *s, const char *pods_json, const char *delay)
{
	const char *src = getenv("GPULET_SRC");
	assert_non_null(src); /* set by CTest; run through ctest */
	snprintf(s->dir, sizeof(s->dir), "/tmp/podres-py-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->sock, sizeof(s->sock), "%s/kubelet.sock", s->dir);
	snprintf(s->pods, sizeof(s->pods), "%s/pods.json", s->dir);
	assert_int_equal(write_file_atomic(s->pods, pods_json, strlen(pods_json), 0644, NULL), 0);
	char ready[160], script[4096];
	snprintf(ready, sizeof(ready), "%s/ready", s->dir);
	snprintf(script, sizeof(script), "%s/tests/integration/podres_standin.py", src);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		execl("/usr/bin/python3", "python3", script, s->sock, s->pods, "--ready", ready, "--delay", delay,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300 && access(ready, F_OK) != 0; i++) {
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(access(ready, F_OK), 0); /* python3-grpcio stand-in did not come up */
}

static void standin_stop(struct standin *s)
{
	kill(s->pid, SIGTERM);
	int st;
	waitpid(s->pid, &st, 0);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	assert_int_equal(system(cmd), 0);
}

static const char pods_json[] =
    "[{\"name\":\"job-a\",\"namespace\":\"ml\",\"containers\":[{\"name\":\"trainer\",\"devices\":["
    "{\"resource_name\":\"nvidia.com/gpu\",\"device_ids\":[\"" GPU0 "\"]},"
    "{\"resource_name\":\"example.com/nic\",\"device_ids\":[\"0000:3b:00.0\"]}]}]},"
    "{\"name\":\"svc-b\",\"namespace\":\"web\",\"containers\":["
    "{\"name\":\"infer\",\"devices\":[{\"resource_name\":\"nvidia.com/gpu.shared\","
    "\"device_ids\":[\"" GPU1 "::3\",\"" GPU1 "::0\"]}]},"
    "{\"name\":\"mig\",\"devices\":[{\"resource_name\":\"nvidia.com/mig-1g.5gb\",\"device_ids\":[\"" MIG0 "\"]}]}]}]";

static void test_list_against_grpcio(void **state)
{
	struct standin s;
	standin_start(&s, pods_json, "0");
	_cleanup_(podres_map_freep) struct podres_map *m = NULL;
	struct gerr err = {0};
	int r = podres_list(NULL, s.sock, 5000, NULL, &m, &err);
	if (r < 0)
		fprintf(stderr, "podres_list: %s\n", err.msg);
	assert_int_equal(r, 0);
	check_map(m);

	/* an RPC the server does not have → UNIMPLEMENTED → -EOPNOTSUPP */
	char target[160];
	snprintf(target, sizeof(target), "unix://%s", s.sock);
	void *resp = NULL;
	size_t len = 0;
	r = grpc_unary_call(target, "/v1.PodResourcesLister/Nope", "", 0, &resp, &len, 5000, &err);
	assert_int_equal(r, -EOPNOTSUPP);
	assert_null(resp);
	standin_stop(&s);
}

/* A kubelet slower than the deadline: the call returns -ETIMEDOUT near the deadline, not later. */
static void test_deadline(void **state)
{
	struct standin s;
	standin_start(&s, "[]", "3");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct podres_map *m = NULL;
	struct gerr err = {0};
	assert_int_equal(podres_list(NULL, s.sock, 300, NULL, &m, &err), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(took < 2.5);
	standin_stop(&s);
}

/* The cache keeps the last good map when kubelet goes away, and counts the failure. */
static void test_cache_refresh(void **state)
{
	struct standin s;
	standin_start(&s, pods_json, "0");
	struct podres_cache c;
	assert_int_equal(podres_cache_start(&c, NULL, s.sock, 200, NULL, NULL), 0);
	pthread_mutex_lock(&c.lock);
	check_map(c.map);
	assert_int_equal(c.refreshes, 1);
	pthread_mutex_unlock(&c.lock);
	/* pods move: the refresher picks the new answer up */
	assert_int_equal(write_file_atomic(s.pods, "[]", 2, 0644, NULL), 0);
	size_t n = 99;
	for (int i = 0; i < 100 && n != 0; i++) {
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&c.lock);
		n = c.map->n;
		pthread_mutex_unlock(&c.lock);
	}
	assert_int_equal(n, 0);
	podres_cache_stop(&c);
	standin_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_map_from_bytes),      cmocka_unit_test(test_extra_resource_names),
	    cmocka_unit_test(test_dynamic_resources),   cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_missing_socket),      cmocka_unit_test(test_dead_socket),
	    cmocka_unit_test(test_list_against_grpcio), cmocka_unit_test(test_deadline),
	    cmocka_unit_test(test_cache_refresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
