/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet labels: GPU Feature Discovery compatible labels in an NFD local feature file. Flags, env
 * vars and the v1 config file are GFD's (docs/reference/gfd-labels.md "Options"): one row each for
 * the option engine (util/optspec.h), config-file keys included, so precedence is flag > env var >
 * config file > default as every verb's; the file is read by the shared v1 file's walker (nvconfig/),
 * which also gives its sharing section.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/node_config.h"
#include "cmd/options.h"
#include "kapi/rows.h"
#include "labels/daemon.h"
#include "labels/labels.h"
#include "nvconfig/nvconfig.h"
#include "util/hostpaths.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/opt.h"
#include "util/optspec.h"

struct labels_cli {
	struct cmd_common c;
	/* GFD options the config file may also set (config-file keys in the rows) */
	char *output, *machine_file, *config_file; /* owned: optspec_free() */
	int mig_strategy;                          /* enum mig_strategy */
	int discovery;                             /* enum discovery_strategy */
	int64_t sleep_ns;                          /* < 0: infinite */
	bool oneshot, no_timestamp, fail_on_init_error, use_nfd_api;
	/* the Kubernetes client of --use-node-feature-api (labels/nodefeature.h) */
	const char *kubeconfig, *namespace, *node_name, *pod_name;
	struct kapi_env kenv; /* kubelet's in-pod environment */
	double kube_qps;
	unsigned kube_burst;
	/* accepted, not used: GFD parses it and reads it nowhere (docs/reference/gfd-labels.md) */
	const char *ctr_driver_root;
	/* per-node configs (nodeconfig/: the node label chooses the config file) */
	struct nodeconfig_options node_config;
	/* gpulet's own */
	const char *gpu_type;
	int sharing_flag; /* enum sharing_strategy of --sharing-strategy */
	bool gpu_mig, rename_flag;
	unsigned replicas;
	/* resolved */
	struct nvconfig_file file; /* the file's sharing section and warnings (nvconfig_file_clear()) */
	struct host_paths *host;   /* owned: --root, --driver-root, --nvml-library resolved */
	struct labels_options lo;
	struct nodefeature_options nfd;
	struct labels_daemon_options run; /* what the daemon runs with (labels/daemon.h) */
};

/* GFD's --kube-api-qps is a Go float64 (internal/flags/kubeclient.go): client-go's QPS, < 0 no limit. */
static int set_qps(void *opts, const char *v, struct gerr *err)
{
	struct labels_cli *c = opts;
	char *end;
	double q;

	errno = 0;
	q = strtod(v, &end);
	if (!v[0] || *end || errno || !isfinite(q))
		return gerr_set(err, EINVAL, "a number of requests per second (5, 2.5; below 0: no limit)");
	c->kube_qps = q;
	return 0;
}

/* GFD's --sleep-interval: "infinite" (api/config/v1/duration.go), else a Go duration from 100ms to 168h. */
static const struct enum_name sleep_words[] = {{-1, "infinite"}};

