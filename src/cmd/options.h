/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One option table per verb. Each row says everything about one option: long name, short name,
 * alias, argument, env vars, default, help text and where its value goes. getopt_long's option
 * array, the environment fallbacks, the defaults and the --help text are all generated from the
 * rows, so an option cannot be accepted without being documented (tests/integration/test_help.py).
 *
 * Values are applied in layers through the same setter: default, then env, then the flag.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "util/err.h"

/* The values of the option rows several verbs share; every verb's option struct starts with it. */
struct cmd_common {
	bool json;
	const char *pods_file, *node_file;
	struct cmd_nvml_opts nvml; /* --nvml-library, --driver-root, --root */
};

enum cmd_opt_kind {
	CMD_OPT_END,     /* ends a table */
	CMD_OPT_STR,     /* const char * at .off: the value as given */
	CMD_OPT_SET,     /* bool at .off: true when given (an env value is read as a boolean) */
	CMD_OPT_BOOL,    /* bool at .off from an optional BOOL (opt_parse_bool; no value: true) */
	CMD_OPT_UINT,    /* unsigned at .off, a number in [.min, .max] */
	CMD_OPT_CALL,    /* .call(opts, value, err): 0 ok, CMD_OPT_DONE to exit 0, <0 usage error */
	CMD_OPT_HELP,    /* print --help on stdout and exit 0 */
	CMD_OPT_VERSION, /* print gpulet's version and the upstream one the verb matches, exit 0 */
};

#define CMD_OPT_DONE 1

struct cmd_opt {
	const char *name;  /* long name, without "--" */
	int short_name;    /* 'o' for -o, 0 for none */
	const char *alias; /* a second long name with the same meaning, or NULL */
	enum cmd_opt_kind kind;
	const char *arg;    /* argument name in --help ("DIR"); NULL: the option takes no value */
	const char *env[2]; /* env vars read when the flag is absent, first set wins */
	const char *def;    /* default, applied through the same setter and shown in --help */
	const char *help;
	size_t off;                                                   /* STR, SET, BOOL, UINT: field in opts */
	int (*call)(void *opts, const char *value, struct gerr *err); /* CALL */
	const char *want;       /* CALL: what a valid value looks like, for the usage error */
	unsigned long min, max; /* UINT */
};

/* A verb: its rows and the text around them in --help. */
struct cmd_verb {
	const char *name;           /* "doctor", "cdi generate": the usage line and the prefix of messages */
	const char *synopsis;       /* after the name: "[OPTIONS]", "[OPTIONS] FILE...|-" */
	const char *about;          /* paragraph under the usage line */
	const struct cmd_opt *opts; /* ends with CMD_OPT_END; --help is added */
	void (*notes)(FILE *f);     /* more text after the options, or NULL */
	const char *footer;         /* exit status, JSON shape, ... or NULL */
	const char *example;
	bool operands; /* arguments after the options are the verb's (else: usage error) */
	/*
	 * The verb stands in for a urfave/cli v2 program (docs/reference/go-parsing.md): an env var set
	 * to "" counts as set (a string takes "", a switch false, a number keeps its default), and -v
	 * is --version unless a row has -v.
	 */
	bool urfave;
};

/*
 * Apply defaults, env vars and argv to opts (which starts with struct cmd_common). Returns
 * CMD_CONTINUE with optind at the first operand, or the exit code to return now (0 after --help,
 * 2 on a usage error, with the message on stderr).
 */
#define CMD_CONTINUE (-1)
int cmd_parse(const struct cmd_verb *v, int argc, char **argv, void *opts);
void cmd_help(const struct cmd_verb *v, FILE *f);

/*
 * gpulet's version and, for a verb that replaces an upstream program, the program and upstream
 * version it matches (verb NULL: every one), on f.
 */
void cmd_print_version(FILE *f, const char *verb);

/* "gpulet VERB: message" on stderr; returns EXIT_USAGE. */
int cmd_usage_error(const struct cmd_verb *v, const char *fmt, ...) _printf_(2, 3);

