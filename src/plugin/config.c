/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One table of plugin options: flag, aliases, env vars, config-file key, type, default, bounds.
 * Values are applied in layers, default < file < env < flag (urfave/cli semantics upstream: a flag
 * counts as set when given on the command line or through its env var), each layer through the
 * same typed setter, so every value from every source is validated the same way.
 * Sources: docs/reference/device-plugin.md §1 (flags, env, defaults) and §2 (v1 file).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plugin/config_int.h"
#include "util/argv.h"
#include "util/fileio.h"

#define CONFIG_FILE_MAX            (1024 * 1024)
#define HELP_SHORT                 'h'                               /* -h: --help */
#define VERSION_SHORT              'v'                               /* -v: --version, urfave/cli's VersionFlag alias */
#define DEFAULT_DEVICE_PLUGIN_PATH "/var/lib/kubelet/device-plugins" /* pluginapi.DevicePluginPath */

#define F(field)                   offsetof(struct plugin_config, field), sizeof(((struct plugin_config *)0)->field)

const struct enum_name config_device_id_names[2] = {{DEVICE_ID_UUID, "uuid"}, {DEVICE_ID_INDEX, "index"}};
const struct enum_name config_discovery_names[4] = {
    {DISCOVERY_AUTO, "auto"}, {DISCOVERY_NVML, "nvml"}, {DISCOVERY_TEGRA, "tegra"}, {DISCOVERY_VFIO, "vfio"}};

/* Every row: main.go flag of nvidia-device-plugin v0.20.0 (api/config/v1/flags.go for the key),
 * unless marked gpulet. */
