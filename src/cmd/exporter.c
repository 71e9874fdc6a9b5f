/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet exporter: Prometheus /metrics with dcgm-exporter's names and labels, pod attribution
 * from the kubelet PodResources API. Flags and env vars are dcgm-exporter's where it has them
 * (docs/reference/monitoring-doctor.md A3).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "exporter/exporter.h"
#include "util/log.h"

#define NVML_RETRY_S 10

/* NVML kept loaded for a sampler stuck in a hung call when we return (see cmd_exporter). */
static struct nvml *stuck_nv;

static void exporter_help(FILE *f)
{
	fprintf(
	    f,
	    "Usage: gpulet exporter [OPTIONS]\n\n"
	    "Serve GPU metrics for Prometheus at /metrics (dcgm-exporter names and labels, with pod/namespace/\n"
	    "container from kubelet) and /healthz. Scrapes never wait on NVML: samplers run per GPU.\n\n"
	    "  -a, --address ADDR          listen address (env DCGM_EXPORTER_LISTEN, default :9400); alias --listen\n"
	    "  -c, --collect-interval MS   NVML sampling interval (env DCGM_EXPORTER_INTERVAL, default 5000)\n"
	    "  -k, --kubernetes[=BOOL]     pod attribution (env DCGM_EXPORTER_KUBERNETES, default true)\n"
	    "      --pod-resources-socket PATH  kubelet PodResources socket under --root (env\n"
	    "                              DCGM_POD_RESOURCES_KUBELET_SOCKET, default " PODRES_DEFAULT_SOCKET ")\n"
	    "      --pod-resources-interval MS  how often attribution is refreshed (default 10000)\n"
	    "      --kubernetes-virtual-gpus[=BOOL]  one series per pod sharing a GPU, label vgpu (env\n"
	    "                              KUBERNETES_VIRTUAL_GPUS, default false)\n"
	    "      --nvidia-resource-names LIST  extra resource names to attribute (env NVIDIA_RESOURCE_NAMES)\n"
	    "  -n, --no-hostname           no Hostname label (env DCGM_EXPORTER_NO_HOSTNAME)\n"
	    "      --nvml-library PATH     libnvidia-ml.so.1 to load (env GPULET_NVML_LIBRARY)\n"
	    "      --driver-root DIR       where the driver is installed (env NVIDIA_DRIVER_ROOT, default /)\n"
	    "      --root DIR              host root for /sys, /proc and the kubelet socket (default /)\n"
	    "      --log-level LEVEL       debug|info|warn|error (env LOG_LEVEL, default info)\n"
	    "  XIDs that make a GPU unhealthy follow the device plugin: env DP_DISABLE_HEALTHCHECKS,\n"
	    "  DP_ENABLE_HEALTHCHECKS (default: all but application XIDs 13,31,43,45,68,109).\n"
	    "  -h, --help                  this text\n\n"
	    "Example: gpulet exporter --address :9400 --collect-interval 1000 & curl -s localhost:9400/metrics\n");
}

static int parse_ms(const char *s, int min, int *ret)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < min || v > 3600 * 1000)
		return -1;
	*ret = (int)v;
	return 0;
}

struct exporter_opts {
	const char *address, *socket, *resource_names, *log_level;
	int interval_ms, podres_ms;
	bool kubernetes, virtual_gpus, no_hostname;
	struct cmd_nvml_opts nvml;
};

static int env_bool(const char *name, bool *v)
{
	const char *s = getenv(name);
	return s && *s && cmd_parse_bool(s, v) < 0 ? -1 : 0;
}

