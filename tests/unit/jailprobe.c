/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A static stand-in for ldconfig that test_cdihook_guards and test_cdihook_jail run through the
 * hook's isolation: it writes what it sees to /report in its root (one "key value" a line) and
 * exits 0. Arguments after argv[0]:
 *   hang            block forever instead (the time bound's test)
 *   count DIR       also report "count DIR N", the entries of DIR (0: empty or missing)
 *   reach PATH      also report "reach PATH ERRNO" for openat(0, PATH) (0: opened): fd 0 is what
 *                   the caller left there, e.g. a host procfs the jail cannot know of
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;

	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

/* errno of a call that returned r (0 when it succeeded) */
static int err_of(long r)
{
	return r < 0 ? errno : 0;
}

static void limits(FILE *f)
{
	static const struct {
		int res;
		const char *name;
	} rows[] = {{RLIMIT_DATA, "data"},      {RLIMIT_AS, "as"},         {RLIMIT_STACK, "stack"},
		    {RLIMIT_FSIZE, "fsize"},    {RLIMIT_NOFILE, "nofile"}, {RLIMIT_CORE, "core"},
		    {RLIMIT_MEMLOCK, "memlock"}};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct rlimit rl;

		if (getrlimit(rows[i].res, &rl) == 0)
			fprintf(f, "limit_%s %llu %llu\n", rows[i].name, (unsigned long long)rl.rlim_cur,
				(unsigned long long)rl.rlim_max);
	}
}

int main(int argc, char **argv)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[2] = {{0}};
	struct {
		struct file_handle h;
		unsigned char bytes[128];
	} fh = {.h.handle_bytes = 128};
	struct stat st;
	int fds = 0, mount_id = 0;
	pid_t child;
	FILE *f;

	if (argc > 1 && strcmp(argv[argc - 1], "hang") == 0)
		for (;;)
			pause();
	for (int fd = 3; fd < 4096; fd++)
		fds += fcntl(fd, F_GETFD) >= 0;
	f = fopen("/report", "w");
	if (!f)
		return 1;
	fprintf(f, "pid %ld\n", (long)getpid());
	fprintf(f, "fds %d\n", fds);
	fprintf(f, "env %d\n", environ && environ[0] ? 1 : 0);
	fprintf(f, "proc_entries %d\n", entries("/proc"));
	fprintf(f, "proc_1_root %d\n", lstat("/proc/1/root", &st) == 0);
	fprintf(f, "marker %d\n", access("/marker-inside", F_OK) == 0);
	fprintf(f, "cwd_marker %d\n", access("marker-inside", F_OK) == 0);
	if (syscall(SYS_capget, &hdr, caps) == 0)
		fprintf(f, "caps %#x:%#x\n", caps[1].effective, caps[0].effective);
	fprintf(f, "sys_admin_bound %d\n", (int)prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0));
	fprintf(f, "no_new_privs %d\n", (int)prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	fprintf(f, "uid %d\n", (int)getuid());
	fprintf(f, "handle %d\n", err_of(name_to_handle_at(AT_FDCWD, "/", &fh.h, &mount_id, 0)));
	child = fork();
	if (child == 0)
		_exit(0);
	fprintf(f, "fork %d\n", err_of(child));
	if (child > 0)
		waitpid(child, NULL, 0);
	fprintf(f, "unshare %d\n", err_of(syscall(SYS_unshare, 0)));
	limits(f);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "count") == 0)
			fprintf(f, "count %s %d\n", argv[i + 1], entries(argv[i + 1]));
		else if (strcmp(argv[i], "reach") == 0) {
			int fd = openat(0, argv[i + 1], O_RDONLY | O_CLOEXEC);

			fprintf(f, "reach %s %d\n", argv[i + 1], err_of(fd));
			if (fd >= 0)
				close(fd);
		}
	}
	/* last: which fence holds (Landlock refuses FIFOs; without it the FIFO is made and removed) */
	fprintf(f, "mkfifo %d\n", err_of(mkfifo("/probe-fifo", 0600)));
	unlink("/probe-fifo");
	return fclose(f) == 0 ? 0 : 1;
}
