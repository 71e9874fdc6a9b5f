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

/* dcgm-exporter flags that mean nothing here: accepted, one warning each (see ignored_flags[]). */
enum {
	IGN_REMOTE_HE,
	IGN_SWITCH_DEVICES,
	IGN_CPU_DEVICES,
	IGN_CONFIGMAP,
	IGN_POD_LABELS,
	IGN_POD_UID,
	IGN_POD_LABEL_REGEX,
	IGN_DRA,
	IGN_HPC_DIR,
	IGN_LOG_FORMAT,
	IGN_DCGM_LOG,
	IGN_DCGM_LOG_LEVEL,
	IGN_FAKE_GPUS,
	IGN_SYSTEMD_SOCKET,
	IGN_PPROF,
	IGN_BIND_WATCH,
	IGN_BIND_POLL,
	IGN_DUMP,
	IGN_DUMP_DIR,
	IGN_DUMP_RETENTION,
	IGN_DUMP_COMPRESSION,
	IGN_STARTUP_VALIDATE,
	IGN_COUNT
};

struct exporter_opts {
	struct cmd_common c;
	const char *address, *web_config, *socket, *resource_names, *collectors, *devices, *gpu_id_type;
	unsigned interval_ms, podres_ms, xid_window_ms, clock_window_ms;
	bool kubernetes, virtual_gpus, no_hostname, mig_parent, debug, replace_blanks, old_namespace;
	const char *ignored[IGN_COUNT]; /* the value given, or NULL */
	bool ignored_set[IGN_COUNT];    /* the boolean ones: given as true */
};

#define EXP_F(field) offsetof(struct exporter_opts, field)
/* A dcgm-exporter flag kept for compatibility: its value is recorded and warned about, not used. */
#define IGNORED_STR(name_, short_, env_, idx)                                                                       \
	CMD_ROW(name_, short_, CMD_OPT_STR, "X", "accepted for dcgm-exporter compatibility; no effect (a warning)", \
		.env = {env_}, .off = EXP_F(ignored) + (idx) * sizeof(const char *))
#define IGNORED_BOOL(name_, short_, env_, idx)                                                                        \
	CMD_ROW(name_, short_, CMD_OPT_BOOL, NULL, "accepted for dcgm-exporter compatibility; no effect (a warning)", \
		.env = {env_}, .off = EXP_F(ignored_set) + (idx) * sizeof(bool))
