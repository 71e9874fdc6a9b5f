/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet exporter: Prometheus /metrics with dcgm-exporter's names and labels, pod attribution
 * from the kubelet PodResources API. Flags and env vars are dcgm-exporter's where it has them
 * (docs/reference/monitoring-doctor.md A3).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/options.h"
#include "exporter/exporter.h"
#include "util/log.h"

#define NVML_RETRY_S 10

/* NVML kept loaded for a sampler stuck in a hung call when we return (see cmd_exporter). */
static struct nvml *stuck_nv;

struct exporter_opts {
	struct cmd_common c;
	const char *address, *socket, *resource_names;
	unsigned interval_ms, podres_ms;
	bool kubernetes, virtual_gpus, no_hostname;
};

#define EXP_F(field) offsetof(struct exporter_opts, field)
/* Flags and env vars of dcgm-exporter where it has them (docs/reference/monitoring-doctor.md A3). */
static const struct cmd_opt exporter_opts[] = {
    CMD_ROW("address", 'a', CMD_OPT_STR, "ADDR", "listen address", .alias = "listen", .env = {"DCGM_EXPORTER_LISTEN"},
	    .def = ":9400", .off = EXP_F(address)),
    CMD_ROW("collect-interval", 'c', CMD_OPT_UINT, "MS", "NVML sampling interval in ms",
	    .env = {"DCGM_EXPORTER_INTERVAL"}, .def = "5000", .off = EXP_F(interval_ms), .min = 100,
	    .max = 3600 * 1000),
    CMD_ROW("kubernetes", 'k', CMD_OPT_BOOL, NULL, "pod attribution", .env = {"DCGM_EXPORTER_KUBERNETES"},
	    .def = "true", .off = EXP_F(kubernetes)),
    CMD_ROW("pod-resources-socket", 0, CMD_OPT_STR, "PATH", "kubelet PodResources socket under --root",
	    .alias = "pod-resources-kubelet-socket", .env = {"DCGM_POD_RESOURCES_KUBELET_SOCKET"},
	    .def = PODRES_DEFAULT_SOCKET, .off = EXP_F(socket)),
    CMD_ROW("pod-resources-interval", 0, CMD_OPT_UINT, "MS", "how often pod attribution is refreshed, in ms",
	    .def = "10000", .off = EXP_F(podres_ms), .min = 100, .max = 3600 * 1000),
    CMD_ROW("kubernetes-virtual-gpus", 0, CMD_OPT_BOOL, NULL, "one series per pod sharing a GPU, label vgpu",
	    .env = {"KUBERNETES_VIRTUAL_GPUS"}, .def = "false", .off = EXP_F(virtual_gpus)),
    CMD_ROW("nvidia-resource-names", 0, CMD_OPT_STR, "LIST", "extra resource names to attribute, comma-separated",
	    .env = {"NVIDIA_RESOURCE_NAMES"}, .off = EXP_F(resource_names)),
    CMD_ROW("no-hostname", 'n', CMD_OPT_SET, NULL, "no Hostname label", .env = {"DCGM_EXPORTER_NO_HOSTNAME"},
	    .off = EXP_F(no_hostname)),
    CMD_OPTS_NVML,
    CMD_OPT_LOG_LEVEL,
    {0},
};

static const struct cmd_verb exporter_verb = CMD_VERB(
    "exporter", "[OPTIONS]", exporter_opts,
    "gpulet exporter --address :9400 --collect-interval 1000 & curl -s localhost:9400/metrics",
    .about = "Serve GPU metrics for Prometheus at /metrics (dcgm-exporter names and labels, with pod/namespace/\n"
	     "container from kubelet) and /healthz. Scrapes never wait on NVML: samplers run per GPU.",
    .footer = "XIDs that make a GPU unhealthy follow the device plugin: env DP_DISABLE_HEALTHCHECKS,\n"
	      "DP_ENABLE_HEALTHCHECKS (default: all but application XIDs 13,31,43,45,68,109).");

/* Split "a,b,c" into a NULL-terminated array pointing into a copy. */
static char **split_names(const char *list, char **ret_copy)
{
	*ret_copy = NULL;
	if (!list || !*list)
		return NULL;
	char *copy = strdup(list);
	size_t n = 2;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	char **v = calloc(n, sizeof(*v));
	if (!copy || !v) {
		free(copy);
		free(v);
		return NULL;
	}
	size_t i = 0;
	char *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		v[i++] = t;
	*ret_copy = copy;
	return v;
}

/* Wait for SIGTERM/SIGINT at most seconds (<0: forever). Returns true when one came. */
static bool wait_signal(const sigset_t *set, int seconds)
{
	if (seconds < 0) {
		int sig;
		sigwait(set, &sig);
		return true;
	}
	struct timespec ts = {.tv_sec = seconds};
	return sigtimedwait(set, NULL, &ts) > 0;
}