/* only T_ENUM rows fill the last column (.names, .n_names) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct opt opts[] = {
    {"mig-strategy",
     NULL,
     {"MIG_STRATEGY"},
     "flags.migStrategy",
     T_ENUM,
     "none",
     F(mig_strategy),
     "none|single|mixed",
     "how MIG devices are advertised",
     OPT_NAMES(mig_strategy_names)},
    {"fail-on-init-error",
     NULL,
     {"FAIL_ON_INIT_ERROR"},
     "flags.failOnInitError",
     T_BOOL,
     "true",
     F(fail_on_init_error),
     NULL,
     "exit on NVML/device errors at start (false: log and wait)"},
    {"driver-root",
     "nvidia-driver-root",
     {"NVIDIA_DRIVER_ROOT"},
     "flags.nvidiaDriverRoot",
     T_PATH,
     "/",
     F(driver_root),
     NULL,
     "host root of the NVIDIA driver (/ or /run/nvidia/driver)"},
    {"dev-root",
     "nvidia-dev-root",
     {"NVIDIA_DEV_ROOT"},
     "flags.nvidiaDevRoot",
     T_PATH,
     "",
     F(dev_root),
     NULL,
     "host root of the /dev nodes (default: the driver root)"},
    {"pass-device-specs",
     NULL,
     {"PASS_DEVICE_SPECS"},
     "flags.plugin.passDeviceSpecs",
     T_BOOL,
     "false",
     F(pass_device_specs),
     NULL,
     "return DeviceSpecs in Allocate (CPUManager static policy)"},
    {"device-list-strategy",
     NULL,
     {"DEVICE_LIST_STRATEGY"},
     "flags.plugin.deviceListStrategy",
     T_DLS,
     "envvar",
     F(device_list_strategy),
     "envvar|volume-mounts|cdi-annotations|cdi-cri",
     "how devices reach the runtime; comma list, several allowed"},
    {"device-id-strategy",
     NULL,
     {"DEVICE_ID_STRATEGY"},
     "flags.plugin.deviceIDStrategy",
     T_ENUM,
     "uuid",
     F(device_id_strategy),
     "uuid|index",
     "device IDs passed to the runtime",
     OPT_NAMES(config_device_id_names)},
    {"gdrcopy-enabled",
     NULL,
     {"GDRCOPY_ENABLED"},
     "flags.gdrcopyEnabled",
     T_BOOL,
     "false",
     F(gdrcopy_enabled),
     NULL,
     "set NVIDIA_GDRCOPY=enabled in containers"},
    {"gds-enabled",
     NULL,
     {"GDS_ENABLED"},
     "flags.gdsEnabled",
     T_BOOL,
     "false",
     F(gds_enabled),
     NULL,
     "set NVIDIA_GDS=enabled in containers"},
    {"mofed-enabled",
     NULL,
     {"MOFED_ENABLED"},
     "flags.mofedEnabled",
     T_BOOL,
     "false",
     F(mofed_enabled),
     NULL,
     "set NVIDIA_MOFED=enabled in containers"},
    {"cdi-annotation-prefix",
     NULL,
     {"CDI_ANNOTATION_PREFIX"},
     "flags.plugin.cdiAnnotationPrefix",
     T_STR,
     "cdi.k8s.io/",
     F(cdi_annotation_prefix),
     NULL,
     "prefix of the CDI annotation key"},
    {"nvidia-cdi-hook-path",
     "nvidia-ctk-path",
     {"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"},
     "flags.plugin.nvidiaCTKPath",
     T_PATH,
     "/usr/bin/nvidia-ctk",
     F(nvidia_cdi_hook_path),
     NULL,
     "host path of the CDI hook binary written into CDI specs"},
    {"driver-root-ctr-path",
     "container-driver-root",
     {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"},
     "flags.plugin.containerDriverRoot",
     T_PATH,
     "/driver-root",
     F(container_driver_root),
     NULL,
     "where the host driver root is mounted in the plugin container"},
    {"mps-root",
     NULL,
     {"MPS_ROOT"},
     "flags.mpsRoot",
     T_PATH,
     "",
     F(mps_root),
     NULL,
     "host dir of the MPS daemons' pipes and shm (required with MPS sharing)"},
    {"shared-devices-allocation-policy",
     NULL,
     {"SHARED_DEVICES_ALLOCATION_POLICY"},
     "flags.plugin.sharedDevicesAllocationPolicy",
     T_ENUM,
     "distributed",
     F(shared_devices_allocation_policy),
     "distributed|packed",
     "replica placement for shared GPUs",
     OPT_NAMES(replica_policy_names)},
    {"device-discovery-strategy",
     NULL,
     {"DEVICE_DISCOVERY_STRATEGY"},
     "flags.deviceDiscoveryStrategy",
     T_ENUM,
     "auto",
     F(device_discovery_strategy),
     "auto|nvml|tegra|vfio",
     "how devices are found (vfio: labels only)",
     OPT_NAMES(config_discovery_names)},
    {"imex-channel-ids",
     NULL,
     {"IMEX_CHANNEL_IDS"},
     "imex.channelIDs",
     T_IMEX,
     "",
     F(imex_channel_ids),
     NULL,
     "IMEX channels to inject ([] or 0)"},
    {"imex-required",
     NULL,
     {"IMEX_REQUIRED"},
     "imex.required",
     T_BOOL,
     "false",
     F(imex_required),
     NULL,
     "fail when the IMEX channels are missing"},
    {"kubelet-socket",
     NULL,
     {"KUBELET_SOCKET"},
     NULL,
     T_PATH,
     "/var/lib/kubelet/device-plugins/kubelet.sock",
     F(kubelet_socket),
     NULL,
     "kubelet registration socket (\"\": serve without registering)"},
    {"config-file",
     NULL,
     {"CONFIG_FILE"},
     NULL,
     T_FILE,
     "",
     F(config_file),
     NULL,
     "version: v1 config file (YAML or JSON); a relative path is taken from the working directory"},
    {"cdi-feature-flags",
     NULL,
     {"CDI_FEATURE_FLAGS"},
     NULL,
     T_STR,
     "",
     F(cdi_feature_flags),
     NULL,
     "feature flags for CDI spec generation"},
    {"cdi-disable-hooks",
     NULL,
     {"CDI_DISABLE_HOOKS"},
     NULL,
     T_STR,
     "",
     F(cdi_disable_hooks),
     NULL,
     "CDI hooks to leave out (all)"},
    /* gpulet: upstream hard-codes the dir (pluginapi.DevicePluginPath); "" = the kubelet socket's dir,
     * where kubelet dials the endpoint it was given (docs/reference/device-plugin.md §3.1) */
    {"device-plugin-path",
     NULL,
     {"DP_DEVICE_PLUGIN_PATH"},
     NULL,
     T_PATH,
     "",
     F(device_plugin_path),
     NULL,
     "dir where the plugin sockets are created (default: the directory of --kubelet-socket, or "
     "/var/lib/kubelet/device-plugins when it is empty)"},
    /* gpulet: NVML location override, e.g. a fake NVML in tests */
    {"nvml-library",
     NULL,
     {"GPULET_NVML_LIBRARY"},
     NULL,
     T_PATH,
     "",
     F(nvml_library),
     NULL,
     "path of libnvidia-ml.so.1 (default: search the driver root)"},
    /* gpulet: prefix of every host path read (a fake node tree in tests, /host in a container) */
    {"root", NULL, {"GPULET_ROOT"}, NULL, T_PATH, "/", F(root), NULL, "host filesystem prefix"},
    /* gpulet: how often NVML is read again to notice lost GPUs and MIG re-partitions (pain point #5) */
    {"rescan-interval",
     NULL,
     {"GPULET_RESCAN_INTERVAL"},
     NULL,
     T_SECONDS,
     "10",
     F(rescan_interval),
     NULL,
     "seconds between device rescans (lost GPUs and MIG changes are re-advertised live)"},
    /* gpulet: recovery of an unhealthy GPU (upstream #189, #234: upstream never recovers) */
    {"health-recovery-interval",
     NULL,
     {"GPULET_HEALTH_RECOVERY_INTERVAL"},
     NULL,
     T_SECONDS,
     "300",
     F(health_recovery),
     NULL,
     "seconds without a new error after which a GPU unhealthy for an application XID is healthy again; one "
     "needing a reset only once NVML also reports it reset, one lost or after XID 79 not until restart"},
    /* gpulet: second XID source for what NVML misses, e.g. XID 79 fallen off the bus */
    {"kernel-log",
     NULL,
     {"GPULET_KERNEL_LOG"},
     NULL,
     T_PATH,
     "",
     F(kernel_log),
     NULL,
     "kernel log followed for 'NVRM: Xid' lines (default: <root>/dev/kmsg; e.g. /var/log/kern.log)"},
    {"log-level", NULL, {"LOG_LEVEL"}, NULL, T_LEVEL, "info", F(log_level), "debug|info|warn|error", "log verbosity"},
    /* gpulet: command line only */
    {"print-config", NULL, {NULL}, NULL, T_ACTION, NULL, 0, 0, NULL, "print the effective config as JSON and exit"},
    {"help", NULL, {NULL}, NULL, T_ACTION, NULL, 0, 0, NULL, "this text"},
    {"version",
     NULL,
     {NULL},
     NULL,
     T_ACTION,
     NULL,
     0,
     0,
     NULL,
     "gpulet's version and the upstream version this command matches"},
};
#pragma GCC diagnostic pop

