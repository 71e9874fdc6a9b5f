/* SPDX-License-Identifier: Apache-2.0 */
/*
 * noopenat2 PATH ARGV0 ARGS...: runs PATH with openat2(2) failing ENOSYS, as on a kernel before 5.6
 * or under a seccomp profile that filters it, so the hook's path walk (its fallback resolver) is what
 * the attacks of test_hook_attacks.py meet. Built static: the hook's environment is the container's.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int main(int argc, char **argv)
{
	struct sock_filter filter[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};

	if (argc < 3) {
		fprintf(stderr, "usage: noopenat2 PATH ARGV0 [ARGS...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("noopenat2: seccomp");
		return 2;
	}
	execv(argv[1], argv + 2);
	perror("noopenat2: exec");
	return 127;
}
