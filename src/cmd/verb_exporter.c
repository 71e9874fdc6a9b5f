/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet exporter: Prometheus /metrics with dcgm-exporter's names and labels, pod attribution
 * from the kubelet PodResources API. Flags and env vars are dcgm-exporter's where it has them
 * (docs/reference/monitoring-doctor.md A3).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/options.h"
#include "exporter/daemon.h"
#include "kapi/rows.h"
#include "util/log.h"
#include "util/opt.h"

/*
 * dcgm-exporter options gpulet does not serve (docs/reference/dcgm-exporter.md section 5): each value is
 * recorded in a slot, and unserved[] says what its being given means. Options that only matter together
 * with one of these (--dcgm-log-level without --enable-dcgm-log, the --dump-* knobs without
 * --dump-enabled, --container-runtime-socket without --container-labels) have no effect upstream either
 * and are taken silently.
 */
enum {
	UNS_REMOTE_HE,
	UNS_SWITCH_DEVICES,
	UNS_CPU_DEVICES,
	UNS_CONFIGMAP,
	UNS_DCGM_LOG,
	UNS_DCGM_LOG_LEVEL,
	UNS_FAKE_GPUS,
	UNS_SYSTEMD_SOCKET,
	UNS_PPROF,
	UNS_BIND_WATCH,
	UNS_BIND_POLL,
	UNS_DUMP,
	UNS_DUMP_DIR,
	UNS_DUMP_RETENTION,
	UNS_DUMP_COMPRESSION,
	UNS_STARTUP_VALIDATE,
	UNS_CONFIG_FILE,
	UNS_CONTAINER_LABELS,
	UNS_CONTAINER_SOCKET,
	UNS_KEEP_SAMPLES,
	UNS_COUNT
};

/* --log-format: slog's text handler writes key=value lines, which is what gpulet's logfmt is */
enum { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };
static const struct enum_name log_formats[] = {{LOG_FORMAT_TEXT, "text"}, {LOG_FORMAT_JSON, "json"}};

struct exporter_opts {
	struct cmd_common c;
	const char *address, *web_config, *socket, *resource_names, *collectors, *node_name;
	const char *xid_disable, *xid_enable; /* DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS */
	const char *devices_text;             /* --devices as given (the default's own text when none was) */
	const char *devices_range;            /* --devices g:RANGE / i:RANGE: the text, or NULL */
	const char *hpc_dir;                  /* --hpc-job-mapping-dir */
	const char *kubeconfig;               /* --kubeconfig, $KUBECONFIG: the pods watch's API server */
	struct kapi_env kenv;                 /* kubelet's in-pod environment (kapi/rows.h) */
	enum exp_devices devices;             /* --devices */
	int gpu_id_type;                      /* --kubernetes-gpu-id-type: GPU_ID_* */
	int log_format;                       /* --log-format: LOG_FORMAT_* */
	unsigned interval_ms, podres_ms, xid_window_ms, clock_window_ms, max_scrapes;
	int64_t read_timeout_ns, write_timeout_ns, keep_age_ns; /* --web-read/write-timeout, --watch-max-keep-age */
	bool kubernetes, virtual_gpus, no_hostname, mig_parent, debug, replace_blanks, old_namespace;
	bool pod_labels, pod_uid, exporter_metrics, require_gpus, dra;
	struct optspec_list label_regex; /* --kubernetes-pod-label-allowlist-regex, each a comma list */
	const char *unserved[UNS_COUNT]; /* the value given, or the default */
	bool unserved_on[UNS_COUNT];     /* the switches: given as true */
};

#define EXP_F(field) offsetof(struct exporter_opts, field)

/* --kubernetes-gpu-id-type: how kubelet names GPUs (dcgm-exporter's appconfig.KubernetesGPUIDType) */
enum { GPU_ID_UID, GPU_ID_DEVICE_NAME };
static const struct enum_name gpu_id_types[] = {{GPU_ID_UID, "uid"}, {GPU_ID_DEVICE_NAME, "device-name"}};

