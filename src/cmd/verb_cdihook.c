/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet cdi-hook ACTION [OPTIONS]: the OCI hook named by CDI specs, with nvidia-cdi-hook's command
 * line (docs/reference/cdi-hook.md), so a spec may name either binary. Installed or linked as
 * "nvidia-cdi-hook", gpulet answers to that name too (src/main.c).
 *
 * The runtime shows the hook's stderr when it fails: every failure is one line there, saying
 * what failed, where, and what to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdihook/cdihook.h"
#include "cmd/cmd.h"
#include "cmd/options.h"
#include "util/fileio.h"

#define MAX_ARGS 512 /* --folder / --link given more often than this is not a spec we wrote */

struct hook_cli {
	struct cmd_common c;
	const char *container_spec;
	const char *ldconfig_path, *host_driver_version, *host_cuda_version, *compat_root;
	const char *driver_root, *mode;
	struct optspec_list list; /* --folder, --link, --gpu-id, --path */
	unsigned timeout_s;       /* GPULET_CDI_HOOK_LDCONFIG_TIMEOUT; 0: the default bound */
	bool debug, quiet;        /* nvidia-cdi-hook's global flags: logging only */
};

static int set_ldconfig_path(void *opts, const char *value, struct gerr *err)
{
	((struct hook_cli *)opts)->ldconfig_path = value;
	return cdihook_check_ldconfig_path(value, err);
}

#define HOOK_F(field) offsetof(struct hook_cli, field)
#define OPT_CONTAINER_SPEC                                                                                         \
	CMD_ROW("container-spec", 0, OPT_ARGV, "FILE",                                                             \
		"read the OCI state from FILE instead of stdin (empty or -: stdin); for testing the hook by hand", \
		.off = HOOK_F(container_spec))

static const struct optspec ldcache_opts[] = {
    CMD_ROW("folder", 0, OPT_LIST, "DIR", "a container dir holding injected libraries (repeatable)",
	    .off = HOOK_F(list), .max = MAX_ARGS),
    CMD_ROW("ldconfig-path", 0, OPT_CALL, "PATH",
	    "the host's static ldconfig, absolute (@ prefix allowed; PATH.real is preferred when it exists)",
	    .def = "/sbin/ldconfig", .call = set_ldconfig_path),
    /* gpulet: it can only shorten the bound (tests); whole seconds */
    CMD_ROW("ldconfig-timeout", 0, OPT_UINT, "SECONDS", "seconds ldconfig may run (at most the default, 30)",
	    .env = {"GPULET_CDI_HOOK_LDCONFIG_TIMEOUT"}, .env_only = true, .off = HOOK_F(timeout_s), .min = 1,
	    .max = CDIHOOK_LDCONFIG_TIMEOUT_S),
    OPT_CONTAINER_SPEC,
    {0},
};
static const struct optspec symlinks_opts[] = {
    CMD_ROW("link", 0, OPT_LIST, "TARGET::LINK", "create LINK -> TARGET in the container (repeatable)",
	    .off = HOOK_F(list), .max = MAX_ARGS),
    OPT_CONTAINER_SPEC,
    {0},
};
static const struct optspec compat_opts[] = {
    CMD_ROW("host-driver-version", 0, OPT_ARGV, "VERSION",
	    "the host driver's version; without it the hook does nothing", .off = HOOK_F(host_driver_version)),
    CMD_ROW("host-cuda-version", 0, OPT_ARGV, "VERSION", "accepted for compatibility; not used",
	    .off = HOOK_F(host_cuda_version)),
    CMD_ROW("cuda-compat-container-root", 0, OPT_ARGV, "DIR", "where the image keeps the CUDA compat libraries",
	    .def = "/usr/local/cuda/compat", .off = HOOK_F(compat_root)),
    OPT_CONTAINER_SPEC,
    {0},
};
static const struct optspec plain_opts[] = {
    OPT_CONTAINER_SPEC,
    {0},
};
/* apply-cuda-memory-limits (cmd/nvidia-cdi-hook/apply-cuda-memory-limits, v1.20.2) */
static const struct optspec memlimits_opts[] = {
    CMD_ROW("driver-root", 0, OPT_PATH, "DIR", "the host dir the driver (libnvidia-ml.so.1) is installed under",
	    .def = "/", .off = HOOK_F(driver_root)),
    CMD_ROW("gpu-id", 0, OPT_LIST, "UUID", "a GPU whose memory the container may use (repeatable; at least one)",
	    .off = HOOK_F(list), .max = MAX_ARGS),
    OPT_CONTAINER_SPEC,
    {0},
};
/* chmod (cmd/nvidia-cdi-hook/chmod, deprecated upstream and off in generated specs unless enabled) */
static const struct optspec chmod_opts[] = {
    CMD_ROW("mode", 0, OPT_ARGV, "OCTAL", "the permission bits to set (e.g. 755)", .off = HOOK_F(mode)),
    CMD_ROW("path", 0, OPT_LIST, "PATH", "a path in the container (repeatable)", .off = HOOK_F(list), .max = MAX_ARGS),
    OPT_CONTAINER_SPEC,
    {0},
};

