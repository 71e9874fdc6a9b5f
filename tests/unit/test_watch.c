/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVML event watcher (src/nvml/watch.c) against the fake NVML: registration outcomes, every
 * event kind mapped to the caller's GPU slot (slots deliberately numbered unlike NVML indices),
 * MIG instance ids, and the loop going on after failed waits (FAKE_NVML_EVENTS "wait_error").
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

#include "nvml/watch.h"

#define N_GPUS 8
#define MAX_EV 64

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct nvml_watch_event ev[MAX_EV];
	char msg[MAX_EV][128];
	size_t n;
} col = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static char dir[64], fixture[128], events[128];
static struct nvml *nv;

/* slot i watches NVML index N_GPUS-1-i: the callback must name slots, not indices */
static size_t slot_of_index(unsigned index)
{
	return N_GPUS - 1 - index;
}

static void on_event(const struct nvml_watch_event *ev, void *userdata)
{
	assert_ptr_equal(userdata, &col);
	pthread_mutex_lock(&col.lock);
	if (col.n < MAX_EV) {
		col.ev[col.n] = *ev;
		snprintf(col.msg[col.n], sizeof(col.msg[col.n]), "%s", ev->message ? ev->message : "");
		col.ev[col.n].message = col.msg[col.n];
		col.n++;
	}
	pthread_cond_broadcast(&col.cond);
	pthread_mutex_unlock(&col.lock);
}

/* Wait until at least n events were collected (or 3 s passed); returns the count. */
static size_t col_wait(size_t n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3;
	pthread_mutex_lock(&col.lock);
	while (col.n < n && pthread_cond_timedwait(&col.cond, &col.lock, &ts) == 0)
		;
	n = col.n;
	pthread_mutex_unlock(&col.lock);
	return n;
}

static void append(const char *line)
{
	FILE *f = fopen(events, "a");

	assert_non_null(f);
	fprintf(f, "%s\n", line);
	fclose(f);
}

/* Edit GPU `index` of the fixture: set key to value (NULL removes it), written atomically. */
static void fixture_set(size_t index, const char *key, json_t *value)
{
	json_error_t jerr;
	json_t *fx = json_load_file(fixture, 0, &jerr);
	char tmp[160];

	assert_non_null(fx);
	json_t *g = json_array_get(json_object_get(fx, "gpus"), index);
	if (value)
		json_object_set_new(g, key, value);
	else
		json_object_del(g, key);
	snprintf(tmp, sizeof(tmp), "%s.tmp", fixture);
	assert_int_equal(json_dump_file(fx, tmp, 0), 0);
	assert_int_equal(rename(tmp, fixture), 0);
	json_decref(fx);
}

