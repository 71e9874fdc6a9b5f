/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running a host binary (the static ldconfig) over a container's rootfs so that nothing it reads
 * from the image can lead it out (docs/reference/cdi-hook.md §6):
 *
 *	clone(new mount, pid, ipc, uts, net namespaces)   the child is pid 1 of its pid namespace
 *	  / made recursively slave                        nothing we mount or unmount reaches the host
 *	  the rootfs re-opened by path, same st_dev/st_ino as the fd the hook checked
 *	  a recursive bind of the rootfs onto itself      a mount point for pivot_root
 *	  pivot_root into it, the old root detached       no path names the host's tree any more
 *	  every procfs and other kernel file system detached, found in the namespace's mountinfo
 *	                                                  no /proc/<pid>/root, cwd, fd/ magic link left,
 *	                                                  wherever the runtime or the pod put one
 *	  every fd above 2 close-on-exec, no parent-death survivor
 *	  Landlock domain (else a user namespace)         the ptrace check fails against every
 *	                                                  process outside: a missed /proc still fails
 *	  CAP_DAC_OVERRIDE, CAP_FOWNER only; no_new_privs; resource limits; seccomp (confine.c)
 *	  execveat(ldconfig's fd opened on the host, empty environment)
 *
 * The parent waits at most timeout_s, then kills the child: killing pid 1 of a pid namespace
 * kills everything in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cdihook/cdihook.h"
#include "cdihook/confine.h"
#include "cdihook/mountinfo.h"
#include "util/fileio.h"
#include "util/macro.h"

#define ISOLATE_NS    (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)
#define WAIT_STEP_MS  10
#define FD_LOOP_LIMIT 65536      /* the fallback's bound where close_range is missing (Linux < 5.11) */
#define DETACH_ROUNDS 16         /* a kernel file system stacked deeper than this fails closed */
#define MOUNTINFO_MAX (16 << 20) /* a namespace with that much mountinfo is not a container's */

/* The child's steps, in order; a failed one comes back to the parent as {step, errno}. */
enum step {
	STEP_SLAVE,
	STEP_REOPEN,
	STEP_SAME,
	STEP_BIND,
	STEP_PROCFS,
	STEP_PIVOT,
	STEP_KERNELFS,
	STEP_FDS,
	STEP_FENCE,
	STEP_CAPS,
	STEP_LIMITS,
	STEP_SECCOMP,
	STEP_EXEC
};
static const char fence_what[] = "fencing it off every other process: the kernel has neither Landlock (Linux 5.13+, "
				 "in the LSM list) nor user namespaces (user.max_user_namespaces > 0); enable one";
static const char *const step_what[] = {
    [STEP_SLAVE] = "making / a slave mount in the new mount namespace",
    [STEP_REOPEN] = "re-opening the rootfs in the new mount namespace",
    [STEP_SAME] = "the rootfs path names another directory than the one checked (swapped meanwhile?)",
    [STEP_BIND] = "bind-mounting the rootfs onto itself",
    [STEP_PROCFS] = "mounting a private procfs of the new pid namespace (to read its mountinfo)",
    [STEP_PIVOT] = "pivot_root into the rootfs",
    [STEP_KERNELFS] = "detaching every procfs and other kernel file system from the new root",
    [STEP_FDS] = "marking inherited file descriptors close-on-exec",
    [STEP_FENCE] = fence_what,
    [STEP_CAPS] = "dropping capabilities",
    [STEP_LIMITS] = "setting resource limits",
    [STEP_SECCOMP] = "installing the seccomp filter",
    [STEP_EXEC] = "execveat",
};

/*
 * File systems ldconfig never needs and that lead out of the rootfs: procfs has the magic links
 * (/proc/<pid>/root, cwd, exe, fd/, map_files/) into other processes' trees, wherever it is
 * mounted (the runtime's /proc, a pod's hostPath of the host's /proc, a second procfs of the
 * host's pid namespace); nsfs files are other namespaces; the others are the kernel's and the
 * host's settings (a write there is host-wide: binfmt_misc, cgroups, sysfs, efivars) or its
 * device nodes (devtmpfs, in a privileged container).
 */
static const char *const kernel_fs[] = {
    "proc", "nsfs",     "sysfs",       "cgroup",   "cgroup2", "debugfs", "tracefs",  "securityfs",
    "bpf",  "configfs", "binfmt_misc", "efivarfs", "pstore",  "fusectl", "devtmpfs",
};

/*
 * A procfs of our pid namespace, mounted nowhere and closed before the exec: its self/mountinfo,
 * and <pid>/uid_map for the user namespace fallback (so writable).
 */
static int private_procfs(void)
{
	_cleanup_close_ int fs = fsopen("proc", FSOPEN_CLOEXEC);
	int mnt;

	if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	return mnt < 0 ? -errno : mnt;
}

/*
 * Detach every mount of a kernel_fs type from the tree we now live in, found by reading our own
 * mountinfo (not by guessing paths), until none is left. A detach takes what is mounted below it;
 * one hidden under another mount comes up on top and goes in the next round.
 */
static int detach_kernel_fs(int procfs)
{
	for (int round = 0; round < DETACH_ROUNDS; round++) {
		_cleanup_close_ int fd = openat(procfs, "self/mountinfo", O_RDONLY | O_CLOEXEC);
		_cleanup_free_ char *text = NULL;
		size_t len, found = 0;
		int r;

		if (fd < 0)
			return -errno;
		r = read_fd(fd, "mountinfo", MOUNTINFO_MAX, &text, &len, NULL);
		if (r < 0)
			return r;
		for (char *cursor = text, *point, *type; (r = mountinfo_next(&cursor, &point, &type)) != 0;) {
			bool kernel = false;

			if (r < 0)
				return r;
			for (size_t i = 0; i < ELEMENTSOF(kernel_fs) && !kernel; i++)
				kernel = streq(type, kernel_fs[i]);
			if (!kernel)
				continue;
			found++;
			/* EINVAL, ENOENT: gone with a detach above it this round; the next read shows */
			if (umount2(point, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
				return -errno;
		}
		if (found == 0)
			return 0;
	}
	return -EBUSY;
}

/* pivot_root(".", ".") with the new root as cwd, then the old root (now on top) detached. */
static int pivot_into(int root)
{
	_cleanup_close_ int old = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (old < 0 || fchdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || fchdir(old) < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

/* Every fd above 2 close-on-exec (the exec then closes them all, the exe fd included). */
static int cloexec_all(void)
{
	struct rlimit rl;

	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return -errno;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	for (rlim_t fd = 3; fd < rl.rlim_cur && fd < FD_LOOP_LIMIT; fd++) {
		int fl = fcntl((int)fd, F_GETFD);

		if (fl >= 0 && fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC) < 0)
			return -errno;
	}
	return rl.rlim_cur <= FD_LOOP_LIMIT ? 0 : -EMFILE;
}

static _Noreturn void child_fail(int report, enum step s, int e)
{
	int msg[2] = {(int)s, e};

	(void)!write(report, msg, sizeof(msg));
	_exit(127);
}

/* In the new namespaces, pid 1 there. Never returns. */
static _Noreturn void child(const struct cdihook_jail *j, int report)
{
	char *const envp[] = {NULL};
	struct stat st;
	int rfd, tree, procfs, r;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		child_fail(report, STEP_SLAVE, errno);
	rfd = open(j->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		child_fail(report, STEP_REOPEN, errno);
	if (fstat(rfd, &st) < 0)
		child_fail(report, STEP_REOPEN, errno);
	if (st.st_dev != j->dev || st.st_ino != j->ino)
		child_fail(report, STEP_SAME, EXDEV);
	tree = open_tree(rfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0 || move_mount(tree, "", rfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		child_fail(report, STEP_BIND, errno);
	procfs = private_procfs();
	if (procfs < 0)
		child_fail(report, STEP_PROCFS, -procfs);
	r = pivot_into(tree);
	if (r < 0)
		child_fail(report, STEP_PIVOT, -r);
	r = detach_kernel_fs(procfs);
	if (r < 0)
		child_fail(report, STEP_KERNELFS, -r);
	r = cloexec_all();
	if (r < 0)
		child_fail(report, STEP_FDS, -r);
	r = confine_ptrace_fence(procfs);
	if (r < 0)
		child_fail(report, STEP_FENCE, -r);
	close(procfs);
	r = confine_capabilities();
	if (r < 0)
		child_fail(report, STEP_CAPS, -r);
	r = confine_limits();
	if (r < 0)
		child_fail(report, STEP_LIMITS, -r);
	r = confine_seccomp();
	if (r < 0)
		child_fail(report, STEP_SECCOMP, -r);
	syscall(SYS_execveat, j->exe_fd, "", j->argv, envp, AT_EMPTY_PATH);
	child_fail(report, STEP_EXEC, errno);
}

/* waitpid with a bound; past it the child (pid 1 of its namespace: all of it) is killed. */
static int wait_bounded(pid_t pid, unsigned timeout_s, int *status)
{
	const struct timespec step = {0, WAIT_STEP_MS * 1000000L};

	for (unsigned long waited = 0;; waited += WAIT_STEP_MS) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (waited >= timeout_s * 1000UL)
			break;
		nanosleep(&step, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return -ETIMEDOUT;
}

int cdihook_run_isolated(const struct cdihook_jail *j, struct gerr *err)
{
	unsigned timeout = j->timeout_s ? j->timeout_s : CDIHOOK_LDCONFIG_TIMEOUT_S;
	int p[2], msg[2] = {0, 0}, status = 0, r;
	struct stat host;
	ssize_t n;
	pid_t pid;

	/* the caller checked it (cdihook_open_rootfs); a library function does not rely on that */
	if (stat("/", &host) < 0 || (host.st_dev == j->dev && host.st_ino == j->ino))
		return gerr_set(err, EINVAL, "refusing to run %s with the host's \"/\" as the container's rootfs",
				j->name);
	if (pipe2(p, O_CLOEXEC) < 0)
		return gerr_set(err, errno, "pipe: %s", strerror(errno));
	/* a fork that is also pid 1 of a new pid namespace, in new mount/ipc/uts/net namespaces */
	pid = (pid_t)syscall(SYS_clone, ISOLATE_NS | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		close(p[0]);
		child(j, p[1]);
	}
	close(p[1]);
	if (pid < 0) {
		r = errno;
		close(p[0]);
		return gerr_set(err, r, "creating namespaces to run %s in: %s (the hook needs root: CAP_SYS_ADMIN)",
				j->name, strerror(r));
	}
	r = wait_bounded(pid, timeout, &status);
	n = read(p[0], msg, sizeof(msg));
	close(p[0]);
	if (r == -ETIMEDOUT)
		return gerr_set(err, ETIMEDOUT,
				"%s did not finish within %u s and was killed; does the image's ld.so.conf list a "
				"FIFO, a device or a huge tree?",
				j->name, timeout);
	if (r < 0)
		return gerr_set(err, -r, "waitpid: %s", strerror(-r));
	if (n == (ssize_t)sizeof(msg) && msg[0] >= 0 && (size_t)msg[0] < ELEMENTSOF(step_what))
		return gerr_set(err, msg[1], "running %s isolated in the rootfs: %s: %s", j->name, step_what[msg[0]],
				strerror(msg[1]));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return gerr_set(err, EIO, "%s in the container's rootfs failed (%s %d); its message is above", j->name,
				WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}
