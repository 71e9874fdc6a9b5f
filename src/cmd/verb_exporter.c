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
#include "exporter/daemon.h"
#include "util/log.h"

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
	const char *address, *web_config, *socket, *resource_names, *collectors, *node_name;
	const char *xid_disable, *xid_enable; /* DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS */
	const char *devices_text;             /* --devices as given (the default's own text when none was) */
	const char *devices_range;            /* --devices g:RANGE / i:RANGE: the text, or NULL */
	enum exp_devices devices;             /* --devices */
	int gpu_id_type;                      /* --kubernetes-gpu-id-type: GPU_ID_* */
	unsigned interval_ms, podres_ms, xid_window_ms, clock_window_ms;
	bool kubernetes, virtual_gpus, no_hostname, mig_parent, debug, replace_blanks, old_namespace;
	const char *ignored[IGN_COUNT]; /* the value given, or NULL */
	bool ignored_set[IGN_COUNT];    /* the boolean ones: given as true */
};

#define EXP_F(field) offsetof(struct exporter_opts, field)

/* --kubernetes-gpu-id-type: how kubelet names GPUs (dcgm-exporter's appconfig.KubernetesGPUIDType) */
enum { GPU_ID_UID, GPU_ID_DEVICE_NAME };
static const struct enum_name gpu_id_types[] = {{GPU_ID_UID, "uid"}, {GPU_ID_DEVICE_NAME, "device-name"}};

static int set_devices(void *opts, const char *value, struct gerr *err);
static const char devices_default[] = "f";
#define DEVICES_WANT "f, g or i (g:RANGE, i:RANGE: RANGE a comma list of N or N-M)"
/* A dcgm-exporter flag kept for compatibility: its value is recorded and warned about, not used. */
#define IGNORED_STR(name_, short_, env_, idx)                                                                    \
	CMD_ROW(name_, short_, OPT_ARGV, "X", "accepted for dcgm-exporter compatibility; no effect (a warning)", \
		.env = {env_}, .off = EXP_F(ignored) + (idx) * sizeof(const char *))
#define IGNORED_BOOL(name_, short_, env_, idx)                                                                    \
	CMD_ROW(name_, short_, OPT_BOOL, NULL, "accepted for dcgm-exporter compatibility; no effect (a warning)", \
		.env = {env_}, .off = EXP_F(ignored_set) + (idx) * sizeof(bool))
/* A dcgm-exporter flag whose effect gpulet does not have yet: refused when set (see refused[]). */
#define REFUSED_STR(name_, short_, env_, idx)                                                                        \
	CMD_ROW(name_, short_, OPT_ARGV, "X", "dcgm-exporter's; not supported yet: refused when set", .env = {env_}, \
		.off = EXP_F(ignored) + (idx) * sizeof(const char *))
#define REFUSED_BOOL(name_, short_, env_, idx)                                                                         \
	CMD_ROW(name_, short_, OPT_BOOL, NULL, "dcgm-exporter's; not supported yet: refused when true", .env = {env_}, \
		.off = EXP_F(ignored_set) + (idx) * sizeof(bool))
