/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet cdi generate | list | validate: CDI specs for this node, and a checker for any CDI file. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cdi/cdi.h"
#include "cdi/hooks.h"
#include "cdihook/cdihook.h"
#include "cmd/options.h"
#include "util/fileio.h"
#include "nvml/nvml.h"

#define MAX_DIRS 16

/* --device-name-strategy: nvidia-ctk's names (docs/reference/cdi.md §7.2), repeatable */
static const struct enum_name name_strategies[] = {
    {CDI_NAMES_INDEX, "index"}, {CDI_NAMES_UUID, "uuid"}, {CDI_NAMES_BOTH, "both"}};
static const struct enum_name formats[] = {{CDI_FORMAT_JSON, "json"}, {CDI_FORMAT_YAML, "yaml"}};

static void cdi_help(FILE *f)
{
	fprintf(f, "Usage: gpulet cdi generate|list|validate [OPTIONS]\n\n"
		   "  generate   write the CDI spec for this node's GPUs and MIG instances\n"
		   "  list       show the devices the CDI spec dirs define, as a runtime resolves them\n"
		   "  validate   check CDI spec files or dirs as a runtime will read them\n\n"
		   "Run 'gpulet cdi VERB --help' for a verb's options.\n"
		   "Example: gpulet cdi generate --output /var/run/cdi --format json\n");
}

struct cdi_cli {
	struct cmd_common c;
	struct cdi_gen_options gen;
	struct cdi_validate_options val;
	struct cdi_hook_options hooks;
	const char *output;
	int format; /* enum cdi_format; not given: from the output's extension */
	bool force;
	struct optspec_list dirs;
};

static int set_ldconfig_path(void *opts, const char *value, struct gerr *err)
{
	((struct cdi_cli *)opts)->hooks.ldconfig_path = value;
	return cdihook_check_ldconfig_path(value, err);
}

static int set_runtime(void *opts, const char *value, struct gerr *err)
{
	struct cdi_validate_options *o = &((struct cdi_cli *)opts)->val;

	o->runtime_name = value;
	o->runtime_version = cdi_runtime_max_version(value);
	if (!o->runtime_version)
		return gerr_set(err, EINVAL,
				"unknown --runtime; see --help for the list, or give --runtime-cdi-version");
	return 0;
}

static int set_runtime_user(void *opts, const char *value, struct gerr *err)
{
	struct cdi_validate_options *o = &((struct cdi_cli *)opts)->val;

	return cmd_parse_user(value, &o->runtime_uid, &o->runtime_gid);
}

#define CDI_F(field) offsetof(struct cdi_cli, field)
#define CDI_OPT_DIR(text)                                                                                        \
	{                                                                                                        \
		.name = "dir", .kind = OPT_LIST, .arg = "DIR", .help = text, .off = CDI_F(dirs), .max = MAX_DIRS \
	}