#define LABELS_F(field) offsetof(struct labels_cli, field)
/* GFD v0.20's flags and env vars (cmd/gpu-feature-discovery/main.go, internal/flags), then gpulet's. */
static const struct optspec labels_opts[] = {
    CMD_ROW("output-file", 'o', OPT_STR, "FILE", "feature file under --root; '-' or '' prints to stdout",
	    .alias = "output", .env = {"GFD_OUTPUT_FILE"}, .key = NVCONFIG_KEY_GFD_OUTPUT_FILE,
	    .def = LABELS_DEFAULT_OUTPUT, .off = LABELS_F(output)),
    CMD_ROW("oneshot", 0, OPT_BOOL, NULL, "label once and exit", .env = {"GFD_ONESHOT"},
	    .key = NVCONFIG_KEY_GFD_ONESHOT, .off = LABELS_F(oneshot)),
    CMD_ROW("sleep-interval", 0, OPT_DURATION, "D", "time between relabelings: 60s, 1m30s, 500ms or infinite",
	    .env = {"GFD_SLEEP_INTERVAL"}, .key = NVCONFIG_KEY_GFD_SLEEP_INTERVAL, .def = "60s",
	    .off = LABELS_F(sleep_ns), .min = 100, .max = 7 * 24 * 3600 * 1000UL, OPTSPEC_NAMES(sleep_words)),
    CMD_ROW("no-timestamp", 0, OPT_BOOL, NULL, "no nvidia.com/gfd.timestamp label", .env = {"GFD_NO_TIMESTAMP"},
	    .key = NVCONFIG_KEY_GFD_NO_TIMESTAMP, .off = LABELS_F(no_timestamp)),
    NVCONFIG_OPT_MIG_STRATEGY(LABELS_F(mig_strategy), "none, single or mixed: how MIG devices are labeled",
			      "GFD_MIG_STRATEGY", "MIG_STRATEGY"),
    NVCONFIG_OPT_FAIL_ON_INIT_ERROR(LABELS_F(fail_on_init_error), "exit when NVML fails", "GFD_FAIL_ON_INIT_ERROR",
				    "FAIL_ON_INIT_ERROR"),
    CMD_ROW("machine-type-file", 0, OPT_STR, "F", "DMI product name under --root", .env = {"GFD_MACHINE_TYPE_FILE"},
	    .key = NVCONFIG_KEY_GFD_MACHINE_TYPE_FILE, .def = LABELS_DEFAULT_MACHINE_FILE,
	    .off = LABELS_F(machine_file)),
    NVCONFIG_OPT_CONFIG_FILE(LABELS_F(config_file), "GFD_CONFIG_FILE", "CONFIG_FILE"),
    CMD_ROW("use-node-feature-api", 0, OPT_BOOL, NULL,
	    "publish the labels in NFD's NodeFeature object nvidia-features-for-NODE (in a pod or with --kubeconfig); "
	    "the feature file when there is no API server or NFD's CRD is absent",
	    .env = {"GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"}, .key = NVCONFIG_KEY_USE_NODE_FEATURE_API,
	    .def = "true", .off = LABELS_F(use_nfd_api)),
    NVCONFIG_OPT_DISCOVERY(LABELS_F(discovery),
			   "auto or nvml (tegra and vfio are refused: gpulet finds GPUs through NVML only)"),
    /* GFD v0.20 keeps the value in its config and never reads it; NVML comes from the system's loader */
    CMD_ROW("driver-root-ctr-path", 0, OPT_ARGV, "DIR",
	    "GFD's container driver root: accepted, not used (GFD reads it "
	    "nowhere)",
	    .alias = "container-driver-root", .env = {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"},
	    .off = LABELS_F(ctr_driver_root)),
    CMD_ROW("kubeconfig", 0, OPT_ARGV, "FILE",
	    "kubeconfig of the API server: per-node configs, the NodeFeature API's client (default: the pod's "
	    "service account)",
	    .env = {"KUBECONFIG"}, .off = LABELS_F(kubeconfig)),
    KAPI_ENV_ROWS(LABELS_F(kenv)),
    CMD_ROW("kube-api-qps", 0, OPT_CALL, "QPS", "requests per second to the API server (below 0: no limit)",
	    .env = {"KUBE_API_QPS"}, .def = "5", .call = set_qps),
    CMD_ROW("kube-api-burst", 0, OPT_UINT, "N", "burst of requests to the API server", .env = {"KUBE_API_BURST"},
	    .def = "10", .off = LABELS_F(kube_burst), .min = 1, .max = 1000),
    CMD_ROW("namespace", 0, OPT_ARGV, "NS", "namespace of the NodeFeature object (the pod's)", .env = {"NAMESPACE"},
	    .def = "default", .off = LABELS_F(namespace)),
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME",
	    "this node: the NodeFeature object's name and node label, the Node whose label per-node configs follow",
	    .env = {"NODE_NAME"}, .off = LABELS_F(node_name)),
    CMD_ROW("pod-name", 0, OPT_ARGV, "NAME", "this pod: the NodeFeature object's owners (it and its DaemonSet)",
	    .env = {"POD_NAME"}, .off = LABELS_F(pod_name)),
    CMD_ROW("sharing-strategy", 0, OPT_ENUM, "S",
	    "gpulet: none, time-slicing or mps for nvidia.com/gpu with --replicas N, without a config file "
	    "(the file's sharing section otherwise)",
	    .off = LABELS_F(sharing_flag), OPTSPEC_NAMES(sharing_strategy_names)),
    CMD_ROW("replicas", 0, OPT_UINT, "N", "gpulet: replicas of nvidia.com/gpu with --sharing-strategy",
	    .off = LABELS_F(replicas), .min = 0, .max = NVCONFIG_REPLICAS_MAX),
    CMD_ROW("rename-by-default", 0, OPT_SET, NULL,
	    "gpulet: sharing.*.renameByDefault with --sharing-strategy (no -SHARED suffix)",
	    .off = LABELS_F(rename_flag)),
    CMD_ROW("gpu-type", 0, OPT_ARGV, "VALUE",
	    "also write the field guide's custom label gpu-type=VALUE ('auto': from the product)",
	    .off = LABELS_F(gpu_type)),
    CMD_ROW("gpu-mig-label", 0, OPT_SET, NULL, "also write gpu-mig=enabled|disabled", .off = LABELS_F(gpu_mig)),
    NODECONFIG_OPTS(LABELS_F(node_config)),
    CMD_OPTS_NVML,
    {0},
};