/* NVML and the node, retried until they load: a pod that crash-loops on NVML explains nothing. */
static int load_node(const struct exporter_opts *o, const sigset_t *set, struct exp_http *http, struct nvml **ret_nv,
		     struct node **ret_n)
{
	for (;;) {
		struct gerr err = {0};
		_cleanup_(nvml_closep) struct nvml *nv = NULL;
		struct node *n = NULL;
		if (cmd_open_nvml(&o->c.nvml, &nv, &err) >= 0 && node_load(nv, o->c.nvml.root, &n, &err) >= 0) {
			*ret_nv = TAKE_PTR(nv);
			*ret_n = n;
			return 0;
		}
		log_error("cannot load NVML; /metrics serves gpulet_exporter_ready 0 and /healthz 503 with this error, "
			  "retrying",
			  "error=\"%s\" retry_s=%d", err.msg, NVML_RETRY_S);
		exp_http_set_not_ready(http, err.msg);
		if (wait_signal(set, NVML_RETRY_S))
			return -1;
	}
}

int cmd_exporter(int argc, char **argv)
{
	struct exporter_opts o = {0};
	int r = cmd_parse(&exporter_verb, argc, argv, &o);
	if (r != CMD_CONTINUE)
		return r;

	/* every thread inherits the blocked set; the main thread takes the signals with sigwait */
	sigset_t set;
	cmd_block_stop_signals(&set);
	signal(SIGPIPE, SIG_IGN);

	struct gerr err = {0};
	struct exp_http *http = NULL;
	struct exp_http_options ho = {.address = o.address};
	if (exp_http_start(&ho, &http, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		return 1;
	}
	log_info("Starting exporter", "address=%s port=%u collect_interval_ms=%u kubernetes=%s", o.address,
		 exp_http_port(http), o.interval_ms, o.kubernetes ? "true" : "false");

	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	_cleanup_(node_freep) struct node *n = NULL;
	if (load_node(&o, &set, http, &nv, &n) < 0) {
		exp_http_stop(http);
		return 0;
	}
	char host[256] = "";
	const char *node_name = getenv("NODE_NAME");
	if (node_name && *node_name)
		snprintf(host, sizeof(host), "%s", node_name);
	else if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "unknown");

	/*
	 * Static storage: a sampler stuck in a hung NVML call still points at the exporter when we
	 * return, and must find live memory until the process exits (exporter_stop leaves it running).
	 */
	static struct exporter e;
	static struct podres_cache pc;
	if (exporter_init(&e, n, o.no_hostname ? NULL : host, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		exp_http_stop(http);
		return 1;
	}
	e.virtual_gpus = o.virtual_gpus;
	if (xid_policy_parse(getenv("DP_DISABLE_HEALTHCHECKS"), getenv("DP_ENABLE_HEALTHCHECKS"), &e.xid_policy, &err) <
	    0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		exp_http_stop(http);
		exporter_free(&e);
		return EXIT_USAGE;
	}
	_cleanup_free_ char *names_copy = NULL;
	_cleanup_free_ char **names = split_names(o.resource_names, &names_copy);
	if (o.kubernetes) {
		if (podres_cache_start(&pc, o.c.nvml.root, o.socket, o.podres_ms, (const char *const *)names, &err) <
		    0) {
			log_error("cannot start pod attribution", "error=\"%s\"", err.msg);
			exp_http_stop(http);
			exporter_free(&e);
			return 1;
		}
		if (pc.errors)
			log_warn("PodResources List failed; metrics carry no pod labels until it answers",
				 "socket=%s error=\"%s\"", o.socket, pc.last_error);
		e.podres = &pc;
	}
	if (exporter_start(&e, nv, o.interval_ms, &err) < 0) {
		log_error("cannot start the samplers", "error=\"%s\"", err.msg);
		return 1;
	}
	size_t migs = e.n_devs - e.n_gpus;
	exp_http_set_exporter(http, &e);
	log_info("Exporter ready", "gpus=%zu mig_instances=%zu driver=%s hostname=%s", e.n_gpus, migs,
		 n->driver_version, o.no_hostname ? "-" : host);

	/*
	 * The MIG layout is read once; after a re-partition the samplers stop publishing the moved
	 * instances and we exit so the DaemonSet restarts us on the new layout (the plugin's upstream
	 * does the same on MIG changes, device-plugin.md §6).
	 */
	while (!wait_signal(&set, 1))
		if (atomic_load(&e.layout_changed)) {
			log_warn("MIG layout changed; exiting to restart with the new layout", NULL);
			break;
		}
	log_info("Stopping exporter", NULL);
	exp_http_stop(http); /* no scrape is running after this */
	int left = exporter_stop(&e, 2000);
	if (o.kubernetes)
		podres_cache_stop(&pc);
	if (left) {
		/* a sampler is inside a hung NVML call: leave its memory and NVML alone, just exit */
		stuck_nv = TAKE_PTR(nv);
		return 0;
	}
	exporter_free(&e);
	return 0;
}
