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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/options.h"
#include "labels/labels.h"
#include "nvconfig/nvconfig.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/opt.h"
#include "util/optspec.h"
#include "util/sig.h"

struct labels_cli {
	struct cmd_common c;
	/* GFD options the config file may also set (config-file keys in the rows) */
	char *output, *machine_file, *ctr_driver_root, *config_file; /* owned: optspec_free() */
	int mig_strategy;                                            /* enum mig_strategy */
	int discovery;                                               /* enum discovery_strategy */
	int64_t sleep_ns;                                            /* < 0: infinite */
	bool oneshot, no_timestamp, fail_on_init_error, use_nfd_api;
	/* the Kubernetes client of --use-node-feature-api: accepted, not used (no API client here) */
	const char *kubeconfig, *kube_qps, *kube_burst, *namespace, *node_name, *pod_name;
	/* gpulet's own */
	const char *gpu_type;
	int sharing_flag; /* enum sharing_strategy of --sharing-strategy */
	bool gpu_mig, rename_flag;
	unsigned replicas;
	/* resolved */
	struct nvconfig_file file; /* the file's sharing section and warnings (nvconfig_file_clear()) */
	struct labels_options lo;
};

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
	    "publish through NFD's NodeFeature API; gpulet has no Kubernetes client and writes the feature file "
	    "instead, with a warning",
	    .env = {"GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"}, .key = NVCONFIG_KEY_USE_NODE_FEATURE_API,
	    .off = LABELS_F(use_nfd_api)),
    NVCONFIG_OPT_DISCOVERY(LABELS_F(discovery), "auto, nvml, tegra or vfio; gpulet discovers GPUs through NVML"),
    NVCONFIG_OPT_CTR_DRIVER_ROOT(LABELS_F(ctr_driver_root)),
    CMD_ROW("kubeconfig", 0, OPT_ARGV, "FILE", "Kubernetes client of --use-node-feature-api: accepted, not used",
	    .env = {"KUBECONFIG"}, .off = LABELS_F(kubeconfig)),
    CMD_ROW("kube-api-qps", 0, OPT_ARGV, "N", "accepted with --kubeconfig, not used", .env = {"KUBE_API_QPS"},
	    .def = "5", .off = LABELS_F(kube_qps)),
    CMD_ROW("kube-api-burst", 0, OPT_ARGV, "N", "accepted with --kubeconfig, not used", .env = {"KUBE_API_BURST"},
	    .def = "10", .off = LABELS_F(kube_burst)),
    CMD_ROW("namespace", 0, OPT_ARGV, "NS", "NodeFeature namespace: accepted, not used", .env = {"NAMESPACE"},
	    .def = "default", .off = LABELS_F(namespace)),
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME", "NodeFeature node: accepted, not used", .env = {"NODE_NAME"},
	    .off = LABELS_F(node_name)),
    CMD_ROW("pod-name", 0, OPT_ARGV, "NAME", "NodeFeature owner pod: accepted, not used", .env = {"POD_NAME"},
	    .off = LABELS_F(pod_name)),
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
    .about = "Write GFD-compatible node labels (nvidia.com/gpu.product, gpu.count, mig.strategy, ...) to an NFD\n"
	     "local feature file, atomically, every --sleep-interval; --oneshot writes once and exits. SIGHUP\n"
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
	c->lo.mig_strategy = (enum mig_strategy)c->mig_strategy;
	if (c->discovery != DISCOVERY_AUTO && c->discovery != DISCOVERY_NVML)
		log_warn("gpulet labels discovers GPUs through NVML only; using NVML", "device_discovery_strategy=%s",
			 enum_to_name(discovery_strategy_names, c->discovery, "?"));
	if (c->use_nfd_api)
		log_warn(
		    "--use-node-feature-api: gpulet has no Kubernetes API client; writing the NFD feature file instead "
		    "(NFD's local source reads it)",
		    "output=%s", c->output);
	c->lo.timestamp = !c->no_timestamp;
	c->lo.gpu_type = c->gpu_type;
	c->lo.gpu_mig = c->gpu_mig;
	return 0;
}

static void labels_cli_clear(struct labels_cli *c)
{
	optspec_free(labels_opts, c);
	nvconfig_file_clear(&c->file);
}

/* The command line, kept for SIGHUP: the options are built again from it, the file read again. */
struct argv_copy {
	int argc;
	char **argv;
};

/* SIGHUP: every layer again (the file may have changed); 0, or 1 (logged) when they are bad now. */
static int reload(struct labels_cli *c, const struct argv_copy *a)
{
	_cleanup_free_ char **v = calloc((size_t)a->argc + 1, sizeof(char *));
	struct labels_cli n = {0};
	enum optspec_action action;
	enum optspec_fail fail;
	struct gerr err = {0};
	int r;

	if (!v)
		return log_error("out of memory", NULL), 1;
	memcpy(v, a->argv, (size_t)a->argc * sizeof(char *));
	r = optspec_parse(&labels_cli_desc, a->argc, v, &n, &action, &fail, &err);
	if (r < 0 || settle(&n) != 0) {
		if (err.msg[0])
			log_error("cannot load the config file", "path=%s error=\"%s\"", n.config_file ?: "", err.msg);
		labels_cli_clear(&n);
		return 1;
	}
	labels_cli_clear(c);
	*c = n;
	return 0;
}

static bool to_stdout(const struct labels_cli *c)
{
	return streq(c->output, "-") || !c->output[0];
}

