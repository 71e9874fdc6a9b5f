/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watcher against the fake NVML (build/fakenvml/libnvidia-ml.so.1): events are injected
 * through FAKE_NVML_EVENTS lines, GPU loss and MIG re-partition by rewriting the fixture, kernel-log
 * XIDs by appending to a log file the watcher follows.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "plugin/health.h"
#include "plugin/resources.h"

#define MAX_EVENTS 512

struct collector {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct health_event ev[MAX_EVENTS];
	double at[MAX_EVENTS]; /* monotonic seconds when the callback ran */
	struct node *mig_node; /* taken from the latest HEALTH_MIG_CHANGED */
	size_t n;
};

static struct collector col = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_event(struct health_event *ev, void *userdata)
{
	assert_ptr_equal(userdata, &col);
	pthread_mutex_lock(&col.lock);
	if (ev->kind == HEALTH_MIG_CHANGED) {
		assert_non_null(ev->node);
		if (col.mig_node)
			node_free(col.mig_node);
		col.mig_node = TAKE_PTR(ev->node);
	}
	if (col.n < MAX_EVENTS) {
		col.at[col.n] = mono();
		col.ev[col.n++] = *ev;
	}
	pthread_cond_broadcast(&col.cond);
	pthread_mutex_unlock(&col.lock);
}

static void col_reset(void)
{
	pthread_mutex_lock(&col.lock);
	col.n = 0;
	if (col.mig_node)
		node_free(col.mig_node);
	col.mig_node = NULL;
	pthread_mutex_unlock(&col.lock);
}

/* Index of the first event from `from` on matching kind (and uuid unless NULL), or -1 after timeout_ms. */
static long col_wait(size_t from, enum health_kind kind, const char *uuid, int timeout_ms)
{
	double deadline = mono() + timeout_ms / 1000.0;
	long found = -1;

	pthread_mutex_lock(&col.lock);
	while (found < 0) {
		for (size_t i = from; i < col.n && found < 0; i++)
			if (col.ev[i].kind == kind && (!uuid || streq(col.ev[i].uuid, uuid)))
				found = (long)i;
		if (found >= 0 || mono() >= deadline)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 5 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&col.cond, &col.lock, &ts);
	}
	pthread_mutex_unlock(&col.lock);
	return found;
}

static size_t col_count(void)
{
	pthread_mutex_lock(&col.lock);
	size_t n = col.n;
	pthread_mutex_unlock(&col.lock);
	return n;
}

/* ---- a private copy of the dgx-a100 fixture, an events file, a kernel log file ---- */

struct env {
	char dir[64];
	char fixture[128], events[128], klog[128];
	json_t *fx;
	struct nvml *nv;
	struct node *node;
	struct health_watcher *w;
};

static void fixture_write(struct env *e)
{
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp", e->fixture);
	assert_int_equal(json_dump_file(e->fx, tmp, JSON_INDENT(1)), 0);
	assert_int_equal(rename(tmp, e->fixture), 0); /* new inode: the fake re-reads it */
}

