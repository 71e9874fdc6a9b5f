/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet dra: NVIDIA's gpu-kubelet-plugin (the node half of its DRA driver), with its flags and env
 * vars where it has them (docs/reference/dra.md §9). The work is in src/dra/.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/options.h"
#include "dra/api.h"
#include "dra/dra.h"
#include "kapi/rows.h"
#include "util/opt.h"

struct dra_opts {
	struct cmd_common c;
	const char *node_name, *namespace, *cdi_root, *hook_path, *registry_dir, *plugins_dir, *driver;
	const char *image_name, *pull_secrets, *pull_policy, *service_account, *consumable_shares, *http_endpoint;
	const char *healthcheck_port;
	const char *kubeconfig, *kube_qps, *extra_xids, *kernel_log;
	int64_t rescan, recovery; /* ns */
	unsigned kube_burst;
	bool taints; /* NVMLDeviceHealthCheck */
	struct dra_gates gates;
	struct kapi_env kenv; /* kubelet's in-pod environment */
};

#define DRA_F(field) offsetof(struct dra_opts, field)

/*
 * NVIDIA's feature gates (pkg/featuregates at v25.12.0): the two sharing strategies are served
 * unless turned off; NVMLDeviceHealthCheck turns unhealthy devices into tainted ones instead of
 * leaving them out (docs/reference/dra.md §12.2); the ComputeDomain gates concern NVIDIA's other
 * plugin; a gate for something gpulet does not do is refused when turned on.
 */
enum gate_use { GATE_SHARING_TS, GATE_SHARING_MPS, GATE_TAINTS, GATE_OTHER_PLUGIN, GATE_NOT_DONE };
static const struct {
	const char *name;
	enum gate_use use;
} gates[] = {
    {"TimeSlicingSettings", GATE_SHARING_TS},
    {"MPSSupport", GATE_SHARING_MPS},
    {"IMEXDaemonsWithDNSNames", GATE_OTHER_PLUGIN},
    {"ComputeDomainCliques", GATE_OTHER_PLUGIN},
    {"CrashOnNVLinkFabricErrors", GATE_OTHER_PLUGIN},
    {"PassthroughSupport", GATE_NOT_DONE},
    {"DynamicMIG", GATE_NOT_DONE},
    {"NVMLDeviceHealthCheck", GATE_TAINTS},
};

/* --feature-gates "A=true,B=false" (component-base's form) */
static int set_gates(void *opts, const char *value, struct gerr *err)
{
	struct dra_opts *o = opts;
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;

	if (!copy)
		return gerr_set(err, ENOMEM, "out of memory");
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		size_t i;
		bool on;

		kv += strspn(kv, " ");
		if (!*kv)
			continue;
		if (!eq || opt_parse_bool(eq + 1, &on) < 0)
			return gerr_set(err, EINVAL, "\"%s\": want NAME=true or NAME=false", kv);
		*eq = '\0';
		for (i = 0; i < ELEMENTSOF(gates) && !streq(gates[i].name, kv); i++)
			;
		if (i == ELEMENTSOF(gates))
			return gerr_set(err, EINVAL, "unknown feature gate %s", kv);
		if (gates[i].use == GATE_SHARING_TS)
			o->gates.time_slicing = on;
		else if (gates[i].use == GATE_SHARING_MPS)
			o->gates.mps = on;
		else if (gates[i].use == GATE_TAINTS)
			o->taints = on;
		else if (gates[i].use == GATE_NOT_DONE && on)
			return gerr_set(err, EOPNOTSUPP, "%s=true is not implemented by gpulet dra", kv);
	}
	return 0;
}