/* Flags and env vars of dcgm-exporter where it has them (docs/reference/monitoring-doctor.md A3). */
static const struct cmd_opt exporter_opts[] = {
    CMD_ROW("address", 'a', CMD_OPT_STR, "ADDR", "listen address", .alias = "listen", .env = {"DCGM_EXPORTER_LISTEN"},
	    .def = ":9400", .off = EXP_F(address)),
    CMD_ROW("collect-interval", 'c', CMD_OPT_UINT, "MS", "NVML sampling interval in ms",
	    .env = {"DCGM_EXPORTER_INTERVAL"}, .def = "5000", .off = EXP_F(interval_ms), .min = 100,
	    .max = 3600 * 1000),
    CMD_ROW("kubernetes", 'k', CMD_OPT_BOOL, NULL, "pod attribution (off by default, as dcgm-exporter)",
	    .env = {"DCGM_EXPORTER_KUBERNETES"}, .def = "false", .off = EXP_F(kubernetes)),
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
    CMD_ROW("collectors", 'f', CMD_OPT_STR, "FILE",
	    "dcgm-exporter collectors CSV (field, type, help per line); default: the built-in set",
	    .env = {"DCGM_EXPORTER_COLLECTORS"}, .off = EXP_F(collectors)),
    CMD_ROW("devices", 'd', CMD_OPT_STR, "f|g|i",
	    "series per GPU with MIG: f its instances (a GPU without MIG: the GPU), g GPUs only, i instances only",
	    .env = {"DCGM_EXPORTER_DEVICES_STR"}, .def = "f", .off = EXP_F(devices)),
    CMD_ROW("mig-parent-metrics", 0, CMD_OPT_BOOL, NULL,
	    "also serve a MIG GPU's own series next to its instances' (sums per namespace then count it twice)",
	    .env = {"GPULET_EXPORTER_MIG_PARENT_METRICS"}, .def = "false", .off = EXP_F(mig_parent)),
    CMD_ROW("replace-blanks-in-model-name", 0, CMD_OPT_BOOL, NULL, "modelName label with '-' for spaces",
	    .alias = "rbmn", .env = {"DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME"}, .def = "false",
	    .off = EXP_F(replace_blanks)),
    CMD_ROW("debug", 0, CMD_OPT_BOOL, NULL, "same as --log-level debug", .env = {"DCGM_EXPORTER_DEBUG"}, .def = "false",
	    .off = EXP_F(debug)),
    CMD_ROW("web-config-file", 0, CMD_OPT_STR, "FILE",
	    "TLS and basic auth, Prometheus exporter-toolkit format (a key gpulet cannot honour: exit 1)",
	    .env = {"DCGM_EXPORTER_WEB_CONFIG_FILE"}, .off = EXP_F(web_config)),
    CMD_ROW("xid-count-window-size", 'x', CMD_OPT_UINT, "MS", "DCGM_EXP_XID_ERRORS_COUNT counts XIDs of this window",
	    .env = {"DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE"}, .def = "300000", .off = EXP_F(xid_window_ms), .min = 1,
	    .max = 7 * 24 * 3600 * 1000),
    CMD_ROW("use-old-namespace", 'o', CMD_OPT_BOOL, NULL,
	    "dcgm-exporter 1.x labels: uuid, pod_name, pod_namespace, "
	    "container_name",
	    .env = {"DCGM_EXPORTER_USE_OLD_NAMESPACE"}, .def = "false", .off = EXP_F(old_namespace)),
    IGNORED_STR("remote-hostengine-info", 'r', "DCGM_REMOTE_HOSTENGINE_INFO", IGN_REMOTE_HE),
    IGNORED_STR("switch-devices", 's', "DCGM_EXPORTER_OTHER_DEVICES_STR", IGN_SWITCH_DEVICES),
    IGNORED_STR("cpu-devices", 'p', "DCGM_EXPORTER_CPU_DEVICES_STR", IGN_CPU_DEVICES),
    IGNORED_STR("configmap-data", 'm', "DCGM_EXPORTER_CONFIGMAP_DATA", IGN_CONFIGMAP),
    CMD_ROW("kubernetes-gpu-id-type", 0, CMD_OPT_STR, "uid|device-name",
	    "how kubelet names GPUs: uid (GPU-...) or device-name (nvidiaN, GKE)",
	    .env = {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"}, .def = "uid", .off = EXP_F(gpu_id_type)),
    IGNORED_BOOL("kubernetes-enable-pod-labels", 0, "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", IGN_POD_LABELS),
    IGNORED_BOOL("kubernetes-enable-pod-uid", 0, "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", IGN_POD_UID),
    IGNORED_STR("kubernetes-pod-label-allowlist-regex", 0, "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
		IGN_POD_LABEL_REGEX),
    IGNORED_BOOL("kubernetes-enable-dra", 0, "KUBERNETES_ENABLE_DRA", IGN_DRA),
    CMD_ROW("clock-events-count-window-size", 0, CMD_OPT_UINT, "MS",
	    "DCGM_EXP_CLOCK_EVENTS_COUNT counts clock event samples of this window",
	    .env = {"DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE"}, .def = "300000", .off = EXP_F(clock_window_ms),
	    .min = 1, .max = 7 * 24 * 3600 * 1000),
    IGNORED_STR("hpc-job-mapping-dir", 0, "DCGM_HPC_JOB_MAPPING_DIR", IGN_HPC_DIR),
    IGNORED_STR("log-format", 0, "DCGM_EXPORTER_LOG_FORMAT", IGN_LOG_FORMAT),
    IGNORED_BOOL("enable-dcgm-log", 0, "DCGM_EXPORTER_ENABLE_DCGM_LOG", IGN_DCGM_LOG),
    IGNORED_STR("dcgm-log-level", 0, "DCGM_EXPORTER_DCGM_LOG_LEVEL", IGN_DCGM_LOG_LEVEL),
    IGNORED_BOOL("fake-gpus", 0, "DCGM_EXPORTER_USE_FAKE_GPUS", IGN_FAKE_GPUS),
    IGNORED_BOOL("web-systemd-socket", 0, "DCGM_EXPORTER_SYSTEMD_SOCKET", IGN_SYSTEMD_SOCKET),
    IGNORED_BOOL("enable-pprof", 0, "DCGM_EXPORTER_ENABLE_PPROF", IGN_PPROF),
    IGNORED_BOOL("enable-gpu-bind-unbind-watch", 0, "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", IGN_BIND_WATCH),
    IGNORED_STR("gpu-bind-unbind-poll-interval", 0, "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", IGN_BIND_POLL),
    IGNORED_BOOL("dump-enabled", 0, "DCGM_EXPORTER_DUMP_ENABLED", IGN_DUMP),
    IGNORED_STR("dump-directory", 0, "DCGM_EXPORTER_DUMP_DIRECTORY", IGN_DUMP_DIR),
    IGNORED_STR("dump-retention", 0, "DCGM_EXPORTER_DUMP_RETENTION", IGN_DUMP_RETENTION),
    IGNORED_BOOL("dump-compression", 0, "DCGM_EXPORTER_DUMP_COMPRESSION", IGN_DUMP_COMPRESSION),
    IGNORED_BOOL("disable-startup-validate", 0, "DISABLE_STARTUP_VALIDATE", IGN_STARTUP_VALIDATE),
    CMD_OPTS_NVML,
    CMD_OPT_LOG_LEVEL,
    {0},
};

/* Why each ignored flag means nothing here (the one warning it gets). */
static const char *const ignored_why[IGN_COUNT] = {
    [IGN_REMOTE_HE] = "there is no DCGM host engine: gpulet reads NVML directly",
    [IGN_SWITCH_DEVICES] = "NVSwitch metrics are not served",
    [IGN_CPU_DEVICES] = "CPU metrics are not served",
    [IGN_CONFIGMAP] = "ConfigMaps are not read: mount it as a file and pass -f",
    [IGN_POD_LABELS] = "pod Kubernetes labels are not added (no API server access)",
    [IGN_POD_UID] = "the pod_uid label is not added (PodResources has no UID)",
    [IGN_POD_LABEL_REGEX] = "pod Kubernetes labels are not added",
    [IGN_DRA] = "DRA claims are not attributed",
    [IGN_HPC_DIR] = "the hpc_job label is not added",
    [IGN_LOG_FORMAT] = "logs are logfmt",
    [IGN_DCGM_LOG] = "there is no DCGM library",
    [IGN_DCGM_LOG_LEVEL] = "there is no DCGM library",
    [IGN_FAKE_GPUS] = "use GPULET_NVML_LIBRARY with the fake NVML instead",
    [IGN_SYSTEMD_SOCKET] = "socket activation is not supported; --address is used",
    [IGN_PPROF] = "there is no pprof",
    [IGN_BIND_WATCH] = "GPU bind/unbind is not watched: a changed GPU set restarts the exporter",
    [IGN_BIND_POLL] = "GPU bind/unbind is not watched",
    [IGN_DUMP] = "debug dumps are not written",
    [IGN_DUMP_DIR] = "debug dumps are not written",
    [IGN_DUMP_RETENTION] = "debug dumps are not written",
    [IGN_DUMP_COMPRESSION] = "debug dumps are not written",
    [IGN_STARTUP_VALIDATE] = "startup checks are gpulet doctor's",
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

/* dcgm-exporter's -d: f, g or i, optionally with an id range (not applied here: all devices). */
static int parse_devices(const char *s, enum exp_devices *ret)
{
	if (!s || !*s || !strchr("fgi", s[0]) || (s[1] && s[1] != ':') || (s[0] == 'f' && s[1]))
		return -1;
	*ret = s[0] == 'g' ? EXP_DEVICES_GPUS : s[0] == 'i' ? EXP_DEVICES_INSTANCES : EXP_DEVICES_FLEX;
	if (s[1])
		log_warn("device id ranges are not applied; every GPU and instance of that kind is served",
			 "devices=%s", s);
	return 0;
}

static void warn_ignored(const struct exporter_opts *o)
{
	for (size_t i = 0; i < IGN_COUNT; i++) {
		if (!o->ignored[i] && !o->ignored_set[i])
			continue;
		const char *flag = "?";
		for (const struct cmd_opt *r = exporter_opts; r->name; r++)
			if (r->off == EXP_F(ignored) + i * sizeof(const char *) ||
			    r->off == EXP_F(ignored_set) + i * sizeof(bool))
				flag = r->name;
		log_warn("dcgm-exporter option accepted but has no effect", "flag=--%s why=\"%s\"", flag,
			 ignored_why[i]);
	}
}

/* What a collectors file asks for that is served differently or not at all: one warning each. */
static void warn_collectors(const struct exp_collectors *c)
{
	for (size_t k = 0; k < c->n; k++) {
		const struct exp_counter *ct = &c->v[k];
		bool dup = false;
		for (size_t j = 0; j < k; j++)
			dup |= streq(c->v[j].name, ct->name);
		if (dup)
			log_warn("field listed twice in the collectors file; the first line is used",
				 "file=%s line=%u "
				 "field=%s",
				 c->file, ct->line, ct->name);
		else if (ct->kind == EXP_COUNTER_UNAVAILABLE ||
			 (ct->kind == EXP_COUNTER_METRIC && streq(ct->type, "label")))
			log_warn(
			    "gpulet does not sample this field; not served (see gpulet_exporter_field_unavailable)",
			    "file=%s line=%u field=%s", c->file, ct->line, ct->name);
		else if (streq(ct->type, "histogram") || streq(ct->type, "summary"))
			log_warn("a single value cannot be a histogram or summary; served as gauge",
				 "file=%s line=%u field=%s", c->file, ct->line, ct->name);
	}
}

/*
 * What is served: --debug, -d, the flags that mean nothing here (warned), the collectors file (read
 * before NVML, so a typo fails the pod at once, naming file and line). CMD_CONTINUE or an exit code.
 */
static int served_set(const struct exporter_opts *o, struct exp_config *cfg)
{
	/* static: the exporter keeps pointers into it (help texts) while a stuck sampler may still run */
	static struct exp_collectors collectors;

	if (o->debug)
		log_set_level_name("debug");
	*cfg = (struct exp_config){.mig_parent = o->mig_parent,
				   .old_namespace = o->old_namespace,
				   .xid_window_ms = o->xid_window_ms,
				   .clock_window_ms = o->clock_window_ms};
	if (!streq(o->gpu_id_type, "uid") && !streq(o->gpu_id_type, "device-name"))
		return cmd_usage_error(&exporter_verb, "--kubernetes-gpu-id-type '%s': use uid or device-name",
				       o->gpu_id_type);
	cfg->gpu_id_device_name = streq(o->gpu_id_type, "device-name");
	if (parse_devices(o->devices, &cfg->devices) < 0)
		return cmd_usage_error(&exporter_verb, "--devices '%s': use f, g or i (optionally g:RANGE, i:RANGE)",
				       o->devices);
	warn_ignored(o);
	if (o->collectors) {
		struct gerr err = {0};
		if (exp_collectors_load(o->collectors, &collectors, &err) < 0) {
			log_error("cannot read the collectors file", "error=\"%s\"", err.msg);
			return 1;
		}
		warn_collectors(&collectors);
		cfg->collectors = &collectors;
		log_info("Collectors file read", "file=%s fields=%zu", o->collectors, collectors.n);
	}
	return CMD_CONTINUE;
}

int cmd_exporter(int argc, char **argv)
{
	struct exporter_opts o = {0};
	int r = cmd_parse(&exporter_verb, argc, argv, &o);
	if (r != CMD_CONTINUE)
		return r;
	struct exp_config cfg;
	r = served_set(&o, &cfg);
	if (r != CMD_CONTINUE)
		return r;

	/* every thread inherits the blocked set; the main thread takes the signals with sigwait */
	sigset_t set;
	cmd_block_stop_signals(&set);
	signal(SIGPIPE, SIG_IGN);

	struct gerr err = {0};
	struct exp_http *http = NULL;
	struct exp_http_options ho = {.address = o.address, .web_config_file = o.web_config};
	if (exp_http_start(&ho, &http, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		return 1;
	}
	log_info("Starting exporter", "address=%s port=%u collect_interval_ms=%u kubernetes=%s web_config=\"%s\"",
		 o.address, exp_http_port(http), o.interval_ms, o.kubernetes ? "true" : "false",
		 o.web_config ? o.web_config : "");

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
	for (size_t i = 0; o.replace_blanks && i < n->n_gpus; i++)
		for (char *p = n->gpus[i].name; *p; p++)
			if (*p == ' ')
				*p = '-';
	if (exporter_init(&e, n, o.no_hostname ? NULL : host, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		exp_http_stop(http);
		return 1;
	}
	exporter_configure(&e, &cfg);
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