static int setup(void **state)
{
	const char *src = getenv("GPULET_SRC"), *lib = getenv("FAKE_NVML_LIB");
	char cmd[512];
	struct gerr err = {0};

	assert_non_null(src);
	assert_non_null(lib);
	snprintf(dir, sizeof(dir), "/tmp/gpulet-watch-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(fixture, sizeof(fixture), "%s/node.json", dir);
	snprintf(events, sizeof(events), "%s/events", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s/tests/fixtures/dgx-a100.json' '%s' && : > '%s'", src, fixture, events);
	assert_int_equal(system(cmd), 0);
	setenv("FAKE_NVML_FIXTURE", fixture, 1);
	setenv("FAKE_NVML_EVENTS", events, 1);
	if (nvml_open(lib, NULL, &nv, &err) < 0)
		fail_msg("nvml_open %s: %s", lib, err.msg);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	/* NVML stays open: the fake keeps its fixture in globals that a dlclose() would leak */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_no_event_api(void **state)
{
	struct nvml old = *nv;
	struct nvml_watch *w = NULL;
	struct gerr err = {0};

	old.event_set_wait = NULL; /* an NVML without the optional event symbols */
	assert_int_equal(nvml_watch_new(&old, NVML_WATCH_XID_TYPES, N_GPUS, &w, &err), -ENOSYS);
	assert_null(w);
	assert_non_null(strstr(err.msg, "no event API"));
}

struct runner {
	struct nvml_watch *w;
	pthread_t t;
};

static void *run_main(void *arg)
{
	struct runner *r = arg;

	nvml_watch_run(r->w, 20, on_event, &col);
	return NULL;
}

static void test_register_events_and_failed_waits(void **state)
{
	struct runner run = {0};
	struct gerr err = {0};
	size_t n;

	fixture_set(2, "supported_events", json_integer(0)); /* too old for events */
	fixture_set(3, "lost", json_true());
	assert_int_equal(nvml_watch_new(nv, NVML_WATCH_HEALTH_TYPES | nvmlEventMigConfigChange, N_GPUS, &run.w, &err),
			 0);
	for (unsigned i = 0; i < N_GPUS; i++) {
		json_error_t jerr;
		json_t *fx = json_load_file(fixture, 0, &jerr);
		const char *uuid =
		    json_string_value(json_object_get(json_array_get(json_object_get(fx, "gpus"), i), "uuid"));
		nvml_watch_set_gpu(run.w, slot_of_index(i), i, uuid);
		json_decref(fx);
	}
	for (unsigned i = 0; i < N_GPUS; i++) {
		int r = nvml_watch_register(run.w, slot_of_index(i), &err);
		assert_int_equal(r, i == 2 ? -EOPNOTSUPP : i == 3 ? -ENODEV : 0);
		/* an old GPU counts as done; a lost one is to be registered again once it is back */
		assert_int_equal(nvml_watch_registered(run.w, slot_of_index(i)), i != 3);
	}
	assert_int_equal(pthread_create(&run.t, NULL, run_main, &run), 0);

	append("xid 1 79");
	append("dbe 4");
	append("sbe 5");
	append("xid MIG-5a1c0003-1003-5003-8003-a100c0de0003 94");
	append("xid 2 13"); /* not registered: never delivered */
	assert_int_equal(col_wait(4), 4);
	fixture_set(7, "mig", json_array()); /* GPU 7's instances gone: the fake queues a MIG config change */
	assert_int_equal(col_wait(5), 5);
	pthread_mutex_lock(&col.lock);
	assert_int_equal(col.ev[0].kind, NVML_WATCH_XID);
	assert_int_equal(col.ev[0].gpu, slot_of_index(1));
	assert_int_equal(col.ev[0].xid, 79);
	assert_int_equal(col.ev[0].gi, -1);
	assert_int_equal(col.ev[1].kind, NVML_WATCH_ECC_DBE);
	assert_int_equal(col.ev[1].gpu, slot_of_index(4));
	assert_int_equal(col.ev[2].kind, NVML_WATCH_ECC_SBE);
	assert_int_equal(col.ev[2].gpu, slot_of_index(5));
	assert_int_equal(col.ev[3].kind, NVML_WATCH_XID);
	assert_int_equal(col.ev[3].gpu, slot_of_index(6));
	assert_int_equal(col.ev[3].gi, 9);
	assert_int_equal(col.ev[3].ci, 0);
	assert_int_equal(col.ev[4].kind, NVML_WATCH_MIG_CHANGE);
	assert_int_equal(col.ev[4].gpu, slot_of_index(7));
	pthread_mutex_unlock(&col.lock);

	/* two failed waits in a row are one streak; the loop goes on and delivers again */
	append("wait_error UNKNOWN");
	append("wait_error GPU_IS_LOST");
	append("xid 0 48");
	assert_int_equal(col_wait(8), 8);
	pthread_mutex_lock(&col.lock);
	assert_int_equal(col.ev[5].kind, NVML_WATCH_WAIT_ERROR);
	assert_true(col.ev[5].first);
	assert_int_equal(col.ev[5].error, -EIO);
	assert_true(col.ev[5].message[0] != '\0');
	assert_int_equal(col.ev[6].kind, NVML_WATCH_WAIT_ERROR);
	assert_false(col.ev[6].first);
	assert_int_equal(col.ev[6].error, -ENODEV);
	assert_int_equal(col.ev[7].kind, NVML_WATCH_XID);
	assert_int_equal(col.ev[7].gpu, slot_of_index(0));
	assert_int_equal(col.ev[7].xid, 48);
	pthread_mutex_unlock(&col.lock);

	/* after a successful wait a new failure starts a new streak */
	append("wait_error UNKNOWN");
	assert_int_equal(col_wait(9), 9);
	assert_true(col.ev[8].first);

	/* the lost GPU is back: registered again while the loop runs, and its events arrive */
	fixture_set(3, "lost", NULL);
	assert_int_equal(nvml_watch_register(run.w, slot_of_index(3), &err), 0);
	assert_true(nvml_watch_registered(run.w, slot_of_index(3)));
	append("xid 3 31");
	n = col_wait(10);
	assert_int_equal(n, 10);
	assert_int_equal(col.ev[9].gpu, slot_of_index(3));
	assert_int_equal(col.ev[9].xid, 31);

	nvml_watch_interrupt(run.w);
	assert_int_equal(pthread_join(run.t, NULL), 0);
	nvml_watch_free(run.w);
	assert_int_equal(col_wait(10), 10); /* "xid 2 13" never came */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_event_api),
	    cmocka_unit_test(test_register_events_and_failed_waits),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