static int write_output(const struct labels_cli *c, const char *text)
{
	_cleanup_free_ char *path = NULL;
	struct gerr err = {0};
	int r;

	if (to_stdout(c))
		return fputs(text, stdout) < 0 || fflush(stdout) != 0 ? -EIO : 0;
	path = root_path(c->c.nvml.root, c->output);
	if (!path)
		return -ENOMEM;
	r = write_file_atomic(path, text, strlen(text), 0644, &err);
	if (r < 0)
		log_error("cannot write the feature file", "path=%s error=\"%s\"", path, err.msg);
	return r;
}

/* One labeling pass: read the node and the host, compute, write. 0, 1 (NVML) or 2 (GFD refuses to label). */
static int label_once(struct labels_cli *c, struct nvml *nv)
{
	struct gerr err = {0};
	_cleanup_(node_freep) struct node *n = NULL;
	_cleanup_(label_set_freep) struct label_set *s = NULL;
	_cleanup_free_ char *text = NULL;
	struct labels_host host;
	struct node empty = {0};
	int r;

	if (nv && node_load(nv, c->c.nvml.root, &n, &err) < 0) {
		log_error("cannot read the GPUs", "error=\"%s\"", err.msg);
		if (c->fail_on_init_error)
			return 1;
	}
	labels_read_host(c->c.nvml.root, n ? n : &empty, c->machine_file, &host);
	c->lo.now = time(NULL);
	r = labels_build(n ? n : &empty, &c->lo, &host, &s, &err);
	labels_host_clear(&host);
	if (r < 0) {
		log_error("cannot compute labels", "error=\"%s\"", err.msg);
		return 2;
	}
	if (labels_format(s, &text) < 0 || write_output(c, text) < 0)
		return 1;
	log_debug("labels written", "path=%s labels=%zu", c->output, s->n);
	return 0;
}

/*
 * NVML for the labels. Without it GFD with --fail-on-init-error=false writes only what needs no GPU
 * (the timestamp); we say so, and try again at every relabelling so the labels appear once the driver does.
 */
static int open_nvml(struct labels_cli *c, struct nvml **ret)
{
	struct gerr err = {0};
	int r = cmd_open_nvml(&c->c.nvml, ret, &err);

	if (r >= 0)
		return r;
	if (c->fail_on_init_error || c->oneshot)
		log_error("cannot load NVML", "error=\"%s\"", err.msg);
	else
		log_warn("cannot load NVML: no GPU labels are written (only the timestamp); trying again at each "
			 "relabelling",
			 "error=\"%s\" sleep_interval_ms=%lld", err.msg,
			 c->sleep_ns < 0 ? -1LL : (long long)(c->sleep_ns / OPT_NSEC_PER_MSEC));
	*ret = NULL;
	return r;
}

/* Sleep until the next pass: 0 time to relabel, SIGHUP to reload, another signal to stop. */
static int wait_next(const struct labels_cli *c, const sigset_t *set)
{
	struct timespec ts = {.tv_sec = (time_t)(c->sleep_ns / OPT_NSEC_PER_SEC),
			      .tv_nsec = (long)(c->sleep_ns % OPT_NSEC_PER_SEC)};
	int sig = 0;

	if (c->sleep_ns < 0)
		return sigwait(set, &sig) == 0 ? sig : SIGTERM;
	sig = sigtimedwait(set, NULL, &ts);
	return sig > 0 ? sig : 0;
}

static int run(struct labels_cli *c, const struct argv_copy *a, const sigset_t *set)
{
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	int r, sig;

	if (open_nvml(c, &nv) < 0 && c->fail_on_init_error)
		return 1;
	for (;;) {
		if (!nv && open_nvml(c, &nv) >= 0)
			log_info("NVML loaded, labelling the GPUs", NULL);
		r = label_once(c, nv);
		if (c->oneshot)
			return r ? 1 : 0;
		if (r == 2 || (r && c->fail_on_init_error))
			break;
		sig = wait_next(c, set);
		if (sig == SIGHUP) {
			log_info("SIGHUP: reading the config file again", "path=%s",
				 c->config_file ? c->config_file : "");
			if ((r = reload(c, a)) != 0)
				break;
			continue;
		}
		if (sig > 0) {
			r = 0;
			break;
		}
	}
	/*
	 * The feature file stays when we stop (GFD removes it, cmd/gpu-feature-discovery/main.go): a
	 * rollout or a crash must not blank the node's labels until NFD's next pass; the next
	 * successful labelling replaces it (docs/reference/device-plugin.md §9.1).
	 */
	return r ? 1 : 0;
}

int cmd_labels(int argc, char **argv)
{
	_cleanup_free_ char **saved = calloc((size_t)argc + 1, sizeof(char *));
	struct argv_copy a = {argc, saved};
	struct labels_cli c = {0};
	sigset_t set;
	int r;

	if (!saved) {
		fprintf(stderr, "gpulet labels: out of memory\n");
		return 1;
	}
	memcpy(saved, argv, (size_t)argc * sizeof(char *)); /* before getopt permutes argv */
	r = cmd_parse(&labels_verb, argc, argv, &c);
	if (r == CMD_CONTINUE && (r = settle(&c)) == 0) {
		sig_daemon_set(&set); /* SIGHUP: GFD reloads its config (the chart's config-manager sends it) */
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		r = run(&c, &a, &set);
	}
	labels_cli_clear(&c);
	return r;
}
