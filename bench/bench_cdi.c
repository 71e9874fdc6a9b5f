/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exec timer for bench_cdi.py: runs a command N times from this small process (so the child's
 * peak RSS is its own, not an inherited interpreter's) and prints "median_us p90_us max_rss_kib".
 * usage: bench_cdi N COMMAND [ARG...]
 *        bench_cdi --in-process N ROOT NVML_LIBRARY   (FAKE_NVML_FIXTURE set by the caller)
 * The second form times node_load + cdi_generate + JSON formatting inside one process, so the
 * generator's own cost shows without exec, dynamic loading and NVML start-up.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "nvml/nvml.h"

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

/* "median_load_us median_generate_us spec_bytes" */
static int in_process(long n, const char *root, const char *library)
{
	long *load = calloc((size_t)n, sizeof(long)), *gen = calloc((size_t)n, sizeof(long));
	struct host_paths *paths = NULL;
	struct nvml *nv = NULL;
	struct gerr err = {0};
	size_t bytes = 0;

	if (!load || !gen ||
	    host_paths_new(&(struct host_paths_options){.root = root, .nvml_library = library}, &paths, &err) < 0 ||
	    nvml_open_host(paths, &nv, &err) < 0) {
		fprintf(stderr, "bench_cdi: %s\n", err.msg);
		return 1;
	}
	for (long i = 0; i < n; i++) {
		struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
		struct node *node = NULL;
		json_t *spec = NULL;
		char *text = NULL;
		long t0 = now_us(), t1;

		o.host = paths;
		if (node_load(nv, root, &node, &err) < 0)
			break;
		t1 = now_us();
		if (cdi_generate(node, &o, &spec, &err) < 0 || cdi_format_spec(spec, CDI_FORMAT_JSON, &text, &err) < 0)
			break;
		gen[i] = now_us() - t1;
		load[i] = t1 - t0;
		bytes = strlen(text);
		free(text);
		json_decref(spec);
		node_free(node);
	}
	nvml_close(nv);
	host_paths_free(paths);
	if (err.code) {
		fprintf(stderr, "bench_cdi: %s\n", err.msg);
		return 1;
	}
	qsort(load, (size_t)n, sizeof(long), cmp);
	qsort(gen, (size_t)n, sizeof(long), cmp);
	printf("%ld %ld %zu\n", load[n / 2], gen[n / 2], bytes);
	free(load);
	free(gen);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "--in-process") == 0)
		return in_process(strtol(argv[2], NULL, 10) > 0 ? strtol(argv[2], NULL, 10) : 1, argv[3], argv[4]);

	long n = argc > 2 ? strtol(argv[1], NULL, 10) : 0, *us, *cpu, max_rss = 0;

	us = n > 0 ? calloc((size_t)n, sizeof(*us)) : NULL;
	cpu = n > 0 ? calloc((size_t)n, sizeof(*cpu)) : NULL;
	if (!us || !cpu) {
		fprintf(stderr, "usage: bench_cdi N COMMAND [ARG...]\n");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		struct timespec a, b;
		struct rusage ru;
		int status;
		pid_t pid;

		clock_gettime(CLOCK_MONOTONIC, &a);
		pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
			perror("bench_cdi");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "bench_cdi: %s exited with %d\n", argv[2], WEXITSTATUS(status));
			return 1;
		}
		us[i] = (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000;
		cpu[i] =
		    (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
		if (ru.ru_maxrss > max_rss)
			max_rss = ru.ru_maxrss;
	}
	qsort(us, (size_t)n, sizeof(*us), cmp);
	qsort(cpu, (size_t)n, sizeof(*cpu), cmp);
	printf("%ld %ld %ld %ld\n", us[n / 2], us[(n * 9) / 10 - (n >= 10)], max_rss, cpu[n / 2]);
	free(us);
	free(cpu);
	return 0;
}
