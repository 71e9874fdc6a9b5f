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
#include "cmd/cmd.h"
#include "util/fileio.h"
#include "nvml/nvml.h"

#define MAX_DIRS 16

static void cdi_help(FILE *f)
{
	fprintf(f, "Usage: gpulet cdi generate|list|validate [OPTIONS]\n\n"
		   "  generate   write the CDI spec for this node's GPUs and MIG instances\n"
		   "  list       show the devices the CDI spec dirs define, as a runtime resolves them\n"
		   "  validate   check CDI spec files or dirs as a runtime will read them\n\n"
		   "Run 'gpulet cdi VERB --help' for a verb's options.\n"
		   "Example: gpulet cdi generate --output /var/run/cdi --format json\n");
}

static void generate_help(FILE *f)
{
	fprintf(f, "Usage: gpulet cdi generate [OPTIONS]\n\n"
		   "Write a CDI spec: one device per GPU, per MIG instance (GPU:MIG and MIG UUID) and 'all', with\n"
		   "the driver's device nodes, libraries, firmware, IPC sockets and tools. cdiVersion is the lowest\n"
		   "that covers the fields used, so podman 4.3 and containerd 1.7 load it.\n\n"
		   "  --output DIR|FILE|-          where to write (default -: stdout); a DIR gets VENDOR-CLASS.EXT\n"
		   "  --format json|yaml           output format (default: from FILE's extension, else yaml)\n"
		   "  --vendor NAME                vendor part of the kind (default nvidia.com)\n"
		   "  --class NAME                 class part of the kind (default gpu)\n"
		   "  --device-name-strategy S     index, uuid or both (repeatable; default both)\n"
		   "  --no-all-device              do not add the 'all' device\n"
		   "  --driver-root DIR            host dir the driver is installed under (default /)\n"
		   "  --dev-root DIR               host dir holding dev/nvidia* (default: the driver root)\n"
		   "  --root DIR                   read the host under this prefix (default /); not in the spec\n"
		   "  --nvml-library PATH          libnvidia-ml.so.1 to load (env GPULET_NVML_LIBRARY)\n"
		   "  -h, --help                   this text\n\n"
		   "Example: gpulet cdi generate --vendor k8s.device-plugin.nvidia.com --device-name-strategy uuid \\\n"
		   "           --format json --output /var/run/cdi\n");
}

static void list_help(FILE *f)
{
	fprintf(f, "Usage: gpulet cdi list [OPTIONS]\n\n"
		   "Devices defined by the spec dirs (later dir wins; a device defined twice in one dir is\n"
		   "dropped by runtimes and shown as a conflict).\n\n"
		   "  --dir DIR      a spec dir, repeatable, lowest priority first (default /etc/cdi /var/run/cdi)\n"
		   "  --root DIR     read the dirs under this prefix (default /)\n"
		   "  --json         print JSON\n"
		   "  -h, --help     this text\n\n"
		   "Example: gpulet cdi list --json | jq -r '.[].name'\n");
}

static void validate_help(FILE *f)
{
	fprintf(f, "Usage: gpulet cdi validate [FILE...] [OPTIONS]\n\n"
		   "Check CDI specs as the CDI spec and real runtimes read them: syntax, cdiVersion, kind and\n"
		   "device names, field types, devices defined twice, host paths that do not exist, files the\n"
		   "runtime user cannot read. Without FILE and --dir, checks /etc/cdi and /var/run/cdi.\n"
		   "Exit 0 when no errors (warnings allowed), 1 otherwise.\n\n"
		   "  --dir DIR                   a spec dir, repeatable, lowest priority first\n"
		   "  --root DIR                  read dirs and host paths under this prefix (default /)\n"
		   "  --runtime NAME              the consuming runtime; its highest cdiVersion applies:\n");
	for (size_t i = 0; i < cdi_n_runtimes; i++)
		fprintf(f, "                                %-18s %s\n", cdi_runtimes[i].name,
			cdi_runtimes[i].max_version);
	fprintf(f, "  --runtime-cdi-version V     highest cdiVersion the runtime understands (e.g. 0.5.0)\n"
		   "  --runtime-user UID[:GID]    the user the runtime reads specs as (default 0)\n"
		   "  --no-host-paths             do not check that host paths exist\n"
		   "  --json                      print JSON {files, errors, warnings, problems[]}\n"
		   "  -h, --help                  this text\n\n"
		   "Example: gpulet cdi validate --runtime podman-4.3 /etc/cdi/nvidia.yaml\n");
}

static int parse_strategy(const char *s, unsigned *names)
{
	static const struct {
		const char *name;
		unsigned bits;
	} strategies[] = {
	    {"index", CDI_NAMES_INDEX},
	    {"uuid", CDI_NAMES_UUID},
	    {"both", CDI_NAMES_BOTH},
	};

	for (size_t i = 0; i < ELEMENTSOF(strategies); i++)
		if (streq(s, strategies[i].name)) {
			*names |= strategies[i].bits;
			return 0;
		}
	return -EINVAL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && streq(s + a - b, suffix);
}