enum hook_action {
	HOOK_LDCACHE,
	HOOK_SYMLINKS,
	HOOK_COMPAT,
	HOOK_DEVNODES,
	HOOK_MEMLIMITS,
	HOOK_CHMOD,
	HOOK_APPPROFILE,
	HOOK_NOOP,
};

/*
 * nvidia-cdi-hook's own flags, before the action (cmd/nvidia-cdi-hook/main.go; docs/reference/cdi-hook.md):
 * logging only, and the hook writes nothing but its errors.
 */
static const struct optspec global_opts[] = {
    CMD_ROW("debug", 'd', OPT_BOOL, NULL, "accepted: debug logging (the hook logs only its errors)",
	    .env = {"NVIDIA_CTK_DEBUG", "NVIDIA_CDI_DEBUG"}, .off = HOOK_F(debug)),
    CMD_ROW("quiet", 0, OPT_BOOL, NULL, "accepted: only errors (the hook logs only its errors)",
	    .env = {"NVIDIA_CTK_QUIET", "NVIDIA_CDI_QUIET"}, .off = HOOK_F(quiet)),
    {0},
};

static void hook_help(FILE *f);

static const struct hook_verb {
	const char *name;
	enum hook_action action;
	const char *summary; /* NULL: not listed (noop) */
	struct cmd_verb verb;
} hook_verbs[] = {
    {"update-ldcache", HOOK_LDCACHE, "add the injected library dirs to the container's ld.so.cache",
     CMD_VERB("cdi-hook update-ldcache", "[OPTIONS]", ldcache_opts,
	      "gpulet cdi-hook update-ldcache --folder /usr/lib64 < state.json",
	      .about = "Add the folders to the container's ld.so.conf.d and rebuild its ld.so.cache with the host's\n"
		       "static ldconfig, run in new mount and pid namespaces pivoted into the container's rootfs,\n"
		       "with /proc covered, no inherited fds and an empty environment; killed after 30 s\n"
		       "(GPULET_CDI_HOOK_LDCONFIG_TIMEOUT=SECONDS shortens that).")},
    {"create-symlinks", HOOK_SYMLINKS, "create symlinks in the container",
     CMD_VERB("cdi-hook create-symlinks", "[OPTIONS]", symlinks_opts,
	      "gpulet cdi-hook create-symlinks --link libcuda.so.1::/usr/lib64/libcuda.so < state.json",
	      .about = "Create symlinks inside the container's rootfs (an existing one to the same target is kept).")},
    {"enable-cuda-compat", HOOK_COMPAT, "use the image's CUDA compat libraries when the host driver is older",
     CMD_VERB("cdi-hook enable-cuda-compat", "[OPTIONS]", compat_opts,
	      "gpulet cdi-hook enable-cuda-compat --host-driver-version=535.261.03 < state.json",
	      .about = "When the image's CUDA compat libcuda is newer (major version) than the host driver, put\n"
		       "its dir first in ld.so.conf.d (00-compat-gpulet.conf). Runs before update-ldcache.")},
    {"disable-device-node-modification", HOOK_DEVNODES, "keep the driver from creating device nodes in the container",
     CMD_VERB("cdi-hook disable-device-node-modification", "[OPTIONS]", plain_opts,
	      "gpulet cdi-hook disable-device-node-modification < state.json",
	      .about = "When the driver lets user space create device nodes (ModifyDeviceFiles: 1), mount a\n"
		       "read-only copy of /proc/driver/nvidia/params saying 0 in the container.")},
    {"apply-cuda-memory-limits", HOOK_MEMLIMITS, "set the GPU memory limits the container's env asks for",
     CMD_VERB("cdi-hook apply-cuda-memory-limits", "[OPTIONS]", memlimits_opts,
	      "gpulet cdi-hook apply-cuda-memory-limits --driver-root / --gpu-id GPU-... < state.json",
	      .about =
		  "A createRuntime hook: when the container's env has NVIDIA_GPU_MEMORY_REQUEST (soft) or\n"
		  "NVIDIA_GPU_MEMORY_LIMIT (hard), in MiB, set those limits on each --gpu-id for the container's\n"
		  "cgroup v2 through NVML (nvmlDeviceSetMemoryLimits_v1). Neither set: nothing to do. The static\n"
		  "gpulet-cdi-hook runs the NVML part by the gpulet installed beside it, with an empty environment.")},
    {"chmod", HOOK_CHMOD, "set the permission bits of paths in the container",
     CMD_VERB("cdi-hook chmod", "[OPTIONS]", chmod_opts,
	      "gpulet cdi-hook chmod --mode 755 --path /dev/dri < state.json",
	      .about = "Set the permission bits of paths in the container (links followed inside the rootfs;\n"
		       "a missing path is skipped; a permission error is ignored, as nvidia-cdi-hook does).")},
    {"update-application-profile", HOOK_APPPROFILE, "restrict EGL and Vulkan to the container's GPUs",
     CMD_VERB("cdi-hook update-application-profile", "[OPTIONS]", plain_opts,
	      "gpulet cdi-hook update-application-profile < state.json",
	      .about = "Restrict EGL/Vulkan to the container's GPUs: the minors of its /dev/nvidia<N> nodes become\n"
		       "EGLVisibleDGPUDevices in /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf.")},
    {"noop", HOOK_NOOP, NULL, CMD_VERB("cdi-hook noop", "", plain_opts, "gpulet cdi-hook noop")},
};