static const struct optspec generate_opts[] = {
    CMD_ROW("output", 'o', OPT_ARGV, "DIR|FILE|-",
	    "where to write (-: stdout); a DIR (existing, or ending in /) gets VENDOR-CLASS.EXT", .def = "-",
	    .off = CDI_F(output)),
    CMD_ROW("format", 'f', OPT_ENUM, "json|yaml", "output format (default: from FILE's extension, else yaml)",
	    .off = CDI_F(format), OPTSPEC_NAMES(formats)),
    CMD_ROW("vendor", 0, OPT_ARGV, "NAME", "vendor part of the kind (default nvidia.com)", .off = CDI_F(gen.vendor)),
    CMD_ROW("class", 0, OPT_ARGV, "NAME", "class part of the kind (default gpu)", .off = CDI_F(gen.class)),
    CMD_ROW("device-name-strategy", 0, OPT_FLAGS, "S", "index, uuid or both (repeatable; default both)",
	    .off = CDI_F(gen.names), .want = "strategy", OPTSPEC_NAMES(name_strategies)),
    CMD_ROW("no-all-device", 0, OPT_SET, NULL, "do not add the 'all' device", .off = CDI_F(gen.no_all_device)),
    CMD_ROW("force", 0, OPT_SET, NULL,
	    "replace what stands in the way, after saying what: a spec of the same devices in the output dir or in "
	    "the dir that wins over it is moved aside to FILE" CDI_REPLACED_SUFFIX ", so is a foreign file at the "
	    "output path",
	    .off = CDI_F(force)),
    CMD_ROW("strict", 0, OPT_SET, NULL,
	    "fail (exit 1, nothing written) when the spec would leave something out: a lost GPU, a missing "
	    "device node, a dangling library link, an expected library, an unsafe MPS pipe dir, the static hook",
	    .off = CDI_F(gen.strict)),
    CMD_OPT_DRIVER_ROOT,
    CMD_ROW("dev-root", 0, OPT_ARGV, "DIR", "host dir holding dev/nvidia* (default: the driver root)",
	    .off = CDI_F(c.nvml.dev_root)),
    CMD_ROW("nvidia-cdi-hook-path", 0, OPT_ARGV, "PATH",
	    "host path of the hook binary in the spec's hooks (default: gpulet-cdi-hook beside this gpulet, else this "
	    "gpulet; a binary named "
	    "nvidia-cdi-hook or nvidia-ctk gets that tool's arguments)",
	    .alias = "nvidia-ctk-path", .off = CDI_F(hooks.path)),
    CMD_ROW("ldconfig-path", 0, OPT_CALL, "PATH",
	    "absolute host path of the ldconfig the update-ldcache hook runs (a static ELF; @ prefix allowed; "
	    "default: the hook's, /sbin/ldconfig, or /sbin/ldconfig.real where that exists)",
	    .env = {"NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH"}, .call = set_ldconfig_path),
    CMD_ROW("cdi-disable-hooks", 0, OPT_FLAGS, "all|NAME,...", "leave these OCI hooks out of the spec",
	    .off = CDI_F(hooks.disabled), .want = "hook", .empty_none = true, OPTSPEC_NAMES(cdi_hook_names)),
    CMD_OPT_ROOT,
    CMD_OPT_NVML_LIBRARY,
    {0},
};

static const struct cmd_verb generate_verb = CMD_VERB(
    "cdi generate", "[OPTIONS]", generate_opts,
    "gpulet cdi generate --vendor k8s.device-plugin.nvidia.com --device-name-strategy uuid \\\n"
    "           --format json --output /var/run/cdi",
    .about = "Write a CDI spec: one device per GPU, per MIG instance (GPU:MIG and MIG UUID) and 'all', with\n"
	     "the driver's device nodes, libraries, ICD files, firmware, IPC sockets and tools. cdiVersion is\n"
	     "the lowest that covers the fields used, so podman 4.3 and containerd 1.7 load it. --root is not\n"
	     "written into the spec. Nothing is written when the driver cannot work in a container (no\n"
	     "nvidiactl, nvidia-uvm, libcuda or libnvidia-ml) or when another spec defines the same devices\n"
	     "beside it or in the dir that wins (--force moves that one aside); what a partial spec leaves\n"
	     "out is a warning naming each item (--strict: an error).");

static const struct optspec list_opts[] = {
    CDI_OPT_DIR("a spec dir, repeatable, lowest priority first (default /etc/cdi /var/run/cdi)"),
    CMD_OPT_ROOT,
    CMD_OPT_JSON("print JSON"),
    {0},
};

static const struct cmd_verb list_verb =
    CMD_VERB("cdi list", "[OPTIONS]", list_opts, "gpulet cdi list --json | jq -r '.[].name'",
	     .about = "Devices defined by the spec dirs (later dir wins; a device defined twice in one dir is\n"
		      "dropped by runtimes and shown as a conflict).");

static void validate_notes(FILE *f)
{
	fprintf(f, "\nRuntimes --runtime knows, with the highest cdiVersion each understands:\n");
	for (size_t i = 0; i < cdi_n_runtimes; i++)
		fprintf(f, "  %-18s %s\n", cdi_runtimes[i].name, cdi_runtimes[i].max_version);
}