/* Write to --output: "-" stdout, an existing dir or one ending in '/', else a file path. */
static int write_output(const char *output, json_t *spec, enum cdi_format fmt, const char *vendor, const char *class)
{
	_cleanup_free_ char *text = NULL, *dir = NULL, *file = NULL, *copy1 = NULL, *copy2 = NULL;
	struct gerr err = {0};
	struct stat st;

	if (streq(output, "-")) {
		if (cdi_format_spec(spec, fmt, &text, &err) < 0) {
			fprintf(stderr, "gpulet cdi generate: %s\n", err.msg);
			return 1;
		}
		fputs(text, stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if ((stat(output, &st) == 0 && S_ISDIR(st.st_mode)) || ends_with(output, "/")) {
		dir = strdup(output);
		if (asprintf(&file, "%s-%s.%s", vendor, class, fmt == CDI_FORMAT_JSON ? "json" : "yaml") < 0)
			file = NULL;
	} else {
		copy1 = strdup(output);
		copy2 = strdup(output);
		dir = copy1 ? strdup(dirname(copy1)) : NULL;
		file = copy2 ? strdup(basename(copy2)) : NULL;
	}
	if (!dir || !file) {
		fprintf(stderr, "gpulet cdi generate: out of memory\n");
		return 1;
	}
	if (cdi_write_spec(dir, file, spec, &err) < 0) {
		fprintf(stderr, "gpulet cdi generate: %s\n", err.msg);
		return 1;
	}
	fprintf(stderr, "gpulet cdi generate: wrote %s/%s\n", dir, file);
	return 0;
}

static int cdi_generate_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"vendor", required_argument, NULL, 'V'},
	    {"class", required_argument, NULL, 'C'},
	    {"device-name-strategy", required_argument, NULL, 'S'},
	    {"no-all-device", no_argument, NULL, 'A'},
	    {"driver-root", required_argument, NULL, 'D'},
	    {"dev-root", required_argument, NULL, 'E'},
	    {"root", required_argument, NULL, 'r'},
	    {"nvml-library", required_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
	struct cmd_nvml_opts no = {0};
	_cleanup_(nvml_closep) struct nvml *nv = NULL;
	_cleanup_(node_freep) struct node *n = NULL;
	json_auto_t *spec = NULL;
	const char *output = "-", *format = NULL;
	enum cdi_format fmt;
	struct gerr err = {0};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:f:", opts, NULL)) != -1)
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'V':
			o.vendor = optarg;
			break;
		case 'C':
			o.class = optarg;
			break;
		case 'S':
			if (parse_strategy(optarg, &o.names) < 0) {
				fprintf(
				    stderr,
				    "gpulet cdi generate: --device-name-strategy is index, uuid or both, not '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'A':
			o.no_all_device = true;
			break;
		case 'D':
			o.driver_root = no.driver_root = optarg;
			break;
		case 'E':
			o.dev_root = optarg;
			break;
		case 'r':
			o.root = no.root = optarg;
			break;
		case 'L':
			no.library = optarg;
			break;
		case 'h':
			generate_help(stdout);
			return 0;
		default:
			generate_help(stderr);
			return EXIT_USAGE;
		}
	if (optind < argc) {
		fprintf(stderr, "gpulet cdi generate: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (format && !streq(format, "json") && !streq(format, "yaml")) {
		fprintf(stderr, "gpulet cdi generate: --format is json or yaml, not '%s'\n", format);
		return EXIT_USAGE;
	}
	fmt = format ? (streq(format, "json") ? CDI_FORMAT_JSON : CDI_FORMAT_YAML)
		     : (ends_with(output, ".json") ? CDI_FORMAT_JSON : CDI_FORMAT_YAML);
	if (!o.driver_root)
		o.driver_root = cmd_env_or("NVIDIA_DRIVER_ROOT", "/");
	if (cmd_load_node(&no, &nv, &n) < 0)
		return 1;
	if (cdi_generate(n, &o, &spec, &err) < 0) {
		fprintf(stderr, "gpulet cdi generate: %s\n", err.msg);
		return 1;
	}
	return write_output(output, spec, fmt, o.vendor ? o.vendor : "nvidia.com", o.class ? o.class : "gpu");
}

static int print_json(json_t *doc)
{
	int r = doc ? json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;

	json_decref(doc);
	if (r < 0) {
		fprintf(stderr, "gpulet cdi: out of memory\n");
		return 1;
	}
	putchar('\n');
	return 0;
}

static int cdi_list_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"dir", required_argument, NULL, 'd'},
	    {"root", required_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	const char *dirs[MAX_DIRS], *root = NULL;
	size_t n_dirs = 0, i;
	json_t *list = NULL, *e;
	struct gerr err = {0};
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		switch (c) {
		case 'd':
			if (n_dirs == MAX_DIRS) {
				fprintf(stderr, "gpulet cdi list: at most %d --dir\n", MAX_DIRS);
				return EXIT_USAGE;
			}
			dirs[n_dirs++] = optarg;
			break;
		case 'r':
			root = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			list_help(stdout);
			return 0;
		default:
			list_help(stderr);
			return EXIT_USAGE;
		}
	if (optind < argc) {
		fprintf(stderr, "gpulet cdi list: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (cdi_list_dirs(root, dirs, n_dirs, &list, &err) < 0) {
		fprintf(stderr, "gpulet cdi list: %s\n", err.msg);
		return 1;
	}
	if (json)
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

static int parse_user(const char *s, struct cdi_validate_options *o)
{
	unsigned uid, gid;
	char tail;

	if (sscanf(s, "%u:%u%c", &uid, &gid, &tail) == 2) {
		o->runtime_uid = uid;
		o->runtime_gid = gid;
		return 0;
	}
	if (sscanf(s, "%u%c", &uid, &tail) == 1) {
		o->runtime_uid = o->runtime_gid = uid;
		return 0;
	}
	return -EINVAL;
}

/*
 * A --dir the user names must exist: an empty or mistyped spec dir is the field guide's silent
 * failure (the runtime finds no spec and says nothing), so validate must not report "0 errors".
 */
static int check_spec_dir(const char *root, const char *dir)
{
	_cleanup_free_ char *path = root_path(root, dir);
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
		"gpulet cdi validate: --dir %s: %s; check the path against the runtime's cdi_spec_dirs (default "
		"/etc/cdi and /var/run/cdi)%s\n",
		path, reason, root && strcmp(root, "/") ? "; --dir is looked up under --root" : "");
	return -ENOENT;
}

static int cdi_validate_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"dir", required_argument, NULL, 'd'},
	    {"root", required_argument, NULL, 'r'},
	    {"runtime", required_argument, NULL, 'R'},
	    {"runtime-cdi-version", required_argument, NULL, 'v'},
	    {"runtime-user", required_argument, NULL, 'u'},
	    {"no-host-paths", no_argument, NULL, 'P'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	struct cdi_validate_options o = {0};
	const char *dirs[MAX_DIRS];
	size_t n_dirs = 0;
	bool json = false;
	int c, r = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		switch (c) {
		case 'd':
			if (n_dirs == MAX_DIRS) {
				fprintf(stderr, "gpulet cdi validate: at most %d --dir\n", MAX_DIRS);
				return EXIT_USAGE;
			}
			dirs[n_dirs++] = optarg;
			break;
		case 'r':
			o.root = optarg;
			break;
		case 'R':
			o.runtime_name = optarg;
			o.runtime_version = cdi_runtime_max_version(optarg);
			if (!o.runtime_version) {
				fprintf(stderr,
					"gpulet cdi validate: unknown --runtime '%s'; see --help for the list, or "
					"give --runtime-cdi-version\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'v':
			o.runtime_version = optarg;
			break;
		case 'u':
			if (parse_user(optarg, &o) < 0) {
				fprintf(stderr, "gpulet cdi validate: --runtime-user is UID or UID:GID, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'P':
			o.no_host_paths = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			validate_help(stdout);
			return 0;
		default:
			validate_help(stderr);
			return EXIT_USAGE;
		}
	for (size_t i = 0; i < n_dirs; i++)
		if (check_spec_dir(o.root, dirs[i]) < 0)
			return 1;
	if (optind < argc)
		r = cdi_validate_files((const char *const *)argv + optind, (size_t)(argc - optind), &o, &rep);
	if (r >= 0 && (n_dirs > 0 || optind == argc))
		r = cdi_validate_dirs(dirs, n_dirs, &o, &rep);
	if (r < 0) {
		fprintf(stderr, "gpulet cdi validate: %s\n", strerror(-r));
		return 1;
	}
	if (json) {
		if (print_json(cdi_report_to_json(&rep)) != 0)
			return 1;
	} else {
		print_report(&rep);
	}
	return rep.n_errors > 0 ? 1 : 0;
}

int cmd_cdi(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} verbs[] = {
	    {"generate", cdi_generate_cmd},
	    {"list", cdi_list_cmd},
	    {"validate", cdi_validate_cmd},
	};

	if (argc < 2) {
		cdi_help(stderr);
		return EXIT_USAGE;
	}
	if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
		cdi_help(stdout);
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (streq(argv[1], verbs[i].name))
			return verbs[i].run(argc - 1, argv + 1);
	fprintf(stderr, "gpulet cdi: unknown verb '%s'\n\n", argv[1]);
	cdi_help(stderr);
	return EXIT_USAGE;
}