static const struct cmd_menu hook_menu =
    CMD_MENU("gpulet cdi-hook", "hook", hook_verbs, hook_help, .summary_off = offsetof(struct hook_verb, summary));

static void actions_help(FILE *f)
{
	fprintf(f, "\nActions (the OCI hooks that CDI specs name, createContainer but for apply-cuda-memory-limits\n"
		   "(createRuntime); each reads the OCI state on stdin and acts only inside the container's rootfs,\n"
		   "apply-cuda-memory-limits on its cgroup):\n");
	cmd_menu_list(&hook_menu, f);
	fprintf(
	    f,
	    "\nAn unknown ACTION fails the container's start (exit 1, one line naming it): nvidia-cdi-hook lets it\n"
	    "pass with a warning, and a GPU memory limit would then be lost unseen (docs/reference/cdi-hook.md §2).\n"
	    "Run 'gpulet cdi-hook ACTION --help' for an action's options.\n");
}

static const struct cmd_verb hook_verb =
    CMD_VERB("cdi-hook", "[--debug] [--quiet] ACTION [OPTIONS]   (or: nvidia-cdi-hook ACTION ...)", global_opts,
	     "gpulet cdi-hook update-ldcache --folder /usr/lib/x86_64-linux-gnu < state.json", .notes = actions_help,
	     .stop_at_operand = true);

static void hook_help(FILE *f)
{
	cmd_help(&hook_verb, f);
}

