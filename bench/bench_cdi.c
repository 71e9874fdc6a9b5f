/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exec timer for bench_cdi.py: runs a command N times from this small process (so the child's
 * peak RSS is its own, not an inherited interpreter's) and prints "median_us p90_us max_rss_kib".
 * usage: bench_cdi N COMMAND [ARG...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
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
