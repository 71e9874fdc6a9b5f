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
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "plugin/config.h"
#include "util/fileio.h"
#include "util/macro.h"

#define CONFIG_FILE_MAX  (1024 * 1024)
#define REPLICAS_MAX     1024 /* bound on time-slicing replicas per device */
#define MPS_REPLICAS_MAX 48   /* mps/device.go: 48 for compute capability >= 7.5 */

enum opt_type {
	T_STR,     /* free string, bounded by the field */
	T_PATH,    /* absolute path or "" */
	T_BOOL,    /* Go strconv.ParseBool spellings */
	T_ENUM,    /* one of choices */
	T_DLS,     /* comma list of device list strategies -> DLS_* bits */
	T_IMEX,    /* int list; only [] or [0] are valid upstream */
	T_LEVEL,   /* log level */
	T_SECONDS, /* unsigned seconds within [1, 86400] */
};

struct opt {
	const char *flag;
	const char *alias;
	const char *env[2];
	const char *key; /* config-file key; NULL: command line and env only */
	enum opt_type type;
	const char *def;
	size_t off, size;
	const char *choices;
	const char *help;
};

#define F(field) offsetof(struct plugin_config, field), sizeof(((struct plugin_config *)0)->field)

/* Every row: main.go flag of nvidia-device-plugin v0.20.0 (api/config/v1/flags.go for the key),
 * unless marked gpulet. */
static const struct opt opts[] = {
    {"mig-strategy",
     NULL,
     {"MIG_STRATEGY"},
     "flags.migStrategy",
     T_ENUM,
     "none",
     F(mig_strategy),
     "none|single|mixed",
     "how MIG devices are advertised"},
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
     "device IDs passed to the runtime"},
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
     "replica placement for shared GPUs"},
    {"device-discovery-strategy",
     NULL,
     {"DEVICE_DISCOVERY_STRATEGY"},
     "flags.deviceDiscoveryStrategy",
     T_ENUM,
     "auto",
     F(device_discovery_strategy),
     "auto|nvml|tegra",
     "how devices are found"},
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
     T_PATH,
     "",
     F(config_file),
     NULL,
     "version: v1 config file (YAML or JSON)"},
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
    /* gpulet: upstream hard-codes the dir (pluginapi.DevicePluginPath); tests and odd kubelets need it */
    {"device-plugin-path",
     NULL,
     {"DP_DEVICE_PLUGIN_PATH"},
     NULL,
     T_PATH,
     "/var/lib/kubelet/device-plugins",
     F(device_plugin_path),
     NULL,
     "kubelet device-plugin dir where the plugin sockets are created"},
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
     "seconds without a new error after which a GPU unhealthy for a recoverable XID/ECC reason is healthy again "
     "(a GPU stays unhealthy while NVML reports it lost, and after XID 79 until restart)"},
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
};

/* Keys of the v1 schema that gpulet plugin accepts and does not use (GFD's section). */
static const char *const known_unused_keys[] = {
    "flags.gfd.oneshot",
    "flags.gfd.noTimestamp",
    "flags.gfd.sleepInterval",
    "flags.gfd.outputFile",
    "flags.gfd.machineTypeFile",
    "flags.gfd.useNodeFeatureAPI",
    "flags.gfd.deviceDiscoveryStrategy",
};

static const char *const dls_names[] = {"envvar", "volume-mounts", "cdi-annotations", "cdi-cri"};

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

static void *field(struct plugin_config *c, const struct opt *o)
{
	return (char *)c + o->off;
}

static bool choice_ok(const char *choices, const char *v, size_t vlen)
{
	for (const char *p = choices; p && *p;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == vlen && strncmp(p, v, n) == 0)
			return true;
		p = bar ? bar + 1 : p + n;
	}
	return false;
}