/* The OCI state (stdin, or --container-spec FILE): its text and what it says. */
static int read_state(const char *spec, char **ret_text, size_t *ret_len, struct oci_state *ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	const char *name = spec && *spec && !streq(spec, "-") ? spec : "stdin";
	size_t len;
	int r;

	if (streq(name, "stdin"))
		r = read_fd(STDIN_FILENO, name, OCI_STATE_MAX, &text, &len, err);
	else
		r = read_file(spec, OCI_STATE_MAX, &text, &len, err);
	if (r < 0)
		return r;
	r = oci_state_parse(name, text, len, ret, err);
	if (r < 0)
		return r;
	*ret_text = TAKE_PTR(text);
	*ret_len = len;
	return 0;
}

/* The rootfs of the container the OCI state names, opened O_PATH. */
static int open_rootfs(const struct oci_state *st, char **ret_path, struct gerr *err)
{
	_cleanup_free_ char *rootfs = NULL;
	int r, fd;

	r = oci_state_rootfs(st, &rootfs, err);
	if (r < 0)
		return r;
	fd = cdihook_open_rootfs(rootfs, err);
	if (fd < 0)
		return fd;
	*ret_path = TAKE_PTR(rootfs);
	return fd;
}

typedef int (*apply_fn)(const char *driver_root, const char *const *gpus, size_t n, const struct cdihook_memlimits *m,
			struct gerr *err);

/*
 * apply-cuda-memory-limits: nothing to do unless the container asks; then NVML here (gpulet), or the
 * same action run by the gpulet beside the static hook (apply NULL), with the state it read.
 */
static int memory_limits(struct hook_cli *cli, const struct oci_state *st, const char *text, size_t len, apply_fn apply,
			 struct gerr *err)
{
	_cleanup_(cdihook_memlimits_clear) struct cdihook_memlimits m = {0};
	_cleanup_free_ const char **args = NULL;
	size_t n = 0;
	int r;

	if (cli->list.n == 0)
		return gerr_set(err, EINVAL, "at least one --gpu-id must be specified");
	for (size_t i = 0; i < cli->list.n; i++)
		if (!cli->list.v[i][strspn(cli->list.v[i], " \t")])
			return gerr_set(err, EINVAL, "--gpu-id must not be empty");
	r = cdihook_memlimits_read(st, NULL, &m, err);
	if (r < 0 || !m.wanted)
		return r;
	if (apply)
		return apply(cli->driver_root, cli->list.v, cli->list.n, &m, err);
	args = calloc(3 + 2 * cli->list.n, sizeof(*args));
	if (!args)
		return gerr_set(err, ENOMEM, "out of memory");
	args[n++] = "apply-cuda-memory-limits";
	args[n++] = "--driver-root";
	args[n++] = cli->driver_root;
	for (size_t i = 0; i < cli->list.n; i++) {
		args[n++] = "--gpu-id";
		args[n++] = cli->list.v[i];
	}
	return cdihook_exec_dynamic(args, n, text, len, err);
}

