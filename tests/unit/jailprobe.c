/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A static stand-in for ldconfig that test_cdihook_guards runs through the hook's isolation: it
 * writes what it sees to /report in its root (one "key value" a line) and exits 0. Given "hang" as
 * its last argument it blocks forever instead (the time bound's test).
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[2] = {{0}};
	struct stat st;
	int fds = 0, procs = 0;
	DIR *d;
	FILE *f;

	if (argc > 1 && strcmp(argv[argc - 1], "hang") == 0)
		for (;;)
			pause();
	for (int fd = 3; fd < 4096; fd++)
		fds += fcntl(fd, F_GETFD) >= 0;
	d = opendir("/proc");
	while (d && readdir(d))
		procs++;
	if (d)
		closedir(d);
	f = fopen("/report", "w");
	if (!f)
		return 1;
	fprintf(f, "pid %ld\n", (long)getpid());
	fprintf(f, "fds %d\n", fds);
	fprintf(f, "env %d\n", environ && environ[0] ? 1 : 0);
	fprintf(f, "proc_entries %d\n", procs - 2);
	fprintf(f, "proc_1_root %d\n", lstat("/proc/1/root", &st) == 0);
	fprintf(f, "marker %d\n", access("/marker-inside", F_OK) == 0);
	fprintf(f, "cwd_marker %d\n", access("marker-inside", F_OK) == 0);
	if (syscall(SYS_capget, &hdr, caps) == 0)
		fprintf(f, "caps %#x:%#x\n", caps[1].effective, caps[0].effective);
	fprintf(f, "sys_admin_bound %d\n", (int)prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0));
	fprintf(f, "no_new_privs %d\n", (int)prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	return fclose(f) == 0 ? 0 : 1;
}