static void append(const char *path, const char *fmt, ...) _printf_(2, 3);
static void append(const char *path, const char *fmt, ...)
{
	FILE *f = fopen(path, "a");
	va_list ap;
	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static struct nvml *shared_nv;

static json_t *gpu_json(struct env *e, size_t i)
{
	return json_array_get(json_object_get(e->fx, "gpus"), i);
}

/* Set one telemetry value of GPU i (the fake's field values, ECC, ...) and rewrite the fixture. */
static void set_telemetry(struct env *e, size_t i, const char *key, json_t *v)
{
	json_t *g = gpu_json(e, i), *t = json_object_get(g, "telemetry");
	if (!t) {
		t = json_object();
		json_object_set_new(g, "telemetry", t);
	}
	json_object_set_new(t, key, v);
	fixture_write(e);
}

static void env_setup(struct env *e)
{
	const char *src = getenv("GPULET_SRC"), *lib = getenv("FAKE_NVML_LIB");
	char path[512];
	json_error_t jerr;
	struct gerr err = {0};

	assert_non_null(src);
	assert_non_null(lib);
	snprintf(e->dir, sizeof(e->dir), "/tmp/gpulet-health-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->fixture, sizeof(e->fixture), "%s/node.json", e->dir);
	snprintf(e->events, sizeof(e->events), "%s/events", e->dir);
	snprintf(e->klog, sizeof(e->klog), "%s/kern.log", e->dir);
	snprintf(path, sizeof(path), "%s/tests/fixtures/dgx-a100.json", src);
	e->fx = json_load_file(path, 0, &jerr);
	assert_non_null(e->fx);
	fixture_write(e);
	append(e->events, "# events\n");
	append(e->klog, "Dec  2 10:00:00 node kernel: [    1.0] Linux version\n");
	setenv("FAKE_NVML_FIXTURE", e->fixture, 1);
	setenv("FAKE_NVML_EVENTS", e->events, 1);
	/*
	 * One NVML for the whole run, never closed: the fake keeps its parsed fixture in library
	 * globals, which a dlclose() would turn into leaks under ASan. Each test points the fake at
	 * its own fixture file through the environment; the fake re-reads it on change.
	 */
	if (!shared_nv && nvml_open(lib, NULL, &shared_nv, &err) < 0)
		fail_msg("nvml_open %s: %s", lib, err.msg);
	e->nv = shared_nv;
	if (node_load(e->nv, "/", &e->node, &err) < 0)
		fail_msg("node_load: %s", err.msg);
	assert_int_equal(e->node->n_gpus, 8);
	col_reset();
}

static void env_start(struct env *e, struct health_options *o)
{
	struct gerr err = {0};
	o->cb = on_event;
	o->userdata = &col;
	o->kernel_log = e->klog;
	if (health_start(e->nv, e->node, o, &e->w, &err) < 0)
		fail_msg("health_start: %s", err.msg);
}

static void env_teardown(struct env *e)
{
	char cmd[128];
	health_stop(e->w);
	node_free(e->node);
	json_decref(e->fx);
	col_reset();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	assert_int_equal(system(cmd), 0);
}

static struct health_event ev_at(long i)
{
	assert_true(i >= 0);
	pthread_mutex_lock(&col.lock);
	struct health_event ev = col.ev[i];
	pthread_mutex_unlock(&col.lock);
	return ev;
}

/* ---- tests ---- */

static void test_xid_events(void **state)
{
	struct env e = {0};
	struct health_options o;
	long i;

	env_setup(&e);
	health_options_default(&o);
	env_start(&e, &o);
	const char *g2 = e.node->gpus[2].uuid;

	append(e.events, "xid 2 48\n");
	i = col_wait(0, HEALTH_XID, g2, 2000);
	struct health_event ev = ev_at(i);
	assert_true(ev.transition);
	assert_false(ev.healthy);
	assert_int_equal(ev.xid, 48);
	assert_int_equal(ev.index, 2);
	assert_int_equal(ev.gi, -1);
	assert_string_equal(ev.source, "nvml");
	assert_non_null(strstr(ev.reason, "XID 48 GPU_ECC_DBE"));

	/* a second XID on the same GPU is reported but is no new transition */
	size_t from = col_count();
	append(e.events, "xid 2 62\n");
	ev = ev_at(col_wait(from, HEALTH_XID, g2, 2000));
	assert_false(ev.transition);
	assert_int_equal(ev.xid, 62);

	/* application error 13: reported as ignored, no transition */
	from = col_count();
	append(e.events, "xid 3 13\n");
	ev = ev_at(col_wait(from, HEALTH_XID, e.node->gpus[3].uuid, 2000));
	assert_false(ev.transition);
	assert_true(ev.healthy);
	assert_non_null(strstr(ev.reason, "ignored"));

	/* ECC: DBE unhealthy, SBE informational */
	from = col_count();
	append(e.events, "sbe 4\ndbe 5\n");
	ev = ev_at(col_wait(from, HEALTH_ECC_SBE, e.node->gpus[4].uuid, 2000));
	assert_false(ev.transition);
	ev = ev_at(col_wait(from, HEALTH_ECC_DBE, e.node->gpus[5].uuid, 2000));
	assert_true(ev.transition);
	assert_false(ev.healthy);

	/* MIG-attributed XID: the fake fills gi/ci from the MIG UUID (GPU 6, 2g.10gb in GI 3) */
	from = col_count();
	append(e.events, "xid MIG-5a1c0002-1002-5002-8002-a100c0de0002 94\n");
	ev = ev_at(col_wait(from, HEALTH_XID, e.node->gpus[6].uuid, 2000));
	assert_int_equal(ev.gi, 3);
	assert_int_equal(ev.ci, 0);
	assert_true(ev.transition);

	/* the event applied to resources marks exactly that instance (mixed strategy) */
	struct resource_options ro = {.mig_strategy = MIG_STRATEGY_MIXED};
	struct resource_set *s = NULL;
	assert_int_equal(resources_build(e.node, &ro, &s, NULL), 0);
	assert_int_equal(resources_set_health(s, e.node, ev.uuid, ev.gi, ev.ci, ev.healthy, ev.reason), 1);
	const struct resource *r = resources_find(s, "nvidia.com/mig-2g.10gb");
	for (size_t k = 0; k < r->n_devices; k++)
		assert_int_equal(r->devices[k].healthy,
				 !streq(r->devices[k].uuid, "MIG-5a1c0002-1002-5002-8002-a100c0de0002"));
	resource_set_free(s);

	/* XID 79 through NVML: the GPU is lost */
	from = col_count();
	append(e.events, "xid 7 79\n");
	ev = ev_at(col_wait(from, HEALTH_GPU_LOST, e.node->gpus[7].uuid, 2000));
	assert_int_equal(ev.xid, 79);
	env_teardown(&e);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void test_latency(void **state)
{
	enum { N = 100 };
	struct env e = {0};
	struct health_options o;
	double lat[N], sum = 0;

	env_setup(&e);
	health_options_default(&o);
	env_start(&e, &o);
	for (int k = 0; k < N; k++) {
		/* let the watcher settle into its wait, at a different phase of the fake's 5 ms poll each time */
		usleep(2000 + (unsigned)(k * 370) % 8000);
		size_t from = col_count();
		double t0 = mono();
		append(e.events, "xid %d 48\n", k % 8);
		long i = col_wait(from, HEALTH_XID, NULL, 2000);
		assert_true(i >= 0);
		lat[k] = col.at[i] - t0;
		sum += lat[k];
	}
	/* no timed assertion (CONVENTIONS 9): the figures are printed for the record */
	qsort(lat, N, sizeof(lat[0]), cmp_double);
	printf("# event-to-callback latency, %d XIDs through the fake NVML (which polls its events file every "
	       "5 ms): mean %.2f ms, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
	       N, sum / N * 1000, lat[N / 2] * 1000, lat[N * 99 / 100] * 1000, lat[N - 1] * 1000);
	env_teardown(&e);
}

static void test_recovery(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	o.quiet_ms = 300;
	o.wait_ms = 20;
	env_start(&e, &o);
	const char *g1 = e.node->gpus[1].uuid, *g0 = e.node->gpus[0].uuid;

	/* 94 is an application-class XID (contained error): back after the quiet period */
	append(e.events, "xid 1 94\nxid 0 79\n");
	long bad = col_wait(0, HEALTH_XID, g1, 2000);
	assert_true(bad >= 0);
	assert_true(col_wait(0, HEALTH_GPU_LOST, g0, 2000) >= 0);
	long good = col_wait(0, HEALTH_RECOVERED, g1, 3000);
	assert_true(good > bad);
	struct health_event ev = ev_at(good);
	assert_true(ev.transition);
	assert_true(ev.healthy);
	assert_int_equal(ev.gi, -1);
	assert_non_null(strstr(ev.reason, "XID 94"));
	double quiet = col.at[good] - col.at[bad];
	assert_true(quiet >= 0.29); /* not before the quiet period (a correctness bound, not a speed one) */

	/* a new error restarts the quiet period */
	size_t from = col_count();
	append(e.events, "xid 1 94\n");
	bad = col_wait(from, HEALTH_XID, g1, 2000);
	usleep(200 * 1000);
	append(e.events, "xid 1 94\n");
	good = col_wait(from, HEALTH_RECOVERED, g1, 3000);
	assert_true(good > 0);
	assert_true(col.at[good] - col.at[bad] >= 0.49);

	/* the lost GPU never comes back */
	assert_int_equal(col_wait(0, HEALTH_RECOVERED, g0, 800), -1);

	/* an XID on a GPU NVML now reports lost: the recovery check finds it and keeps it down */
	from = col_count();
	json_object_set_new(gpu_json(&e, 3), "lost", json_true());
	append(e.events, "xid 3 94\n");
	fixture_write(&e);
	assert_true(col_wait(from, HEALTH_GPU_LOST, e.node->gpus[3].uuid, 3000) >= 0);
	assert_int_equal(col_wait(from, HEALTH_RECOVERED, e.node->gpus[3].uuid, 800), -1);
	env_teardown(&e);
}

/*
 * Issue 23 §3: reset-class XIDs (48, 95, 119, 140) and unknown ones never come back on silence;
 * only when NVML says the GPU was reset (recovery action none, nothing pending).
 */
static void test_reset_class_needs_nvml(void **state)
{
	static const unsigned codes[] = {48, 95, 119, 140, 4242};
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	o.quiet_ms = 200;
	o.wait_ms = 20;
	env_start(&e, &o);
	for (size_t k = 0; k < ELEMENTSOF(codes); k++)
		append(e.events, "xid %zu %u\n", k + 1, codes[k]);
	for (size_t k = 0; k < ELEMENTSOF(codes); k++)
		assert_true(col_wait(0, HEALTH_XID, e.node->gpus[k + 1].uuid, 2000) >= 0);
	/* the fixture has no recovery-action field (an older driver): down for good, and it says why */
	long why;
	for (size_t k = 0; k < ELEMENTSOF(codes); k++)
		assert_int_equal(col_wait(0, HEALTH_RECOVERED, e.node->gpus[k + 1].uuid, k ? 0 : 900), -1);
	for (why = 0; why < (long)col_count() && !strstr(ev_at(why).reason, "stays unhealthy"); why++)
		;
	assert_true(why < (long)col_count());
	assert_false(ev_at(why).healthy);
	assert_false(ev_at(why).transition);

	/* NVML says a reset is still needed, or a row remap is pending: still down */
	set_telemetry(&e, 1, "recovery_action", json_integer(1));
	set_telemetry(&e, 2, "recovery_action", json_integer(0));
	set_telemetry(&e, 2, "remapped_rows",
		      json_pack("{s:i,s:i,s:b,s:b}", "correctable", 0, "uncorrectable", 1, "pending", 1, "failure", 0));
	size_t from = col_count();
	assert_int_equal(col_wait(from, HEALTH_RECOVERED, NULL, 900), -1);

	/* after the reset: recovery action none, nothing pending -> back, GPU by GPU */
	set_telemetry(&e, 1, "recovery_action", json_integer(0));
	long good = col_wait(from, HEALTH_RECOVERED, e.node->gpus[1].uuid, 3000);
	assert_true(good >= 0);
	assert_non_null(strstr(ev_at(good).reason, "reset"));
	assert_int_equal(col_wait(from, HEALTH_RECOVERED, e.node->gpus[2].uuid, 0), -1);
	env_teardown(&e);
}

static void test_lost_and_mig_poll(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	o.mig_poll_ms = 50;
	o.wait_ms = 20;
	env_start(&e, &o);

	/* GPU 4 falls off: the poll reports it lost, and that is no MIG change */
	json_object_set_new(gpu_json(&e, 4), "lost", json_true());
	fixture_write(&e);
	long i = col_wait(0, HEALTH_GPU_LOST, e.node->gpus[4].uuid, 3000);
	assert_true(i >= 0);
	assert_string_equal(ev_at(i).source, "poll");
	assert_int_equal(col_wait(0, HEALTH_MIG_CHANGED, NULL, 300), -1);

	/* an XID on GPU 6's 1g.5gb, then GPU 6 is re-partitioned: one 7g.40gb */
	append(e.events, "xid MIG-5a1c0003-1003-5003-8003-a100c0de0003 94\nxid 5 48\n");
	assert_true(col_wait(0, HEALTH_XID, e.node->gpus[5].uuid, 2000) >= 0);
	json_t *mig =
	    json_pack("[{s:i, s:i, s:[i,i], s:[{s:i, s:s, s:s}]}]", "gi", 0, "gi_profile", 4, "placement", 0, 8, "cis",
		      "ci", 0, "uuid", "MIG-77777777-1001-5001-8001-a100c0de0777", "profile_name", "7g.40gb");
	json_object_set_new(gpu_json(&e, 6), "mig", mig);
	size_t from = col_count();
	fixture_write(&e);
	i = col_wait(from, HEALTH_MIG_CHANGED, NULL, 3000);
	assert_true(i >= 0);
	pthread_mutex_lock(&col.lock);
	assert_non_null(col.mig_node);
	assert_int_equal(col.mig_node->gpus[6].n_migs, 1);
	assert_string_equal(col.mig_node->gpus[6].migs[0].profile, "7g.40gb");
	pthread_mutex_unlock(&col.lock);
	/* the plugin rebuilds its resources, then asks for the faults still active: GPU 5 and lost GPU 4,
	 * but not the MIG instance that no longer exists */
	assert_int_equal(col_wait((size_t)i, HEALTH_XID, e.node->gpus[5].uuid, 200), -1);
	health_replay(e.w);
	long r5 = col_wait((size_t)i, HEALTH_XID, e.node->gpus[5].uuid, 1000);
	long r4 = col_wait((size_t)i, HEALTH_GPU_LOST, e.node->gpus[4].uuid, 1000);
	assert_true(r5 > i && r4 > i);
	assert_string_equal(ev_at(r5).source, "replay");
	assert_true(ev_at(r5).transition);
	assert_int_equal(col_wait((size_t)i, HEALTH_XID, e.node->gpus[6].uuid, 300), -1);
	/* and no further change while the layout stays */
	from = col_count();
	assert_int_equal(col_wait(from, HEALTH_MIG_CHANGED, NULL, 300), -1);
	env_teardown(&e);
}

static void test_kernel_log(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	append(e.klog, "NVRM: Xid (PCI:0000:47:00): 79, pid=1, old line before the watcher started\n");
	env_start(&e, &o);
	usleep(100 * 1000);
	assert_int_equal(col_wait(0, HEALTH_GPU_LOST, NULL, 200), -1); /* tail -f: old lines are history */

	append(e.klog, "Dec  2 13:58:45 node kernel: [ 1234.5] NVRM: Xid (PCI:0000:47:00): 79, pid='<unknown>', "
		       "name=<unknown>, GPU has fallen off the bus.\n");
	long i = col_wait(0, HEALTH_GPU_LOST, e.node->gpus[2].uuid, 3000);
	assert_true(i >= 0);
	struct health_event ev = ev_at(i);
	assert_string_equal(ev.source, "kmsg");
	assert_int_equal(ev.xid, 79);
	assert_non_null(strstr(ev.reason, "fallen off the bus"));

	/* a line written in two pieces is one line */
	size_t from = col_count();
	append(e.klog, "kernel: NVRM: Xid (PCI:0000:87:00): 6");
	usleep(50 * 1000);
	append(e.klog, "4, pid=9, Row remap failure\n");
	i = col_wait(from, HEALTH_XID, e.node->gpus[4].uuid, 3000);
	assert_true(i >= 0);
	assert_int_equal(ev_at(i).xid, 64);

	/* rotation: the file is renamed and a new one created; the watcher follows the new one */
	char old[160];
	snprintf(old, sizeof(old), "%s.1", e.klog);
	assert_int_equal(rename(e.klog, old), 0);
	append(e.klog, "NVRM: GPU 0000:0f:00.0: GPU has fallen off the bus.\n");
	from = col_count();
	i = col_wait(0, HEALTH_GPU_LOST, e.node->gpus[1].uuid, 4000);
	assert_true(i >= 0);
	env_teardown(&e);
}

static void test_kernel_log_appears_later(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	assert_int_equal(unlink(e.klog), 0);
	env_start(&e, &o);
	long i = col_wait(0, HEALTH_SOURCE_ERROR, NULL, 2000);
	assert_true(i >= 0);
	assert_non_null(strstr(ev_at(i).reason, "cannot read kernel log"));
	append(e.klog, "first line\n");
	usleep(1500 * 1000); /* the watcher opens it at its next try, about a second later */
	append(e.klog, "NVRM: Xid (PCI:0000:07:00): 79, GPU has fallen off the bus.\n");
	assert_true(col_wait(0, HEALTH_GPU_LOST, e.node->gpus[0].uuid, 3000) >= 0);
	env_teardown(&e);
}

static void test_unsupported_and_wait_error(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	json_object_set_new(gpu_json(&e, 0), "supported_events", json_integer(0));
	fixture_write(&e);
	health_options_default(&o);
	env_start(&e, &o);
	/* reported before health_start returned; the GPU stays healthy */
	long i = col_wait(0, HEALTH_UNSUPPORTED, e.node->gpus[0].uuid, 0);
	assert_true(i >= 0);
	assert_false(ev_at(i).transition);

	append(e.events, "wait_error UNKNOWN\n");
	assert_true(col_wait(0, HEALTH_SOURCE_ERROR, NULL, 2000) >= 0);
	usleep(100 * 1000);
	for (size_t k = 0; k < col_count(); k++)
		assert_true(ev_at((long)k).healthy); /* no GPU marked unhealthy by a wait error (#426) */
	/* and the watcher keeps delivering afterwards */
	append(e.events, "xid 1 48\n");
	assert_true(col_wait(0, HEALTH_XID, e.node->gpus[1].uuid, 2000) >= 0);
	env_teardown(&e);
}

/* Issue 23 §4: a DBE event is its own fault (no XID 48), and XID 48 in the disable list does not hide it. */
static void test_dbe_is_not_xid48(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	o.quiet_ms = 200;
	o.wait_ms = 20;
	assert_int_equal(xid_policy_parse("48", NULL, &o.policy, NULL), 0);
	env_start(&e, &o);
	append(e.events, "dbe 2\n");
	long i = col_wait(0, HEALTH_ECC_DBE, e.node->gpus[2].uuid, 2000);
	assert_true(i >= 0);
	assert_true(ev_at(i).transition);
	assert_false(ev_at(i).healthy);
	assert_int_equal(ev_at(i).xid, 0);
	assert_null(strstr(ev_at(i).reason, "48"));
	/* uncorrectable memory: no recovery on silence */
	assert_int_equal(col_wait(0, HEALTH_RECOVERED, e.node->gpus[2].uuid, 800), -1);
	env_teardown(&e);
}

static void test_inherit(void **state)
{
	struct env e = {0};
	struct health_options o;
	struct health_watcher *next = NULL;

	env_setup(&e);
	health_options_default(&o);
	o.quiet_ms = 600;
	o.wait_ms = 20;
	env_start(&e, &o);
	const char *g1 = e.node->gpus[1].uuid, *g6 = e.node->gpus[6].uuid;
	append(e.events, "xid 1 94\nxid 3 79\nxid MIG-5a1c0003-1003-5003-8003-a100c0de0003 94\n");
	long i = col_wait(0, HEALTH_XID, g6, 2000);
	assert_true(i >= 0);
	double first = col.at[col_wait(0, HEALTH_XID, g1, 0)];

	/* a rebuild: the new watcher takes over before the old one stops */
	size_t from = col_count();
	o.inherit = e.w;
	assert_int_equal(health_start(e.nv, e.node, &o, &next, NULL), 0);
	health_stop(e.w);
	e.w = next;
	/* reported during health_start, before it returned */
	long a = col_wait(from, HEALTH_XID, g1, 0), b = col_wait(from, HEALTH_GPU_LOST, e.node->gpus[3].uuid, 0),
	     c = col_wait(from, HEALTH_XID, g6, 0);
	assert_true(a >= 0 && b >= 0 && c >= 0);
	assert_string_equal(ev_at(a).source, "inherited");
	assert_true(ev_at(a).transition);
	assert_int_equal(ev_at(c).gi, 9);
	/* the quiet period keeps counting from the first error, and the new watcher recovers GPU 1 */
	long good = col_wait(from, HEALTH_RECOVERED, g1, 3000);
	assert_true(good >= 0);
	assert_true(col.at[good] - first >= 0.59);
	/* the lost GPU stays lost */
	assert_int_equal(col_wait(from, HEALTH_RECOVERED, e.node->gpus[3].uuid, 300), -1);
	env_teardown(&e);
}

static void test_disabled(void **state)
{
	struct env e = {0};
	struct health_options o;

	env_setup(&e);
	health_options_default(&o);
	assert_int_equal(xid_policy_parse("all", NULL, &o.policy, NULL), 0);
	env_start(&e, &o);
	append(e.events, "xid 1 48\ndbe 2\n");
	append(e.klog, "NVRM: Xid (PCI:0000:47:00): 48, x\n");
	usleep(300 * 1000);
	assert_int_equal(col_count(), 0);
	env_teardown(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_xid_events),
	    cmocka_unit_test(test_latency),
	    cmocka_unit_test(test_recovery),
	    cmocka_unit_test(test_lost_and_mig_poll),
	    cmocka_unit_test(test_kernel_log),
	    cmocka_unit_test(test_kernel_log_appears_later),
	    cmocka_unit_test(test_unsupported_and_wait_error),
	    cmocka_unit_test(test_dbe_is_not_xid48),
	    cmocka_unit_test(test_reset_class_needs_nvml),
	    cmocka_unit_test(test_inherit),
	    cmocka_unit_test(test_disabled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
