/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's option rows for the one engine (util/optspec.h): flag, alias, env vars, config-file
 * key, kind, default, bounds. Values are applied in layers, default < file < env < flag
 * (urfave/cli semantics upstream: a flag counts as set when given on the command line or through
 * its env var), each through the engine's one setter, so every value is validated the same way;
 * the file layer is the shared v1 file's walker (nvconfig/nvconfig.h) over these rows.
 * Sources: docs/reference/device-plugin.md §1 (flags, env, defaults) and §2 (v1 file).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cdi/cdi.h"
#include "cdi/hooks.h"
#include "kapi/rows.h"
#include "plugin/config_int.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/log.h"

#define DEFAULT_DEVICE_PLUGIN_PATH "/var/lib/kubelet/device-plugins" /* pluginapi.DevicePluginPath */

/* A field of struct plugin_config; a path (owned, at most PATH_MAX - 1 characters, longer is refused), another
 * text (at most CONFIG_STR_MAX). */
#define F(field)  .off = offsetof(struct plugin_config, field)
#define FP(field) F(field), .max = PATH_MAX - 1
#define FS(field) F(field), .max = CONFIG_STR_MAX

const struct enum_name config_device_id_names[2] = {{DEVICE_ID_UUID, "uuid"}, {DEVICE_ID_INDEX, "index"}};
const struct enum_name config_dls_names[4] = {{DLS_ENVVAR, "envvar"},
					      {DLS_VOLUME_MOUNTS, "volume-mounts"},
					      {DLS_CDI_ANNOTATIONS, "cdi-annotations"},
					      {DLS_CDI_CRI, "cdi-cri"}};

/* imex.channelIDs: api/config/v1/imex.go takes only [] or [0] */
static int set_imex(void *opts, const char *v, struct gerr *err)
{
	struct plugin_config *c = opts;

	char *copy;

	if (v[0] && !streq(v, "0"))
		return gerr_set(err, EINVAL, "only channel 0 is supported");
	if (!(copy = strdup(v)))
		return gerr_set(err, ENOMEM, "out of memory");
	free(c->imex_channel_ids);
	c->imex_channel_ids = copy;
	return 0;
}

/*
 * Every row: main.go flag of nvidia-device-plugin v0.20.0 (api/config/v1/flags.go for the key),
 * unless marked gpulet. --help and --version are added by the command (cmd/verb_plugin.c).
 */
