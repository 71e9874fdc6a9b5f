/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpulet labels` as a daemon, GFD's loop (cmd/gpu-feature-discovery/main.go, docs/reference/
 * gfd-labels.md): label now, then every sleep interval, on the one daemon loop (util/loop.h);
 * SIGHUP builds the options again from the kept command line (the verb's reload) and labels under
 * them at once; SIGTERM, SIGINT, SIGQUIT stop it. One owner, started, run and stopped symmetrically.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "labels/labels.h"
#include "labels/nodefeature.h"
#include "util/err.h"
#include "util/hostpaths.h"

struct labels_daemon_options {
	const struct host_paths *host; /* NVML and the host's files are read, the feature file written, below it */
	const char *output;            /* the feature file (below host->root), written atomically */
	FILE *out;                     /* instead of the file when not NULL ("-" or ""): the verb's stdout */
	const char *machine_file;
	int64_t sleep_ns; /* between passes; < 0: infinite */
	bool oneshot, fail_on_init_error;
	struct labels_options lo; /* .now is set at each pass */
	/*
	 * --use-node-feature-api: the labels in a NodeFeature object (labels/nodefeature.h) instead of
	 * the file, when an API server is configured; the file when the API serves no NodeFeatures (NFD's
	 * CRD absent), said once. NULL: the file. Read at start only (a reload must not change it).
	 */
	const struct nodefeature_options *nfd;
};

struct labels_daemon;

/*
 * Take the daemon's signals (blocked by the caller before: sig_block()) and load NVML. o is borrowed
 * until the next labels_daemon_apply(); reload(data, err) is SIGHUP's (util/loop.h): it builds the
 * new options and hands them over with labels_daemon_apply(), or returns -errno with err (nothing
 * changes). 0 with *ret, or -errno (logged): NVML does not load and o says to fail, or no loop.
 */
int labels_daemon_start(const struct labels_daemon_options *o, int (*reload)(void *data, struct gerr *err), void *data,
			struct labels_daemon **ret);
/* Label under o from now on (borrowed as by start), at once. */
void labels_daemon_apply(struct labels_daemon *d, const struct labels_daemon_options *o);
/*
 * One pass with --oneshot, else passes until a stop signal. The exit code: 0; 1 when NVML fails and the
 * options say to fail on it, or the output cannot be written; 1 where GFD refuses to label (MPS with MIG).
 */
int labels_daemon_run(struct labels_daemon *d);
/* NVML closed, the loop's signals given back, freed; the feature file stays (docs/reference/device-plugin.md §9.1),
 * and so does the NodeFeature object (its owners take it away with the release). */
void labels_daemon_stop(struct labels_daemon *d);
DEFINE_CLEANUP_FUNC(struct labels_daemon, labels_daemon_stop)
