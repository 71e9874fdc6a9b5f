/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way gpulet runs a host tool: no shell, no $PATH lookup (issue 8 §4: gpulet runs as root),
 * posix_spawn with a fixed argv and environment, the parent's blocked signals and ignored SIGPIPE
 * not inherited, output read through a pipe up to a bound, killed when it does not finish in time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct spawn_opts {
	const char *path;   /* absolute; find it with host_find_bin() */
	char *const *argv;  /* NULL-terminated */
	char *const *envp;  /* NULL-terminated: the child's whole environment */
	const char *input;  /* written to its stdin, or NULL (stdin at EOF) */
	size_t input_len;   /* input's bytes (binary input); 0: strlen(input) */
	size_t *out_len;    /* non-NULL: the bytes read into out (binary output) */
	bool stderr_to_out; /* stderr joins stdout in out; false: /dev/null */
	int timeout_ms;
	/*
	 * Run the child in a new, private mount namespace with bind_src bind-mounted on bind_dst (the
	 * DRA driver's per-claim /dev/shm for an MPS control daemon; needs CAP_SYS_ADMIN). NULL: in ours.
	 * A failed unshare or mount is the child's exit status 126 with the reason in out.
	 */
	const char *bind_src, *bind_dst;
};

/*
 * Run o->path; its output into out (NUL-terminated; past size-1 bytes read and dropped, so the
 * tool never blocks on a full pipe). Only the direct child is waited for: a command that
 * daemonizes returns when its parent exits. The input is in the pipe before the child starts (the
 * pipe is grown to hold it): a child that never reads cannot block us. Returns the exit status
 * (0..255, 128+signal), or -ETIMEDOUT (killed after o->timeout_ms), or -errno when it could not start
 * (-EMSGSIZE: the input does not fit in a pipe).
 */
int spawn_run(const struct spawn_opts *o, char *out, size_t size);