static const struct optspec config_opts[] = {
    NVCONFIG_OPT_MIG_STRATEGY(offsetof(struct plugin_config, mig_strategy),
			      "how MIG devices are advertised: none, single or mixed", "MIG_STRATEGY"),
    NVCONFIG_OPT_FAIL_ON_INIT_ERROR(offsetof(struct plugin_config, fail_on_init_error),
				    "exit on NVML/device errors at start (false: log and wait)", "FAIL_ON_INIT_ERROR"),
    {.name = "driver-root",
     .alias = "nvidia-driver-root",
     .kind = OPT_PATH,
     .arg = "DIR",
     .env = {"NVIDIA_DRIVER_ROOT"},
     .key = NVCONFIG_KEY_DRIVER_ROOT,
     .def = "/",
     FP(driver_root),
     .help = "host root of the NVIDIA driver (/ or /run/nvidia/driver)"},
    {.name = "dev-root",
     .alias = "nvidia-dev-root",
     .kind = OPT_PATH,
     .arg = "DIR",
     .env = {"NVIDIA_DEV_ROOT"},
     .key = NVCONFIG_KEY_DEV_ROOT,
     FP(dev_root),
     .help = "host root of the /dev nodes (default: the driver root)"},
    {.name = "pass-device-specs",
     .kind = OPT_BOOL,
     .env = {"PASS_DEVICE_SPECS"},
     .key = NVCONFIG_KEY_PASS_DEVICE_SPECS,
     .def = "false",
     F(pass_device_specs),
     .help = "return DeviceSpecs in Allocate (CPUManager static policy)"},
    {.name = "device-list-strategy",
     .kind = OPT_FLAGS,
     .arg = "S[,S]",
     .env = {"DEVICE_LIST_STRATEGY"},
     .key = NVCONFIG_KEY_DEVICE_LIST_STRATEGY,
     .def = "envvar",
     F(device_list_strategy),
     .help = "how devices reach the runtime: envvar, volume-mounts, cdi-annotations, cdi-cri; a comma list or "
	     "repeated, several allowed",
     .want = "strategy",
     OPTSPEC_NAMES(config_dls_names)},
    {.name = "device-id-strategy",
     .kind = OPT_ENUM,
     .arg = "S",
     .env = {"DEVICE_ID_STRATEGY"},
     .key = NVCONFIG_KEY_DEVICE_ID_STRATEGY,
     .def = "uuid",
     F(device_id_strategy),
     .help = "device IDs passed to the runtime: uuid or index",
     OPTSPEC_NAMES(config_device_id_names)},
    {.name = "gdrcopy-enabled",
     .kind = OPT_BOOL,
     .env = {"GDRCOPY_ENABLED"},
     .key = NVCONFIG_KEY_GDRCOPY_ENABLED,
     .def = "false",
     F(gdrcopy_enabled),
     .help = "set NVIDIA_GDRCOPY=enabled in containers"},
    {.name = "gds-enabled",
     .kind = OPT_BOOL,
     .env = {"GDS_ENABLED"},
     .key = NVCONFIG_KEY_GDS_ENABLED,
     .def = "false",
     F(gds_enabled),
     .help = "set NVIDIA_GDS=enabled in containers"},
    {.name = "mofed-enabled",
     .kind = OPT_BOOL,
     .env = {"MOFED_ENABLED"},
     .key = NVCONFIG_KEY_MOFED_ENABLED,
     .def = "false",
     F(mofed_enabled),
     .help = "set NVIDIA_MOFED=enabled in containers"},
    {.name = "cdi-annotation-prefix",
     .kind = OPT_STR,
     .arg = "PREFIX",
     .env = {"CDI_ANNOTATION_PREFIX"},
     .key = NVCONFIG_KEY_CDI_ANNOTATION_PREFIX,
     .def = "cdi.k8s.io/",
     FS(cdi_annotation_prefix),
     .help = "prefix of the CDI annotation key"},
    {.name = "nvidia-cdi-hook-path",
     .alias = "nvidia-ctk-path",
     .kind = OPT_PATH,
     .arg = "PATH",
     .env = {"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"},
     .key = NVCONFIG_KEY_NVIDIA_CTK_PATH,
     .def = "/usr/bin/nvidia-ctk",
     FP(nvidia_cdi_hook_path),
     .help = "host path of the CDI hook binary written into CDI specs"},
    NVCONFIG_OPT_CTR_DRIVER_ROOT(offsetof(struct plugin_config, container_driver_root)),
    {.name = "mps-root",
     .kind = OPT_PATH,
     .arg = "DIR",
     .env = {"MPS_ROOT"},
     .key = NVCONFIG_KEY_MPS_ROOT,
     FP(mps_root),
     .help = "host dir of the MPS daemons' pipes and shm (required with MPS sharing)"},
    {.name = "shared-devices-allocation-policy",
     .kind = OPT_ENUM,
     .arg = "P",
     .env = {"SHARED_DEVICES_ALLOCATION_POLICY"},
     .key = NVCONFIG_KEY_SHARED_DEVICES_ALLOC_POLICY,
     .def = "distributed",
     F(shared_devices_allocation_policy),
     .help = "replica placement for shared GPUs: distributed or packed",
     OPTSPEC_NAMES(replica_policy_names)},
    NVCONFIG_OPT_DISCOVERY(offsetof(struct plugin_config, device_discovery_strategy),
			   "how devices are found: auto or nvml (tegra and vfio are refused: NVML only)"),
    {.name = "imex-channel-ids",
     .kind = OPT_CALL,
     .arg = "IDS",
     .env = {"IMEX_CHANNEL_IDS"},
     .key = NVCONFIG_KEY_IMEX_CHANNEL_IDS,
     F(imex_channel_ids),
     .call = set_imex,
     .help = "IMEX channels to inject ([] or 0)"},
    {.name = "imex-required",
     .kind = OPT_BOOL,
     .env = {"IMEX_REQUIRED"},
     .key = NVCONFIG_KEY_IMEX_REQUIRED,
     .def = "false",
     F(imex_required),
     .help = "fail when the IMEX channels are missing"},
    {.name = "kubelet-socket",
     .kind = OPT_PATH,
     .arg = "PATH",
     .env = {"KUBELET_SOCKET"},
     .def = "/var/lib/kubelet/device-plugins/kubelet.sock",
     FP(kubelet_socket),
     .help = "kubelet registration socket (\"\": serve without registering)"},
    NVCONFIG_OPT_CONFIG_FILE(offsetof(struct plugin_config, config_file), "CONFIG_FILE"),
    {.name = "cdi-feature-flags",
     .kind = OPT_FLAGS,
     .arg = "FLAGS",
     .env = {"CDI_FEATURE_FLAGS"},
     F(cdi_feature_flags),
     .help =
	 "upstream's CDI feature flags, comma-separated: disable-ipc-discoverer, and the ones gpulet's spec "
	 "already matches (no-additional-gids-for-device-nodes, disable-nvsandboxutils, disable-multiple-csv-devices); "
	 "enable-coherent-annotations and enable-explicit-driver-libraries are refused",
     .want = "feature flag",
     .empty_none = true,
     OPTSPEC_NAMES(cdi_feature_names)},
    {.name = "cdi-disable-hooks",
     .kind = OPT_FLAGS,
     .arg = "HOOKS",
     .env = {"CDI_DISABLE_HOOKS"},
     F(cdi_disable_hooks),
     .help = "CDI hooks to leave out: all, or names separated by commas",
     .want = "hook",
     .empty_none = true,
     OPTSPEC_NAMES(cdi_hook_names)},
    /* gpulet: upstream hard-codes the dir (pluginapi.DevicePluginPath); "" = the kubelet socket's dir,
     * where kubelet dials the endpoint it was given (docs/reference/device-plugin.md §3.1) */
    {.name = "device-plugin-path",
     .kind = OPT_PATH,
     .arg = "DIR",
     .env = {"DP_DEVICE_PLUGIN_PATH"},
     FP(device_plugin_path),
     .help = "dir where the plugin sockets are created (default: the directory of --kubelet-socket, or "
	     "/var/lib/kubelet/device-plugins when it is empty)"},
    /* gpulet: NVML location override, e.g. a fake NVML in tests */
    {.name = "nvml-library",
     .kind = OPT_PATH,
     .arg = "PATH",
     .env = {"GPULET_NVML_LIBRARY"},
     FP(nvml_library),
     .help = "path of libnvidia-ml.so.1 (default: search the driver root)"},
    /* gpulet: prefix of every host path read (a fake node tree in tests, /host in a container) */
    {.name = "root",
     .kind = OPT_PATH,
     .arg = "DIR",
     .env = {"GPULET_ROOT"},
     .def = "/",
     FP(root),
     .help = "host filesystem prefix"},
    /* gpulet: how often NVML is read again to notice lost GPUs and MIG re-partitions (pain point #5) */
    {.name = "rescan-interval",
     .kind = OPT_DURATION,
     .arg = "D",
     .env = {"GPULET_RESCAN_INTERVAL"},
     .def = "10",
     F(rescan_interval),
     .min = 1000,
     .max = 86400 * 1000,
     .bare_ms = 1000,
     .help = "time between device rescans (lost GPUs and MIG changes are re-advertised live): a Go duration "
	     "(10s, 1m30s) or seconds"},
    /* gpulet: recovery of an unhealthy GPU (upstream #189, #234: upstream never recovers) */
    {.name = "health-recovery-interval",
     .kind = OPT_DURATION,
     .arg = "D",
     .env = {"GPULET_HEALTH_RECOVERY_INTERVAL"},
     .def = "300",
     F(health_recovery),
     .min = 1000,
     .max = 86400 * 1000,
     .bare_ms = 1000,
     .help = "time without a new error (a Go duration, or seconds) after which a GPU unhealthy for an application XID "
	     "is healthy again; "
	     "one needing a reset only once NVML also reports it reset, one lost or after XID 79 not until restart"},
    /* gpulet: second XID source for what NVML misses, e.g. XID 79 fallen off the bus */
    {.name = "kernel-log",
     .kind = OPT_PATH,
     .arg = "PATH",
     .env = {"GPULET_KERNEL_LOG"},
     FP(kernel_log),
     .help = "kernel log followed for 'NVRM: Xid' lines (default: <root>/dev/kmsg; e.g. /var/log/kern.log)"},
    /* gpulet: the /dev/char links nvidia-ctk's create-dev-char-symlinks makes (docs/reference/cdi.md §7.3.1);
     * the name and env of the GPU Operator's validator switch */
    {.name = "disable-dev-char-symlink-creation",
     .kind = OPT_BOOL,
     .env = {"DISABLE_DEV_CHAR_SYMLINK_CREATION"},
     .def = "false",
     F(no_dev_char_links),
     .help = "do not create /dev/char/<major>:<minor> links for the NVIDIA device nodes at start and rebuild "
	     "(they keep GPU containers' devices across systemctl daemon-reload with the systemd cgroup driver)"},
    /* env only, as upstream reads them (internal/rm/health.go; docs/reference/device-plugin.md §4) */
    {.name = "disable-healthchecks",
     .kind = OPT_STR,
     .arg = "LIST",
     .env = {"DP_DISABLE_HEALTHCHECKS"},
     .env_only = true,
     FS(xid_disable),
     .help = "XIDs that do not make a GPU unhealthy, comma-separated; all or xids: none does"},
    {.name = "enable-healthchecks",
     .kind = OPT_STR,
     .arg = "LIST",
     .env = {"DP_ENABLE_HEALTHCHECKS"},
     .env_only = true,
     FS(xid_enable),
     .help = "XIDs that make a GPU unhealthy even when ignored by default (13,31,43,45,68,109) or disabled; all: "
	     "every XID"},
    /* per-node configs: upstream's config-manager's flags and env vars, so that the plugin follows the node
     * label itself (nodeconfig/nodeconfig.h, docs/reference/config-manager.md) */
    NODECONFIG_OPTS(offsetof(struct plugin_config, node_config)),
    /* gpulet: health on the Node object, a condition and events (plugin/node_health.h) */
    {.name = "node-health",
     .kind = OPT_BOOL,
     .env = {"GPULET_NODE_HEALTH"},
     .def = "false",
     F(node_health),
     .help = "report GPU health on this node's Node object: the GPUHealthy condition and events (needs "
	     "--node-name, and in a pod RBAC for nodes get, nodes/status patch, events create)"},
    {.name = "node-name",
     .kind = OPT_STR,
     .arg = "NAME",
     .env = {"NODE_NAME"},
     FS(node_name),
     .help = "this node's name in the API (--node-health, per-node configs: the Node whose label is followed; the "
	     "chart sets it from spec.nodeName)"},
    {.name = "kubeconfig",
     .kind = OPT_FILE,
     .arg = "FILE",
     .env = {"KUBECONFIG"},
     FP(kubeconfig),
     .help = "kubeconfig of the API server (--node-health, per-node configs; default: the pod's service account)"},
    KAPI_ENV_ROWS(offsetof(struct plugin_config, kenv)),
    /* gpulet: the GPU Operator mounts the host's / read-only at /host and the spec dir at /var/run/cdi
     * (docs/reference/operator.md §3): the one write that is not below --root */
    {.name = "cdi-spec-dir",
     .kind = OPT_PATH,
     .arg = "DIR",
     .env = {"GPULET_CDI_SPEC_DIR"},
     FP(cdi_spec_dir),
     .help = "dir the CDI specs are written to, as this process sees it (default: <root>/var/run/cdi)"},
    LOG_OPT_LEVEL(offsetof(struct plugin_config, log_level)),
    /* gpulet: command line only */
    {.name = "print-config", .kind = OPT_SET, F(print_config), .help = "print the effective config as JSON and exit"},
    {0},
};

