/* SPDX-License-Identifier: Apache-2.0 */
/*
 * maxrss PROGRAM ARGS...: run PROGRAM, then print "status S maxrss_kib K" to stderr, K being the
 * peak resident set of PROGRAM and every descendant it waited for (wait4's rusage: the hook and the
 * ldconfig it ran). Static and small, so the launcher's own pages do not show in K, as they would
 * from a fork of the Python test. Exits with PROGRAM's status.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: maxrss PROGRAM ARGS...\n");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
		return 2;
	fprintf(stderr, "status %d maxrss_kib %ld\n", status, ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