static int set_devices(void *opts, const char *value, struct gerr *err);
static int set_keep_samples(void *opts, const char *value, struct gerr *err);
static const char devices_default[] = "f";
#define DEVICES_WANT "f, g or i (g:RANGE, i:RANGE: RANGE a comma list of N or N-M)"
/* A dcgm-exporter option gpulet does not serve: its value is recorded; unserved[] says what it means. */
#define UNSERVED_STR(name_, short_, env_, def_, idx, help_)                        \
	CMD_ROW(name_, short_, OPT_ARGV, "X", help_, .env = {env_}, .def = (def_), \
		.off = EXP_F(unserved) + (idx) * sizeof(const char *))
#define UNSERVED_BOOL(name_, env_, idx, help_)                                  \
	CMD_ROW(name_, 0, OPT_BOOL, NULL, help_, .env = {env_}, .def = "false", \
		.off = EXP_F(unserved_on) + (idx) * sizeof(bool))
#define REFUSED    "not served by gpulet: refused (exit 2)"
#define NO_EFFECT  "no effect here (one warning)"
#define WITH_THEIR "taken; no effect, as upstream's without its switch"
/*
 * Flags and env vars of dcgm-exporter 4.8.4 (pkg/cmd/app.go; docs/reference/dcgm-exporter.md section 5),
 * then gpulet's own.
 */
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
    CMD_ROW("kubernetes-virtual-gpus", 0, OPT_BOOL, NULL,
	    "one series per pod sharing a GPU, label vgpu; FB_USED and GPU_UTIL per pod from its processes",
	    .env = {"KUBERNETES_VIRTUAL_GPUS"}, .def = "false", .off = EXP_F(virtual_gpus)),
    CMD_ROW("kubernetes-enable-pod-labels", 0, OPT_BOOL, NULL,
	    "with -k: the pod's Kubernetes labels on its series (a pods watch on this node: RBAC get/list/watch)",
	    .env = {"DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS"}, .def = "false", .off = EXP_F(pod_labels)),
    CMD_ROW("kubernetes-enable-dra", 0, OPT_BOOL, NULL,
	    "with -k: attribute GPUs of DRA claims of gpu.nvidia.com in this node's pool, labels dra_*",
	    .env = {"KUBERNETES_ENABLE_DRA"}, .def = "false", .off = EXP_F(dra)),
    CMD_ROW("kubernetes-enable-pod-uid", 0, OPT_BOOL, NULL, "with -k: label pod_uid (the same pods watch)",
	    .env = {"DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID"}, .def = "false", .off = EXP_F(pod_uid)),
    CMD_ROW("kubernetes-pod-label-allowlist-regex", 0, OPT_LIST, "RE,...",
	    "pod label keys to keep (RE2 subset, unanchored; comma-separated, repeatable); none: every label",
	    .env = {"DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX"}, .off = EXP_F(label_regex), .max = 64),
    CMD_ROW("kubeconfig", 0, OPT_ARGV, "FILE",
	    "kubeconfig of the pods watch's client (default: the pod's service account, as dcgm-exporter)",
	    .env = {"KUBECONFIG"}, .off = EXP_F(kubeconfig)),
    KAPI_ENV_ROWS(EXP_F(kenv)),
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
    CMD_ROW("web-read-timeout", 0, OPT_DURATION, "D",
	    "reading a request, TLS handshake and headers included: 10s (the HTTP server's own deadline)",
	    .env = {"DCGM_EXPORTER_WEB_READ_TIMEOUT"}, .def = "10s", .off = EXP_F(read_timeout_ns), .max = 3600 * 1000),
    CMD_ROW("web-write-timeout", 0, OPT_DURATION, "D", "answering a request: 30s (the HTTP server's own deadline)",
	    .env = {"DCGM_EXPORTER_WEB_WRITE_TIMEOUT"}, .def = "30s", .off = EXP_F(write_timeout_ns),
	    .max = 3600 * 1000),
    CMD_ROW("max-concurrent-scrapes", 0, OPT_UINT, "N",
	    "scrapes rendered at once (gpulet renders one at a time: every N >= 1 holds)",
	    .env = {"DCGM_EXPORTER_MAX_CONCURRENT_SCRAPES"}, .def = "16", .off = EXP_F(max_scrapes), .min = 1,
	    .max = 1u << 20),
    CMD_ROW("enable-exporter-metrics", 0, OPT_BOOL, NULL,
	    "metrics about the exporter itself: process_* and promhttp_* (there is no Go runtime: no go_*)",
	    .env = {"DCGM_EXPORTER_ENABLE_EXPORTER_METRICS"}, .def = "false", .off = EXP_F(exporter_metrics)),
    CMD_ROW("health-require-gpus", 0, OPT_BOOL, NULL, "/health and /healthz answer 503 while NVML shows no GPU",
	    .env = {"DCGM_EXPORTER_HEALTH_REQUIRE_GPUS"}, .def = "false", .off = EXP_F(require_gpus)),
    CMD_ROW("xid-count-window-size", 'x', OPT_UINT, "MS", "DCGM_EXP_XID_ERRORS_COUNT counts XIDs of this window",
	    .env = {"DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE"}, .def = "300000", .off = EXP_F(xid_window_ms), .min = 1,
	    .max = 7 * 24 * 3600 * 1000),
    CMD_ROW("use-old-namespace", 'o', OPT_BOOL, NULL,
	    "dcgm-exporter 1.x labels: uuid, pod_name, pod_namespace, "
	    "container_name",
	    .env = {"DCGM_EXPORTER_USE_OLD_NAMESPACE"}, .def = "false", .off = EXP_F(old_namespace)),
    CMD_ROW("kubernetes-gpu-id-type", 0, OPT_ENUM, "uid|device-name",
	    "how kubelet names GPUs: uid (GPU-...) or device-name (nvidiaN, GKE)",
	    .env = {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"}, .def = "uid", .off = EXP_F(gpu_id_type),
	    OPTSPEC_NAMES(gpu_id_types)),
    CMD_ROW("clock-events-count-window-size", 0, OPT_UINT, "MS",
	    "DCGM_EXP_CLOCK_EVENTS_COUNT counts clock event samples of this window",
	    .env = {"DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE"}, .def = "300000", .off = EXP_F(clock_window_ms),
	    .min = 1, .max = 7 * 24 * 3600 * 1000),
    CMD_ROW("hpc-job-mapping-dir", 0, OPT_ARGV, "DIR",
	    "files named by GPU (N, or N.GI for a MIG instance) listing job ids: label hpc_job, a series per job",
	    .env = {"DCGM_HPC_JOB_MAPPING_DIR"}, .off = EXP_F(hpc_dir)),
    CMD_ROW("log-format", 0, OPT_ENUM, "text|json", "text: key=value lines (gpulet's logfmt); json is refused",
	    .env = {"DCGM_EXPORTER_LOG_FORMAT"}, .def = "text", .off = EXP_F(log_format), OPTSPEC_NAMES(log_formats)),
    CMD_ROW("watch-max-keep-age", 0, OPT_DURATION, "D",
	    "DCGM's field-watch history: no effect (one warning when given; gpulet keeps no DCGM watches)",
	    .env = {"DCGM_EXPORTER_WATCH_MAX_KEEP_AGE"}, .def = "10m", .off = EXP_F(keep_age_ns),
	    .max = 7 * 24 * 3600 * 1000UL),
    CMD_ROW("watch-max-keep-samples", 0, OPT_CALL, "N",
	    "DCGM's field-watch history: no effect (one warning when given)",
	    .env = {"DCGM_EXPORTER_WATCH_MAX_KEEP_SAMPLES"}, .def = "0", .call = set_keep_samples,
	    .want = "a whole number"),
    UNSERVED_STR("remote-hostengine-info", 'r', "DCGM_REMOTE_HOSTENGINE_INFO", NULL, UNS_REMOTE_HE,
		 "DCGM host engine: " NO_EFFECT ", gpulet reads NVML"),
    UNSERVED_STR("switch-devices", 's', "DCGM_EXPORTER_OTHER_DEVICES_STR", NULL, UNS_SWITCH_DEVICES,
		 "NVSwitches: " REFUSED),
    UNSERVED_STR("cpu-devices", 'p', "DCGM_EXPORTER_CPU_DEVICES_STR", NULL, UNS_CPU_DEVICES, "CPUs: " REFUSED),
    UNSERVED_STR("configmap-data", 'm', "DCGM_EXPORTER_CONFIGMAP_DATA", "none", UNS_CONFIGMAP,
		 "NAMESPACE:NAME of a collectors ConfigMap: " REFUSED " (mount it, pass -f)"),
    UNSERVED_STR("config-file", 0, "DCGM_EXPORTER_CONFIG_FILE", "", UNS_CONFIG_FILE,
		 "dcgm-exporter's YAML configuration: " REFUSED " (use the flags)"),
    UNSERVED_BOOL("container-labels", "DCGM_EXPORTER_CONTAINER_LABELS", UNS_CONTAINER_LABELS,
		  "container runtime labels: " REFUSED),
    UNSERVED_STR("container-runtime-socket", 0, "DCGM_CONTAINER_RUNTIME_SOCKET", "", UNS_CONTAINER_SOCKET,
		 "for --container-labels: " WITH_THEIR),
    UNSERVED_BOOL("enable-dcgm-log", "DCGM_EXPORTER_ENABLE_DCGM_LOG", UNS_DCGM_LOG, "DCGM's log: " NO_EFFECT),
    UNSERVED_STR("dcgm-log-level", 0, "DCGM_EXPORTER_DCGM_LOG_LEVEL", "NONE", UNS_DCGM_LOG_LEVEL,
		 "for --enable-dcgm-log: " WITH_THEIR),
    UNSERVED_BOOL("fake-gpus", "DCGM_EXPORTER_USE_FAKE_GPUS", UNS_FAKE_GPUS,
		  "DCGM's fake GPUs: " NO_EFFECT " (a fake NVML is GPULET_NVML_LIBRARY)"),
    UNSERVED_BOOL("web-systemd-socket", "DCGM_EXPORTER_SYSTEMD_SOCKET", UNS_SYSTEMD_SOCKET,
		  "systemd socket activation: " REFUSED),
    UNSERVED_BOOL("enable-pprof", "DCGM_EXPORTER_ENABLE_PPROF", UNS_PPROF, "Go's pprof: " NO_EFFECT),
    UNSERVED_BOOL("enable-gpu-bind-unbind-watch", "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", UNS_BIND_WATCH,
		  "DCGM's bind/unbind watch: " NO_EFFECT),
    UNSERVED_STR("gpu-bind-unbind-poll-interval", 0, "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", "1s", UNS_BIND_POLL,
		 "for --enable-gpu-bind-unbind-watch: " WITH_THEIR),
    UNSERVED_BOOL("dump-enabled", "DCGM_EXPORTER_DUMP_ENABLED", UNS_DUMP, "debug dumps: " NO_EFFECT),
    UNSERVED_STR("dump-directory", 0, "DCGM_EXPORTER_DUMP_DIRECTORY", NULL, UNS_DUMP_DIR,
		 "for --dump-enabled: " WITH_THEIR),
    UNSERVED_STR("dump-retention", 0, "DCGM_EXPORTER_DUMP_RETENTION", NULL, UNS_DUMP_RETENTION,
		 "for --dump-enabled: " WITH_THEIR),
    UNSERVED_BOOL("dump-compression", "DCGM_EXPORTER_DUMP_COMPRESSION", UNS_DUMP_COMPRESSION,
		  "for --dump-enabled: " WITH_THEIR),
    UNSERVED_BOOL("disable-startup-validate", "DISABLE_STARTUP_VALIDATE", UNS_STARTUP_VALIDATE,
		  "DCGM's start-up checks: " NO_EFFECT),
    /* env only, as upstream reads them: the Hostname label (dcgm-exporter's pod spec sets it from the node), and
     * the XIDs that make a GPU unhealthy, as the device plugin's (docs/reference/device-plugin.md §4) */
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME", "the Hostname label (default: the host name); the pods watch's node",
	    .env = {"NODE_NAME"}, .env_only = true, .off = EXP_F(node_name)),
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