/* Flags users bring from elsewhere, with what to use instead. */
static const struct optspec_hint config_hints[] = {
    /* the field guide §5.2 mentions it (a GPU Operator/helm setting, not a plugin flag) */
    {"--enable-cdi", "not a device-plugin flag; use --device-list-strategy=cdi-cri (or cdi-annotations)"},
    {0},
};

static int config_file_layer(void *opts, const char *path, struct gerr *err);
static int config_finish(void *opts, struct gerr *err);

const struct optspec_cli config_cli = {
    .rows = config_opts,
    .env = OPT_ENV_EMPTY_URFAVE, /* upstream is a urfave/cli v2 program */
    .msg = OPT_MSG_NAME,
    .version_v = true,
    .hints = config_hints,
    .file_opt = "config-file",
    .load_file = config_file_layer,
    .finish = config_finish,
};

/* Values that follow from others when not given (docs/reference/device-plugin.md §3.1). */
static int config_derive(struct plugin_config *c, struct gerr *err)
{
	const char *slash = strrchr(c->kubelet_socket, '/');
	char *dir;

	if (c->device_plugin_path[0])
		return 0;
	/* kubelet resolves a registered endpoint inside its own socket's dir: serve there (the socket is an
	 * absolute path, so it has a '/') */
	if (!c->kubelet_socket[0])
		dir = strdup(DEFAULT_DEVICE_PLUGIN_PATH);
	else
		dir = strndup(c->kubelet_socket, slash == c->kubelet_socket ? 1 : (size_t)(slash - c->kubelet_socket));
	if (!dir)
		return gerr_set(err, ENOMEM, "out of memory");
	free(c->device_plugin_path);
	c->device_plugin_path = dir;
	return 0;
}