struct config_args {
	const char *val[ELEMENTSOF(opts)];
	char *dls; /* repeated --device-list-strategy flags, comma-joined */
	bool print_config;
};

bool config_args_print_only(const struct config_args *a)
{
	return a && a->print_config;
}

void config_args_free(struct config_args *a)
{
	if (!a)
		return;
	free(a->dls);
	free(a);
}

const struct opt *config_opt_by_key(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(opts); i++)
		if (opts[i].key && streq(opts[i].key, key))
			return &opts[i];
	return NULL;
}

static const char *env_of(const struct opt *o, const char **name);

static const struct opt *opt_by_flag(const char *flag)
{
	for (size_t i = 0; i < ELEMENTSOF(opts); i++)
		if (streq(opts[i].flag, flag))
			return &opts[i];
	return NULL;
}

/* ---- command line ------------------------------------------------------------------------- */

/* Flags users bring from elsewhere, with what to use instead. */
static const struct {
	const char *flag, *hint;
} foreign_flags[] = {
    /* the field guide §5.2 mentions it (a GPU Operator/helm setting, not a plugin flag) */
    {"--enable-cdi", "not a device-plugin flag; use --device-list-strategy=cdi-cri (or cdi-annotations)"},
};

static int unknown_option(const char *arg, struct gerr *err)
{
	size_t l = strcspn(arg, "=");

	for (size_t i = 0; i < ELEMENTSOF(foreign_flags); i++)
		if (strlen(foreign_flags[i].flag) == l && strncmp(arg, foreign_flags[i].flag, l) == 0)
			return gerr_set(err, EINVAL, "unknown option '%s': %s", arg, foreign_flags[i].hint);
	return gerr_set(err, EINVAL, "unknown option '%s'; see 'gpulet plugin --help'", arg);
}

