/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the Node is told (plugin/node_health.h): the GPUHealthy condition's status, reason and message from
 * the transitions the health watcher reports. No API server here: the unit's thread finds none configured
 * and stays quiet; the verdict is what it would apply (the real API server: tests/k8s/test_k8s_node_health.py).
 * The round's child (plugin/node_health_int.h): the real gpulet's answer, one that never answers (killed),
 * one that answers garbage, and a request that is not one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/node_health_int.h"

#define G0 "GPU-00000000-0000-0000-0000-000000000000"
#define G1 "GPU-11111111-1111-1111-1111-111111111111"

static struct node_health_reporter *start(void)
{
	const struct node_health_options o = {.node_name = "node-1", .kubeconfig = NULL};
	struct node_health_reporter *nh = NULL;
	struct gerr err = {0};

	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(node_health_start(&o, &nh, &err), 0);
	return nh;
}

static void note(struct node_health_reporter *nh, const char *uuid, int index, int gi, enum health_kind kind,
		 unsigned xid, bool healthy, const char *reason)
{
	const struct node_health_fault f = {.uuid = uuid,
					    .index = index,
					    .gi = gi,
					    .ci = gi >= 0 ? 0 : -1,
					    .kind = kind,
					    .xid = xid,
					    .healthy = healthy,
					    .reason = reason};

	node_health_note(nh, &f);
}

/* a node of two GPUs, the second with one MIG instance (gi 1, ci 0) */
static struct node *two_gpus(bool with_mig)
{
	struct node *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	n->n_gpus = 2;
	n->gpus = calloc(2, sizeof(*n->gpus));
	assert_non_null(n->gpus);
	strcpy(n->gpus[0].uuid, G0);
	strcpy(n->gpus[1].uuid, G1);
	if (with_mig) {
		n->gpus[1].n_migs = 1;
		n->gpus[1].migs = calloc(1, sizeof(*n->gpus[1].migs));
		assert_non_null(n->gpus[1].migs);
		n->gpus[1].migs[0].gi = 1;
		n->gpus[1].migs[0].ci = 0;
	}
	return n;
}

static void test_verdict(void **state)
{
	struct node_health_reporter *nh = start();
	struct node *n = two_gpus(true);
	struct node_health_verdict v;

	(void)state;
	node_health_gpus(nh, n);
	node_health_verdict(nh, &v);
	assert_true(v.healthy);
	assert_string_equal(v.reason, "GPUsHealthy");
	assert_string_equal(v.message, "all 2 GPUs healthy (gpulet device plugin)");

	note(nh, G0, 0, -1, HEALTH_XID, 48, false, "XID 48 DBE");
	node_health_verdict(nh, &v);
	assert_false(v.healthy);
	assert_string_equal(v.reason, "XID48");
	assert_string_equal(v.message, "1 of 2 GPUs unhealthy: GPU 0 " G0 ": XID 48 DBE");

	/* the worst class names the reason, every fault is in the message; a repeat changes nothing */
	note(nh, G1, 1, 1, HEALTH_ECC_DBE, 0, false, "double-bit ECC");
	note(nh, G0, 0, -1, HEALTH_XID, 48, false, "XID 48 DBE");
	node_health_verdict(nh, &v);
	assert_string_equal(v.reason, "ECCUncorrectable");
	assert_non_null(strstr(v.message, "2 of 2 GPUs unhealthy"));
	assert_non_null(strstr(v.message, "GPU 1 " G1 " MIG 1/0: double-bit ECC"));
	note(nh, G0, 0, -1, HEALTH_GPU_LOST, 79, false, "fallen off the bus");
	node_health_verdict(nh, &v);
	assert_string_equal(v.reason, "GPULost");

	/* a MIG instance that is no longer there (re-partition) is forgotten; a whole GPU never is */
	node_free(n);
	n = two_gpus(false);
	node_health_gpus(nh, n);
	node_health_verdict(nh, &v);
	assert_string_equal(v.reason, "GPULost");
	assert_non_null(strstr(v.message, "1 of 2"));
	assert_null(strstr(v.message, G1));

	/* recovery of the whole GPU clears it: all healthy again */
	note(nh, G0, 0, -1, HEALTH_RECOVERED, 0, true, "");
	node_health_verdict(nh, &v);
	assert_true(v.healthy);
	node_health_stop(nh);
	node_free(n);
}