/* The text fields of struct plugin_config: the owned rows, and the one a CALL row sets. */
static bool is_text_row(const struct optspec *o)
{
	return o->kind == OPT_STR || o->kind == OPT_PATH || o->kind == OPT_FILE ||
	       o->off == offsetof(struct plugin_config, imex_channel_ids);
}

struct plugin_config *config_new(void)
{
	_cleanup_(config_freep) struct plugin_config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	for (const struct optspec *o = config_opts; o->kind != OPT_END; o++) {
		char **p = (char **)((char *)c + o->off);

		if (is_text_row(o) && !(*p = strdup("")))
			return NULL;
	}
	return TAKE_PTR(c);
}

void config_free(struct plugin_config *c)
{
	if (!c)
		return;
	optspec_free(config_opts, c); /* the owned rows */
	free(c->imex_channel_ids);    /* the CALL row's */
	warnings_clear(&c->warnings);
	host_paths_free(c->host);
	free(c);
}

/* What the plugin takes from the file besides its rows: the sharing section (when it has one), the warnings. */
static int take_file(struct plugin_config *c, struct nvconfig_file *f, int r, struct gerr *err)
{
	if (r >= 0 && f->sharing.strategy != SHARING_NONE)
		c->sharing = f->sharing;
	if (r >= 0 && warnings_extend(&c->warnings, &f->warnings) < 0)
		r = gerr_set(err, ENOMEM, "out of memory");
	nvconfig_file_clear(f);
	return r;
}