int config_parse_args(int argc, char **argv, struct config_args **ret, enum config_action *action, struct gerr *err)
{
	struct option lo[2 * ELEMENTSOF(opts) + 1];
	_cleanup_(config_args_freep) struct config_args *a = calloc(1, sizeof(*a));
	size_t n = 0;
	int c, idx;

	if (!a)
		return gerr_set(err, ENOMEM, "out of memory");
	*action = CONFIG_RUN;
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		int has = opts[i].type == T_BOOL     ? optional_argument
			  : opts[i].type == T_ACTION ? no_argument
						     : required_argument;

		lo[n++] = (struct option){opts[i].flag, has, NULL, 1000 + (int)i};
		if (opts[i].alias)
			lo[n++] = (struct option){opts[i].alias, has, NULL, 1000 + (int)i};
	}
	lo[n] = (struct option){0};

	argv_single_dash_longs(argc, argv, lo, ":hv"); /* -mig-strategy=mixed, as upstream's CLI */
	optind = 1;
	opterr = 0;
	/* leading ':': a missing value is ':' (not '?'), so it gets its own message */
	while ((c = getopt_long(argc, argv, ":hv", lo, &idx)) != -1) { /* HELP_SHORT, VERSION_SHORT */
		if (c == ':')
			return gerr_set(err, EINVAL, "option '%s' needs a value; see 'gpulet plugin --help'",
					argv[optind - 1]);
		if (c == HELP_SHORT)
			c = 1000 + (int)(opt_by_flag("help") - opts);
		if (c == VERSION_SHORT)
			c = 1000 + (int)(opt_by_flag("version") - opts);
		if (c < 1000 || c >= 1000 + (int)ELEMENTSOF(opts))
			return unknown_option(argv[optind - 1], err);
		size_t i = (size_t)(c - 1000);

		if (opts[i].type == T_ACTION && streq(opts[i].flag, "version")) {
			*action = CONFIG_VERSION; /* wins over --help, wherever it is */
		} else if (opts[i].type == T_ACTION && streq(opts[i].flag, "help")) {
			if (*action != CONFIG_VERSION)
				*action = CONFIG_HELP;
		} else if (opts[i].type == T_ACTION) {
			a->print_config = true;
		} else if (opts[i].type == T_BOOL && !optarg) {
			a->val[i] = "true";
		} else if (opts[i].type == T_DLS && a->val[i]) {
			char *j = NULL;

			if (asprintf(&j, "%s,%s", a->val[i], optarg) < 0)
				return gerr_set(err, ENOMEM, "out of memory");
			free(a->dls);
			a->val[i] = a->dls = j;
		} else {
			a->val[i] = optarg;
		}
	}
	if (optind < argc)
		return gerr_set(err, EINVAL, "unexpected argument '%s'; see 'gpulet plugin --help'", argv[optind]);
	*ret = TAKE_PTR(a);
	return 0;
}

