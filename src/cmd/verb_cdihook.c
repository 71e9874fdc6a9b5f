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
	struct optspec_list list; /* --folder, --link */
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

enum hook_action { HOOK_LDCACHE, HOOK_SYMLINKS, HOOK_COMPAT, HOOK_DEVNODES, HOOK_NOOP };

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
    {"noop", HOOK_NOOP, NULL, CMD_VERB("cdi-hook noop", "", plain_opts, "gpulet cdi-hook noop")},
};

static const struct cmd_menu hook_menu = CMD_MENU("gpulet cdi-hook", "hook", hook_verbs, hook_help, .unknown_ok = true,
						  .summary_off = offsetof(struct hook_verb, summary));

static void actions_help(FILE *f)
{
	fprintf(f,
		"\nActions (the OCI createContainer hook that CDI specs name; each reads the OCI state on stdin and\n"
		"acts only inside the container's rootfs):\n");
	cmd_menu_list(&hook_menu, f);
	fprintf(f, "\nAn unknown ACTION is a warning and exit 0, as nvidia-cdi-hook (a newer spec still starts).\n"
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

/* The rootfs of the container the OCI state (stdin or --container-spec) names, opened O_PATH. */
static int open_rootfs(const char *spec, char **ret_path, struct gerr *err)
{
	_cleanup_(oci_state_clear) struct oci_state st = {0};
	_cleanup_free_ char *text = NULL, *rootfs = NULL;
	const char *name = spec && *spec && !streq(spec, "-") ? spec : "stdin";
	size_t len;
	int r, fd;

	if (streq(name, "stdin"))
		r = read_fd(STDIN_FILENO, name, OCI_STATE_MAX, &text, &len, err);
	else
		r = read_file(spec, OCI_STATE_MAX, &text, &len, err);
	if (r < 0)
		return r;
	r = oci_state_parse(name, text, len, &st, err);
	if (r < 0)
		return r;
	r = oci_state_rootfs(&st, &rootfs, err);
	if (r < 0)
		return r;
	fd = cdihook_open_rootfs(rootfs, err);
	if (fd < 0)
		return fd;
	*ret_path = TAKE_PTR(rootfs);
	return fd;
}

static int run_action(const struct hook_verb *hv, struct hook_cli *cli, struct gerr *err)
{
	_cleanup_free_ char *rootfs = NULL;
	_cleanup_close_ int root_fd = -1;
	struct cdihook_ldcache_options lo = {cli->ldconfig_path, cli->list.v, cli->list.n, NULL, cli->timeout_s};
	int r = cdihook_check_loader_env(err);

	if (r < 0)
		return r;
	if (hv->action == HOOK_NOOP || (hv->action == HOOK_COMPAT && !cli->host_driver_version))
		return 0;
	root_fd = open_rootfs(cli->container_spec, &rootfs, err);
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
	default:
		r = 0;
	}
	if (r < 0) {
		char q[GERR_QUOTE_MAX];

		gerr_prefix(err, "rootfs %s: ", gerr_quote(rootfs, q));
	}
	return r;
}

int cmd_cdihook(int argc, char **argv)
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
	hv = cmd_menu_pick(&hook_menu, argc - at, argv + at, &r);
	if (!hv)
		return r;
	r = cmd_parse(&hv->verb, argc - at, argv + at, &cli);
	if (r != CMD_CONTINUE)
		return r;
	if (run_action(hv, &cli, &err) < 0) {
		fprintf(stderr, "gpulet cdi-hook %s: %s\n", hv->name, err.msg);
		return 1;
	}
	return 0;
}