/* The file's keys set the rows; its sharing section and warnings go to c->file. */
static int load_file(void *opts, const char *path, struct gerr *err);

/* GFD is a urfave/cli v2 program: its empty env vars count, -v is --version (docs/reference/go-parsing.md). */
static const struct optspec_cli labels_cli_desc = {
    .rows = labels_opts,
    .env = OPT_ENV_EMPTY_URFAVE,
    .version_v = true,
    .getopt_says = true,
    .file_opt = "config-file",
    .load_file = load_file,
    .given_off = offsetof(struct labels_cli, c.given),
};

static const struct cmd_verb labels_verb = CMD_VERB(
    "labels", "[OPTIONS]", NULL, "gpulet labels --oneshot --config-file /config/config.yaml --output-file -",
    .about = "Write GFD-compatible node labels (nvidia.com/gpu.product, gpu.count, mig.strategy, ...) to NFD's\n"
	     "NodeFeature object nvidia-features-for-NODE (in a pod, or with --kubeconfig), else to its local\n"
	     "feature file, atomically, every --sleep-interval; --oneshot writes once and exits. SIGHUP\n"
	     "reads the config file again. Precedence: flag > env var > config file > default.",
    .cli = &labels_cli_desc);

static int load_file(void *opts, const char *path, struct gerr *err)
{
	struct labels_cli *c = opts;

	return nvconfig_load(path, &labels_cli_desc, c, &c->file, err);
}

/* Sharing: gpulet's --sharing-strategy/--replicas for nvidia.com/gpu, else the file's section. */
static int resolve_sharing(struct labels_cli *c)
{
	enum sharing_strategy s = (enum sharing_strategy)c->sharing_flag;

	if (s != SHARING_NONE && c->replicas < 2)
		return cmd_usage_error(&labels_verb, "--sharing-strategy %s needs --replicas 2 or more",
				       sharing_strategy_name(s));
	if (s != SHARING_NONE) {
		c->lo.sharing =
		    (struct nvconfig_sharing){.strategy = s, .rename_by_default = c->rename_flag, .n_rules = 1};
		c->lo.sharing.rules[0] = (struct replica_rule){.name = "nvidia.com/gpu", .replicas = c->replicas};
		return 0;
	}
	c->lo.sharing = c->file.sharing;
	c->lo.sharing.rename_by_default |= c->rename_flag;
	return 0;
}

/* What follows from the options once every layer is applied: 0 or the exit code. */
static int settle(struct labels_cli *c)
{
	int r;

	if (c->file.warnings.n) {
		_cleanup_free_ char *w = warnings_join(&c->file.warnings, "; ");

		log_warn("config file", "path=%s warnings=\"%s\"", c->config_file ?: "", w ? w : "(out of memory)");
	}
	if ((r = resolve_sharing(c)) != 0)
		return r;
	if (cmd_host_paths(&c->c.nvml, &c->host) < 0)
		return 1;
	c->lo.mig_strategy = (enum mig_strategy)c->mig_strategy;
	/* GFD's tegra (CSV files) and vfio (vfio-pci bound GPUs, no NVML) read GPUs NVML cannot see: refused,
	 * never NVML in their place (docs/reference/gfd-labels.md "Where gpulet differs") */
	if (c->discovery != DISCOVERY_AUTO && c->discovery != DISCOVERY_NVML) {
		log_error("--device-discovery-strategy is not supported: gpulet labels finds GPUs through NVML only; "
			  "use auto or nvml (GPU Feature Discovery has the Tegra and VFIO managers)",
			  "device_discovery_strategy=%s", enum_to_name(discovery_strategy_names, c->discovery, "?"));
		return 1;
	}
	c->nfd = (struct nodefeature_options){.kubeconfig = c->kubeconfig,
					      .env = &c->kenv,
					      .qps = c->kube_qps,
					      .burst = (int)c->kube_burst,
					      .ns = c->namespace,
					      .node_name = c->node_name,
					      .pod_name = c->pod_name};
	c->lo.timestamp = !c->no_timestamp;
	c->lo.gpu_type = c->gpu_type;
	c->lo.gpu_mig = c->gpu_mig;
	c->run = (struct labels_daemon_options){.host = c->host,
						.output = c->output,
						.out = streq(c->output, "-") || !c->output[0] ? stdout : NULL,
						.machine_file = c->machine_file,
						.sleep_ns = c->sleep_ns,
						.oneshot = c->oneshot,
						.fail_on_init_error = c->fail_on_init_error,
						.lo = c->lo,
						.nfd = c->use_nfd_api ? &c->nfd : NULL};
	return 0;
}

