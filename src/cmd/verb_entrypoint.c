/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet entrypoint: the image's entrypoint, so that manifests written for NVIDIA's images run
 * gpulet's image unchanged (docs/reference/operator.md). Two ways in, by the name it was run under
 * (config-manager, the Operator's third name, is a verb of its own: cmd/verb_config_manager.c):
 *
 *   gpulet entrypoint [ARGS]   the image's ENTRYPOINT. A command (`devices --json`) runs as `gpulet
 *                              COMMAND`. No command: the operand is chosen from the environment
 *                              (operands[]: the GPU Operator's dcgm-exporter container has no command,
 *                              NVIDIA's dcgm-exporter chart passes only flags), else gpulet's usage.
 *   /bin/sh, /bin/bash         not a shell: exactly `-c /bin/entrypoint.sh`, the GPU Operator's
 *                              device-plugin container, whose script gpulet reads and does itself
 *                              (plugin/operator.h); anything else is refused.
 *
 * The image has no shell and nothing here runs one: every way ends in an exec of gpulet itself.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/options.h"
#include "plugin/operator.h"
#include "util/fileio.h"

extern char **environ;

#define WAIT_S 5 /* the Operator's script: sleep 5 between looks at driver-ready */

/*
 * Containers that start the image without a command, known by env vars only their upstream program
 * reads; the program is one of the upstream names gpulet answers to (src/main.c programs[]).
 */
static const struct {
	const char *prefix;  /* an env var whose name starts with it */
	const char *program; /* run as */
	const char *whose;   /* the manifests that start it so */
} operands[] = {
    /* gpu-operator assets/state-dcgm-exporter/0800_daemonset.yaml (no command, DCGM_EXPORTER_* env);
     * dcgm-exporter deployment/templates/daemonset.yaml (args only, DCGM_EXPORTER_* env) */
    {"DCGM_", "dcgm-exporter", "the GPU Operator's nvidia-dcgm-exporter and NVIDIA's dcgm-exporter chart"},
};

/*
 * The GPU Operator's device-plugin container as the Operator lays it out (assets/state-device-plugin/
 * 0500_daemonset.yaml): the host's / at /host, the CDI spec dir at /var/run/cdi. gpulet reads the host
 * below --root and writes specs to its CDI dir; set only where the pod's env does not say otherwise.
 */
static const struct {
	const char *name, *value;
} operator_layout[] = {
    {"GPULET_ROOT", "/host"},
    {"GPULET_CDI_SPEC_DIR", "/var/run/cdi"},
};

/* no options of its own: what follows is the command's or the operand's */
static const struct optspec no_opts[] = {{0}};

static const struct cmd_verb entrypoint_verb = CMD_VERB(
    "entrypoint", "[COMMAND [ARGS...] | FLAGS...]", no_opts,
    "podman run --rm -e DCGM_EXPORTER_LISTEN=:9400 IMAGE -f FILE",
    .about =
	"The image's entrypoint. With a COMMAND, run `gpulet COMMAND ARGS`. Without one, run the upstream program\n"
	"whose environment the container has (DCGM_* variables: dcgm-exporter, i.e. gpulet exporter) with the\n"
	"FLAGS; with neither, print gpulet's usage. As /bin/sh or /bin/bash it answers only the GPU Operator's\n"
	"device-plugin container (`-c /bin/entrypoint.sh`): it checks the script is the Operator's, waits for\n"
	"/run/nvidia/validations/driver-ready, exports its variables, sets GDRCOPY_ENABLED, GDS_ENABLED and\n"
	"MOFED_ENABLED for loaded gdrdrv and nvidia_fs modules when the script asks, and runs\n"
	"nvidia-device-plugin; there is no shell.",
    .footer = "Exit status: the program's it runs; 1 when it cannot run it, 2 for a form it does not know.",
    .operands = true);

/*
 * The link named argv0 beside self (the image's /usr/bin/nvidia-device-plugin) when it is this very
 * file, else self: exec'd through the link, the kernel's comm is the name too, which config-manager
 * checks besides the command line before it signals (docs/reference/config-manager.md §5).
 */
static const char *self_as(const char *self, const char *argv0, char *buf, size_t size)
{
	const char *slash = strrchr(self, '/');
	struct stat a, b;
	int n;

	if (!slash || strchr(argv0, '/'))
		return self;
	n = snprintf(buf, size, "%.*s/%s", (int)(slash - self), self, argv0);
	if (n < 0 || (size_t)n >= size || stat(buf, &a) < 0 || stat(self, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return self;
	return buf;
}

/* Run gpulet itself (the file this process runs) as argv0 with args (NULL-terminated); returns only on failure. */
static int exec_self(const char *argv0, char **args)
{
	char self[PATH_MAX], link[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t k = 0;
	char **v;

	while (args && args[k])
		k++;
	if (n <= 0 || !(v = calloc(k + 2, sizeof(*v)))) {
		fprintf(stderr, "gpulet entrypoint: cannot find its own executable: %s\n",
			strerror(n < 0 ? errno : ENOMEM));
		return 1;
	}
	self[n] = '\0';
	v[0] = (char *)argv0;
	for (size_t i = 0; i < k; i++)
		v[i + 1] = args[i];
	fflush(NULL);
	execv(self_as(self, argv0, link, sizeof(link)), v);
	fprintf(stderr, "gpulet entrypoint: cannot run %s as %s: %s\n", self, argv0, strerror(errno));
	free(v);
	return 1;
}

/* -- the image's entrypoint -------------------------------------------------------------------- */

/* The row of operands[] the environment names, -1 for none; *ret_var the variable that names it. */
static int operand_of_env(const char **ret_var)
{
	int found = -1;

	for (char **e = environ; e && *e; e++)
		for (size_t i = 0; i < ELEMENTSOF(operands); i++)
			if (!strncmp(*e, operands[i].prefix, strlen(operands[i].prefix)) && found < 0) {
				found = (int)i;
				*ret_var = *e;
			}
	return found;
}

static int run_image(int argc, char **argv)
{
	const char *var = NULL;
	int op;

	/* a command: `podman run IMAGE devices --json` */
	if (argc > 1 && argv[1][0] != '-')
		return exec_self("gpulet", argv + 1);
	op = operand_of_env(&var);
	if (op >= 0) {
		fprintf(stderr, "gpulet entrypoint: %.*s is set: running %s (%s)\n", (int)strcspn(var, "="), var,
			operands[op].program, operands[op].whose);
		return exec_self(operands[op].program, argv + 1);
	}
	if (argc == 1) {
		static char *help[] = {"--help", NULL};

		return exec_self("gpulet", help);
	}
	if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		cmd_help(&entrypoint_verb, stdout);
		return 0;
	}
	return cmd_usage_error(&entrypoint_verb,
			       "'%s' without a command, and no environment of a program gpulet stands in for (%s*); "
			       "give a command: gpulet --help lists them",
			       argv[1], operands[0].prefix);
}

/* -- /bin/sh -c /bin/entrypoint.sh ------------------------------------------------------------- */

/* Wait for the driver-ready file as the script's `until [ -f F ]` loop; false when a stop signal came. */
static bool wait_driver_ready(void)
{
	sigset_t stop, old;
	struct timespec t = {.tv_sec = WAIT_S};
	struct stat st;
	bool ok = true;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, &old);
	while (stat(OPERATOR_DRIVER_READY, &st) < 0 || !S_ISREG(st.st_mode)) {
		printf("waiting for the driver validations to be ready...\n");
		fflush(stdout);
		if (sigtimedwait(&stop, NULL, &t) > 0) {
			ok = false;
			break;
		}
	}
	/* the plugin gets the mask this process had: nothing blocked by us */
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ok;
}

/* `set -o allexport; cat F; . F`: print the file, export its variables. */
static int export_driver_ready(void)
{
	_cleanup_free_ char *text = NULL;
	struct operator_ready r = {{NULL}};
	struct gerr err = {0};
	size_t len;

	if (read_file(OPERATOR_DRIVER_READY, OPERATOR_READY_MAX, &text, &len, &err) < 0 ||
	    operator_ready_parse(text, len, OPERATOR_DRIVER_READY, &r, &err) < 0) {
		fprintf(stderr, "gpulet entrypoint: %s\n", err.msg);
		return -1;
	}
	fputs(text, stdout);
	for (size_t i = 0; i < OPERATOR_READY_VARS; i++)
		if (r.value[i] && setenv(operator_ready_names[i], r.value[i], 1) < 0) {
			operator_ready_clear(&r);
			return -1;
		}
	operator_ready_clear(&r);
	return 0;
}

/* The module loop: GDRCOPY_ENABLED, GDS_ENABLED, MOFED_ENABLED=true for loaded modules, unless set. */
static int module_flags(unsigned wanted)
{
	_cleanup_free_ char *mods = NULL;
	struct gerr err = {0};
	unsigned loaded;
	bool said = false;
	int r;

	/* a kernel without module support has no /proc/modules: lsmod fails, the script's grep finds nothing */
	r = read_file("/proc/modules", 4 << 20, &mods, NULL, &err);
	fflush(stdout); /* what the script printed so far comes first */
	if (r == -ENOENT)
		fprintf(stderr, "gpulet entrypoint: %s: no loadable modules, no feature flags from them\n", err.msg);
	else if (r < 0) {
		fprintf(stderr, "gpulet entrypoint: %s (lsmod reads it)\n", err.msg);
		return -1;
	}
	loaded = operator_modules_loaded(mods, wanted);
	for (size_t i = 0; i < operator_n_modules; i++)
		for (size_t k = 0; (loaded & (1u << i)) && k < ELEMENTSOF(operator_modules[i].vars); k++) {
			const char *var = operator_modules[i].vars[k], *now = var ? getenv(var) : NULL;

			if (!var || (now && *now))
				continue;
			if (!said)
				printf("Enabling nvidia-device-plugin feature flags...\n");
			said = true;
			printf("%s=true\n", var);
			if (setenv(var, "true", 1) < 0)
				return -1;
		}
	return 0;
}

static int run_operator_plugin(void)
{
	_cleanup_free_ char *text = NULL;
	static char *none[] = {NULL};
	const char *host_root = getenv("HOST_ROOT");
	struct operator_script s;
	struct gerr err = {0};
	size_t len;

	/*
	 * hostPaths.rootFS: the Operator mounts that host dir at /host and the validator names host paths below
	 * it, which gpulet (reading host path P at /host/P) cannot map back (controllers/object_controls.go
	 * transformHostRootVolume; docs/reference/operator.md §4)
	 */
	if (host_root && *host_root && !streq(host_root, "/")) {
		fprintf(stderr,
			"gpulet entrypoint: HOST_ROOT=%s: the ClusterPolicy's hostPaths.rootFS is not supported yet "
			"(gpulet reads the host's / at /host); unset it\n",
			host_root);
		return 1;
	}
	if (read_file(OPERATOR_SCRIPT, OPERATOR_SCRIPT_MAX, &text, &len, &err) < 0 ||
	    operator_script_check(text, len, OPERATOR_SCRIPT, &s, &err) < 0) {
		fprintf(stderr,
			"gpulet entrypoint: %s\ngpulet's image has no shell: it runs %s only when it is the GPU "
			"Operator's device-plugin entrypoint (v24.6 to v26.7), whose steps it does itself "
			"(docs/reference/operator.md)\n",
			err.msg, OPERATOR_SCRIPT);
		return 1;
	}
	if (!wait_driver_ready())
		return 0;
	if (export_driver_ready() < 0 || (s.checks_modules && module_flags(s.modules) < 0))
		return 1;
	for (size_t i = 0; i < ELEMENTSOF(operator_layout); i++)
		if (setenv(operator_layout[i].name, operator_layout[i].value, 0) < 0)
			return 1;
	printf("Starting nvidia-device-plugin\n");
	return exec_self("nvidia-device-plugin", none);
}

static int run_shell(const char *as, int argc, char **argv)
{
	if (argc == 3 && streq(argv[1], "-c") && streq(argv[2], OPERATOR_SCRIPT))
		return run_operator_plugin();
	fprintf(stderr,
		"%s: gpulet's image has no shell. /bin/%s is gpulet and answers only the GPU Operator's "
		"device-plugin container (`/bin/%s -c %s`)%s.\nRun gpulet's commands directly: "
		"/usr/bin/gpulet --help lists them. A ClusterPolicy devicePlugin.args replaces that container's "
		"arguments: remove it and set options through devicePlugin.env (docs/reference/operator.md).\n",
		as, as, as, OPERATOR_SCRIPT, argc < 2 ? "" : ", not these arguments");
	return EXIT_USAGE;
}

int cmd_entrypoint(int argc, char **argv)
{
	const char *as = program_invocation_short_name;

	if (cmd_describing(&entrypoint_verb)) /* the command tree (cmd/tree.h): nothing is run */
		return 0;
	if (streq(as, "sh") || streq(as, "bash"))
		return run_shell(as, argc, argv);
	return run_image(argc, argv);
}