static const struct optspec dra_opts[] = {
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME", "this node's name: the pool of its ResourceSlice (required)",
	    .env = {"NODE_NAME"}, .off = DRA_F(node_name)),
    CMD_ROW("driver-name", 0, OPT_ARGV, "NAME", "the DRA driver name the DeviceClasses select",
	    .def = DRA_DRIVER_DEFAULT, .off = DRA_F(driver)),
    CMD_ROW("cdi-root", 0, OPT_PATH, "DIR",
	    "host dir the claims' CDI specs are written to (NVIDIA's chart: "
	    "/var/run/cdi)",
	    .env = {"CDI_ROOT"}, .def = "/var/run/cdi", .off = DRA_F(cdi_root)),
    CMD_ROW("kubelet-registrar-directory-path", 0, OPT_PATH, "DIR", "kubelet's plugin registration dir",
	    .env = {"KUBELET_REGISTRAR_DIRECTORY_PATH"}, .def = DRA_REGISTRY_DEFAULT, .off = DRA_F(registry_dir)),
    CMD_ROW("kubelet-plugins-directory-path", 0, OPT_PATH, "DIR",
	    "kubelet's plugins dir: dra.sock and the checkpoint are in <DIR>/<driver-name>",
	    .env = {"KUBELET_PLUGINS_DIRECTORY_PATH"}, .def = DRA_PLUGINS_DEFAULT, .off = DRA_F(plugins_dir)),
    CMD_ROW("nvidia-driver-root", 0, OPT_CALL, "DIR",
	    "where the driver is installed, below --root; default /, /run/nvidia/driver with the GPU Operator",
	    .alias = "driver-root", .env = {"NVIDIA_DRIVER_ROOT", "HOST_DRIVER_ROOT"}, .call = cmd_set_driver_root),
    CMD_ROW("dev-root", 0, OPT_PATH, "DIR", "host dir holding dev/nvidia* (default: the driver root)",
	    .alias = "nvidia-dev-root", .env = {"NVIDIA_DEV_ROOT"}, .off = DRA_F(c.nvml.dev_root)),
    CMD_ROW("nvidia-cdi-hook-path", 0, OPT_PATH, "PATH",
	    "host path of the CDI hook the specs run (default: gpulet-cdi-hook next to gpulet)",
	    .env = {"NVIDIA_CDI_HOOK_PATH"}, .off = DRA_F(hook_path)),
    CMD_ROW("feature-gates", 0, OPT_CALL, "LIST",
	    "NVIDIA's gates, NAME=BOOL,...: TimeSlicingSettings and MPSSupport are on unless set false; "
	    "NVMLDeviceHealthCheck=true taints unhealthy devices (the API server's DRADeviceTaints gate must be on) "
	    "instead of leaving them out; PassthroughSupport and DynamicMIG cannot be turned on",
	    .env = {"FEATURE_GATES"}, .call = set_gates),
    CMD_ROW("namespace", 0, OPT_ARGV, "NS",
	    "NVIDIA's namespace for its MPS Deployments; accepted, gpulet runs MPS daemons itself",
	    .env = {"NAMESPACE"}, .def = "default", .off = DRA_F(namespace)),
    CMD_ROW("image-name", 0, OPT_ARGV, "IMAGE", "NVIDIA's MPS Deployment image; accepted, not used",
	    .env = {"IMAGE_NAME"}, .off = DRA_F(image_name)),
    CMD_ROW("image-pull-secrets", 0, OPT_ARGV, "LIST", "NVIDIA's MPS Deployment pull secrets; accepted, not used",
	    .env = {"IMAGE_PULL_SECRETS"}, .off = DRA_F(pull_secrets)),
    CMD_ROW("image-pull-policy", 0, OPT_ARGV, "POLICY", "NVIDIA's MPS Deployment pull policy; accepted, not used",
	    .env = {"IMAGE_PULL_POLICY"}, .off = DRA_F(pull_policy)),
    CMD_ROW("service-account-name", 0, OPT_ARGV, "NAME", "NVIDIA's MPS Deployment service account; accepted, not used",
	    .env = {"SERVICE_ACCOUNT_NAME"}, .off = DRA_F(service_account)),
    CMD_ROW("healthcheck-port", 0, OPT_ARGV, "PORT",
	    "NVIDIA's gRPC health service port; only a negative one (none) is accepted", .env = {"HEALTHCHECK_PORT"},
	    .def = "-1", .off = DRA_F(healthcheck_port)),
    CMD_ROW("http-endpoint", 0, OPT_ARGV, "ADDR", "NVIDIA's metrics endpoint; only empty (none) is accepted",
	    .env = {"HTTP_ENDPOINT"}, .off = DRA_F(http_endpoint)),
    CMD_ROW("consumable-shares", 0, OPT_ARGV, "MODE", "NVIDIA's ConsumableShares; only disabled is accepted",
	    .env = {"CONSUMABLE_SHARES"}, .def = "disabled", .off = DRA_F(consumable_shares)),
    CMD_ROW("additional-xids-to-ignore", 0, OPT_ARGV, "LIST",
	    "XIDs (comma list) that leave a GPU healthy, besides the application errors 13,31,43,45,68,109",
	    .env = {"ADDITIONAL_XIDS_TO_IGNORE"}, .off = DRA_F(extra_xids)),
    /* gpulet's health watcher, with the device plugin's names for its settings */
    CMD_ROW("kernel-log", 0, OPT_PATH, "PATH",
	    "kernel log followed for 'NVRM: Xid' lines (default: <root>/dev/kmsg; e.g. /var/log/kern.log)",
	    .env = {"GPULET_KERNEL_LOG"}, .off = DRA_F(kernel_log)),
    CMD_ROW("rescan-interval", 0, OPT_DURATION, "D",
	    "time between device rescans (lost GPUs and MIG re-partitions are published live): a Go duration or "
	    "seconds",
	    .env = {"GPULET_RESCAN_INTERVAL"}, .def = "10", .min = 1000, .max = 86400 * 1000, .bare_ms = 1000,
	    .off = DRA_F(rescan)),
    CMD_ROW("health-recovery-interval", 0, OPT_DURATION, "D",
	    "time without a new error after which a GPU unhealthy for an application XID is published again",
	    .env = {"GPULET_HEALTH_RECOVERY_INTERVAL"}, .def = "300", .min = 1000, .max = 86400 * 1000, .bare_ms = 1000,
	    .off = DRA_F(recovery)),
    CMD_ROW("kubeconfig", 0, OPT_ARGV, "FILE",
	    "the API server and credentials; without it (and KUBECONFIG) the pod's service account",
	    .env = {"KUBECONFIG"}, .off = DRA_F(kubeconfig)),
    KAPI_ENV_ROWS(DRA_F(kenv)),
    CMD_ROW("kube-api-qps", 0, OPT_ARGV, "QPS", "requests per second to the API server (a negative one: no limit)",
	    .env = {"KUBE_API_QPS"}, .def = "5", .off = DRA_F(kube_qps)),
    CMD_ROW("kube-api-burst", 0, OPT_UINT, "N", "requests to the API server at once before the QPS limit applies",
	    .env = {"KUBE_API_BURST"}, .def = "10", .min = 1, .max = 100000, .off = DRA_F(kube_burst)),
    CMD_OPT_NVML_LIBRARY,
    CMD_OPT_ROOT,
    CMD_OPT_LOG_LEVEL,
    {0},
};