/* What an unserved option's being given means (docs/reference/dcgm-exporter.md section 5). */
enum uns_when {
	UNS_GIVEN,  /* given by flag or env, whatever its value */
	UNS_TRUE,   /* a switch given as true */
	UNS_NOT_DEF /* given with a value other than its default (configmap-data "none", config-file "") */
};
static const struct {
	unsigned idx;
	enum uns_when when;
	bool refuse; /* exit 2; else one warning */
	const char *why;
} unserved[] = {
    {UNS_SWITCH_DEVICES, UNS_GIVEN, true, "NVSwitch metrics are not served; leave it out"},
    {UNS_CPU_DEVICES, UNS_GIVEN, true, "CPU metrics are not served; leave it out"},
    {UNS_CONFIGMAP, UNS_NOT_DEF, true,
     "ConfigMaps are not read; mount it as a file and pass -f (the chart's exporter.collectors does)"},
    {UNS_CONFIG_FILE, UNS_NOT_DEF, true, "dcgm-exporter's YAML configuration is not read; give its settings as flags"},
    {UNS_CONTAINER_LABELS, UNS_TRUE, true, "container runtime labels are not added"},
    {UNS_SYSTEMD_SOCKET, UNS_TRUE, true, "socket activation is not supported; gpulet listens on --address"},
    {UNS_REMOTE_HE, UNS_GIVEN, false,
     "there is no DCGM host engine: gpulet reads the same GPUs through NVML; the host engine is not used"},
    {UNS_DCGM_LOG, UNS_TRUE, false, "there is no DCGM library, so no DCGM log"},
    {UNS_FAKE_GPUS, UNS_TRUE, false, "DCGM's fake GPUs do not exist here: use GPULET_NVML_LIBRARY with the fake NVML"},
    {UNS_PPROF, UNS_TRUE, false, "there is no Go runtime to profile: no /debug/pprof"},
    {UNS_BIND_WATCH, UNS_TRUE, false, "GPU bind/unbind is not watched: a changed GPU set restarts the exporter"},
    {UNS_DUMP, UNS_TRUE, false, "debug dumps are not written"},
    {UNS_STARTUP_VALIDATE, UNS_TRUE, false, "gpulet makes no DCGM start-up checks (gpulet doctor checks the node)"},
};

