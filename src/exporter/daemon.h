/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter as a daemon: one owner for everything `gpulet exporter` runs (HTTP, NVML and the
 * node model, the samplers, the PodResources cache), started, run and stopped symmetrically.
 * Every exit path goes through exporter_daemon_stop(), which stops whatever was started.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "exporter/exporter.h"
#include "nvml/nvml.h"
#include "nvml/xid.h"

struct exporter_daemon_options {
	struct exp_http_options http;
	const struct host_paths *host; /* NVML and the host, as the verb resolved them; .root is also where the
					* PodResources socket is read */
	const char *collectors_file;   /* dcgm-exporter CSV, NULL: the built-in set */
	const char *node_name;         /* the Hostname label (env NODE_NAME); NULL or "": the host name */
	struct exp_config served;      /* .collectors is set from collectors_file */
	struct xid_policy xid_policy;
	unsigned interval_ms;
	bool kubernetes; /* pod attribution from PodResources */
	const char *podres_socket;
	unsigned podres_ms;
	const char *const *resource_names; /* extra resource names to attribute, NULL-terminated or NULL */
	bool virtual_gpus, no_hostname, replace_blanks;
	struct exp_kube_options kube; /* pod UIDs and labels from the API server (podmeta.h), with kubernetes */
	const char *hpc_dir;          /* --hpc-job-mapping-dir under host->root, NULL: none (hpc.h) */
};

struct exporter_daemon;

/*
 * Read the collectors file, serve HTTP at once (/healthz 503 until NVML loads), take the stop signals
 * of stop (util/loop.h; blocked by the caller before any thread starts). 0 with *ret, or -errno
 * (logged) with everything started so far stopped again.
 */
int exporter_daemon_start(const struct exporter_daemon_options *o, const sigset_t *stop, struct exporter_daemon **ret);
/*
 * Run on the one daemon loop until a stop signal or a MIG layout change (then the DaemonSet restarts
 * us): NVML and the node (retried every 10 s, /healthz saying why), then the samplers and pod
 * attribution. 0, or -errno (logged) when the exporter cannot start over the loaded node.
 */
int exporter_daemon_run(struct exporter_daemon *d);
/* Stop HTTP (no scrape runs after it), the samplers and pod attribution; free. NULL is fine. */
void exporter_daemon_stop(struct exporter_daemon *d);
