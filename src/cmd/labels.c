/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet labels: GPU Feature Discovery compatible labels in an NFD local feature file. Flags and
 * env vars are GFD's where it has them (docs/reference/device-plugin.md §9).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/options.h"
#include "util/fileio.h"
#include "labels/labels.h"
#include "util/log.h"

struct labels_cli {
	struct cmd_common c;
	const char *output, *machine_file, *gpu_type;
	bool oneshot, fail_on_init_error, gpu_mig, no_timestamp;
	long long sleep_ms; /* < 0: infinite */
	struct labels_options lo;
};

/* Go-style durations GFD accepts for --sleep-interval: "60s", "1m30s" is not needed: one unit. */
static int parse_duration(const char *s, long long *ret_ms)
{
	if (streq(s, "infinite"))
		return *ret_ms = -1, 0;
	char *end;
	double v = strtod(s, &end);
	static const struct {
		const char *unit;
		double ms;
	} units[] = {{"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"h", 3600000}};
	if (end == s || v < 0)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (streq(end, units[i].unit)) {
			double ms = v * units[i].ms;
			if (ms < 100 || ms > 86400000.0 * 7)
				return -1;
			*ret_ms = (long long)ms;
			return 0;
		}
	return -1;
}

static int set_sleep(void *opts, const char *value, struct gerr *err)
{
	return parse_duration(value, &((struct labels_cli *)opts)->sleep_ms);
}

static int set_mig_strategy(void *opts, const char *value, struct gerr *err)
{
	return mig_strategy_from_name(value, &((struct labels_cli *)opts)->lo.mig_strategy);
}

static int set_sharing(void *opts, const char *value, struct gerr *err)
{
	return sharing_strategy_from_name(value, &((struct labels_cli *)opts)->lo.sharing);
}

#define LABELS_F(field) offsetof(struct labels_cli, field)
/* Flags and env vars of GPU Feature Discovery where it has them (docs/reference/device-plugin.md §9). */
static const struct cmd_opt labels_opts[] = {
    CMD_ROW("output-file", 'o', CMD_OPT_STR, "FILE", "feature file under --root; '-' prints to stdout",
	    .alias = "output", .env = {"GFD_OUTPUT_FILE"}, .def = LABELS_DEFAULT_OUTPUT, .off = LABELS_F(output)),
    CMD_ROW("oneshot", 0, CMD_OPT_SET, NULL, "label once and exit", .env = {"GFD_ONESHOT"}, .off = LABELS_F(oneshot)),
    CMD_ROW("sleep-interval", 0, CMD_OPT_CALL, "D", "time between relabelings: 60s, 5m, 500ms, infinite",
	    .env = {"GFD_SLEEP_INTERVAL"}, .def = "60s", .call = set_sleep,
	    .want = "a duration from 100ms to 7 days (60s, 5m, 500ms) or infinite"),
    CMD_ROW("no-timestamp", 0, CMD_OPT_SET, NULL, "no nvidia.com/gfd.timestamp label", .env = {"GFD_NO_TIMESTAMP"},
	    .off = LABELS_F(no_timestamp)),
    CMD_ROW("mig-strategy", 0, CMD_OPT_CALL, "S", "none, single or mixed: how MIG devices are labeled",
	    .env = {"GFD_MIG_STRATEGY", "MIG_STRATEGY"}, .def = "none", .call = set_mig_strategy,
	    .want = "none|single|mixed"),
    CMD_ROW("fail-on-init-error", 0, CMD_OPT_BOOL, NULL, "exit when NVML fails",
	    .env = {"GFD_FAIL_ON_INIT_ERROR", "FAIL_ON_INIT_ERROR"}, .def = "true",
	    .off = LABELS_F(fail_on_init_error)),
    CMD_ROW("machine-type-file", 0, CMD_OPT_STR, "F", "DMI product name under --root", .env = {"GFD_MACHINE_TYPE_FILE"},
	    .def = LABELS_DEFAULT_MACHINE_FILE, .off = LABELS_F(machine_file)),
    CMD_ROW("sharing-strategy", 0, CMD_OPT_CALL, "S",
	    "none, time-slicing or mps; with --replicas N, the v1 config's sharing block", .def = "none",
	    .call = set_sharing, .want = "none|time-slicing|mps"),
    CMD_ROW("replicas", 0, CMD_OPT_UINT, "N", "replicas per GPU when shared", .off = LABELS_F(lo.replicas), .min = 0,
	    .max = 1024),
    CMD_ROW("rename-by-default", 0, CMD_OPT_SET, NULL, "shared resource is nvidia.com/gpu.shared; labels follow",
	    .off = LABELS_F(lo.rename_by_default)),
    CMD_ROW("gpu-type", 0, CMD_OPT_STR, "VALUE",
	    "also write the field guide's custom label gpu-type=VALUE ('auto': from the product)",
	    .off = LABELS_F(gpu_type)),
    CMD_ROW("gpu-mig-label", 0, CMD_OPT_SET, NULL, "also write gpu-mig=enabled|disabled", .off = LABELS_F(gpu_mig)),
    CMD_OPTS_NVML,
    {0},
};

static const struct cmd_verb labels_verb = CMD_VERB(
    "labels", "[OPTIONS]", labels_opts, "gpulet labels --oneshot --mig-strategy mixed --output-file - | grep mig-",
    .about = "Write GFD-compatible node labels (nvidia.com/gpu.product, gpu.count, mig.strategy, ...) to an NFD\n"
	     "local feature file, atomically, every --sleep-interval; --oneshot writes once and exits.");

static int parse_args(int argc, char **argv, struct labels_cli *c)
{
	int r = cmd_parse(&labels_verb, argc, argv, c);

	if (r != CMD_CONTINUE)
		return r;
	c->lo.timestamp = !c->no_timestamp;
	if (c->lo.sharing != SHARING_NONE && c->lo.replicas < 2)
		return cmd_usage_error(&labels_verb, "--sharing-strategy %s needs --replicas 2 or more",
				       c->lo.sharing == SHARING_MPS ? "mps" : "time-slicing");
	return CMD_CONTINUE;
}

static int write_output(const struct labels_cli *c, const char *text)
{
	if (streq(c->output, "-"))
		return fputs(text, stdout) < 0 ? -EIO : 0;
	_cleanup_free_ char *path = root_path(c->c.nvml.root, c->output);
	struct gerr err = {0};
	if (!path)
		return -ENOMEM;
	int r = write_file_atomic(path, text, strlen(text), 0644, &err);
	if (r < 0)
		log_error("cannot write the feature file", "path=%s error=\"%s\"", path, err.msg);
	return r;
}

/* One labeling pass: read the node, compute, write. Returns 0, or 1 for a failure to report. */
static int label_once(struct labels_cli *c, struct nvml *nv)
{
	struct gerr err = {0};
	_cleanup_(node_freep) struct node *n = NULL;
	_cleanup_(label_set_freep) struct label_set *s = NULL;
	_cleanup_free_ char *text = NULL, *machine = NULL;
	if (nv && node_load(nv, c->c.nvml.root, &n, &err) < 0) {
		log_error("cannot read the GPUs", "error=\"%s\"", err.msg);
		if (c->fail_on_init_error)
			return 1;
	}
	_cleanup_free_ char *mpath = root_path(c->c.nvml.root, c->machine_file);
	if (mpath && read_file(mpath, 4096, &machine, NULL, NULL) >= 0)
		machine[strcspn(machine, "\n")] = '\0';
	c->lo.machine = machine;
	c->lo.now = time(NULL);
	c->lo.gpu_type = c->gpu_type;
	c->lo.gpu_mig = c->gpu_mig;
	struct node empty = {0};
	if (labels_build(n ? n : &empty, &c->lo, &s, &err) < 0) {
		log_error("cannot compute labels", "error=\"%s\"", err.msg);
		return 1;
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
			 "error=\"%s\" sleep_interval_ms=%lld", err.msg, c->sleep_ms);
	*ret = NULL;
	return r;
}

int cmd_labels(int argc, char **argv)
{
	struct labels_cli c = {0};
	int r = parse_args(argc, argv, &c);
	if (r != CMD_CONTINUE)
		return r;
	sigset_t set;
	cmd_block_stop_signals(&set);

	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	if (open_nvml(&c, &nv) < 0 && c.fail_on_init_error)
		return 1;
	for (;;) {
		if (!nv && open_nvml(&c, &nv) >= 0)
			log_info("NVML loaded, labelling the GPUs", NULL);
		r = label_once(&c, nv);
		if (c.oneshot)
			return r;
		if (r && c.fail_on_init_error)
			return r;
		if (c.sleep_ms < 0) {
			int sig;
			sigwait(&set, &sig);
			break;
		}
		struct timespec ts = {.tv_sec = c.sleep_ms / 1000, .tv_nsec = (c.sleep_ms % 1000) * 1000000L};
		if (sigtimedwait(&set, NULL, &ts) > 0)
			break;
	}
	/* as GFD: labels of a stopped labeler must not outlive it */
	if (!streq(c.output, "-")) {
		_cleanup_free_ char *path = root_path(c.c.nvml.root, c.output);
		if (path && unlink(path) < 0 && errno != ENOENT)
			log_warn("cannot remove the feature file", "path=%s error=%s", path, strerror(errno));
	}
	return 0;
}