static int config_file_layer(void *opts, const char *path, struct gerr *err)
{
	struct nvconfig_file f = {0};

	return take_file(opts, &f, nvconfig_load(path, &config_cli, opts, &f, err), err);
}

int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err)
{
	struct nvconfig_file f = {0};

	return take_file(cfg, &f, nvconfig_read(text, len, name, &config_cli, cfg, &f, err), err);
}

/* The host paths of the layered options, the one rule (util/hostpaths.h), resolved once per config. */
static int config_host_paths(struct plugin_config *c, struct gerr *err)
{
	host_paths_free(c->host);
	c->host = NULL;
	return host_paths_new(&(struct host_paths_options){.root = c->root,
							   .driver_root = c->driver_root,
							   .dev_root = c->dev_root,
							   .ctr_driver_root = c->container_driver_root,
							   .nvml_library = c->nvml_library},
			      &c->host, err);
}

static int config_finish(void *opts, struct gerr *err)
{
	struct plugin_config *c = opts;
	struct gerr why = {0};
	int r = config_derive(c, err);

	if (r < 0)
		return r;
	/* as upstream, an entry that is not an XID is skipped with a message, not a failure */
	if (xid_policy_parse(c->xid_disable, c->xid_enable, &c->xid_policy, &why) > 0 &&
	    warnings_add(&c->warnings, "Ignoring malformed XID values in the health check settings: %s", why.msg) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = config_validate(c, err);
	return r < 0 ? r : config_host_paths(c, err);
}

int config_load(const struct loop_argv *args, struct plugin_config **ret, struct gerr *err)
{
	static char verb[] = "plugin";
	_cleanup_(config_freep) struct plugin_config *c = config_new();
	char *no_args[] = {verb, NULL};
	enum optspec_action action;
	enum optspec_fail fail;
	int r;

	if (!c)
		return gerr_set(err, ENOMEM, "out of memory");
	r = args ? loop_reparse(&config_cli, args, c, err)
		 : optspec_parse(&config_cli, 1, no_args, c, &action, &fail, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

void config_resource_options(const struct plugin_config *cfg, struct resource_options *o)
{
	memset(o, 0, sizeof(*o));
	o->mig_strategy = cfg->mig_strategy;
	o->sharing = cfg->sharing.strategy;
	o->replica_policy = cfg->shared_devices_allocation_policy;
	o->rename_by_default = cfg->sharing.rename_by_default;
	o->fail_requests_greater_than_one = cfg->sharing.fail_requests_greater_than_one;
	o->rules = cfg->sharing.rules;
	o->n_rules = cfg->sharing.n_rules;
}

char *config_to_json(const struct plugin_config *cfg)
{
	const struct nvconfig_sharing *sh = &cfg->sharing;
	json_t *o = json_object(), *rules = json_array();
	char *s;

	if (!o || !rules) {
		json_decref(o);
		json_decref(rules);
		return NULL;
	}
	for (const struct optspec *p = config_opts; p->kind != OPT_END; p++) {
		const void *f = (const char *)cfg + p->off;
		json_t *v;

		if (p->env_only) /* upstream's env-only settings: not in its config either */
			continue;
		switch (p->kind) {
		case OPT_SET:  /* --print-config: not a setting */
		case OPT_ARGV: /* where the config comes from (per-node configs), not a setting of it */
			continue;
		case OPT_BOOL:
			v = json_boolean(*(const bool *)f);
			break;
		case OPT_FLAGS: /* each name whose bits are all set, once per value (an alias is not repeated) */
			v = json_array();
			for (size_t k = 0; k < p->n_names; k++) {
				unsigned bits = (unsigned)p->names[k].value;
				bool alias = false;

				for (size_t j = 0; j < k; j++)
					alias |= p->names[j].value == p->names[k].value;
				if (!alias && (*(const unsigned *)f & bits) == bits)
					json_array_append_new(v, json_string(p->names[k].name));
			}
			break;
		case OPT_UINT:
			v = json_integer(*(const unsigned *)f);
			break;
		case OPT_DURATION: /* in the unit a bare number has (seconds for the plugin's), else ms */
			v = json_integer(*(const int64_t *)f / OPT_NSEC_PER_MSEC / (json_int_t)(p->bare_ms ?: 1));
			break;
		case OPT_ENUM:
			v = json_string(optspec_enum_name(p, *(const int *)f));
			break;
		default: /* text the struct owns */
			v = json_string(*(char *const *)f);
		}
		json_object_set_new(o, p->name, v);
	}
	for (size_t i = 0; i < sh->n_rules; i++)
		json_array_append_new(rules, json_pack("{s:s, s:s, s:i}", "name", sh->rules[i].name, "rename",
						       sh->rules[i].rename, "replicas", (int)sh->rules[i].replicas));
	json_object_set_new(o, "sharing",
			    json_pack("{s:s, s:b, s:b, s:o}", "strategy", sharing_strategy_name(sh->strategy),
				      "renameByDefault", sh->rename_by_default, "failRequestsGreaterThanOne",
				      sh->fail_requests_greater_than_one, "resources", rules));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}