static const struct cmd_verb dra_verb = CMD_VERB(
    "dra", "[OPTIONS]", dra_opts, "NODE_NAME=$(hostname) gpulet dra --cdi-root /var/run/cdi --root /host",
    .about = "The kubelet plugin of a DRA driver for NVIDIA GPUs, in place of NVIDIA's gpu-kubelet-plugin:\n"
	     "registers on <registrar dir>/<driver>-reg.sock (DRAPlugin, v1.DRAPlugin and v1beta1.DRAPlugin) and\n"
	     "serves NodePrepareResources/NodeUnprepareResources on <plugins dir>/<driver>/dra.sock. The node's\n"
	     "GPUs without MIG and its MIG devices are its devices, named and described as NVIDIA's are\n"
	     "(gpu-0, gpu-6-mig-1g5gb-19-0; uuid, productName, architecture, ...). A prepared claim gets one CDI\n"
	     "spec, <cdi-root>/k8s.<driver>-claim_<uid>.yaml, and NVIDIA's GpuConfig/MigDeviceConfig sharing\n"
	     "(TimeSlicing, MPS with gpulet's own control daemon per claim); a config it cannot honour fails\n"
	     "the claim, saying why. <plugins dir>/<driver>/gpulet-checkpoint.json keeps what was prepared:\n"
	     "after a restart nothing is prepared twice, after a reboot specs are written again.",
    .footer = "The API server is found as kubectl would in a pod (its service account), or from --kubeconfig;\n"
	      "without either gpulet dra does not start. Exit status: 1 when the plugin cannot start, 2 usage.",
    .urfave = true); /* NVIDIA's plugin is a urfave/cli v2 program (cmd/gpu-kubelet-plugin/main.go) */

/* NVIDIA's options gpulet takes only in the value that asks for nothing it does not do. */
static int refuse_unhonoured(const struct dra_opts *o)
{
	char *end;
	long port = strtol(o->healthcheck_port, &end, 10);

	if (!o->node_name || !o->node_name[0])
		return cmd_usage_error(&dra_verb,
				       "--node-name (or env NODE_NAME) is required: it names the node's pool");
	if (*end || end == o->healthcheck_port)
		return cmd_usage_error(&dra_verb, "--healthcheck-port '%s' is not a number", o->healthcheck_port);
	if (port >= 0)
		return cmd_usage_error(&dra_verb,
				       "--healthcheck-port %ld: the gRPC health service is not implemented; leave it "
				       "negative (none)",
				       port);
	if (o->http_endpoint && o->http_endpoint[0])
		return cmd_usage_error(&dra_verb,
				       "--http-endpoint %s: metrics are not served by gpulet dra (use gpulet "
				       "exporter); leave it empty",
				       o->http_endpoint);
	if (o->extra_xids && o->extra_xids[strspn(o->extra_xids, "0123456789, ")])
		return cmd_usage_error(&dra_verb, "--additional-xids-to-ignore '%s': want XID numbers, comma-separated",
				       o->extra_xids);
	if (*o->kube_qps == '\0' || strtod(o->kube_qps, &end) != strtod(o->kube_qps, NULL) || *end)
		return cmd_usage_error(&dra_verb, "--kube-api-qps '%s' is not a number", o->kube_qps);
	if (!streq(o->consumable_shares, "disabled"))
		return cmd_usage_error(&dra_verb, "--consumable-shares %s: not implemented; only disabled is accepted",
				       o->consumable_shares);
	return CMD_CONTINUE;
}

