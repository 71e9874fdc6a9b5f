/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MPS limits and layout (src/plugin/mps.c) against upstream's rules (docs/reference/device-plugin.md
 * §5.1): thread percentage 100 / replicas per GPU, pinned memory = memory / replicas in MiB per GPU
 * index, the per-resource dirs, the shm size from meminfo; mps_run() with a daemonizing command.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "plugin/mps.h"

static void test_limits(void **state)
{
	struct node_gpu gpus[2] = {{.index = 0, .uuid = "GPU-a", .memory_total = 40960ull << 20},
				   {.index = 1, .uuid = "GPU-b", .memory_total = 16ull << 30}};
	struct node n = {.gpus = gpus, .n_gpus = 2};
	struct rdevice devs[6];
	struct resource r = {.name = "nvidia.com/gpu", .replicas = 3, .devices = devs, .n_devices = 6};
	struct mps_limits l;

	for (int i = 0; i < 6; i++) {
		devs[i] = (struct rdevice){.gpu = (unsigned)(i / 3), .mig = -1, .replica = i % 3};
		strcpy(devs[i].uuid, i < 3 ? "GPU-a" : "GPU-b");
		strcpy(devs[i].index, i < 3 ? "0" : "1");
	}
	mps_limits(&n, &r, &l);
	assert_int_equal(l.n_gpus, 2);
	assert_int_equal(l.thread_percentage, 33); /* 100 / (6 devices / 2 GPUs), integer as upstream */
	assert_string_equal(l.gpus[0].device, "0");
	assert_int_equal(l.gpus[0].pinned_mib, 13653); /* 40960 MiB / 3 */
	assert_string_equal(l.gpus[1].uuid, "GPU-b");
	assert_int_equal(l.gpus[1].pinned_mib, 5461); /* 16384 MiB / 3 */
	/* memory unknown: no pinned limit is set for that GPU (upstream skips totalMemory 0) */
	gpus[1].memory_total = 0;
	mps_limits(&n, &r, &l);
	assert_int_equal(l.gpus[1].pinned_mib, 0);
}

static void test_paths(void **state)
{
	char buf[64];

	assert_int_equal(mps_path("/mps", "nvidia.com/gpu", MPS_PIPE, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/mps/nvidia.com/gpu/pipe");
	assert_int_equal(mps_path("/mps", "nvidia.com/gpu", MPS_LOG, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/mps/nvidia.com/gpu/log");
	assert_int_equal(mps_path("/mps", "nvidia.com/gpu", MPS_STARTED, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/mps/nvidia.com/gpu/.started");
	assert_int_equal(mps_path("/run/nvidia/mps", NULL, MPS_READY, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/nvidia/mps/.ready");
	assert_int_equal(mps_path("/run/nvidia/mps", NULL, MPS_SHM, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/nvidia/mps/shm");
	/* joined as upstream's filepath.Join: a root's trailing slashes add none */
	assert_int_equal(mps_path("/run/nvidia/mps//", "nvidia.com/gpu", MPS_PIPE, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/nvidia/mps/nvidia.com/gpu/pipe");
	assert_int_equal(mps_path("/", "nvidia.com/gpu", MPS_PIPE, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/nvidia.com/gpu/pipe");
	assert_int_equal(
	    mps_path("/mps", "nvidia.com/a-very-long-resource-name-that-does-not-fit", MPS_PIPE, buf, sizeof(buf)),
	    -ENAMETOOLONG);
}

static void test_shm_size(void **state)
{
	char buf[32];

	mps_shm_size("MemTotal:       131598088 kB\nMemFree: 1 kB\n", buf, sizeof(buf));
	assert_string_equal(buf, "65799044k");
	mps_shm_size("MemFree: 1 kB\nMemTotal: 10 kB\n", buf, sizeof(buf));
	assert_string_equal(buf, "5k");
	/* no MemTotal line, an unreadable file, or a bad number: upstream's fallback */
	mps_shm_size("MemFree: 1 kB\n", buf, sizeof(buf));
	assert_string_equal(buf, "65536k");
	mps_shm_size(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "65536k");
	mps_shm_size("MemTotal: lots\n", buf, sizeof(buf));
	assert_string_equal(buf, "65536k");
	mps_shm_size("XMemTotal: 10 kB\n", buf, sizeof(buf));
	assert_string_equal(buf, "65536k");
	mps_shm_size("MemTotal: 99999999999999999999999999 kB\n", buf, sizeof(buf)); /* Atoi would fail */
	assert_string_equal(buf, "65536k");
	mps_shm_size("MemTotal: -4 kB\n", buf, sizeof(buf));
	assert_string_equal(buf, "65536k");
}

/* A command that forks a child holding stdout open returns when the command itself exits. */
static void test_run_daemonizing(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "echo started; (sleep 3 &) ; exit 3", NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	char out[64];
	int r = mps_run("/bin/sh", argv, envp, NULL, out, sizeof(out), 2000);

	assert_int_equal(r, 3);
	assert_string_equal(out, "started\n");
	char *cat[] = {"/bin/cat", NULL};
	assert_int_equal(mps_run("/bin/cat", cat, envp, "get_x\n", out, sizeof(out), 2000), 0);
	assert_string_equal(out, "get_x\n");
	char *hang[] = {"/bin/sleep", "10", NULL};
	assert_int_equal(mps_run("/bin/sleep", hang, envp, NULL, out, sizeof(out), 200), -ETIMEDOUT);
	assert_true(mps_run("/nonexistent", hang, envp, NULL, out, sizeof(out), 200) != 0);
}

/* With no file descriptor left, pipe2() fails: out is still a string (it was read uninitialised). */
static void test_run_no_fds(void **state)
{
	char *argv[] = {"/bin/true", NULL};
	char *envp[] = {NULL};
	char out[16];
	struct rlimit old, none;
	int r;

	memset(out, 'x', sizeof(out));
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	none = old;
	none.rlim_cur = 0;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
	r = mps_run("/bin/true", argv, envp, NULL, out, sizeof(out), 200);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, -EMFILE);
	assert_string_equal(out, "");
	memset(out, 'x', sizeof(out));
	struct gerr err = {0};
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
	r = mps_control("/bin/true", "/nonexistent", "nvidia.com/gpu", "get_server_list", out, sizeof(out), &err);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, -EMFILE);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_limits),          cmocka_unit_test(test_paths),      cmocka_unit_test(test_shm_size),
	    cmocka_unit_test(test_run_daemonizing), cmocka_unit_test(test_run_no_fds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