/* A given option's row, for its words ("--flag" or "env NAME") and its given record. */
static const struct optspec *unserved_row(unsigned idx)
{
	for (const struct optspec *r = exporter_opts; r->name; r++)
		if (r->off == EXP_F(unserved) + idx * sizeof(const char *) ||
		    r->off == EXP_F(unserved_on) + idx * sizeof(bool))
			return r;
	return NULL;
}
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

/* --watch-max-keep-samples: an int64 as urfave/cli's Int64Flag reads it (strconv.ParseInt, base 0). */
static int set_keep_samples(void *opts, const char *value, struct gerr *err)
{
	char *end;
	long long v;

	(void)opts;
	errno = 0;
	v = strtoll(value, &end, 0);
	if (!*value || *end || errno)
		return gerr_set(err, EINVAL, "want a whole number");
	(void)v;
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

/* The unserved options given: refused (EXIT_USAGE, naming the first) or warned once each; CMD_CONTINUE. */
static int check_unserved(const struct exporter_opts *o)
{
	for (size_t i = 0; i < ELEMENTSOF(unserved); i++) {
		const struct optspec *row = unserved_row(unserved[i].idx);
		char where[96];
		enum optspec_src src = cmd_source(&exporter_verb, o, row->name, where, sizeof(where));
		bool given = src == OPTSPEC_SRC_ENV || src == OPTSPEC_SRC_FLAG;
		const char *v = o->unserved[unserved[i].idx];

		if (!given || (unserved[i].when == UNS_TRUE && !o->unserved_on[unserved[i].idx]) ||
		    (unserved[i].when == UNS_NOT_DEF && streq(v ? v : "", row->def ? row->def : "")))
			continue;
		if (unserved[i].refuse)
			return cmd_usage_error(&exporter_verb, "%s is not supported: %s", where, unserved[i].why);
		log_warn("dcgm-exporter option accepted but has no effect", "flag=--%s why=\"%s\"", row->name,
			 unserved[i].why);
	}
	return CMD_CONTINUE;
}

/*
 * The 4.8 options whose value gpulet holds by construction: the HTTP server's deadlines are upstream's
 * defaults (10 s to read a request, 30 s to answer: web/httpd.h), so another value is refused; DCGM's
 * watch retention has no counterpart (gpulet keeps no DCGM watches). CMD_CONTINUE or EXIT_USAGE.
 */
static int check_fixed(const struct exporter_opts *o)
{
	static const struct {
		const char *name;
		size_t off;
		int64_t ns;
	} fixed[] = {
	    {"web-read-timeout", EXP_F(read_timeout_ns), 10 * OPT_NSEC_PER_SEC},
	    {"web-write-timeout", EXP_F(write_timeout_ns), 30 * OPT_NSEC_PER_SEC},
	};
	char where[96];

	for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
		int64_t v;

		memcpy(&v, (const char *)o + fixed[i].off, sizeof(v));
		if (v != fixed[i].ns)
			return cmd_usage_error(
			    &exporter_verb,
			    "--%s %llds is not supported: gpulet's HTTP server keeps %llds (leave it out)",
			    fixed[i].name, (long long)(v / OPT_NSEC_PER_SEC),
			    (long long)(fixed[i].ns / OPT_NSEC_PER_SEC));
	}
	if (o->log_format == LOG_FORMAT_JSON) {
		cmd_source(&exporter_verb, o, "log-format", where, sizeof(where));
		return cmd_usage_error(&exporter_verb,
				       "%s json is not supported: gpulet logs key=value lines (slog's text format); "
				       "use text",
				       where);
	}
	for (const char *const *n = (const char *const[]){"watch-max-keep-age", "watch-max-keep-samples", NULL}; *n;
	     n++) {
		enum optspec_src src = cmd_source(&exporter_verb, o, *n, where, sizeof(where));

		if (src == OPTSPEC_SRC_ENV || src == OPTSPEC_SRC_FLAG)
			log_warn("dcgm-exporter option accepted but has no effect", "flag=--%s why=\"%s\"", *n,
				 "DCGM's field-watch history does not exist here; XID and clock event windows are "
				 "gpulet's own (-x, --clock-events-count-window-size)");
	}
	return CMD_CONTINUE;
}

