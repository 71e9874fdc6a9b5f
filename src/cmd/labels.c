/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet labels: GPU Feature Discovery compatible labels in an NFD local feature file. Flags and
 * env vars are GFD's where it has them (docs/reference/device-plugin.md §9).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "util/fileio.h"
#include "labels/labels.h"
#include "util/log.h"

static void labels_help(FILE *f)
{
	fprintf(
	    f,
	    "Usage: gpulet labels [OPTIONS]\n\n"
	    "Write GFD-compatible node labels (nvidia.com/gpu.product, gpu.count, mig.strategy, ...) to an NFD\n"
	    "local feature file, atomically, every --sleep-interval; --oneshot writes once and exits.\n\n"
	    "  -o, --output-file FILE   feature file under --root (env GFD_OUTPUT_FILE, default\n"
	    "                           " LABELS_DEFAULT_OUTPUT "); '-' prints to stdout. Alias --output\n"
	    "      --oneshot            label once and exit (env GFD_ONESHOT)\n"
	    "      --sleep-interval D   time between relabelings: 60s, 5m, 500ms, infinite (env GFD_SLEEP_INTERVAL)\n"
	    "      --no-timestamp       no nvidia.com/gfd.timestamp label (env GFD_NO_TIMESTAMP)\n"
	    "      --mig-strategy S     none|single|mixed (env GFD_MIG_STRATEGY, MIG_STRATEGY; default none)\n"
	    "      --fail-on-init-error[=BOOL]  exit when NVML fails (env GFD_FAIL_ON_INIT_ERROR; default true)\n"
	    "      --machine-type-file F  DMI product name under --root (env GFD_MACHINE_TYPE_FILE,\n"
	    "                           default " LABELS_DEFAULT_MACHINE_FILE ")\n"
	    "      --sharing-strategy S none|time-slicing|mps, with --replicas N (the v1 config's sharing block)\n"
	    "      --replicas N         replicas per GPU when shared\n"
	    "      --rename-by-default  shared resource is nvidia.com/gpu.shared; labels follow\n"
	    "      --gpu-type VALUE     also write the field guide's custom label gpu-type=VALUE ('auto': from the "
	    "product)\n"
	    "      --gpu-mig-label      also write gpu-mig=enabled|disabled\n"
	    "      --nvml-library PATH  libnvidia-ml.so.1 to load (env GPULET_NVML_LIBRARY)\n"
	    "      --driver-root DIR    where the driver is installed (env NVIDIA_DRIVER_ROOT, default /)\n"
	    "      --root DIR           host root for /sys, /proc and the output file (default /)\n"
	    "  -h, --help               this text\n\n"
	    "Example: gpulet labels --oneshot --mig-strategy mixed --output-file - | grep mig-\n");
}