/* Flags and env vars of dcgm-exporter where it has them (docs/reference/monitoring-doctor.md A3). */
static const struct optspec exporter_opts[] = {
    CMD_ROW("address", 'a', OPT_ARGV, "ADDR", "listen address", .alias = "listen", .env = {"DCGM_EXPORTER_LISTEN"},
	    .def = ":9400", .off = EXP_F(address)),
    CMD_ROW("collect-interval", 'c', OPT_UINT, "MS", "NVML sampling interval in ms", .env = {"DCGM_EXPORTER_INTERVAL"},
	    .def = "5000", .off = EXP_F(interval_ms), .min = 100, .max = 3600 * 1000),
    CMD_ROW("kubernetes", 'k', OPT_BOOL, NULL, "pod attribution (off by default, as dcgm-exporter)",
	    .env = {"DCGM_EXPORTER_KUBERNETES"}, .def = "false", .off = EXP_F(kubernetes)),
    CMD_ROW("pod-resources-socket", 0, OPT_ARGV, "PATH", "kubelet PodResources socket under --root",
	    .alias = "pod-resources-kubelet-socket", .env = {"DCGM_POD_RESOURCES_KUBELET_SOCKET"},
	    .def = PODRES_DEFAULT_SOCKET, .off = EXP_F(socket)),
    CMD_ROW("pod-resources-interval", 0, OPT_UINT, "MS", "how often pod attribution is refreshed, in ms",
	    .def = "10000", .off = EXP_F(podres_ms), .min = 100, .max = 3600 * 1000),
    CMD_ROW("kubernetes-virtual-gpus", 0, OPT_BOOL, NULL, "one series per pod sharing a GPU, label vgpu",
	    .env = {"KUBERNETES_VIRTUAL_GPUS"}, .def = "false", .off = EXP_F(virtual_gpus)),
    CMD_ROW("nvidia-resource-names", 0, OPT_ARGV, "LIST", "extra resource names to attribute, comma-separated",
	    .env = {"NVIDIA_RESOURCE_NAMES"}, .off = EXP_F(resource_names)),
    CMD_ROW("no-hostname", 'n', OPT_BOOL, NULL, "no Hostname label", .env = {"DCGM_EXPORTER_NO_HOSTNAME"},
	    .def = "false", .off = EXP_F(no_hostname)),
    CMD_ROW("collectors", 'f', OPT_ARGV, "FILE",
	    "dcgm-exporter collectors CSV (field, type, help per line); default: the built-in set",
	    .env = {"DCGM_EXPORTER_COLLECTORS"}, .off = EXP_F(collectors)),
    CMD_ROW("devices", 'd', OPT_CALL, "f|g|i",
	    "series per GPU with MIG: f its instances (a GPU without MIG: the GPU), g GPUs only, i instances only",
	    .env = {"DCGM_EXPORTER_DEVICES_STR"}, .def = devices_default, .call = set_devices, .want = DEVICES_WANT),
    CMD_ROW("mig-parent-metrics", 0, OPT_BOOL, NULL,
	    "also serve a MIG GPU's own series next to its instances' (sums per namespace then count it twice)",
	    .env = {"GPULET_EXPORTER_MIG_PARENT_METRICS"}, .def = "false", .off = EXP_F(mig_parent)),
    CMD_ROW("replace-blanks-in-model-name", 0, OPT_BOOL, NULL, "modelName label with '-' for spaces", .alias = "rbmn",
	    .env = {"DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME"}, .def = "false", .off = EXP_F(replace_blanks)),
    CMD_ROW("debug", 0, OPT_BOOL, NULL, "same as --log-level debug", .env = {"DCGM_EXPORTER_DEBUG"}, .def = "false",
	    .off = EXP_F(debug)),
    CMD_ROW("web-config-file", 0, OPT_ARGV, "FILE",
	    "TLS and basic auth, Prometheus exporter-toolkit format (a key gpulet cannot honour: exit 1)",
	    .env = {"DCGM_EXPORTER_WEB_CONFIG_FILE"}, .off = EXP_F(web_config)),
    CMD_ROW("xid-count-window-size", 'x', OPT_UINT, "MS", "DCGM_EXP_XID_ERRORS_COUNT counts XIDs of this window",
	    .env = {"DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE"}, .def = "300000", .off = EXP_F(xid_window_ms), .min = 1,
	    .max = 7 * 24 * 3600 * 1000),
    CMD_ROW("use-old-namespace", 'o', OPT_BOOL, NULL,
	    "dcgm-exporter 1.x labels: uuid, pod_name, pod_namespace, "
	    "container_name",
	    .env = {"DCGM_EXPORTER_USE_OLD_NAMESPACE"}, .def = "false", .off = EXP_F(old_namespace)),
    IGNORED_STR("remote-hostengine-info", 'r', "DCGM_REMOTE_HOSTENGINE_INFO", IGN_REMOTE_HE),
    IGNORED_STR("switch-devices", 's', "DCGM_EXPORTER_OTHER_DEVICES_STR", IGN_SWITCH_DEVICES),
    IGNORED_STR("cpu-devices", 'p', "DCGM_EXPORTER_CPU_DEVICES_STR", IGN_CPU_DEVICES),
    IGNORED_STR("configmap-data", 'm', "DCGM_EXPORTER_CONFIGMAP_DATA", IGN_CONFIGMAP),
    CMD_ROW("kubernetes-gpu-id-type", 0, OPT_ENUM, "uid|device-name",
	    "how kubelet names GPUs: uid (GPU-...) or device-name (nvidiaN, GKE)",
	    .env = {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"}, .def = "uid", .off = EXP_F(gpu_id_type),
	    OPTSPEC_NAMES(gpu_id_types)),
    REFUSED_BOOL("kubernetes-enable-pod-labels", 0, "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", IGN_POD_LABELS),
    REFUSED_BOOL("kubernetes-enable-pod-uid", 0, "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", IGN_POD_UID),
    IGNORED_STR("kubernetes-pod-label-allowlist-regex", 0, "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
		IGN_POD_LABEL_REGEX),
    IGNORED_BOOL("kubernetes-enable-dra", 0, "KUBERNETES_ENABLE_DRA", IGN_DRA),
    CMD_ROW("clock-events-count-window-size", 0, OPT_UINT, "MS",
	    "DCGM_EXP_CLOCK_EVENTS_COUNT counts clock event samples of this window",
	    .env = {"DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE"}, .def = "300000", .off = EXP_F(clock_window_ms),
	    .min = 1, .max = 7 * 24 * 3600 * 1000),
    REFUSED_STR("hpc-job-mapping-dir", 0, "DCGM_HPC_JOB_MAPPING_DIR", IGN_HPC_DIR),
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
    /* env only, as upstream reads them: the Hostname label (dcgm-exporter's pod spec sets it from the node), and
     * the XIDs that make a GPU unhealthy, as the device plugin's (docs/reference/device-plugin.md §4) */
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME", "the Hostname label (default: the host name)", .env = {"NODE_NAME"},
	    .env_only = true, .off = EXP_F(node_name)),
    CMD_ROW("disable-healthchecks", 0, OPT_ARGV, "LIST",
	    "XIDs that do not make a GPU unhealthy, comma-separated; all or xids: none does",
	    .env = {"DP_DISABLE_HEALTHCHECKS"}, .env_only = true, .off = EXP_F(xid_disable)),
    CMD_ROW("enable-healthchecks", 0, OPT_ARGV, "LIST",
	    "XIDs that make a GPU unhealthy even when ignored by default (13,31,43,45,68,109) or disabled; all: every "
	    "XID",
	    .env = {"DP_ENABLE_HEALTHCHECKS"}, .env_only = true, .off = EXP_F(xid_enable)),
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
    [IGN_POD_LABEL_REGEX] = "pod Kubernetes labels are not added",
    [IGN_DRA] = "DRA claims are not attributed",
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

/*
 * Options whose series a user would miss without a word: refused at start, naming the flag or env
 * var and where the GPU Operator and NVIDIA's chart set them (docs/reference/operator.md §4), until
 * gpulet serves them.
 */
static const struct {
	unsigned idx;
	const char *settings;
} refused[] = {
    {IGN_POD_LABELS, "GPU Operator ClusterPolicy dcgmExporter.enablePodLabels, dcgm-exporter chart "
		     "kubernetes.enablePodLabels: pods' Kubernetes labels are not added to the series yet"},
    {IGN_POD_UID, "GPU Operator ClusterPolicy dcgmExporter.enablePodUID, dcgm-exporter chart "
		  "kubernetes.enablePodUID: the pod_uid label is not added yet"},
    {IGN_HPC_DIR, "GPU Operator ClusterPolicy dcgmExporter.hpcJobMapping: the hpc_job label is not added yet"},
};

static const struct cmd_verb exporter_verb = CMD_VERB(
    "exporter", "[OPTIONS]", exporter_opts,
    "gpulet exporter --address :9400 --collect-interval 1000 & curl -s localhost:9400/metrics",
    .about = "Serve GPU metrics for Prometheus at /metrics (dcgm-exporter names and labels, with pod/namespace/\n"
	     "container from kubelet) and /healthz. Scrapes never wait on NVML: samplers run per GPU.",
    .footer = "XIDs that make a GPU unhealthy follow the device plugin: env DP_DISABLE_HEALTHCHECKS,\n"
	      "DP_ENABLE_HEALTHCHECKS (default: all but application XIDs 13,31,43,45,68,109).",
    .urfave = true); /* dcgm-exporter is a urfave/cli v2 program (pkg/cmd/app.go): its env rule, -v */

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

/* RANGE of -d g:RANGE / i:RANGE: a comma list of N or N-M (dcgm-exporter's parseDeviceOptions()). */
static bool range_valid(const char *s)
{
	static const char digits[] = "0123456789";

	for (;;) {
		size_t n = strspn(s, digits);

		if (!n)
			return false;
		s += n;
		if (*s == '-') {
			n = strspn(++s, digits);
			if (!n)
				return false;
			s += n;
		}
		if (*s != ',')
			return !*s;
		s++;
	}
}

/* --devices: f, g or i, g and i optionally with an id range (accepted, not applied: all devices). */
static int set_devices(void *opts, const char *value, struct gerr *err)
{
	static const struct enum_name kinds[] = {
	    {EXP_DEVICES_FLEX, "f"}, {EXP_DEVICES_GPUS, "g"}, {EXP_DEVICES_INSTANCES, "i"}};
	struct exporter_opts *o = opts;
	const char letter[2] = {value[0], 0};
	int kind;

	if (!value[0] || (value[1] && value[1] != ':') || enum_from_name(kinds, letter, &kind) < 0 ||
	    (value[1] && (kind == EXP_DEVICES_FLEX || !range_valid(value + 2))))
		return gerr_set(err, EINVAL, "want " DEVICES_WANT);
	o->devices = (enum exp_devices)kind;
	o->devices_text = value;
	o->devices_range = value[1] ? value : NULL;
	return 0;
}

/*
 * Options that an empty value cannot serve (docs/reference/dcgm-exporter.md section 5): refused,
 * naming where the "" came from (the engine's given record). An empty env var counts for --devices
 * too, although the engine keeps a typed option's value for it where dcgm-exporter refuses "".
 */
static const struct {
	const char *name, *why;
} no_empty[] = {
    {"address", "give HOST:PORT or :PORT, such as :9400 (dcgm-exporter would listen on a random port)"},
    {"pod-resources-socket", "unset it for the kubelet's " PODRES_DEFAULT_SOCKET},
    {"collectors", "unset it for the built-in set, or name a CSV file"},
    {"devices", "want " DEVICES_WANT},
};

/* CMD_CONTINUE, or EXIT_USAGE with the message when an option of no_empty[] was given "". */
static int refuse_empty(const struct exporter_opts *o)
{
	for (size_t i = 0; i < ELEMENTSOF(no_empty); i++) {
		const struct optspec *row = optspec_by_name(exporter_opts, no_empty[i].name);
		enum optspec_src src;
		char where[96];

		src = cmd_source(&exporter_verb, o, no_empty[i].name, where, sizeof(where));
		if ((src == OPTSPEC_SRC_ENV || src == OPTSPEC_SRC_FLAG) && o->c.given.empty[row - exporter_opts])
			return cmd_usage_error(&exporter_verb, "%s '' is not valid: %s", where, no_empty[i].why);
	}
	return CMD_CONTINUE;
}

/* The row that stores ignored option i. */
static const struct optspec *ignored_row(size_t i)
{
	for (const struct optspec *r = exporter_opts; r->name; r++)
		if (r->off == EXP_F(ignored) + i * sizeof(const char *) ||
		    r->off == EXP_F(ignored_set) + i * sizeof(bool))
			return r;
	return NULL;
}

static bool is_refused(size_t i)
{
	for (size_t k = 0; k < ELEMENTSOF(refused); k++)
		if (refused[k].idx == i)
			return true;
	return false;
}

/* CMD_CONTINUE, or EXIT_USAGE naming the first refused option that is set and who sets it. */
static int refuse_unsupported(const struct exporter_opts *o)
{
	for (size_t k = 0; k < ELEMENTSOF(refused); k++) {
		const struct optspec *row = ignored_row(refused[k].idx);
		const char *v = o->ignored[refused[k].idx];

		if (!row || ((!v || !*v) && !o->ignored_set[refused[k].idx]))
			continue;
		return cmd_usage_error(&exporter_verb, "--%s (env %s) is not supported yet (%s); unset it", row->name,
				       row->env[0], refused[k].settings);
	}
	return CMD_CONTINUE;
}

static void warn_ignored(const struct exporter_opts *o)
{
	for (size_t i = 0; i < IGN_COUNT; i++) {
		const struct optspec *row = ignored_row(i);

		if ((!o->ignored[i] && !o->ignored_set[i]) || is_refused(i) || !row)
			continue;
		log_warn("dcgm-exporter option accepted but has no effect", "flag=--%s why=\"%s\"", row->name,
			 ignored_why[i]);
	}
}

/*
 * What is served: --debug, -d's kind, the flags that mean nothing here (warned), the XID policy (env).
 * CMD_CONTINUE or an exit code.
 */
static int served_set(const struct exporter_opts *o, struct exporter_daemon_options *d)
{
	struct gerr err = {0};

	if (o->debug)
		log_set_level_name("debug");
	d->served = (struct exp_config){.mig_parent = o->mig_parent,
					.old_namespace = o->old_namespace,
					.xid_window_ms = o->xid_window_ms,
					.clock_window_ms = o->clock_window_ms};
	d->served.gpu_id_device_name = o->gpu_id_type == GPU_ID_DEVICE_NAME;
	d->served.devices = o->devices;
	if (o->devices_range)
		log_warn("device id ranges are not applied; every GPU and instance of that kind is served",
			 "devices=%s", o->devices_range);
	warn_ignored(o);
	if (xid_policy_parse(o->xid_disable, o->xid_enable, &d->xid_policy, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		return EXIT_USAGE;
	}
	return CMD_CONTINUE;
}

int cmd_exporter(int argc, char **argv)
{
	struct exporter_opts o = {0};
	struct exporter_daemon_options d = {0};
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	struct exporter_daemon *daemon = NULL;
	_cleanup_free_ char *names_copy = NULL;
	_cleanup_free_ char **names = NULL;
	sigset_t set;
	int r = cmd_parse(&exporter_verb, argc, argv, &o);

	if (r != CMD_CONTINUE)
		return r;
	r = refuse_empty(&o);
	if (r == CMD_CONTINUE)
		r = refuse_unsupported(&o);
	if (r != CMD_CONTINUE)
		return r;
	r = served_set(&o, &d);
	if (r != CMD_CONTINUE)
		return r;
	names = split_names(o.resource_names, &names_copy);
	d.http = (struct exp_http_options){.address = o.address, .web_config_file = o.web_config};
	if (cmd_host_paths(&o.c.nvml, &hp) < 0)
		return 1;
	d.host = hp;
	d.collectors_file = o.collectors;
	d.node_name = o.node_name;
	d.interval_ms = o.interval_ms;
	d.kubernetes = o.kubernetes;
	d.podres_socket = o.socket;
	d.podres_ms = o.podres_ms;
	d.resource_names = (const char *const *)names;
	d.virtual_gpus = o.virtual_gpus;
	d.no_hostname = o.no_hostname;
	d.replace_blanks = o.replace_blanks;
	/* every thread inherits the blocked set; the daemon's loop takes them (util/loop.h) */
	cmd_block_stop_signals(&set);
	if (exporter_daemon_start(&d, &set, &daemon) < 0)
		return 1;
	r = exporter_daemon_run(daemon);
	exporter_daemon_stop(daemon);
	return r < 0 ? 1 : 0;
}