/* Every --kubernetes-pod-label-allowlist-regex value, split at commas as urfave/cli's StringSlice does. */
static int allowlist_compile(const struct exporter_opts *o, struct exp_allowlist *ret)
{
	_cleanup_free_ const char **parts = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, n = 0, cap = 1, at = 0;
	struct gerr err = {0};

	for (size_t i = 0; i < o->label_regex.n; i++) {
		len += strlen(o->label_regex.v[i]) + 1;
		for (const char *c = o->label_regex.v[i]; *c; c++)
			cap += *c == ',';
		cap++;
	}
	buf = malloc(len + 1);
	parts = calloc(cap, sizeof(*parts));
	if (!buf || !parts)
		return log_error("cannot start the exporter", "error=\"out of memory\""), 1;
	for (size_t i = 0; i < o->label_regex.n; i++) {
		size_t vlen = strlen(o->label_regex.v[i]);

		if (!vlen)
			continue; /* an empty env var: no pattern, as urfave/cli reads it */
		memcpy(&buf[at], o->label_regex.v[i], vlen + 1);
		/* every item, an empty one too (strings.Split): the library refuses "" rather than drop it */
		parts[n++] = &buf[at];
		for (size_t k = 0; k < vlen; k++)
			if (buf[at + k] == ',') {
				buf[at + k] = '\0';
				parts[n++] = &buf[at + k + 1];
			}
		at += vlen + 1;
	}
	if (exp_allowlist_compile(parts, n, ret, &err) < 0)
		return cmd_usage_error(&exporter_verb, "--kubernetes-pod-label-allowlist-regex: %s", err.msg);
	return CMD_CONTINUE;
}