static int defaults_from_env(struct exporter_opts *o)
{
	o->address = cmd_env_or("DCGM_EXPORTER_LISTEN", ":9400");
	o->socket = cmd_env_or("DCGM_POD_RESOURCES_KUBELET_SOCKET", PODRES_DEFAULT_SOCKET);
	o->resource_names = cmd_env_or("NVIDIA_RESOURCE_NAMES", NULL);
	o->log_level = cmd_env_or("LOG_LEVEL", NULL);
	o->interval_ms = 5000;
	o->podres_ms = 10000;
	o->kubernetes = true;
	const char *iv = getenv("DCGM_EXPORTER_INTERVAL");
	if (iv && *iv && parse_ms(iv, 100, &o->interval_ms) < 0) {
		fprintf(stderr, "gpulet exporter: DCGM_EXPORTER_INTERVAL='%s' is not 100..3600000 ms\n", iv);
		return -1;
	}
	if (env_bool("DCGM_EXPORTER_KUBERNETES", &o->kubernetes) < 0 ||
	    env_bool("KUBERNETES_VIRTUAL_GPUS", &o->virtual_gpus) < 0 ||
	    env_bool("DCGM_EXPORTER_NO_HOSTNAME", &o->no_hostname) < 0) {
		fprintf(stderr, "gpulet exporter: a boolean environment variable is not true/false\n");
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct exporter_opts *o)
{
	enum { O_SOCKET = 256, O_PODRES_MS, O_VGPU, O_NAMES, O_LIB, O_DRIVER_ROOT, O_ROOT, O_LOG };
	static const struct option opts[] = {
	    {"address", required_argument, NULL, 'a'},
	    {"listen", required_argument, NULL, 'a'},
	    {"collect-interval", required_argument, NULL, 'c'},
	    {"kubernetes", optional_argument, NULL, 'k'},
	    {"pod-resources-socket", required_argument, NULL, O_SOCKET},
	    {"pod-resources-kubelet-socket", required_argument, NULL, O_SOCKET},
	    {"pod-resources-interval", required_argument, NULL, O_PODRES_MS},
	    {"kubernetes-virtual-gpus", optional_argument, NULL, O_VGPU},
	    {"nvidia-resource-names", required_argument, NULL, O_NAMES},
	    {"no-hostname", no_argument, NULL, 'n'},
	    {"nvml-library", required_argument, NULL, O_LIB},
	    {"driver-root", required_argument, NULL, O_DRIVER_ROOT},
	    {"root", required_argument, NULL, O_ROOT},
	    {"log-level", required_argument, NULL, O_LOG},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "a:c:k::nh", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			o->address = optarg;
			break;
		case 'c':
			if (parse_ms(optarg, 100, &o->interval_ms) < 0) {
				fprintf(stderr, "gpulet exporter: --collect-interval '%s': want 100..3600000 ms\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'k':
		case O_VGPU:
			if (cmd_parse_bool(optarg ? optarg : "true", c == 'k' ? &o->kubernetes : &o->virtual_gpus) <
			    0) {
				fprintf(stderr, "gpulet exporter: '%s' is not true/false\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_SOCKET:
			o->socket = optarg;
			break;
		case O_PODRES_MS:
			if (parse_ms(optarg, 100, &o->podres_ms) < 0) {
				fprintf(stderr,
					"gpulet exporter: --pod-resources-interval '%s': want 100..3600000 ms\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case O_NAMES:
			o->resource_names = optarg;
			break;
		case 'n':
			o->no_hostname = true;
			break;
		case O_LIB:
			o->nvml.library = optarg;
			break;
		case O_DRIVER_ROOT:
			o->nvml.driver_root = optarg;
			break;
		case O_ROOT:
			o->nvml.root = optarg;
			break;
		case O_LOG:
			o->log_level = optarg;
			break;
		case 'h':
			exporter_help(stdout);
			return 0;
		default:
			exporter_help(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpulet exporter: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (o->log_level && log_set_level_name(o->log_level) < 0) {
		fprintf(stderr, "gpulet exporter: unknown log level '%s' (debug|info|warn|error)\n", o->log_level);
		return EXIT_USAGE;
	}
	return -1; /* continue */
}

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
static int load_node(const struct exporter_opts *o, const sigset_t *set, struct nvml **ret_nv, struct node **ret_n)
{
	for (;;) {
		struct gerr err = {0};
		_cleanup_(nvml_closep) struct nvml *nv = NULL;
		struct node *n = NULL;
		if (cmd_open_nvml(&o->nvml, &nv, &err) >= 0 && node_load(nv, o->nvml.root, &n, &err) >= 0) {
			*ret_nv = TAKE_PTR(nv);
			*ret_n = n;
			return 0;
		}
		log_error("cannot load NVML; /metrics serves gpulet_exporter_ready 0, retrying",
			  "error=\"%s\" retry_s=%d", err.msg, NVML_RETRY_S);
		if (wait_signal(set, NVML_RETRY_S))
			return -1;
	}
}

int cmd_exporter(int argc, char **argv)
{
	struct exporter_opts o = {0};
	if (defaults_from_env(&o) < 0)
		return EXIT_USAGE;
	int r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;

	/* every thread inherits the blocked set; the main thread takes the signals with sigwait */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct gerr err = {0};
	struct exp_http *http = NULL;
	struct exp_http_options ho = {.address = o.address};
	if (exp_http_start(&ho, &http, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		return 1;
	}
	log_info("Starting exporter", "address=%s port=%u collect_interval_ms=%d kubernetes=%s", o.address,
		 exp_http_port(http), o.interval_ms, o.kubernetes ? "true" : "false");

	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	_cleanup_(node_freep) struct node *n = NULL;
	if (load_node(&o, &set, &nv, &n) < 0) {
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
		if (podres_cache_start(&pc, o.nvml.root, o.socket, o.podres_ms, (const char *const *)names, &err) < 0) {
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
