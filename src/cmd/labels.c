/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet labels: GPU Feature Discovery compatible labels in an NFD local feature file. Flags, env
 * vars and the v1 config file are GFD's (docs/reference/gfd-labels.md "Options"): precedence
 * flag > env var > config file > default, the file read by the plugin's own reader.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/options.h"
#include "labels/labels.h"
#include "plugin/config.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/opt.h"

struct labels_cli {
	struct cmd_common c;
	/* GFD options the config file may also set: NULL (strings) until a flag or env var gives them */
	const char *output, *machine_file, *mig_strategy, *discovery, *ctr_driver_root;
	int64_t sleep_ns;                                            /* < 0: infinite */
	bool sleep_given;                                            /* --sleep-interval or GFD_SLEEP_INTERVAL */
	bool oneshot, no_timestamp, fail_on_init_error, use_nfd_api; /* see bool_set */
	const char *config_file;
	/* the Kubernetes client of --use-node-feature-api: accepted, not used (no API client here) */
	const char *kubeconfig, *kube_qps, *kube_burst, *namespace, *node_name, *pod_name;
	/* gpulet's own */
	const char *gpu_type, *sharing_flag;
	bool gpu_mig, rename_flag;
	unsigned replicas;
	/* resolved */
	struct {
		bool oneshot, no_timestamp, fail_on_init_error, use_nfd_api;
	} bool_set; /* given by a flag or env var */
	struct plugin_config *cfg;
	struct labels_options lo;
	const struct labels_cli *parsed; /* the values as parsed, layered again on SIGHUP */
};

#define SLEEP_MIN_NS (100 * OPT_NSEC_PER_MSEC)          /* gpulet's floor: no busy relabelling */
#define SLEEP_MAX_NS (7 * 24 * 3600 * OPT_NSEC_PER_SEC) /* 168h */

/*
 * GFD's sleep interval (api/config/v1/duration.go): "infinite" (-1), else a Go duration
 * (docs/reference/go-parsing.md) from 100ms to 168h.
 */
static int sleep_parse(const char *s, int64_t *ret_ns, struct gerr *err)
{
	int64_t ns;

	if (streq(s, "infinite"))
		return *ret_ns = -1, 0;
	if (opt_parse_duration(s, &ns) < 0)
		return gerr_set(err, EINVAL, "want a Go duration (60s, 1m30s, 500ms) or infinite");
	if (ns < SLEEP_MIN_NS || ns > SLEEP_MAX_NS)
		return gerr_set(err, ERANGE, "want 100ms to 168h, or infinite");
	*ret_ns = ns;
	return 0;
}

/* --sleep-interval, GFD_SLEEP_INTERVAL: parsed at once, so a bad one is a usage error. */
static int set_sleep(void *opts, const char *value, struct gerr *err);

#define LABELS_F(field) offsetof(struct labels_cli, field)
/*
 * GFD v0.20's flags and env vars (cmd/gpu-feature-discovery/main.go, internal/flags), then gpulet's.
 * Rows the config file can also set have no .def here: their defaults are applied after the file.
 */