static int parse_bool(const char *v, bool *ret)
{
	static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		if (streq(v, t[i])) {
			*ret = true;
			return 0;
		}
		if (streq(v, f[i])) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* True when a '/'-separated component of path is "..". */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

/* Set one option from text; src says where the text came from ("--flag", "env X", "file:l:c"). */
static int opt_set(struct plugin_config *c, const struct opt *o, const char *v, const char *src, struct gerr *err)
{
	void *p = field(c, o);
	size_t len = strlen(v);

	switch (o->type) {
	case T_PATH:
		if (len && v[0] != '/')
			return gerr_set(err, EINVAL, "%s: %s must be an absolute path, got \"%s\"", src, o->flag, v);
		/* every host path is read under --root: a '..' would climb out of it */
		if (has_dotdot(v))
			return gerr_set(err, EINVAL,
					"%s: %s: path must not contain '..', got \"%s\"; give the real "
					"absolute path",
					src, o->flag, v);
		/* fall through */
	case T_STR:
		if (len >= o->size)
			return gerr_set(err, ENAMETOOLONG, "%s: %s is longer than %zu characters", src, o->flag,
					o->size - 1);
		memcpy(p, v, len + 1);
		return 0;
	case T_BOOL:
		if (parse_bool(v, p) < 0)
			return gerr_set(err, EINVAL, "%s: %s must be true or false, got \"%s\"", src, o->flag, v);
		return 0;
	case T_LEVEL:
	case T_ENUM:
		if (!choice_ok(o->choices, v, len) || len >= o->size)
			return gerr_set(err, EINVAL, "%s: %s must be one of %s, got \"%s\"", src, o->flag, o->choices,
					v);
		memcpy(p, v, len + 1);
		return 0;
	case T_DLS: {
		unsigned bits = 0;

		for (const char *s = v; *s;) {
			size_t n = strcspn(s, ",");
			size_t k;

			while (n && s[0] == ' ') {
				s++;
				n--;
			}
			for (k = 0; k < ELEMENTSOF(dls_names); k++)
				if (strlen(dls_names[k]) == n && strncmp(dls_names[k], s, n) == 0)
					break;
			if (k == ELEMENTSOF(dls_names))
				return gerr_set(err, EINVAL, "%s: %s: unknown strategy \"%.*s\"; valid: %s", src,
						o->flag, (int)n, s, o->choices);
			bits |= 1u << k;
			s += n;
			if (*s == ',')
				s++;
		}
		if (!bits)
			return gerr_set(err, EINVAL, "%s: %s must name at least one of %s", src, o->flag, o->choices);
		*(unsigned *)p = bits;
		return 0;
	}
	case T_SECONDS: {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(v, &end, 10);
		if (errno || end == v || *end || n < 1 || n > 86400)
			return gerr_set(err, EINVAL, "%s: %s must be a number of seconds from 1 to 86400, got \"%s\"",
					src, o->flag, v);
		*(unsigned *)p = (unsigned)n;
		return 0;
	}
	case T_IMEX:
		/* api/config/v1/imex.go: only [] or [0] */
		if (len && !streq(v, "0"))
			return gerr_set(err, EINVAL, "%s: %s: only channel 0 is supported, got \"%s\"", src, o->flag,
					v);
		memcpy(p, v, len + 1);
		return 0;
	}
	return -EINVAL;
}

static const struct opt *opt_by_key(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(opts); i++)
		if (opts[i].key && streq(opts[i].key, key))
			return &opts[i];
	return NULL;
}

static const struct opt *opt_by_flag(const char *flag)
{
	for (size_t i = 0; i < ELEMENTSOF(opts); i++)
		if (streq(opts[i].flag, flag))
			return &opts[i];
	return NULL;
}