static const struct optspec validate_opts[] = {
    CDI_OPT_DIR("a spec dir, repeatable, lowest priority first"),
    CMD_OPT_ROOT,
    CMD_ROW("runtime", 0, OPT_CALL, "NAME", "the consuming runtime; its highest cdiVersion applies (list below)",
	    .call = set_runtime),
    CMD_ROW("runtime-cdi-version", 0, OPT_ARGV, "V", "highest cdiVersion the runtime understands (e.g. 0.5.0)",
	    .off = CDI_F(val.runtime_version)),
    CMD_ROW("runtime-user", 0, OPT_CALL, "UID[:GID]", "the user the runtime reads specs as (default 0)",
	    .call = set_runtime_user, .want = "UID or UID:GID"),
    CMD_ROW("no-host-paths", 0, OPT_SET, NULL, "do not check that host paths exist", .off = CDI_F(val.no_host_paths)),
    CMD_OPT_JSON("print JSON {files, errors, warnings, problems[]}"),
    {0},
};

static const struct cmd_verb validate_verb =
    CMD_VERB("cdi validate", "[FILE|DIR...] [OPTIONS]", validate_opts,
	     "gpulet cdi validate --runtime podman-4.3 /etc/cdi/nvidia.yaml /var/run/cdi",
	     .about = "Check CDI specs as the CDI spec and real runtimes read them: syntax, cdiVersion, kind and\n"
		      "device names, field types, devices defined twice, host paths that do not exist, files the\n"
		      "runtime user cannot read. A DIR is a spec dir, read as a runtime reads one (its *.json and\n"
		      "*.yaml in name order), after the --dir ones. Without FILE, DIR and --dir, checks /etc/cdi\n"
		      "and /var/run/cdi.",
	     .notes = validate_notes,
	     .footer = "Exit status: 0 when no errors (warnings allowed), 1 otherwise, 2 usage.", .operands = true);

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && streq(s + a - b, suffix);
}

#define GEN "gpulet cdi generate: "

/*
 * Files that would make the devices written now unusable: another spec of the same devices in
 * the dir (dropped as duplicates) or in the higher-priority dir (used instead). Without force:
 * print each with the fix, return 1. With force: return 0 and the files to move aside in *aside.
 */