static void test_recovery_of_an_instance(void **state)
{
	struct node_health_reporter *nh = start();
	struct node *n = two_gpus(true);
	struct node_health_verdict v;

	(void)state;
	node_health_gpus(nh, n);
	note(nh, G1, 1, 1, HEALTH_XID, 31, false, "XID 31");
	note(nh, G1, 1, -1, HEALTH_NVML_ERROR, 0, false, "cannot register events");
	node_health_verdict(nh, &v);
	assert_string_equal(v.reason, "XID31");
	assert_non_null(strstr(v.message, "1 of 2 GPUs unhealthy"));
	/* the instance recovers: the GPU's own fault stays */
	note(nh, G1, 1, 1, HEALTH_RECOVERED, 0, true, "");
	node_health_verdict(nh, &v);
	assert_string_equal(v.reason, "NVMLError");
	/* empty or unknown UUIDs are not faults of any GPU */
	note(nh, "", -1, -1, HEALTH_XID, 13, false, "?");
	node_health_verdict(nh, &v);
	assert_string_equal(v.reason, "NVMLError");
	node_health_stop(nh);
	node_free(n);
}

static struct node_health_request *request(void)
{
	static struct node_health_request q;

	memset(&q, 0, sizeof(q));
	q.magic = NODE_HEALTH_MAGIC;
	q.size = sizeof(q);
	snprintf(q.node, sizeof(q.node), "node-1");
	snprintf(q.kubeconfig, sizeof(q.kubeconfig), "/nonexistent/kubeconfig");
	q.apply = true;
	q.n_events = 1;
	snprintf(q.events[0].reason, sizeof(q.events[0].reason), "GPUUnhealthy");
	return &q;
}

/* The real gpulet as the child: the request crosses, the answer comes back (no kubeconfig: disabled). */
static void test_round_real(void **state)
{
	const char *build = getenv("GPULET_BUILD");
	char exe[4096];
	struct node_health_reply p;
	struct gerr err = {0};

	(void)state;
	assert_non_null(build);
	snprintf(exe, sizeof(exe), "%s/gpulet", build);
	assert_int_equal(node_health_round(exe, request(), &p, 30, &err), 0);
	assert_true(p.disabled);
	assert_true(p.r < 0);
	assert_false(p.applied);
	assert_int_equal(p.n_done, 0);
	assert_non_null(strstr(p.error, "/nonexistent/kubeconfig"));
}

static void script(char *path, size_t size, const char *body)
{
	FILE *f;

	snprintf(path, size, "/tmp/test_node_health.XXXXXX");
	assert_int_not_equal(mkdtemp(path), NULL);
	strncat(path, "/child", size - strlen(path) - 1);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(path, 0700), 0);
}

static void unscript(char *path)
{
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}

/* A child that never answers is killed at the timeout; one that answers garbage is an error. */
static void test_round_bad_child(void **state)
{
	struct node_health_reply p;
	struct gerr err = {0};
	char path[256];

	(void)state;
	script(path, sizeof(path), "exec sleep 1000");
	assert_int_equal(node_health_round(path, request(), &p, 1, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "killed"));
	unscript(path);

	script(path, sizeof(path), "cat >/dev/null; echo not an answer");
	assert_int_equal(node_health_round(path, request(), &p, 30, &err), -EIO);
	unscript(path);
}

/* The child's side refuses what is not a whole request of this build, and sends nothing. */
static void test_serve_refuses(void **state)
{
	struct node_health_request *q = request();
	struct gerr err = {0};
	int in[2], out[2];

	(void)state;
	memset(q->node, 'x', sizeof(q->node)); /* not ended */
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	assert_int_equal(write(in[1], q, sizeof(*q)), (ssize_t)sizeof(*q));
	close(in[1]);
	assert_int_equal(node_health_serve(in[0], out[1], &err), -EINVAL);
	close(in[0]);
	close(out[0]);
	close(out[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_verdict),       cmocka_unit_test(test_recovery_of_an_instance),
	    cmocka_unit_test(test_round_real),    cmocka_unit_test(test_round_bad_child),
	    cmocka_unit_test(test_serve_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