/* The NodeFeature client is made once, at start: a reload that changes it is refused. */
static bool same_nfd(const struct labels_cli *a, const struct labels_cli *b)
{
	const struct nodefeature_options *x = a->run.nfd, *y = b->run.nfd;

	if (!x || !y)
		return !x && !y;
	return streq(x->kubeconfig ?: "", y->kubeconfig ?: "") && x->qps == y->qps && x->burst == y->burst &&
	       streq(x->ns ?: "", y->ns ?: "") && streq(x->node_name ?: "", y->node_name ?: "") &&
	       streq(x->pod_name ?: "", y->pod_name ?: "");
}

static void labels_cli_free(struct labels_cli *c)
{
	if (!c)
		return;
	optspec_free(labels_opts, c);
	nvconfig_file_clear(&c->file);
	host_paths_free(c->host);
	free(c);
}
DEFINE_CLEANUP_FUNC(struct labels_cli, labels_cli_free)

static struct labels_cli *labels_cli_new(void)
{
	_cleanup_(labels_cli_freep) struct labels_cli *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	return TAKE_PTR(c);
}

/* What the daemon runs under, and what SIGHUP builds it again from. */
struct labels_run {
	struct loop_argv *args;  /* the command line, kept before getopt permuted it */
	struct labels_cli *cli;  /* owned: the options in use */
	struct labels_daemon *d; /* NULL until it runs */
	struct cmd_node_config nc;
	struct loop_source src;
};

/* SIGHUP (util/loop.h): every layer again from the kept command line (the file may have changed), then in use. */
static int reload(void *data, struct gerr *err)
{
	struct labels_run *run = data;
	_cleanup_(labels_cli_freep) struct labels_cli *n = labels_cli_new();
	int r;

	if (!n)
		return gerr_set(err, ENOMEM, "out of memory");
	r = loop_reparse(&labels_cli_desc, run->args, n, err);
	if (r < 0)
		return r;
	if (settle(n) != 0)
		return gerr_set(err, EINVAL, "the options do not hold together any more (said above)");
	n->run.source = run->nc.nc ? &run->src : NULL;
	/* the first config of per-node configs is loaded here before the daemon runs (node_config()) */
	if (run->d && !same_nfd(run->cli, n))
		return gerr_set(err, EINVAL,
				"--use-node-feature-api and its client settings are read at start: restart the pod "
				"to change them");
	if (run->d)
		labels_daemon_apply(run->d, &n->run);
	labels_cli_free(run->cli);
	run->cli = TAKE_PTR(n);
	return 0;
}

/*
 * Per-node configs (--config-file-srcdir): the node followed and the options built again with the
 * config file its label names, settled (the reload's way): 0. CMD_CONTINUE when off, or the exit code.
 */
static int node_config(struct labels_run *run)
{
	const struct labels_cli *c = run->cli;
	struct gerr err = {0};
	const struct cmd_node_config_args a = {.component = "gpulet-labels",
					       .opts = &c->node_config,
					       .node_name = c->node_name,
					       .kubeconfig = c->kubeconfig,
					       .env = &c->kenv,
					       .config_file = c->config_file,
					       .args = run->args};

	if (cmd_node_config_start(&a, &run->nc, &err) < 0 ||
	    (run->nc.nc && cmd_node_config_load(&run->nc, reload, run, &err) < 0)) {
		fprintf(stderr, "gpulet labels: %s\n", err.msg);
		return 1;
	}
	if (!run->nc.nc)
		return CMD_CONTINUE;
	run->src = nodeconfig_source(run->nc.nc);
	return 0;
}

/* Label once or until a stop signal, under the parsed options: the exit code. */
static int label(struct labels_run *run)
{
	/* per-node configs settle the options themselves (0), else CMD_CONTINUE */
	int r = node_config(run);

	if (r == CMD_CONTINUE)
		r = settle(run->cli);
	if (r != 0)
		return r;
	run->cli->run.source = run->nc.nc ? &run->src : NULL;
	r = labels_daemon_start(&run->cli->run, reload, run, &run->d) < 0 ? 1 : labels_daemon_run(run->d);
	labels_daemon_stop(run->d); /* before the options it borrows are freed */
	return r;
}

/* Parse, then label once or until a stop signal: the exit code. */
static int run(int argc, char **argv)
{
	_cleanup_(loop_argv_freep) struct loop_argv *args = NULL;
	struct labels_run run = {0};
	int r;

	if (loop_argv_new(argc, argv, NULL, &args) < 0 || !(run.cli = labels_cli_new())) {
		fprintf(stderr, "gpulet labels: out of memory\n");
		return 1;
	}
	run.args = args;
	r = cmd_parse(&labels_verb, argc, argv, run.cli);
	if (r == CMD_CONTINUE)
		r = label(&run);
	cmd_node_config_stop(&run.nc);
	labels_cli_free(run.cli);
	return r;
}

int cmd_labels(int argc, char **argv)
{
	return cmd_daemon("labels", argc, argv, run);
}