static void warn(struct plugin_config *c, const char *fmt, ...) _printf_(2, 3);
static void warn(struct plugin_config *c, const char *fmt, ...)
{
	size_t l = strlen(c->warnings);
	va_list ap;

	if (l + 3 >= sizeof(c->warnings))
		return;
	if (l) {
		memcpy(c->warnings + l, "; ", 3);
		l += 2;
	}
	va_start(ap, fmt);
	vsnprintf(c->warnings + l, sizeof(c->warnings) - l, fmt, ap);
	va_end(ap);
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

int config_parse_args(int argc, char **argv, struct config_args **ret, bool *help, struct gerr *err)
{
	struct option lo[2 * ELEMENTSOF(opts) + 3];
	_cleanup_(config_args_freep) struct config_args *a = calloc(1, sizeof(*a));
	size_t n = 0;
	int c, idx;

	if (!a)
		return gerr_set(err, ENOMEM, "out of memory");
	*help = false;
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		int has = opts[i].type == T_BOOL ? optional_argument : required_argument;

		lo[n++] = (struct option){opts[i].flag, has, NULL, 1000 + (int)i};
		if (opts[i].alias)
			lo[n++] = (struct option){opts[i].alias, has, NULL, 1000 + (int)i};
	}
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n++] = (struct option){"print-config", no_argument, NULL, 'p'};
	lo[n] = (struct option){0};

	optind = 1;
	opterr = 0;
	/* leading ':': a missing value is ':' (not '?'), so it gets its own message */
	while ((c = getopt_long(argc, argv, ":h", lo, &idx)) != -1) {
		if (c == ':')
			return gerr_set(err, EINVAL, "option '%s' needs a value; see 'gpulet plugin --help'",
					argv[optind - 1]);
		if (c == 'h') {
			*help = true;
			continue;
		}
		if (c == 'p') {
			a->print_config = true;
			continue;
		}
		if (c < 1000 || c >= 1000 + (int)ELEMENTSOF(opts))
			return unknown_option(argv[optind - 1], err);
		size_t i = (size_t)(c - 1000);

		if (opts[i].type == T_BOOL && !optarg) {
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

/* ---- config file (libyaml; JSON is YAML's flow style) -------------------------------------- */

struct yctx {
	yaml_document_t *doc;
	const char *name;
	struct plugin_config *cfg;
	struct gerr *err;
};

static int yerr(struct yctx *y, yaml_node_t *n, const char *key, const char *fmt, ...) _printf_(4, 5);
static int yerr(struct yctx *y, yaml_node_t *n, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return gerr_set(y->err, EINVAL, "%s:%zu:%zu: %s: %s", y->name, n->start_mark.line + 1, n->start_mark.column + 1,
			key, buf);
}

static const char *scalar(yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A scalar, or a sequence of scalars joined with ',' (for list-valued options). */
static int value_text(struct yctx *y, yaml_node_t *n, const char *key, bool list_ok, char *buf, size_t size)
{
	size_t off = 0;

	if (n->type == YAML_SCALAR_NODE) {
		if (strlen(scalar(n)) >= size)
			return yerr(y, n, key, "value longer than %zu characters", size - 1);
		snprintf(buf, size, "%s", scalar(n));
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE || !list_ok)
		return yerr(y, n, key, "expected a single value, found a %s",
			    n->type == YAML_MAPPING_NODE ? "mapping" : "list");
	buf[0] = '\0';
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(y->doc, *it);

		if (!e || !scalar(e))
			return yerr(y, e ? e : n, key, "list items must be plain values");
		off += (size_t)snprintf(buf + off, off < size ? size - off : 0, "%s%s", off ? "," : "", scalar(e));
		if (off >= size)
			return yerr(y, n, key, "list longer than %zu characters", size - 1);
	}
	return 0;
}

static bool is_known_unused(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(known_unused_keys); i++)
		if (streq(known_unused_keys[i], key))
			return true;
	return false;
}

static int walk_options(struct yctx *y, yaml_node_t *map, const char *prefix);

static int apply_option(struct yctx *y, const char *key, yaml_node_t *v)
{
	const struct opt *o = opt_by_key(key);
	char text[PATH_MAX], src[PATH_MAX + 64];

	if (!o) {
		if (streq(key, "flags.plugin") || streq(key, "flags.gfd"))
			return walk_options(y, v, key); /* fails on anything but a mapping */
		if (!is_known_unused(key))
			warn(y->cfg, "%s:%zu:%zu: unknown key %s (ignored)", y->name, v->start_mark.line + 1,
			     v->start_mark.column + 1, key);
		return 0;
	}
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0 &&
	    v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		return 0; /* `key:` with no value = null: keep the default */
	if (value_text(y, v, key, o->type == T_DLS || o->type == T_IMEX, text, sizeof(text)) < 0)
		return -EINVAL;
	snprintf(src, sizeof(src), "%s:%zu:%zu: %s", y->name, v->start_mark.line + 1, v->start_mark.column + 1, key);
	return opt_set(y->cfg, o, text, src, y->err);
}

static int walk_options(struct yctx *y, yaml_node_t *map, const char *prefix)
{
	if (map->type != YAML_MAPPING_NODE)
		return yerr(y, map, prefix, "expected a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		char key[256];
		int r;

		if (!k || !v || !scalar(k))
			return yerr(y, k ? k : map, prefix, "keys must be plain strings");
		snprintf(key, sizeof(key), "%s.%s", prefix, scalar(k));
		r = apply_option(y, key, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static yaml_node_t *map_get(struct yctx *y, yaml_node_t *map, const char *name)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);

		if (k && scalar(k) && streq(scalar(k), name))
			return yaml_document_get_node(y->doc, p->value);
	}
	return NULL;
}

static int warn_unknown(struct yctx *y, yaml_node_t *map, const char *prefix, const char *const *known)
{
	if (map->type != YAML_MAPPING_NODE)
		return yerr(y, map, prefix, "expected a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		bool ok = false;

		if (!k || !scalar(k))
			return yerr(y, k ? k : map, prefix, "keys must be plain strings");
		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(known[i], scalar(k));
		if (!ok)
			warn(y->cfg, "%s:%zu:%zu: unknown key %s.%s (ignored)", y->name, k->start_mark.line + 1,
			     k->start_mark.column + 1, prefix, scalar(k));
	}
	return 0;
}

static int get_bool(struct yctx *y, yaml_node_t *map, const char *name, const char *key, int *ret)
{
	yaml_node_t *v = map_get(y, map, name);
	bool b;

	if (!v)
		return 0;
	if (!scalar(v) || parse_bool(scalar(v), &b) < 0)
		return yerr(y, v, key, "must be true or false");
	*ret = b;
	return 0;
}

/* "gpu" -> "nvidia.com/gpu"; checks the k8s extended-resource name rules (§2: <= 63, DNS). */
static int resource_name(struct yctx *y, yaml_node_t *n, const char *key, char *out, size_t size)
{
	const char *v = scalar(n), *prefix, *last;
	size_t len;

	if (!v || !*v)
		return yerr(y, n, key, "must be a resource name such as nvidia.com/gpu");
	prefix = strchr(v, '/') ? "" : "nvidia.com/";
	/* lengths first: a copy truncated before its '/' has no name part to check */
	len = strlen(prefix) + strlen(v);
	if (len > 63 || len >= size)
		return yerr(y, n, key, "\"%s%.40s...\" is not a valid resource name (%zu characters, at most 63)",
			    prefix, v, len);
	last = strrchr(v, '/');
	last = last ? last + 1 : v;
	if (!*last)
		return yerr(y, n, key, "\"%s\" is not a valid resource name (nothing after the '/')", v);
	for (const char *p = last; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && *p != '-' && *p != '.' && *p != '_' &&
		    !(*p >= 'A' && *p <= 'Z'))
			return yerr(y, n, key, "\"%s%s\" has the invalid character '%c'", prefix, v, *p);
	snprintf(out, size, "%s%s", prefix, v);
	return 0;
}

struct sharing_cfg {
	int rename_by_default, fail_gt1;
	struct replica_rule rules[CONFIG_MAX_RULES];
	size_t n_rules;
	bool present;
};

static int parse_sharing(struct yctx *y, yaml_node_t *m, const char *prefix, struct sharing_cfg *s, bool mps)
{
	static const char *const known[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources", NULL};
	static const char *const rknown[] = {"name", "rename", "replicas", "devices", NULL};
	yaml_node_t *res;
	char key[128];
	int r;

	s->present = true;
	r = warn_unknown(y, m, prefix, known);
	if (r < 0)
		return r;
	snprintf(key, sizeof(key), "%s.renameByDefault", prefix);
	if ((r = get_bool(y, m, "renameByDefault", key, &s->rename_by_default)) < 0)
		return r;
	snprintf(key, sizeof(key), "%s.failRequestsGreaterThanOne", prefix);
	if ((r = get_bool(y, m, "failRequestsGreaterThanOne", key, &s->fail_gt1)) < 0)
		return r;
	res = map_get(y, m, "resources");
	snprintf(key, sizeof(key), "%s.resources", prefix);
	if (!res || res->type != YAML_SEQUENCE_NODE || res->data.sequence.items.start == res->data.sequence.items.top)
		return yerr(y, res ? res : m, key, "a non-empty list of {name, replicas} is required");
	for (yaml_node_item_t *it = res->data.sequence.items.start; it < res->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(y->doc, *it), *v;
		struct replica_rule *rule = &s->rules[s->n_rules];
		char ekey[160], *end;
		unsigned long reps;

		snprintf(ekey, sizeof(ekey), "%s[%zu]", key, (size_t)(it - res->data.sequence.items.start));
		if (!e || e->type != YAML_MAPPING_NODE)
			return yerr(y, e ? e : res, ekey, "expected a mapping {name, replicas}");
		if (s->n_rules >= CONFIG_MAX_RULES)
			return yerr(y, e, ekey, "at most %d sharing resources", CONFIG_MAX_RULES);
		if ((r = warn_unknown(y, e, ekey, rknown)) < 0)
			return r;
		memset(rule, 0, sizeof(*rule));
		v = map_get(y, e, "name");
		if (!v)
			return yerr(y, e, ekey, "name is required");
		if ((r = resource_name(y, v, ekey, rule->name, sizeof(rule->name))) < 0)
			return r;
		v = map_get(y, e, "replicas");
		if (!v || !scalar(v))
			return yerr(y, v ? v : e, ekey, "replicas is required");
		errno = 0;
		reps = strtoul(scalar(v), &end, 10);
		if (errno || *end || end == scalar(v) || reps < 2 || reps > (mps ? MPS_REPLICAS_MAX : REPLICAS_MAX))
			return yerr(y, v, ekey, "replicas must be an integer from 2 to %d, got \"%s\"",
				    mps ? MPS_REPLICAS_MAX : REPLICAS_MAX, scalar(v));
		rule->replicas = (unsigned)reps;
		v = map_get(y, e, "rename");
		if (v && scalar(v) && *scalar(v) &&
		    (r = resource_name(y, v, ekey, rule->rename, sizeof(rule->rename))) < 0)
			return r;
		v = map_get(y, e, "devices");
		if (v && !(scalar(v) && streq(scalar(v), "all")))
			warn(y->cfg, "%s:%zu:%zu: %s.devices: only \"all\" is supported (as upstream); using all",
			     y->name, v->start_mark.line + 1, v->start_mark.column + 1, ekey);
		s->n_rules++;
	}
	return 0;
}

static int apply_document(struct yctx *y, yaml_node_t *root)
{
	static const char *const top_known[] = {"version", "flags", "resources", "sharing", "imex", NULL};
	static const char *const sharing_known[] = {"timeSlicing", "mps", NULL};
	struct sharing_cfg ts = {.rename_by_default = -1, .fail_gt1 = -1};
	struct sharing_cfg mps = {.rename_by_default = -1, .fail_gt1 = -1};
	struct plugin_config *c = y->cfg;
	yaml_node_t *v, *sh;
	int r;

	if (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)
		return 0; /* empty file */
	if (root->type != YAML_MAPPING_NODE)
		return yerr(y, root, "(top)", "expected a mapping with version: v1");
	if ((r = warn_unknown(y, root, "(top)", top_known)) < 0)
		return r;
	v = map_get(y, root, "version");
	if (v && (!scalar(v) || !streq(scalar(v), "v1")))
		return yerr(y, v, "version", "unknown version \"%s\"; only v1 is supported",
			    scalar(v) ? scalar(v) : "");
	if ((v = map_get(y, root, "flags")) && (r = walk_options(y, v, "flags")) < 0)
		return r;
	if ((v = map_get(y, root, "imex")) && (r = walk_options(y, v, "imex")) < 0)
		return r;
	if ((v = map_get(y, root, "resources")))
		warn(c, "%s:%zu:%zu: resources: customizing resource names is not supported (as upstream); ignored",
		     y->name, v->start_mark.line + 1, v->start_mark.column + 1);
	sh = map_get(y, root, "sharing");
	if (!sh)
		return 0;
	if ((r = warn_unknown(y, sh, "sharing", sharing_known)) < 0)
		return r;
	if ((v = map_get(y, sh, "timeSlicing")) && (r = parse_sharing(y, v, "sharing.timeSlicing", &ts, false)) < 0)
		return r;
	if ((v = map_get(y, sh, "mps")) && (r = parse_sharing(y, v, "sharing.mps", &mps, true)) < 0)
		return r;
	if (ts.present && mps.present)
		return yerr(y, sh, "sharing", "timeSlicing and mps are mutually exclusive");
	{
		struct sharing_cfg *s = mps.present ? &mps : &ts;

		if (!s->present)
			return 0;
		c->sharing = mps.present ? SHARING_MPS : SHARING_TIME_SLICING;
		c->rename_by_default = s->rename_by_default == 1;
		/* nil failRequestsGreaterThanOne: false for time-slicing, true for MPS (NewConfig) */
		c->fail_requests_greater_than_one = s->fail_gt1 >= 0 ? s->fail_gt1 == 1 : mps.present;
		memcpy(c->rules, s->rules, sizeof(c->rules));
		c->n_rules = s->n_rules;
		for (size_t i = 0; i < c->n_rules; i++) {
			struct replica_rule *rule = &c->rules[i];
			size_t l = strlen(rule->name); /* <= 63: checked by resource_name() */

			if (!rule->rename[0] && c->rename_by_default && l + sizeof(".shared") <= sizeof(rule->rename)) {
				memcpy(rule->rename, rule->name, l);
				memcpy(rule->rename + l, ".shared", sizeof(".shared"));
			}
		}
	}
	return 0;
}

int config_apply_file_text(struct plugin_config *cfg, const char *text, size_t len, const char *name, struct gerr *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct yctx y = {&doc, name, cfg, err};
	int r;

	if (!yaml_parser_initialize(&parser))
		return gerr_set(err, ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		r = gerr_set(err, EINVAL, "%s:%zu:%zu: %s%s%s", name, parser.problem_mark.line + 1,
			     parser.problem_mark.column + 1, parser.problem ? parser.problem : "syntax error",
			     parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		return r;
	}
	root = yaml_document_get_root_node(&doc);
	r = root ? apply_document(&y, root) : 0;
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}

/* ---- layers ---------------------------------------------------------------------------------- */

static const char *env_of(const struct opt *o, const char **name)
{
	for (size_t k = 0; k < ELEMENTSOF(o->env) && o->env[k]; k++) {
		const char *v = getenv(o->env[k]);

		if (v && *v) {
			*name = o->env[k];
			return v;
		}
	}
	return NULL;
}

static int validate_combination(const struct plugin_config *c, struct gerr *err)
{
	if ((c->device_list_strategy & DLS_CDI_ANY) && streq(c->device_discovery_strategy, "tegra"))
		return gerr_set(err, EINVAL,
				"CDI --device-list-strategy options are only supported on NVML-based systems; "
				"use envvar or volume-mounts with --device-discovery-strategy=tegra");
	if (c->sharing == SHARING_MPS && streq(c->mig_strategy, "mixed"))
		return gerr_set(err, EINVAL, "MPS sharing is not supported with --mig-strategy=mixed");
	if (c->sharing == SHARING_MPS && !c->mps_root[0])
		return gerr_set(err, EINVAL, "using MPS requires --mps-root to be specified (e.g. /run/nvidia/mps)");
	return 0;
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
		r = opt_set(c, &opts[i], opts[i].def, "default", err);
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
		r = opt_set(c, &opts[i], v, src, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; args && i < ELEMENTSOF(opts); i++) {
		if (!args->val[i])
			continue;
		snprintf(src, sizeof(src), "--%s", opts[i].flag);
		r = opt_set(c, &opts[i], args->val[i], src, err);
		if (r < 0)
			return r;
	}
	r = validate_combination(c, err);
	if (r < 0)
		return r;
	*ret = *c;
	return 0;
}

void config_resource_options(const struct plugin_config *cfg, struct resource_options *o)
{
	memset(o, 0, sizeof(*o));
	o->mig_strategy = MIG_STRATEGY_NONE; /* the words were validated at load */
	(void)mig_strategy_from_name(cfg->mig_strategy, &o->mig_strategy);
	o->sharing = cfg->sharing;
	o->replica_policy = REPLICA_DISTRIBUTED;
	(void)replica_policy_from_name(cfg->shared_devices_allocation_policy, &o->replica_policy);
	o->rename_by_default = cfg->rename_by_default;
	o->fail_requests_greater_than_one = cfg->fail_requests_greater_than_one;
	o->rules = cfg->rules;
	o->n_rules = cfg->n_rules;
}

const char *config_dev_root(const struct plugin_config *cfg)
{
	return cfg->dev_root[0] ? cfg->dev_root : cfg->driver_root;
}

void config_print_help(FILE *f)
{
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		const struct opt *o = &opts[i];
		char left[96];

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

		switch (p->type) {
		case T_BOOL:
			v = json_boolean(*(const bool *)f);
			break;
		case T_DLS: {
			v = json_array();
			for (size_t k = 0; k < ELEMENTSOF(dls_names); k++)
				if (*(const unsigned *)f & (1u << k))
					json_array_append_new(v, json_string(dls_names[k]));
			break;
		}
		case T_SECONDS:
			v = json_integer(*(const unsigned *)f);
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