/* An unsigned number in [min, max] (a bounded count or interval); -EINVAL otherwise. */
int cmd_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret);

/* --root: struct cmd_common's nvml.root, made absolute (host paths are joined to it as "/x"). */
int cmd_set_root(void *opts, const char *value, struct gerr *err);

/* UID or UID:GID (a lone UID is also the GID); -EINVAL otherwise. */
int cmd_parse_user(const char *s, unsigned *ret_uid, unsigned *ret_gid);

/* Print doc as indented JSON on stdout; false (and a message naming the verb) when it cannot. */
bool cmd_print_json(const char *verb, json_t *doc);

/* A verb: what every verb has, then designated fields for the rest (.about, .notes, .footer, .operands). */
#define CMD_VERB(name_, synopsis_, opts_, example_, ...)                                                      \
	{                                                                                                     \
		.name = (name_), .synopsis = (synopsis_), .opts = (opts_), .example = (example_), __VA_ARGS__ \
	}

/* A row: what every option has, then designated fields for the rest (.env, .def, .off, .call, ...). */
#define CMD_ROW(name_, short_, kind_, arg_, help_, ...)                                                               \
	{                                                                                                             \
		.name = (name_), .short_name = (short_), .kind = (kind_), .arg = (arg_), .help = (help_), __VA_ARGS__ \
	}

/* Rows shared by several verbs: one definition each, used by every verb that takes the option. */
#define CMD_OPT_JSON(text)                                                                                  \
	{                                                                                                   \
		.name = "json", .kind = CMD_OPT_SET, .help = text, .off = offsetof(struct cmd_common, json) \
	}
#define CMD_OPT_ROOT                                                                               \
	{                                                                                          \
		.name = "root", .kind = CMD_OPT_CALL, .arg = "DIR",                                \
		.help = "host root: every host path is read under it (default /; /host in a pod)", \
		.call = cmd_set_root                                                               \
	}
#define CMD_OPT_NVML_LIBRARY                                                                                \
	{                                                                                                   \
		.name = "nvml-library", .kind = CMD_OPT_STR, .arg = "PATH", .env = {"GPULET_NVML_LIBRARY"}, \
		.help = "libnvidia-ml.so.1 to load; default: searched under the driver root",               \
		.off = offsetof(struct cmd_common, nvml.library)                                            \
	}
#define CMD_OPT_DRIVER_ROOT                                                                                        \
	{                                                                                                          \
		.name = "driver-root", .kind = CMD_OPT_STR, .arg = "DIR", .env = {"NVIDIA_DRIVER_ROOT"},           \
		.help = "where the driver is installed, below --root; default /, /run/nvidia/driver with the GPU " \
			"Operator",                                                                                \
		.off = offsetof(struct cmd_common, nvml.driver_root)                                               \
	}
/* NVML and the host: --nvml-library, --driver-root, --root */
#define CMD_OPTS_NVML CMD_OPT_NVML_LIBRARY, CMD_OPT_DRIVER_ROOT, CMD_OPT_ROOT
#define CMD_OPT_PODS                                                                            \
	{                                                                                       \
		.name = "pods", .kind = CMD_OPT_STR, .arg = "FILE",                             \
		.help = "kubectl get pods -A -o json output (pod facts, no API server needed)", \
		.off = offsetof(struct cmd_common, pods_file)                                   \
	}
#define CMD_OPT_NODE                                                                         \
	{                                                                                    \
		.name = "node", .kind = CMD_OPT_STR, .arg = "FILE",                          \
		.help = "kubectl get node NAME -o json output (capacity, taints, versions)", \
		.off = offsetof(struct cmd_common, node_file)                                \
	}
#define CMD_OPT_LOG_LEVEL                                                                                       \
	{                                                                                                       \
		.name = "log-level", .kind = CMD_OPT_CALL, .arg = "LEVEL", .env = {"LOG_LEVEL"}, .def = "info", \
		.help = "log verbosity", .call = cmd_set_log_level, .want = "debug|info|warn|error"             \
	}
int cmd_set_log_level(void *opts, const char *value, struct gerr *err);