static const struct optspec labels_opts[] = {
    CMD_ROW("output-file", 'o', CMD_OPT_STR, "FILE",
	    "feature file under --root; '-' or '' prints to stdout (default " LABELS_DEFAULT_OUTPUT
	    "; file: flags.gfd.outputFile)",
	    .alias = "output", .env = {"GFD_OUTPUT_FILE"}, .off = LABELS_F(output)),
    CMD_ROW("oneshot", 0, CMD_OPT_BOOL, NULL, "label once and exit (file: flags.gfd.oneshot)", .env = {"GFD_ONESHOT"},
	    .off = LABELS_F(oneshot)),
    CMD_ROW("sleep-interval", 0, CMD_OPT_CALL, "D",
	    "time between relabelings: 60s, 5m, 500ms, infinite (default 60s; file: flags.gfd.sleepInterval)",
	    .env = {"GFD_SLEEP_INTERVAL"}, .call = set_sleep),
    CMD_ROW("no-timestamp", 0, CMD_OPT_BOOL, NULL, "no nvidia.com/gfd.timestamp label (file: flags.gfd.noTimestamp)",
	    .env = {"GFD_NO_TIMESTAMP"}, .off = LABELS_F(no_timestamp)),
    CMD_ROW("mig-strategy", 0, CMD_OPT_STR, "S",
	    "none, single or mixed: how MIG devices are labeled (default none; file: flags.migStrategy)",
	    .env = {"GFD_MIG_STRATEGY", "MIG_STRATEGY"}, .off = LABELS_F(mig_strategy)),
    CMD_ROW("fail-on-init-error", 0, CMD_OPT_BOOL, NULL,
	    "exit when NVML fails (default true; file: flags.failOnInitError)",
	    .env = {"GFD_FAIL_ON_INIT_ERROR", "FAIL_ON_INIT_ERROR"}, .off = LABELS_F(fail_on_init_error)),
    CMD_ROW("machine-type-file", 0, CMD_OPT_STR, "F",
	    "DMI product name under --root (default " LABELS_DEFAULT_MACHINE_FILE "; file: flags.gfd.machineTypeFile)",
	    .env = {"GFD_MACHINE_TYPE_FILE"}, .off = LABELS_F(machine_file)),
    CMD_ROW("config-file", 0, CMD_OPT_STR, "FILE",
	    "the plugin's version: v1 config file (YAML or JSON): migStrategy, sharing, flags.gfd.*",
	    .env = {"GFD_CONFIG_FILE", "CONFIG_FILE"}, .off = LABELS_F(config_file)),
    CMD_ROW("use-node-feature-api", 0, CMD_OPT_BOOL, NULL,
	    "publish through NFD's NodeFeature API; gpulet has no Kubernetes client and writes the feature file "
	    "instead, with a warning (default false; file: flags.useNodeFeatureAPI)",
	    .env = {"GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"}, .off = LABELS_F(use_nfd_api)),
    CMD_ROW("device-discovery-strategy", 0, CMD_OPT_STR, "S",
	    "auto, nvml, tegra or vfio; gpulet discovers GPUs through NVML (default auto; file: "
	    "flags.deviceDiscoveryStrategy)",
	    .env = {"DEVICE_DISCOVERY_STRATEGY"}, .off = LABELS_F(discovery)),
    CMD_ROW("driver-root-ctr-path", 0, CMD_OPT_STR, "DIR",
	    "where the driver root is mounted in the container; accepted for GFD, NVML is found through --driver-root "
	    "(default /driver-root; file: flags.plugin.containerDriverRoot)",
	    .alias = "container-driver-root", .env = {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"},
	    .off = LABELS_F(ctr_driver_root)),
    CMD_ROW("kubeconfig", 0, CMD_OPT_STR, "FILE", "Kubernetes client of --use-node-feature-api: accepted, not used",
	    .env = {"KUBECONFIG"}, .off = LABELS_F(kubeconfig)),
    CMD_ROW("kube-api-qps", 0, CMD_OPT_STR, "N", "accepted with --kubeconfig, not used", .env = {"KUBE_API_QPS"},
	    .def = "5", .off = LABELS_F(kube_qps)),
    CMD_ROW("kube-api-burst", 0, CMD_OPT_STR, "N", "accepted with --kubeconfig, not used", .env = {"KUBE_API_BURST"},
	    .def = "10", .off = LABELS_F(kube_burst)),
    CMD_ROW("namespace", 0, CMD_OPT_STR, "NS", "NodeFeature namespace: accepted, not used", .env = {"NAMESPACE"},
	    .def = "default", .off = LABELS_F(namespace)),
    CMD_ROW("node-name", 0, CMD_OPT_STR, "NAME", "NodeFeature node: accepted, not used", .env = {"NODE_NAME"},
	    .off = LABELS_F(node_name)),
    CMD_ROW("pod-name", 0, CMD_OPT_STR, "NAME", "NodeFeature owner pod: accepted, not used", .env = {"POD_NAME"},
	    .off = LABELS_F(pod_name)),
    CMD_ROW("sharing-strategy", 0, CMD_OPT_STR, "S",
	    "gpulet: none, time-slicing or mps for nvidia.com/gpu with --replicas N, without a config file "
	    "(the file's sharing section otherwise)",
	    .off = LABELS_F(sharing_flag)),
    CMD_ROW("replicas", 0, CMD_OPT_UINT, "N", "gpulet: replicas of nvidia.com/gpu with --sharing-strategy",
	    .off = LABELS_F(replicas), .min = 0, .max = 1024),
    CMD_ROW("rename-by-default", 0, CMD_OPT_SET, NULL,
	    "gpulet: sharing.*.renameByDefault with --sharing-strategy (no -SHARED suffix)",
	    .off = LABELS_F(rename_flag)),
    CMD_ROW("gpu-type", 0, CMD_OPT_STR, "VALUE",
	    "also write the field guide's custom label gpu-type=VALUE ('auto': from the product)",
	    .off = LABELS_F(gpu_type)),
    CMD_ROW("gpu-mig-label", 0, CMD_OPT_SET, NULL, "also write gpu-mig=enabled|disabled", .off = LABELS_F(gpu_mig)),
    CMD_OPTS_NVML,
    {0},
};

static const struct cmd_verb labels_verb = CMD_VERB(
    "labels", "[OPTIONS]", labels_opts, "gpulet labels --oneshot --config-file /config/config.yaml --output-file -",
    .about = "Write GFD-compatible node labels (nvidia.com/gpu.product, gpu.count, mig.strategy, ...) to an NFD\n"
	     "local feature file, atomically, every --sleep-interval; --oneshot writes once and exits. SIGHUP\n"
	     "reads the config file again.",
    .urfave = true);

static int set_sleep(void *opts, const char *value, struct gerr *err)
{
	struct labels_cli *c = opts;

	c->sleep_given = true;
	return sleep_parse(value, &c->sleep_ns, err);
}

/*
 * The file's flags.gfd.sleepInterval (its reader writes a bare number as "<N>ns", what upstream's
 * Duration.UnmarshalJSON makes of it), else the default 60s; 0 or 1 with the error logged.
 */
static int sleep_from_file(struct labels_cli *c, const char *text)
{
	struct gerr err = {0};
	int64_t ns;
	char tail[4] = "";

	if (c->sleep_given)
		return 0;
	c->sleep_ns = 60 * OPT_NSEC_PER_SEC;
	if (!text[0] || sleep_parse(text, &c->sleep_ns, &err) == 0)
		return 0;
	/* upstream: a bare number is nanoseconds, so "60" is 60ns: below the floor, say what was meant */
	if (sscanf(text, "%" SCNd64 "%3s", &ns, tail) == 2 && streq(tail, "ns"))
		return log_error("bad value in the config file",
				 "key=flags.gfd.sleepInterval value=\"%s\" error=\"%s; a bare number is nanoseconds "
				 "here, as upstream; write 60s\"",
				 text, err.msg),
		       1;
	return log_error("bad value in the config file", "key=flags.gfd.sleepInterval value=\"%s\" error=\"%s\"", text,
			 err.msg),
	       1;
}
/*
 * Parse twice with the switches preset to false, then true: a switch neither flag nor env var gave
 * keeps its preset, so it differs between the two; it is then the file's or the default.
 */
static int parse_args(int argc, char **argv, struct labels_cli *c)
{
	struct labels_cli probe = {0};
	int r = cmd_parse(&labels_verb, argc, argv, c);

	if (r != CMD_CONTINUE)
		return r;
	probe.oneshot = probe.no_timestamp = probe.fail_on_init_error = probe.use_nfd_api = true;
	if (cmd_parse(&labels_verb, argc, argv, &probe) != CMD_CONTINUE)
		return EXIT_USAGE;
	c->bool_set.oneshot = probe.oneshot == c->oneshot;
	c->bool_set.no_timestamp = probe.no_timestamp == c->no_timestamp;
	c->bool_set.fail_on_init_error = probe.fail_on_init_error == c->fail_on_init_error;
	c->bool_set.use_nfd_api = probe.use_nfd_api == c->use_nfd_api;
	return CMD_CONTINUE;
}

/* A value from a flag/env var (given), else the file's text (file_text non-empty), else the default. */
static const char *layer(const char *given, const char *file_text, const char *def)
{
	return given ? given : file_text && file_text[0] ? file_text : def;
}

/* A switch: flag/env var, else the file's boolean, else the default; -EINVAL when the file's is not a boolean. */
static int layer_bool(bool given, bool value, const char *file_text, const char *key, bool *ret)
{
	if (given)
		return *ret = value, 0;
	if (!file_text[0])
		return 0;
	if (opt_parse_bool(file_text, ret) < 0) {
		log_error("bad value in the config file", "key=%s value=\"%s\" want=true|false", key, file_text);
		return -EINVAL;
	}
	return 0;
}

/* Sharing: gpulet's --sharing-strategy/--replicas for nvidia.com/gpu, else the file's section. */
static int resolve_sharing(struct labels_cli *c)
{
	static struct replica_rule flag_rule = {.name = "nvidia.com/gpu"};
	enum sharing_strategy s = SHARING_NONE;

	if (c->sharing_flag && sharing_strategy_from_name(c->sharing_flag, &s) < 0)
		return cmd_usage_error(&labels_verb, "--sharing-strategy '%s' is not valid: none|time-slicing|mps",
				       c->sharing_flag);
	if (s != SHARING_NONE && c->replicas < 2)
		return cmd_usage_error(&labels_verb, "--sharing-strategy %s needs --replicas 2 or more",
				       sharing_strategy_name(s));
	if (s != SHARING_NONE) {
		flag_rule.replicas = c->replicas;
		c->lo.sharing = s;
		c->lo.rules = &flag_rule;
		c->lo.n_rules = 1;
		c->lo.rename_by_default = c->rename_flag;
		return 0;
	}
	c->lo.sharing = c->cfg->n_rules ? c->cfg->sharing : SHARING_NONE;
	c->lo.rules = c->cfg->rules;
	c->lo.n_rules = c->cfg->n_rules;
	c->lo.rename_by_default = c->cfg->rename_by_default || c->rename_flag;
	return 0;
}

/* The string options: flag > env > file > default, then checked. 0, EXIT_USAGE, or 1 for a bad file value. */
static int resolve_strings(struct labels_cli *c)
{
	const char *mig = layer(c->mig_strategy, mig_strategy_name(c->cfg->mig_strategy), "none");
	const char *disc = layer(
	    c->discovery, enum_to_name(config_discovery_names, c->cfg->device_discovery_strategy, "auto"), "auto");
	enum discovery_strategy d;

	c->output = layer(c->output, c->cfg->gfd[CONFIG_GFD_OUTPUT_FILE], LABELS_DEFAULT_OUTPUT);
	c->machine_file =
	    layer(c->machine_file, c->cfg->gfd[CONFIG_GFD_MACHINE_TYPE_FILE], LABELS_DEFAULT_MACHINE_FILE);
	c->ctr_driver_root = layer(c->ctr_driver_root, c->cfg->container_driver_root, "/driver-root");
	if (mig_strategy_from_name(mig, &c->lo.mig_strategy) < 0) {
		if (c->mig_strategy)
			return cmd_usage_error(&labels_verb, "--mig-strategy '%s' is not valid: none|single|mixed",
					       mig);
		return log_error("bad value in the config file", "key=flags.migStrategy value=\"%s\"", mig), 1;
	}
	if (sleep_from_file(c, c->cfg->gfd[CONFIG_GFD_SLEEP_INTERVAL]) != 0)
		return 1;
	if (enum_from_name(config_discovery_names, disc, &d) < 0)
		return cmd_usage_error(&labels_verb,
				       "--device-discovery-strategy '%s' is not valid: auto|nvml|tegra|vfio", disc);
	if (d != DISCOVERY_AUTO && d != DISCOVERY_NVML)
		log_warn("gpulet labels discovers GPUs through NVML only; using NVML", "device_discovery_strategy=%s",
			 disc);
	return 0;
}

/* Load the config file and layer every option; 0 or the exit code. Again on SIGHUP. */
static int load_config(struct labels_cli *c)
{
	struct gerr err = {0};
	struct plugin_config *cfg = calloc(1, sizeof(*cfg));
	int r;

	if (!cfg)
		return log_error("out of memory", NULL), 1;
	if (c->parsed) { /* start again from the flags and env vars */
		const struct labels_cli *p = c->parsed;

		assert(!p->cfg); /* the snapshot is taken before the first load */
		free(c->cfg);
		*c = *p;
		c->parsed = p;
	}
	if (config_load_file(c->config_file, cfg, &err) < 0) {
		free(cfg);
		return log_error("cannot load the config file", "path=%s error=\"%s\"", c->config_file, err.msg), 1;
	}
	if (cfg->warnings[0])
		log_warn("config file", "path=%s warnings=\"%s\"", c->config_file, cfg->warnings);
	free(c->cfg);
	c->cfg = cfg;
	if ((r = resolve_strings(c)) != 0 || (r = resolve_sharing(c)) != 0)
		return r;
	c->fail_on_init_error = c->bool_set.fail_on_init_error ? c->fail_on_init_error : cfg->fail_on_init_error;
	if (layer_bool(c->bool_set.oneshot, c->oneshot, cfg->gfd[CONFIG_GFD_ONESHOT], "flags.gfd.oneshot",
		       &c->oneshot) < 0 ||
	    layer_bool(c->bool_set.no_timestamp, c->no_timestamp, cfg->gfd[CONFIG_GFD_NO_TIMESTAMP],
		       "flags.gfd.noTimestamp", &c->no_timestamp) < 0 ||
	    layer_bool(c->bool_set.use_nfd_api, c->use_nfd_api, cfg->gfd[CONFIG_GFD_USE_NODE_FEATURE_API],
		       "flags.useNodeFeatureAPI", &c->use_nfd_api) < 0)
		return 1;
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

static int run(struct labels_cli *c, const sigset_t *set)
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
			if ((r = load_config(c)) != 0)
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
	struct labels_cli c = {0}, parsed;
	sigset_t set;
	int r = parse_args(argc, argv, &c);

	if (r != CMD_CONTINUE)
		return r;
	parsed = c;
	c.parsed = &parsed;
	r = load_config(&c);
	if (r == 0) {
		cmd_block_stop_signals(&set);
		sigaddset(&set, SIGHUP); /* GFD reloads its config on SIGHUP (the chart's config-manager sends it) */
		sigaddset(&set, SIGQUIT);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		r = run(&c, &set);
	}
	free(c.cfg);
	return r;
}
