/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last fences around the host ldconfig before isolate.c execs it (docs/reference/cdi-hook.md
 * §6): ldconfig parses the image's ELF files and follows the image's ld.so.conf, so whatever it
 * can be made to do, it should be able to do nothing but read and write files in the rootfs. What
 * ldconfig itself calls (strace of glibc 2.36's, docs/reference/cdi-hook.md §6.4): openat, newfstatat, getdents64,
 * mmap of each library whole (MAP_SHARED, read-only), read, write, lseek, unlink, symlink, mkdir,
 * chmod of its own temp file, fsync, rename, readlink, prlimit64, getrandom, brk, sysinfo.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cdihook/confine.h"
#include "util/macro.h"

#define MIB (1024 * 1024)
#define GIB (1024 * MIB)

/* ---- the ptrace fence ---------------------------------------------------------------------------- */

/*
 * A Landlock domain: the kernel refuses a process in a domain ptrace access (and so
 * /proc/<pid>/root, cwd, fd/, environ) to every process outside it, whatever the uids and
 * capabilities (security/landlock/task.c, Linux 5.13). The ruleset's handled rights are ones
 * ldconfig never uses (it makes a regular file, symlinks and one directory): device nodes, FIFOs
 * and sockets cannot be created anywhere either.
 */
static int landlock_fence(void)
{
	struct landlock_ruleset_attr attr = {
	    .handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
				 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SOCK,
	};
	_cleanup_close_ int ruleset = -1;

	if (syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1)
		return -EOPNOTSUPP; /* ENOSYS: before 5.13; EOPNOTSUPP: not in the LSM list */
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
		return -errno;
	return 0;
}

/*
 * The map file name ("uid_map", "gid_map") of pid, written as the identity of every range of our
 * own map: an id means the same inside as outside, so what ldconfig creates is owned by root.
 */
static int write_identity_map(int procfs, const char *name, pid_t pid)
{
	char own[1024], out[2048], path[64];
	_cleanup_close_ int in = -1, fd = -1;
	size_t used = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "self/%s", name);
	in = openat(procfs, path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	n = read(in, own, sizeof(own) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	own[n] = '\0';
	for (char *line = own, *next; line && *line; line = next) {
		unsigned long first, outside, count;
		int w;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%lu %lu %lu", &first, &outside, &count) != 3)
			return -EINVAL;
		w = snprintf(out + used, sizeof(out) - used, "%lu %lu %lu\n", first, first, count);
		if (w < 0 || (size_t)w >= sizeof(out) - used)
			return -E2BIG;
		used += (size_t)w;
	}
	snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
	fd = openat(procfs, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write(fd, out, used) == (ssize_t)used ? 0 : -errno;
}

/*
 * A user namespace that this process joins: a process in a child user namespace fails the ptrace
 * check against every process outside it (cap_ptrace_access_check wants CAP_SYS_PTRACE in the
 * target's namespace), and a capability it keeps counts only there. The namespace is made by a
 * child, its holder (a process cannot write the full map of its own namespace), mapped from
 * outside, then joined with setns; the holder is killed.
 */
int confine_userns(int procfs)
{
	int sync[2], r = 0, status;
	unsigned char e = 0;
	pid_t holder;

	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
	holder = fork();
	if (holder == 0) {
		e = unshare(CLONE_NEWUSER) < 0 ? (unsigned char)errno : 0;
		(void)!write(sync[1], &e, 1);
		for (;;)
			pause();
	}
	close(sync[1]);
	if (holder < 0) {
		r = -errno;
		close(sync[0]);
		return r;
	}
	if (read(sync[0], &e, 1) != 1)
		r = -EIO;
	else if (e)
		r = -(int)e;
	close(sync[0]);
	if (r == 0)
		r = write_identity_map(procfs, "uid_map", holder);
	if (r == 0)
		r = write_identity_map(procfs, "gid_map", holder);
	if (r == 0) {
		char path[64];
		_cleanup_close_ int ns = -1;

		snprintf(path, sizeof(path), "%d/ns/user", (int)holder);
		ns = openat(procfs, path, O_RDONLY | O_CLOEXEC);
		if (ns < 0 || setns(ns, CLONE_NEWUSER) < 0)
			r = -errno;
	}
	kill(holder, SIGKILL);
	while (waitpid(holder, &status, 0) < 0 && errno == EINTR)
		;
	return r;
}

int confine_ptrace_fence(int procfs)
{
	int r = landlock_fence();

	if (r != -EOPNOTSUPP)
		return r;
	/* no user namespaces either (user.max_user_namespaces=0: ENOSPC; a filter: ENOSYS, EPERM) */
	return confine_userns(procfs);
}

/* ---- capabilities -------------------------------------------------------------------------------- */

/*
 * What a root ldconfig in a chroot can do, less everything it does not use: CAP_DAC_OVERRIDE
 * reads and searches every dir and file it opens and writes the cache and links in dirs owned by
 * other users (an image may list one); CAP_FOWNER replaces a link in a sticky dir it does not own.
 * Not CAP_DAC_READ_SEARCH (DAC_OVERRIDE already covers reading; its only other power is
 * open_by_handle_at, which leaves every bind mount), not CAP_CHOWN (ldconfig chowns nothing).
 */
#define KEEP_CAPS ((1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_FOWNER))

int confine_capabilities(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {
	    {.effective = (uint32_t)KEEP_CAPS, .permitted = (uint32_t)KEEP_CAPS},
	    {.effective = (uint32_t)(KEEP_CAPS >> 32), .permitted = (uint32_t)(KEEP_CAPS >> 32)},
	};

	for (int cap = 0; cap < 64; cap++)
		if (!(KEEP_CAPS & 1ULL << cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno; /* EINVAL: past the kernel's last capability */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

/* ---- resource limits ------------------------------------------------------------------------------ */

/*
 * Measured on NVIDIA's 535 files plus 1,292 Debian libraries: peak RSS 1.3 MiB, at most 8 fds,
 * a 44 KiB cache; the largest mapping is the largest library (docs/reference/cdi-hook.md §6.5).
 * RLIMIT_NPROC is not here: the kernel exempts uid 0 from it (kernel/fork.c), so the seccomp
 * filter refuses process creation instead.
 */
const struct confine_limit confine_limit_table[] = {
    {RLIMIT_DATA, 128 * MIB, "RLIMIT_DATA"},  /* heap and private writable mappings: /etc/ld.so.conf -> /dev/zero */
    {RLIMIT_AS, 16ULL * GIB, "RLIMIT_AS"},    /* above any library ldconfig maps whole (CUDA ships 1-3 GiB ones) */
    {RLIMIT_STACK, 8 * MIB, "RLIMIT_STACK"},  /* include recursion; the usual default */
    {RLIMIT_FSIZE, 64 * MIB, "RLIMIT_FSIZE"}, /* the cache it writes */
    {RLIMIT_NOFILE, 64, "RLIMIT_NOFILE"},     /* also bounds nested includes */
    {RLIMIT_CORE, 0, "RLIMIT_CORE"},          /* no core file of a crashed ldconfig in the rootfs */
    {RLIMIT_MEMLOCK, 0, "RLIMIT_MEMLOCK"},    /* nothing to pin */
};
const size_t confine_n_limits = ELEMENTSOF(confine_limit_table);

int confine_limits(void)
{
	for (size_t i = 0; i < confine_n_limits; i++) {
		const struct confine_limit *l = &confine_limit_table[i];
		struct rlimit rl;

		if (getrlimit(l->resource, &rl) < 0)
			return -errno;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < l->value)
			rl.rlim_cur = rl.rlim_max; /* already lower: keep the lower one */
		else
			rl.rlim_cur = rl.rlim_max = l->value;
		if (setrlimit(l->resource, &rl) < 0)
			return -errno;
	}
	return 0;
}

/* ---- seccomp ------------------------------------------------------------------------------------- */

#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#else
#error "confine.c: give this architecture's AUDIT_ARCH_* for the seccomp filter"
#endif

/*
 * What a process without capabilities in the host's namespaces can still use to reach past its
 * files. A deny list, not an allow list: the ldconfig is the host's, from any glibc, and a newer
 * one may use a syscall this list has never seen.
 */
const int confine_denied_syscalls[] = {
    /* a file handle opens any inode of the file system, outside every bind mount */
    __NR_open_by_handle_at,
    __NR_name_to_handle_at,
    /* ldconfig starts no process or thread, and joins or makes no namespace */
    __NR_clone,
    __NR_clone3,
#ifdef __NR_fork
    __NR_fork,
    __NR_vfork,
#endif
    __NR_unshare,
    __NR_setns,
    /* other processes */
    __NR_ptrace,
    __NR_process_vm_readv,
    __NR_process_vm_writev,
    __NR_pidfd_open,
    __NR_pidfd_getfd,
    __NR_kcmp,
    /* kernel state shared with the host: keyrings by uid, BPF, perf, userfaultfd */
    __NR_keyctl,
    __NR_add_key,
    __NR_request_key,
    __NR_bpf,
    __NR_perf_event_open,
    __NR_userfaultfd,
    /* io_uring runs file operations this filter never sees */
    __NR_io_uring_setup,
    __NR_io_uring_enter,
    __NR_io_uring_register,
};
const size_t confine_n_denied_syscalls = ELEMENTSOF(confine_denied_syscalls);

#define FILTER_HEAD 4 /* arch load, arch check, kill, nr load */
#define FILTER_MAX  (FILTER_HEAD + 1 + ELEMENTSOF(confine_denied_syscalls) + 2)

int confine_seccomp(void)
{
	struct sock_filter f[FILTER_MAX];
	size_t n = 0, deny;
	struct sock_fprog prog;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_ARCH, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	/* the return that denies sits after the allow at the end */
	deny = FILTER_HEAD + confine_n_denied_syscalls + 1;
#if defined(__x86_64__)
	deny++;
	/* the x32 ABI's numbers (nr | 0x40000000) reach the same syscalls under other numbers */
	f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, (uint8_t)(deny - n - 1), 0);
	n++;
#endif
	for (size_t i = 0; i < confine_n_denied_syscalls; i++, n++)
		f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)confine_denied_syscalls[i],
						    (uint8_t)(deny - n - 1), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	prog = (struct sock_fprog){.len = (unsigned short)n, .filter = f};
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -errno : 0;
}