void config_args_default(struct config_args *a, const char *flag, const char *value)
{
	const struct opt *o = opt_by_flag(flag);
	const char *envname;

	if (a && o && !a->val[o - opts] && !env_of(o, &envname))
		a->val[o - opts] = value;
}

/* ---- layers ---------------------------------------------------------------------------------- */

/*
 * The value of an option's env vars as urfave/cli v2 reads them (docs/reference/go-parsing.md): the
 * first one that is set wins, even when empty; empty is "" for a string, path, choice or list (which
 * the setter then checks), false for a boolean, and no value at all for a number or the log level.
 */
static const char *env_of(const struct opt *o, const char **name)
{
	for (size_t k = 0; k < ELEMENTSOF(o->env) && o->env[k]; k++) {
		const char *v = getenv(o->env[k]);

		if (!v)
			continue;
		*name = o->env[k];
		if (*v)
			return v;
		if (o->type == T_BOOL)
			return "false";
		return o->type == T_SECONDS || o->type == T_LEVEL ? NULL : v;
	}
	return NULL;
}

/* Values that follow from others when not given (docs/reference/device-plugin.md §3.1). */
static void config_derive(struct plugin_config *c)
{
	const char *slash = strrchr(c->kubelet_socket, '/');

	if (c->device_plugin_path[0])
		return;
	/* kubelet resolves a registered endpoint inside its own socket's dir: serve there */
	if (!c->kubelet_socket[0])
		snprintf(c->device_plugin_path, sizeof(c->device_plugin_path), "%s", DEFAULT_DEVICE_PLUGIN_PATH);
	else if (slash == c->kubelet_socket)
		snprintf(c->device_plugin_path, sizeof(c->device_plugin_path), "/");
	else
		snprintf(c->device_plugin_path, sizeof(c->device_plugin_path), "%.*s", (int)(slash - c->kubelet_socket),
			 c->kubelet_socket);
}

int config_load(const struct config_args *args, struct plugin_config *ret, struct gerr *err)
{
	_cleanup_free_ struct plugin_config *c = calloc(1, sizeof(*c));
	const struct opt *cf = opt_by_flag("config-file");
	const char *file = NULL, *envname = NULL;
	char src[128];
	int r;

	if (!c)
		return gerr_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		if (opts[i].type == T_ACTION)
			continue;
		r = config_opt_set(c, &opts[i], opts[i].def, "default", err);
		if (r < 0)
			return r;
	}
	file = args ? args->val[cf - opts] : NULL;
	if (!file)
		file = env_of(cf, &envname);
	if (file && *file) {
		_cleanup_free_ char *text = NULL;
		size_t len;

		r = read_file(file, CONFIG_FILE_MAX, &text, &len, err);
		if (r < 0)
			return gerr_prefix(err, "reading the config file %s (--config-file/CONFIG_FILE): ", file), r;
		r = config_apply_file_text(c, text, len, file, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		const char *v = env_of(&opts[i], &envname);

		if (!v)
			continue;
		snprintf(src, sizeof(src), "env %s", envname);
		r = config_opt_set(c, &opts[i], v, src, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; args && i < ELEMENTSOF(opts); i++) {
		if (!args->val[i])
			continue;
		snprintf(src, sizeof(src), "--%s", opts[i].flag);
		r = config_opt_set(c, &opts[i], args->val[i], src, err);
		if (r < 0)
			return r;
	}
	config_derive(c);
	r = config_validate(c, err);
	if (r < 0)
		return r;
	*ret = *c;
	return 0;
}

void config_resource_options(const struct plugin_config *cfg, struct resource_options *o)
{
	memset(o, 0, sizeof(*o));
	o->mig_strategy = cfg->mig_strategy;
	o->sharing = cfg->sharing;
	o->replica_policy = cfg->shared_devices_allocation_policy;
	o->rename_by_default = cfg->rename_by_default;
	o->fail_requests_greater_than_one = cfg->fail_requests_greater_than_one;
	o->rules = cfg->rules;
	o->n_rules = cfg->n_rules;
}

const char *config_dev_root(const struct plugin_config *cfg)
{
	return host_dev_root(cfg->driver_root, cfg->dev_root);
}

void config_print_help(FILE *f)
{
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		const struct opt *o = &opts[i];
		char left[96];

		if (o->type == T_ACTION) {
			fprintf(f, "  %s--%s\n      %s\n",
				streq(o->flag, "help")      ? "-h, "
				: streq(o->flag, "version") ? "-v, "
							    : "",
				o->flag, o->help);
			continue;
		}
		snprintf(left, sizeof(left), "--%s%s%s%s", o->flag, o->alias ? ", --" : "", o->alias ? o->alias : "",
			 o->type == T_BOOL ? "[=BOOL]" : "=VALUE");
		fprintf(f, "  %s\n      %s", left, o->help);
		if (o->choices)
			fprintf(f, " [%s]", o->choices);
		fprintf(f, "\n      env %s%s%s, default \"%s\"%s%s\n", o->env[0], o->env[1] ? ", " : "",
			o->env[1] ? o->env[1] : "", o->def, o->key ? ", config key " : "", o->key ? o->key : "");
	}
}