/* NVIDIA's MPS Deployment options: accepted (its chart sets them), said once each to mean nothing here. */
static void say_unused(const struct dra_opts *o)
{
	const struct {
		const char *flag, *value;
	} unused[] = {{"image-name", o->image_name},
		      {"image-pull-secrets", o->pull_secrets},
		      {"image-pull-policy", o->pull_policy},
		      {"service-account-name", o->service_account}};

	for (size_t i = 0; i < ELEMENTSOF(unused); i++)
		if (unused[i].value && unused[i].value[0])
			log_info(
			    "NVIDIA's MPS Deployment option has no effect: gpulet runs each MPS control daemon itself",
			    "flag=--%s", unused[i].flag);
}

static void opts_free(struct dra_opts *o)
{
	optspec_free(dra_opts, o);
}

/* The API client and its seams; 0, or 1 after saying why there is none. */
static int open_api(const struct dra_opts *o, struct dra_api **ret)
{
	struct gerr err = {0};
	int r = dra_api_open(&(struct dra_api_options){.kubeconfig = o->kubeconfig,
						       .env = &o->kenv,
						       .qps = strtod(o->kube_qps, NULL),
						       .burst = (int)o->kube_burst,
						       .driver = o->driver,
						       .node_name = o->node_name},
			     ret, &err);

	if (r < 0) {
		log_error("Cannot start the DRA plugin without the Kubernetes API", "error=\"%s\" hint=\"%s\"", err.msg,
			  r == -ENOENT ? "run it in a pod with a service account, or give --kubeconfig"
				       : "fix the kubeconfig named above");
		return 1;
	}
	if (dra_api_warning(*ret))
		log_warn(dra_api_warning(*ret), NULL);
	return 0;
}

int cmd_dra(int argc, char **argv)
{
	_cleanup_(opts_free) struct dra_opts o = {.gates = {.time_slicing = true, .mps = true}};
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	_cleanup_(dra_api_closep) struct dra_api *api = NULL;
	struct dra_daemon_options dopts;
	struct dra_daemon *d = NULL;
	sigset_t stop;
	int r = cmd_parse(&dra_verb, argc, argv, &o);

	if (r != CMD_CONTINUE)
		return r;
	if ((r = refuse_unhonoured(&o)) != CMD_CONTINUE)
		return r;
	say_unused(&o);
	if (cmd_host_paths(&o.c.nvml, &hp) < 0)
		return 1;
	/* every thread (gRPC's, the informers', the health watcher's) inherits the blocked stop signals; the
	 * daemon's loop takes them (util/loop.h) */
	cmd_block_stop_signals(&stop);
	if (open_api(&o, &api) != 0)
		return 1;
	dopts = (struct dra_daemon_options){.driver = o.driver,
					    .node_name = o.node_name,
					    .registry_dir = o.registry_dir,
					    .plugins_dir = o.plugins_dir,
					    .cdi_root = o.cdi_root,
					    .hook_path = o.hook_path,
					    .host = hp,
					    .gates = o.gates,
					    .taints = o.taints,
					    .kernel_log = o.kernel_log, /* "": none */
					    .health_quiet_ms = (unsigned)(o.recovery / OPT_NSEC_PER_MSEC),
					    .mig_poll_ms = (unsigned)(o.rescan / OPT_NSEC_PER_MSEC),
					    .claims = dra_api_claims(api),
					    .publisher = dra_api_publisher(api)};
	/* NVIDIA's default list of application XIDs, and the ones given (validated above) */
	(void)xid_policy_parse(o.extra_xids, NULL, &dopts.xids, NULL);
	if (dra_daemon_start(&dopts, &stop, &d) < 0)
		return 1;
	r = dra_daemon_run(d);
	dra_daemon_stop(d);
	return r < 0 ? 1 : 0;
}