/*
 * What is served: --debug, -d's kind, the options gpulet does not serve (refused or warned), the XID
 * policy (env). CMD_CONTINUE or an exit code.
 */
static int served_set(const struct exporter_opts *o, struct exporter_daemon_options *d)
{
	struct gerr err = {0};
	int r;

	if (o->debug)
		log_set_level_name("debug");
	if ((r = check_unserved(o)) != CMD_CONTINUE || (r = check_fixed(o)) != CMD_CONTINUE)
		return r;
	d->served = (struct exp_config){.mig_parent = o->mig_parent,
					.old_namespace = o->old_namespace,
					.xid_window_ms = o->xid_window_ms,
					.clock_window_ms = o->clock_window_ms};
	d->served.gpu_id_device_name = o->gpu_id_type == GPU_ID_DEVICE_NAME;
	d->served.dra = o->dra;
	d->served.devices = o->devices;
	if (o->devices_range)
		log_warn("device id ranges are not applied; every GPU and instance of that kind is served",
			 "devices=%s", o->devices_range);
	if (xid_policy_parse(o->xid_disable, o->xid_enable, &d->xid_policy, &err) < 0) {
		log_error("cannot start the exporter", "error=\"%s\"", err.msg);
		return EXIT_USAGE;
	}
	/* upstream: pod labels and UID are "effective only when --kubernetes is true" (pkg/cmd/app.go) */
	d->kube = (struct exp_kube_options){.pod_labels = o->kubernetes && o->pod_labels,
					    .pod_uid = o->kubernetes && o->pod_uid,
					    .per_process = o->kubernetes && o->virtual_gpus,
					    .node_name = o->node_name,
					    .kubeconfig = o->kubeconfig,
					    .env = &o->kenv};
	return allowlist_compile(o, &d->kube.allowlist);
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
	if (r != CMD_CONTINUE)
		return r;
	r = served_set(&o, &d);
	if (r != CMD_CONTINUE)
		return r;
	names = split_names(o.resource_names, &names_copy);
	d.http = (struct exp_http_options){.address = o.address,
					   .web_config_file = o.web_config,
					   .exporter_metrics = o.exporter_metrics,
					   .require_gpus = o.require_gpus};
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
	d.hpc_dir = o.hpc_dir && *o.hpc_dir ? o.hpc_dir : NULL;
	/* every thread inherits the blocked set; the daemon's loop takes them (util/loop.h) */
	cmd_block_stop_signals(&set);
	if (exporter_daemon_start(&d, &set, &daemon) < 0) {
		exp_allowlist_free(&d.kube.allowlist);
		return 1;
	}
	r = exporter_daemon_run(daemon);
	exporter_daemon_stop(daemon);
	exp_allowlist_free(&d.kube.allowlist);
	return r < 0 ? 1 : 0;
}