char *config_to_json(const struct plugin_config *cfg)
{
	json_t *o = json_object(), *rules = json_array();
	char *s;

	if (!o || !rules) {
		json_decref(o);
		json_decref(rules);
		return NULL;
	}
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		const struct opt *p = &opts[i];
		const void *f = (const char *)cfg + p->off;
		json_t *v;

		if (p->type == T_ACTION)
			continue;
		switch (p->type) {
		case T_BOOL:
			v = json_boolean(*(const bool *)f);
			break;
		case T_DLS: {
			v = json_array();
			for (size_t k = 0; k < ELEMENTSOF(config_dls_names); k++)
				if (*(const unsigned *)f & (1u << k))
					json_array_append_new(v, json_string(config_dls_names[k]));
			break;
		}
		case T_SECONDS:
			v = json_integer(*(const unsigned *)f);
			break;
		case T_ENUM:
			v = json_string(config_enum_name(p, *(const int *)f));
			break;
		default:
			v = json_string((const char *)f);
		}
		json_object_set_new(o, p->flag, v);
	}
	for (size_t i = 0; i < cfg->n_rules; i++)
		json_array_append_new(rules, json_pack("{s:s, s:s, s:i}", "name", cfg->rules[i].name, "rename",
						       cfg->rules[i].rename, "replicas", (int)cfg->rules[i].replicas));
	json_object_set_new(o, "sharing",
			    json_pack("{s:s, s:b, s:b, s:o}", "strategy", sharing_strategy_name(cfg->sharing),
				      "renameByDefault", cfg->rename_by_default, "failRequestsGreaterThanOne",
				      cfg->fail_requests_greater_than_one, "resources", rules));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* gpulet labels (GFD): the same defaults and the same file reader, without the plugin's env and flags. */
int config_load_file(const char *path, struct plugin_config *ret, struct gerr *err)
{
	_cleanup_free_ struct plugin_config *c = calloc(1, sizeof(*c));
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if (!c)
		return gerr_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < ELEMENTSOF(opts); i++)
		if (opts[i].type != T_ACTION && (r = config_opt_set(c, &opts[i], opts[i].def, "default", err)) < 0)
			return r;
	if (path && *path) {
		r = read_file(path, CONFIG_FILE_MAX, &text, &len, err);
		if (r < 0)
			return gerr_prefix(err, "reading the config file %s: ", path), r;
		if ((r = config_apply_file_text(c, text, len, path, err)) < 0)
			return r;
	}
	*ret = *c;
	return 0;
}