static int run_action(const struct hook_verb *hv, struct hook_cli *cli, apply_fn apply, struct gerr *err)
{
	_cleanup_(oci_state_clear) struct oci_state st = {0};
	_cleanup_free_ char *rootfs = NULL, *text = NULL;
	_cleanup_close_ int root_fd = -1;
	struct cdihook_ldcache_options lo = {cli->ldconfig_path, cli->list.v, cli->list.n, NULL, cli->timeout_s};
	mode_t mode = 0;
	size_t len = 0;
	int r = cdihook_check_loader_env(err);

	if (r < 0)
		return r;
	if (hv->action == HOOK_NOOP || (hv->action == HOOK_COMPAT && !cli->host_driver_version))
		return 0;
	if (hv->action == HOOK_CHMOD && (r = cdihook_parse_mode(cli->mode, &mode, err)) < 0)
		return r;
	r = read_state(cli->container_spec, &text, &len, &st, err);
	if (r < 0)
		return r;
	if (hv->action == HOOK_MEMLIMITS) /* createRuntime: the container's cgroup, not its rootfs */
		return memory_limits(cli, &st, text, len, apply, err);
	root_fd = open_rootfs(&st, &rootfs, err);
	if (root_fd < 0)
		return root_fd;
	switch (hv->action) {
	case HOOK_LDCACHE:
		lo.rootfs = rootfs;
		r = cdihook_update_ldcache(root_fd, &lo, err);
		break;
	case HOOK_SYMLINKS:
		r = cdihook_create_symlinks(root_fd, cli->list.v, cli->list.n, err);
		break;
	case HOOK_COMPAT:
		r = cdihook_enable_cuda_compat(root_fd, cli->host_driver_version, cli->compat_root, err);
		break;
	case HOOK_DEVNODES:
		r = cdihook_disable_devnode_mod(root_fd, NULL, err);
		break;
	case HOOK_CHMOD:
		r = cdihook_chmod(root_fd, cli->list.v, cli->list.n, mode, err);
		break;
	case HOOK_APPPROFILE:
		r = cdihook_update_app_profile(root_fd, err);
		break;
	default:
		r = 0;
	}
	if (r < 0) {
		char q[GERR_QUOTE_MAX];

		gerr_prefix(err, "rootfs %s: ", gerr_quote(rootfs, q));
	}
	return r;
}

/*
 * An action this hook does not know fails the container's start, where nvidia-cdi-hook warns and
 * exits 0 (commands.go): a spec naming apply-cuda-memory-limits to a hook without it would start the
 * container without its GPU memory limit and say nothing (docs/reference/cdi-hook.md §2).
 */
static bool known_action(int argc, char **argv)
{
	if (argc < 1 || streq(argv[0], "--help") || streq(argv[0], "-h") || streq(argv[0], "help"))
		return true; /* the menu's own words */
	for (size_t i = 0; i < ELEMENTSOF(hook_verbs); i++)
		if (streq(argv[0], hook_verbs[i].name))
			return true;
	return false;
}

/* The one line for an unknown or missing action: what, why the start fails, the actions known (the table's). */
static void refuse_action(const char *action)
{
	char q[GERR_QUOTE_MAX];

	if (action)
		fprintf(stderr, "gpulet cdi-hook: unknown action '%s'", gerr_quote(action, q));
	else
		fprintf(stderr, "gpulet cdi-hook: no action given");
	fprintf(stderr, "; refusing to start the container without what the spec asked for. This hook knows:");
	for (size_t i = 0; i + 1 < ELEMENTSOF(hook_verbs); i++) /* noop last: not an action a spec names */
		fprintf(stderr, "%s %s", i ? "," : "", hook_verbs[i].name);
	fprintf(stderr, ". Regenerate the spec with 'gpulet cdi generate' (or the plugin), or name a hook binary that "
			"knows the action (--nvidia-cdi-hook-path)\n");
}

int cmd_cdihook_with(int argc, char **argv, apply_fn apply)
{
	const struct hook_verb *hv;
	struct hook_cli cli = {0};
	struct gerr err = {0};
	int at, r;

	/* nvidia-cdi-hook's own flags, up to the action */
	r = cmd_parse(&hook_verb, argc, argv, &cli);
	if (r != CMD_CONTINUE)
		return r;
	at = optind;
	/* the command tree (completion, man pages) reads the menu itself: nothing to refuse there */
	if (!cmd_describing(NULL) && (at >= argc || !known_action(argc - at, argv + at))) {
		refuse_action(at < argc ? argv[at] : NULL);
		return 1;
	}
	hv = cmd_menu_pick(&hook_menu, argc - at, argv + at, &r);
	if (!hv)
		return r;
	r = cmd_parse(&hv->verb, argc - at, argv + at, &cli);
	if (r != CMD_CONTINUE)
		return r;
	if (run_action(hv, &cli, apply, &err) < 0) {
		fprintf(stderr, "gpulet cdi-hook %s: %s\n", hv->name, err.msg);
		return 1;
	}
	return 0;
}

int cmd_cdihook_static(int argc, char **argv)
{
	return cmd_cdihook_with(argc, argv, NULL);
}