static int check_conflicts(const char *dir, const char *file, json_t *spec, bool force, struct cdi_report *aside)
{
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	size_t errors = 0;

	if (cdi_spec_conflicts(dir, file, spec, &rep) < 0) {
		fprintf(stderr, GEN "out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < rep.n_problems; i++) {
		const struct cdi_problem *p = &rep.problems[i];

		if (!p->error) {
			fprintf(stderr, GEN "note: %s also defines %s; the spec written now wins over it\n", p->file,
				p->message);
			continue;
		}
		errors++;
		if (!force)
			fprintf(stderr, GEN "%s defines %s too, %s: %s\n  fix: %s\n", p->file, p->message,
				streq(p->code, "conflict-same-dir") ? "in the same dir" : "in the dir that wins",
				streq(p->code, "conflict-same-dir")
				    ? "runtimes drop devices defined twice at one priority (podman: unresolvable CDI "
				      "devices)"
				    : "runtimes use its definitions instead of the ones written now",
				p->fix);
	}
	if (errors > 0 && !force) {
		fprintf(stderr, GEN "nothing written: %zu conflicting spec file%s\n", errors, errors == 1 ? "" : "s");
		return 1;
	}
	*aside = rep;
	rep = (struct cdi_report){0};
	return 0;
}

/* --force: say what is replaced, then move it aside (after ours is written: never a moment without). */
static int move_conflicts(const struct cdi_report *aside)
{
	for (size_t i = 0; i < aside->n_problems; i++) {
		_cleanup_free_ char *to = NULL;
		struct gerr err = {0};

		if (!aside->problems[i].error)
			continue;
		if (cdi_move_aside(aside->problems[i].file, &to, &err) < 0) {
			fprintf(stderr, GEN "%s\n", err.msg);
			return 1;
		}
		fprintf(stderr, GEN "replaced %s (moved to %s)\n", aside->problems[i].file, to);
	}
	return 0;
}

/* Write dir/file: refuse a foreign file and conflicts unless force, then write atomically. */
static int write_file(const char *dir, const char *file, json_t *spec, bool force)
{
	_cleanup_(cdi_report_clear) struct cdi_report aside = {0};
	_cleanup_free_ char *path = NULL, *moved = NULL;
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	struct gerr err = {0}, foreign = {0};

	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return 1;
	if (cdi_spec_file_name_ok(file, &err) < 0) {
		fprintf(stderr, GEN "%s\n", err.msg);
		return 1;
	}
	if (cdi_spec_replaceable(path, kind, &foreign) < 0 && (!force || foreign.code != EEXIST)) {
		fprintf(stderr, GEN "%s%s\n", foreign.msg, foreign.code == EEXIST ? " (or --force)" : "");
		return 1;
	}
	if (check_conflicts(dir, file, spec, force, &aside) != 0)
		return 1;
	for (size_t i = 0; i < aside.n_problems; i++)
		if (aside.problems[i].error)
			fprintf(stderr, GEN "--force: replacing %s (defines %s)\n", aside.problems[i].file,
				aside.problems[i].message);
	if (foreign.code) {
		fprintf(stderr, GEN "--force: replacing %s: %s\n", path, foreign.msg);
		if (cdi_move_aside(path, &moved, &err) < 0) {
			fprintf(stderr, GEN "%s\n", err.msg);
			return 1;
		}
	}
	if (cdi_write_spec(dir, file, spec, &err) < 0) {
		fprintf(stderr, GEN "%s%s%s\n", err.msg, moved ? "; the old file is at " : "", moved ? moved : "");
		return 1;
	}
	fprintf(stderr, GEN "wrote %s\n", path);
	return move_conflicts(&aside);
}

/* Write to --output: "-" stdout, an existing dir or one ending in '/', else a file path. */
static int write_output(const struct cdi_cli *cli, json_t *spec, enum cdi_format fmt)
{
	_cleanup_free_ char *text = NULL, *dir = NULL, *file = NULL, *copy1 = NULL, *copy2 = NULL;
	const char *output = cli->output;
	struct gerr err = {0};
	struct stat st;

	if (streq(output, "-")) {
		if (cdi_format_spec(spec, fmt, &text, &err) < 0) {
			fprintf(stderr, GEN "%s\n", err.msg);
			return 1;
		}
		fputs(text, stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if ((stat(output, &st) == 0 && S_ISDIR(st.st_mode)) || ends_with(output, "/")) {
		dir = strdup(output);
		for (size_t n = dir ? strlen(dir) : 0; n > 1 && dir[n - 1] == '/'; n--)
			dir[n - 1] = 0;
		if (asprintf(&file, "%s-%s.%s", cli->gen.vendor ? cli->gen.vendor : "nvidia.com",
			     cli->gen.class ? cli->gen.class : "gpu", fmt == CDI_FORMAT_JSON ? "json" : "yaml") < 0)
			file = NULL;
	} else {
		copy1 = strdup(output);
		copy2 = strdup(output);
		dir = copy1 ? strdup(dirname(copy1)) : NULL;
		file = copy2 ? strdup(basename(copy2)) : NULL;
	}
	if (!dir || !file) {
		fprintf(stderr, GEN "out of memory\n");
		return 1;
	}
	return write_file(dir, file, spec, cli->force);
}

static int cdi_generate_cmd(int argc, char **argv)
{
	struct cdi_cli cli = {.gen = CDI_GEN_OPTIONS_INIT};
	struct cdi_gen_options *o = &cli.gen;
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	_cleanup_(node_freep) struct node *n = NULL;
	_cleanup_(warnings_clear) struct warnings warnings = {0};
	json_auto_t *spec = NULL;
	enum cdi_format fmt;
	struct gerr err = {0};
	int r = cmd_parse(&generate_verb, argc, argv, &cli);

	if (r != CMD_CONTINUE)
		return r;
	fmt = cmd_source(&generate_verb, &cli, "format", NULL, 0) != OPTSPEC_SRC_NONE ? (enum cdi_format)cli.format
	      : ends_with(cli.output, ".json")                                        ? CDI_FORMAT_JSON
										      : CDI_FORMAT_YAML;
	o->hooks = &cli.hooks;
	if (cmd_host_paths(&cli.c.nvml, &hp) < 0 || cmd_load_node(hp, &nv, &n) < 0)
		return 1;
	o->host = hp;
	o->warnings = &warnings;
	if (cdi_generate(n, o, &spec, &err) < 0) {
		fprintf(stderr, "gpulet cdi generate: %s\n", err.msg);
		return 1;
	}
	if (warnings.n > 0) {
		fprintf(stderr, "gpulet cdi generate: warning: the spec leaves out %zu item%s:\n", warnings.n,
			warnings.n == 1 ? "" : "s");
		for (size_t i = 0; i < warnings.n; i++)
			fprintf(stderr, "  - %s\n", warnings.items[i]);
		fprintf(stderr, "  (--strict makes this an error)\n");
	}
	return write_output(&cli, spec, fmt);
}

static int print_json(json_t *doc)
{
	bool ok = cmd_print_json("cdi", doc);

	json_decref(doc);
	return ok ? 0 : 1;
}

/*
 * A --dir the user names must exist: an empty or mistyped spec dir is the field guide's silent
 * failure (the runtime finds no spec and says nothing), so validate must not report "0 errors".
 */
static int check_spec_dir(const char *verb, const char *root, const char *dir)
{
	_cleanup_free_ char *path = cdi_dir_path(root, dir);
	const char *reason;
	struct stat st;

	if (!path)
		return -ENOMEM;
	if (stat(path, &st) < 0)
		reason = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		reason = "not a directory";
	else
		return 0;
	fprintf(stderr,
		"gpulet cdi %s: --dir %s: %s; check the path against the runtime's cdi_spec_dirs (default "
		"/etc/cdi and /var/run/cdi)%s\n",
		verb, path, reason,
		dir[0] == '/' && root && strcmp(root, "/") ? "; an absolute --dir is looked up under --root"
		: dir[0] != '/'                            ? "; a relative --dir is read from the working dir"
							   : "");
	return -ENOENT;
}

static int cdi_list_cmd(int argc, char **argv)
{
	struct cdi_cli cli = {0};
	size_t i;
	json_t *list = NULL, *e;
	struct gerr err = {0};
	int r = cmd_parse(&list_verb, argc, argv, &cli);

	if (r != CMD_CONTINUE)
		return r;
	for (i = 0; i < cli.dirs.n; i++)
		if (check_spec_dir("list", cli.c.nvml.root, cli.dirs.v[i]) < 0)
			return 1;
	if (cdi_list_dirs(cli.c.nvml.root, cli.dirs.v, cli.dirs.n, &list, &err) < 0) {
		fprintf(stderr, "gpulet cdi list: %s\n", err.msg);
		return 1;
	}
	if (cli.c.json)
		return print_json(list);
	json_array_foreach (list, i, e) {
		printf("%s\t%s%s\n", json_string_value(json_object_get(e, "name")),
		       json_string_value(json_object_get(e, "file")),
		       json_is_true(json_object_get(e, "conflict")) ? "\t(CONFLICT: defined twice at one priority; "
								      "runtimes drop it)"
								    : "");
	}
	if (json_array_size(list) == 0)
		fprintf(stderr, "gpulet cdi list: no CDI devices defined (run 'gpulet cdi validate' to see why "
				"a file is not loaded)\n");
	json_decref(list);
	return 0;
}

static void print_report(const struct cdi_report *rep)
{
	for (size_t i = 0; i < rep->n_problems; i++) {
		const struct cdi_problem *p = &rep->problems[i];

		printf("%s%s%s: %s[%s]: %s\n  fix: %s\n", p->file, p->json_path[0] ? ": " : "", p->json_path,
		       p->error ? "error" : "warning", p->code, p->message, p->fix);
	}
	printf("%zu file%s checked, %zu error%s, %zu warning%s\n", rep->n_files, rep->n_files == 1 ? "" : "s",
	       rep->n_errors, rep->n_errors == 1 ? "" : "s", rep->n_problems - rep->n_errors,
	       rep->n_problems - rep->n_errors == 1 ? "" : "s");
}

/*
 * A DIR operand is a spec dir, scanned as a runtime scans it, after the --dir ones (a later one wins).
 * Operands are read as given, files and dirs alike, so with --root a dir must name a path under it,
 * which is then handed on as --dir takes it (*ret): absolute, below the root.
 */
static int dir_operand(const char *root, const char *dir, const char **ret)
{
	size_t n = root && !streq(root, "/") ? strlen(root) : 0;

	while (n > 0 && root[n - 1] == '/')
		n--;
	if (n > 0 && dir[0] == '/') {
		if (strncmp(dir, root, n) != 0 || (dir[n] != '/' && dir[n] != 0)) {
			fprintf(stderr,
				"gpulet cdi validate: %s: a directory outside --root %s; give it as it is seen below "
				"the root with --dir, or without --root\n",
				dir, root);
			return -EINVAL;
		}
		dir = dir[n] ? dir + n : "/";
	}
	*ret = dir;
	return 0;
}

static int cdi_validate_cmd(int argc, char **argv)
{
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	_cleanup_free_ const char **files = NULL, **dirs = NULL;
	struct cdi_cli cli = {0};
	struct cdi_validate_options *o = &cli.val;
	size_t n_files = 0, n_dirs = 0;
	int r = cmd_parse(&validate_verb, argc, argv, &cli);

	if (r != CMD_CONTINUE)
		return r;
	r = 0;
	o->root = cli.c.nvml.root;
	files = calloc((size_t)(argc - optind) + 1, sizeof(*files));
	dirs = calloc(cli.dirs.n + (size_t)(argc - optind) + 1, sizeof(*dirs));
	if (!files || !dirs)
		return 1;
	for (size_t i = 0; i < cli.dirs.n; i++) {
		if (check_spec_dir("validate", o->root, cli.dirs.v[i]) < 0)
			return 1;
		dirs[n_dirs++] = cli.dirs.v[i];
	}
	for (int i = optind; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0 || !S_ISDIR(st.st_mode))
			files[n_files++] = argv[i];
		else if (dir_operand(o->root, argv[i], &dirs[n_dirs++]) < 0)
			return EXIT_USAGE;
	}
	if (n_files > 0)
		r = cdi_validate_files(files, n_files, o, &rep);
	if (r >= 0 && (n_dirs > 0 || optind == argc))
		r = cdi_validate_dirs(dirs, n_dirs, o, &rep);
	if (r < 0) {
		fprintf(stderr, "gpulet cdi validate: %s\n", strerror(-r));
		return 1;
	}
	if (cli.c.json) {
		if (print_json(cdi_report_to_json(&rep)) != 0)
			return 1;
	} else {
		print_report(&rep);
	}
	return rep.n_errors > 0 ? 1 : 0;
}

int cmd_cdi(int argc, char **argv)
{
	static const struct cdi_verb {
		const char *name;
		int (*run)(int argc, char **argv);
	} verbs[] = {
	    {"generate", cdi_generate_cmd},
	    {"list", cdi_list_cmd},
	    {"validate", cdi_validate_cmd},
	};
	static const struct cmd_menu menu = CMD_MENU("gpulet cdi", "verb", verbs, cdi_help);
	const struct cdi_verb *v;
	int rc;

	v = cmd_menu_pick(&menu, argc - 1, argv + 1, &rc);
	return v ? v->run(argc - 1, argv + 1) : rc;
}
