/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one daemon loop, and SIGHUP's one reload path. Every gpulet daemon (plugin,
 * mps-control-daemon, labels, exporter, the doctor's metrics server) runs on it: the signals it
 * takes arrive through a signalfd, file descriptors wake their callbacks, and one tick does the
 * daemon's timed work and says when it is due again.
 *
 * SIGHUP (when the daemon's set has it): the daemon's reload() parses the command line kept at start
 * (struct loop_argv) again through the option engine (loop_reparse(): defaults, the config file read
 * again, env, flags) and applies the result, or refuses it and leaves everything as it was; the loop
 * says a refusal in one log line, "Config reload failed, keeping the running config", with the
 * reason. Any other signal of the set stops the loop ("Received signal, shutting down").
 *
 * This is a daemon's run loop: it logs (docs/HACKING.md §1).
 */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "util/err.h"
#include "util/macro.h"
#include "util/optspec.h"

#define LOOP_MAX_FDS 4

struct loop;

struct loop_ops {
	/*
	 * SIGHUP: build the new config from the kept command line and apply it (0), or leave everything as it
	 * is and return -errno with err saying why. NULL: SIGHUP stops the loop like the set's other signals.
	 */
	int (*reload)(void *data, struct gerr *err);
	/*
	 * The timed work, at start and after every wake-up that was not a signal (an fd event or the due
	 * time): the milliseconds until it is due again, < 0 for none (only an event or a signal wakes).
	 */
	long long (*tick)(void *data);
};

/*
 * A loop taking the signals of set through a signalfd. The caller blocks them first, before any
 * thread starts (sig_block()), so that no thread takes one; the loop blocks them in the calling
 * thread too. SIGPIPE is ignored until loop_free(): a peer that closed a socket or a pipe must not
 * end a daemon. 0 with *ret, or -errno with err.
 */
int loop_new(const sigset_t *set, const struct loop_ops *ops, void *data, struct loop **ret, struct gerr *err);
/* fn(data) when fd is readable; fn's < 0 stops the loop with that code. -E2BIG past LOOP_MAX_FDS fds. */
int loop_add_fd(struct loop *l, int fd, int (*fn)(void *data), void *data);

/*
 * A source of events a verb adds to a daemon's loop without the daemon knowing what it is (the node
 * label the config follows, nodeconfig/): fn(data, l) when fd is readable, and it may reload through
 * loop_reload(l, ...); fn's < 0 stops the loop as an fd's. -E2BIG past LOOP_MAX_FDS fds.
 */
struct loop_source {
	int fd;
	int (*fn)(void *data, struct loop *l);
	void *data;
};
int loop_add_source(struct loop *l, const struct loop_source *s);

/*
 * SIGHUP's reload for another cause ("node label nvidia.com/device-plugin.config"): ops.reload()
 * with loop_reload_cause() saying why, and a refusal logged as SIGHUP's ("Config reload failed,
 * keeping the running config"). 0, or -errno with err (-EOPNOTSUPP: the daemon does not reload).
 */
int loop_reload(struct loop *l, const char *cause, struct gerr *err);
/* During ops.reload(): what asked for it, "SIGHUP" or loop_reload()'s cause (the daemon's log line). */
const char *loop_reload_cause(const struct loop *l);
/* The tick is due again in ms (0: right after the current callback), whatever it said last. */
void loop_due(struct loop *l, long long ms);
/* CLOCK_MONOTONIC in milliseconds: the clock of every due time a daemon keeps. */
long long loop_now_ms(void);
/* End loop_run() with code once the current callback returns. */
void loop_stop(struct loop *l, int code);
/* The tick at once, then events until a stop: 0 after a stop signal, loop_stop()'s code, or -errno (logged). */
int loop_run(struct loop *l);
/* Close the signalfd, set SIGPIPE and the mask back as loop_new() found them, free. NULL is fine. */
void loop_free(struct loop *l);
DEFINE_CLEANUP_FUNC(struct loop, loop_free)

/*
 * The command line a daemon was started with, kept for SIGHUP: argv[0] (the verb), then defaults
 * ("--mps-root=/mps", NULL-terminated; NULL for none) as flags before the real arguments, which win.
 * Kept before the first parse, as getopt permutes argv. 0 or -ENOMEM.
 */
struct loop_argv;
int loop_argv_new(int argc, char *const *argv, const char *const *defaults, struct loop_argv **ret);
void loop_argv_free(struct loop_argv *a);
DEFINE_CLEANUP_FUNC(struct loop_argv, loop_argv_free)
/* A vector of the kept arguments for one parse (getopt permutes it); the caller frees it, not the strings. */
char **loop_argv_vector(const struct loop_argv *a, int *argc);

/*
 * Who names the config file of every loop_reparse() (the node's label, nodeconfig/): fn(data,
 * &path, err) gives it, owned ("" for none), and it goes in as cli's file option right after
 * argv[0] ("--config-file=PATH"), so it wins over the option's env var; fn's failure is the
 * parse's. NULL: the kept command line alone names it.
 */
typedef int (*loop_file_fn)(void *data, char **ret_path, struct gerr *err);
void loop_argv_set_file(struct loop_argv *a, loop_file_fn fn, void *data);

/*
 * The kept command line parsed again through cli into opts (fresh, as the verb's first parse had
 * them): every layer again, the config file read again (the one loop_argv_set_file()'s chooser
 * names, when there is one). 0, or -errno with err naming the bad value and its source.
 */
int loop_reparse(const struct optspec_cli *cli, const struct loop_argv *a, void *opts, struct gerr *err);
