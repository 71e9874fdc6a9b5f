/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the host ldconfig may do once isolate.c has put it in its own namespaces and root: the
 * last steps before execveat, each a table (docs/reference/cdi-hook.md §6). Every function
 * returns 0 or -errno and changes the calling process only (the jail's pid 1).
 *
 *	confine_ptrace_fence(procfs)  no other process passes the ptrace access check against it
 *	confine_capabilities()        CAP_DAC_OVERRIDE and CAP_FOWNER, nothing else, no_new_privs
 *	confine_limits()              memory, file size, open files, no core
 *	confine_seccomp()             file handles, process creation, ptrace, keyrings, ... refused
 */
#pragma once

#include <stdbool.h>
#include <sys/resource.h>

/*
 * Make the kernel's ptrace access check (the one /proc/<pid>/root, cwd, fd/ and environ pass
 * through) fail for every process outside the jail, whatever its uid and capabilities: a
 * Landlock domain where the kernel has Landlock, else a user namespace that maps our own ids to
 * themselves (files stay owned by who owns them) joined by this process. procfs: a procfs mount
 * of this process's pid namespace (isolate.c's private one), for the user namespace's maps.
 * When neither is available, the user namespace's error.
 */
int confine_ptrace_fence(int procfs);

/* The ptrace fence by a user namespace only (what confine_ptrace_fence falls back to; for tests). */
int confine_userns(int procfs);

/*
 * Bounding, permitted, effective and inheritable sets cut to CAP_DAC_OVERRIDE and CAP_FOWNER,
 * ambient cleared, no_new_privs set: the exec gives ldconfig those two and nothing more.
 */
int confine_capabilities(void);

/* One resource limit of the jail (soft = hard). */
struct confine_limit {
	int resource;
	rlim_t value;
	const char *name;
};
extern const struct confine_limit confine_limit_table[];
extern const size_t confine_n_limits;

/* Lower every limit of confine_limit_table (never above the current hard limit). */
int confine_limits(void);

/*
 * The seccomp filter: the syscalls of confine_denied_syscalls fail with EPERM, another
 * architecture's syscalls kill the process. Needs no_new_privs (confine_capabilities).
 */
int confine_seccomp(void);
extern const int confine_denied_syscalls[];
extern const size_t confine_n_denied_syscalls;