struct labels_cli {
	const char *output, *machine_file, *gpu_type;
	bool oneshot, fail_on_init_error, gpu_mig;
	long long sleep_ms; /* < 0: infinite */
	struct labels_options lo;
	struct cmd_nvml_opts nvml;
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

static int parse_mig_strategy(const char *s, enum mig_strategy *ret)
{
	return mig_strategy_from_name(s, ret);
}

static int parse_sharing(const char *s, enum sharing_strategy *ret)
{
	return sharing_strategy_from_name(s, ret);
}

static const char *env2(const char *a, const char *b, const char *fallback)
{
	return cmd_env_or(a, cmd_env_or(b, fallback));
}

static int usage_error(const char *what, const char *value)
{
	fprintf(stderr, "gpulet labels: %s '%s' is not valid (see --help)\n", what, value);
	return EXIT_USAGE;
}

static int from_env(struct labels_cli *c)
{
	const char *v;
	c->output = cmd_env_or("GFD_OUTPUT_FILE", LABELS_DEFAULT_OUTPUT);
	c->machine_file = cmd_env_or("GFD_MACHINE_TYPE_FILE", LABELS_DEFAULT_MACHINE_FILE);
	c->fail_on_init_error = true;
	c->sleep_ms = 60000;
	c->lo.timestamp = true;
	if ((v = env2("GFD_MIG_STRATEGY", "MIG_STRATEGY", NULL)) && parse_mig_strategy(v, &c->lo.mig_strategy) < 0)
		return usage_error("MIG_STRATEGY", v);
	if ((v = cmd_env_or("GFD_SLEEP_INTERVAL", NULL)) && parse_duration(v, &c->sleep_ms) < 0)
		return usage_error("GFD_SLEEP_INTERVAL", v);
	if ((v = env2("GFD_FAIL_ON_INIT_ERROR", "FAIL_ON_INIT_ERROR", NULL)) &&
	    cmd_parse_bool(v, &c->fail_on_init_error) < 0)
		return usage_error("GFD_FAIL_ON_INIT_ERROR", v);
	bool b = false;
	if ((v = cmd_env_or("GFD_ONESHOT", NULL)) && cmd_parse_bool(v, &c->oneshot) < 0)
		return usage_error("GFD_ONESHOT", v);
	if ((v = cmd_env_or("GFD_NO_TIMESTAMP", NULL))) {
		if (cmd_parse_bool(v, &b) < 0)
			return usage_error("GFD_NO_TIMESTAMP", v);
		c->lo.timestamp = !b;
	}
	return -1;
}

static int parse_args(int argc, char **argv, struct labels_cli *c)
{
	enum {
		O_ONESHOT = 256,
		O_SLEEP,
		O_NO_TS,
		O_MIG,
		O_FAIL,
		O_MACHINE,
		O_SHARING,
		O_REPLICAS,
		O_RENAME,
		O_TYPE,
		O_GPU_MIG,
		O_LIB,
		O_DROOT,
		O_ROOT
	};
	static const struct option opts[] = {
	    {"output-file", required_argument, NULL, 'o'},
	    {"output", required_argument, NULL, 'o'},
	    {"oneshot", no_argument, NULL, O_ONESHOT},
	    {"sleep-interval", required_argument, NULL, O_SLEEP},
	    {"no-timestamp", no_argument, NULL, O_NO_TS},
	    {"mig-strategy", required_argument, NULL, O_MIG},
	    {"fail-on-init-error", optional_argument, NULL, O_FAIL},
	    {"machine-type-file", required_argument, NULL, O_MACHINE},
	    {"sharing-strategy", required_argument, NULL, O_SHARING},
	    {"replicas", required_argument, NULL, O_REPLICAS},
	    {"rename-by-default", no_argument, NULL, O_RENAME},
	    {"gpu-type", required_argument, NULL, O_TYPE},
	    {"gpu-mig-label", no_argument, NULL, O_GPU_MIG},
	    {"nvml-library", required_argument, NULL, O_LIB},
	    {"driver-root", required_argument, NULL, O_DROOT},
	    {"root", required_argument, NULL, O_ROOT},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int r = from_env(c), o;
	if (r >= 0)
		return r;
	optind = 1;
	while ((o = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 'o':
			c->output = optarg;
			break;
		case O_ONESHOT:
			c->oneshot = true;
			break;
		case O_SLEEP:
			if (parse_duration(optarg, &c->sleep_ms) < 0)
				return usage_error("--sleep-interval", optarg);
			break;
		case O_NO_TS:
			c->lo.timestamp = false;
			break;
		case O_MIG:
			if (parse_mig_strategy(optarg, &c->lo.mig_strategy) < 0)
				return usage_error("--mig-strategy", optarg);
			break;
		case O_FAIL:
			if (cmd_parse_bool(optarg ? optarg : "true", &c->fail_on_init_error) < 0)
				return usage_error("--fail-on-init-error", optarg);
			break;
		case O_MACHINE:
			c->machine_file = optarg;
			break;
		case O_SHARING:
			if (parse_sharing(optarg, &c->lo.sharing) < 0)
				return usage_error("--sharing-strategy", optarg);
			break;
		case O_REPLICAS: {
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0 || v > 1024)
				return usage_error("--replicas", optarg);
			c->lo.replicas = (unsigned)v;
			break;
		}
		case O_RENAME:
			c->lo.rename_by_default = true;
			break;
		case O_TYPE:
			c->gpu_type = optarg;
			break;
		case O_GPU_MIG:
			c->gpu_mig = true;
			break;
		case O_LIB:
			c->nvml.library = optarg;
			break;
		case O_DROOT:
			c->nvml.driver_root = optarg;
			break;
		case O_ROOT:
			c->nvml.root = optarg;
			break;
		case 'h':
			labels_help(stdout);
			return 0;
		default:
			labels_help(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpulet labels: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (c->lo.sharing != SHARING_NONE && c->lo.replicas < 2) {
		fprintf(stderr, "gpulet labels: --sharing-strategy %s needs --replicas 2 or more\n",
			c->lo.sharing == SHARING_MPS ? "mps" : "time-slicing");
		return EXIT_USAGE;
	}
	return -1;
}

static int write_output(const struct labels_cli *c, const char *text)
{
	if (streq(c->output, "-"))
		return fputs(text, stdout) < 0 ? -EIO : 0;
	_cleanup_free_ char *path = root_path(c->nvml.root, c->output);
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
	if (nv && node_load(nv, c->nvml.root, &n, &err) < 0) {
		log_error("cannot read the GPUs", "error=\"%s\"", err.msg);
		if (c->fail_on_init_error)
			return 1;
	}
	_cleanup_free_ char *mpath = root_path(c->nvml.root, c->machine_file);
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

int cmd_labels(int argc, char **argv)
{
	struct labels_cli c = {0};
	int r = parse_args(argc, argv, &c);
	if (r >= 0)
		return r;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	struct gerr err = {0};
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	if (cmd_open_nvml(&c.nvml, &nv, &err) < 0) {
		log_error("cannot load NVML", "error=\"%s\"", err.msg);
		if (c.fail_on_init_error)
			return 1;
		nv = NULL; /* GFD with --fail-on-init-error=false: label what we can (timestamp) */
	}
	for (;;) {
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
		_cleanup_free_ char *path = root_path(c.nvml.root, c.output);
		if (path && unlink(path) < 0 && errno != ENOENT)
			log_warn("cannot remove the feature file", "path=%s error=%s", path, strerror(errno));
	}
	return 0;
}
