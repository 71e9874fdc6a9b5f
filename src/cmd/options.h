/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One option table per verb. Each row says everything about one option: long name, short name,
 * alias, argument, env vars, default, help text and where its value goes. getopt_long's option
 * array, the environment fallbacks, the defaults and the --help text are all generated from the
 * rows, so an option cannot be accepted without being documented (tests/integration/test_help.py).
 *
 * The engine is util/optspec.h: values are applied in layers through its one setter, default, then
 * the config file (a verb with one), then env, then the flag; this file adds the printing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "util/err.h"
#include "util/log.h"
#include "util/optspec.h"

/* The values of the option rows several verbs share; every verb's option struct starts with it. */
struct cmd_common {
	bool json;
	const char *pods_file, *node_file;
	struct cmd_nvml_opts nvml;  /* --nvml-library, --driver-root, --root */
	int log_level;              /* enum log_level of CMD_OPT_LOG_LEVEL: set by cmd_parse() after the options */
	struct optspec_given given; /* where each option's value came from: cmd_source() */
};

/* A verb: its rows and the text around them in --help. */
struct cmd_verb {
	const char *name;           /* "doctor", "cdi generate": the usage line and the prefix of messages */
	const char *synopsis;       /* after the name: "[OPTIONS]", "[OPTIONS] FILE...|-" */
	const char *about;          /* paragraph under the usage line */
	const struct optspec *opts; /* ends with OPT_END (or NULL with .cli); --help and --version are added */
	void (*notes)(FILE *f);     /* more text after the options, or NULL */
	const char *footer;         /* exit status, JSON shape, ... or NULL */
	const char *example;
	bool operands;        /* arguments after the options are the verb's (else: usage error) */
	bool stop_at_operand; /* the first operand ends the options: a verb of verbs' own flags (cdi-hook) */
	/*
	 * The verb stands in for a urfave/cli v2 program (docs/reference/go-parsing.md): an env var set
	 * to "" counts as set (a string takes "", a switch false, a number keeps its default), and -v
	 * is --version unless a row has -v.
	 */
	bool urfave;
	/* the engine's description when a library owns the rows (rows, env vars, config file, messages) */
	const struct optspec_cli *cli;
	int value_exit; /* exit code of a bad value (EXIT_USAGE when 0); the plugin's is 1, as upstream */
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
 * Where the value of v's option name came from in opts (the engine's given record: the verb's own
 * struct cmd_common, or its .cli's), and that source in words into buf ("--name", "env NAME").
 */
enum optspec_src cmd_source(const struct cmd_verb *v, const void *opts, const char *name, char *buf, size_t size);

/*
 * A verb of verbs (gpulet itself, `gpulet cdi`, `gpulet cdi-hook`): its words are the first member
 * (const char *name) of rows of stride bytes, and with .summary_off a row's one-line summary (a
 * const char *; NULL: a hidden row, not listed and not completed). An unknown word is a usage error,
 * or a warning and exit 0 with .unknown_ok (nvidia-cdi-hook: a spec from a newer toolkit still starts).
 */
struct cmd_menu {
	const char *name; /* "gpulet cdi": the messages' prefix */
	const char *word; /* what a row is called: "command", "verb", "hook" */
	const void *rows;
	size_t n, stride;
	size_t summary_off; /* offsetof the row's summary; 0: the rows have none (every row listed) */
	void (*help)(FILE *f);
	bool unknown_ok;
};
/*
 * The row argv[0] names, or NULL with *rc the exit code: 0 after --help, -h or help (the help on
 * stdout) or -v, --version or -version (the version, cmd_print_version()); for no word or an unknown
 * one EXIT_USAGE (the message and the help on stderr), or 0 with a warning under .unknown_ok.
 */
const void *cmd_menu_pick(const struct cmd_menu *m, int argc, char **argv, int *rc);
#define CMD_MENU(name_, word_, rows_, help_, ...)                                          \
	{                                                                                  \
		.name = (name_), .word = (word_), .rows = (rows_), .n = ELEMENTSOF(rows_), \
		.stride = sizeof((rows_)[0]), .help = (help_), __VA_ARGS__                 \
	}
/* Row i of m: its word, and its summary (NULL: hidden, or the rows have none) in *ret_summary. */
const char *cmd_menu_row(const struct cmd_menu *m, size_t i, const char **ret_summary);
/* The listed rows of m, "  word  summary", the words in one column as wide as the longest. */
void cmd_menu_list(const struct cmd_menu *m, FILE *f);

/*
 * The command tree, for the generators of completion scripts and man pages (cmd/tree.h): while a
 * describer is set, cmd_parse() hands it the verb instead of parsing its command line, and
 * cmd_menu_pick() hands it the menu when no word follows, so running a verb's entry point with the
 * words of its path describes it, whatever the verb does after its options: nothing runs, nothing
 * is printed. A verb of verbs (.stop_at_operand: cdi-hook) is handed over and then goes on to its
 * menu. NULL: parse again.
 */
struct cmd_describer {
	void (*verb)(void *data, const struct cmd_verb *v);
	void (*menu)(void *data, const struct cmd_menu *m);
	void *data;
};
void cmd_describe(const struct cmd_describer *d);
/*
 * For a verb whose arguments are not options it parses (entrypoint: a command line to run): true
 * while describing, v handed over, and the verb must return 0 at once without running anything.
 * v NULL only asks (cdi-hook's menu, described after its own verb).
 */
bool cmd_describing(const struct cmd_verb *v);

/*
 * v's rows as cmd_parse() reads them (its own, then --help and --version) into rows (room for
 * OPTSPEC_MAX_ROWS + 1), with the engine's description in *cli (short letters: optspec_short()).
 */
int cmd_verb_rows(const struct cmd_verb *v, struct optspec *rows, struct optspec_cli *cli);

/*
 * gpulet's version and, for a verb that replaces an upstream program, the program and upstream
 * version it matches (verb NULL: every one), on f.
 */
void cmd_print_version(FILE *f, const char *verb);

/* "gpulet VERB: message" on stderr (kept for a --json run's error, cmd_exit()); returns EXIT_USAGE. */
int cmd_usage_error(const struct cmd_verb *v, const char *fmt, ...) _printf_(2, 3);
/* "gpulet VERB: message" on stderr, kept as cmd_usage_error() keeps it; returns 1 (verb NULL: "gpulet: "). */
int cmd_fail(const char *verb, const char *fmt, ...) _printf_(2, 3);

/*
 * The exit of a verb that returned rc (main.c calls it once): a run asked for --json that fails
 * without printing its document prints {"error": {"command", "message", "exit_code"}} on stdout,
 * the message being the first error the verb said on stderr (docs/HACKING.md, "CLI conventions").
 * Returns rc.
 */
int cmd_exit(int rc);

/* --root: struct cmd_common's nvml.root, made absolute (host paths are joined to it as "/x"); a ".." component is
 * refused. */
int cmd_set_root(void *opts, const char *value, struct gerr *err);
/* --driver-root: struct cmd_common's nvml.driver_root, absolute and without "..", as the plugin's
 * (optspec_check_path()). */
int cmd_set_driver_root(void *opts, const char *value, struct gerr *err);

/* UID or UID:GID (a lone UID is also the GID); -EINVAL otherwise. */
int cmd_parse_user(const char *s, unsigned *ret_uid, unsigned *ret_gid);

/* Print doc as indented JSON on stdout (the run's document: no error document follows it); false (and a
 * message naming the verb) when it cannot. */
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
#define CMD_OPT_JSON(text)                                                                              \
	{                                                                                               \
		.name = "json", .kind = OPT_SET, .help = text, .off = offsetof(struct cmd_common, json) \
	}
#define CMD_OPT_ROOT                                                                               \
	{                                                                                          \
		.name = "root", .kind = OPT_CALL, .arg = "DIR",                                    \
		.help = "host root: every host path is read under it (default /; /host in a pod)", \
		.call = cmd_set_root                                                               \
	}
#define CMD_OPT_NVML_LIBRARY                                                                             \
	{                                                                                                \
		.name = "nvml-library", .kind = OPT_ARGV, .arg = "PATH", .env = {"GPULET_NVML_LIBRARY"}, \
		.help = "libnvidia-ml.so.1 to load; default: searched under the driver root",            \
		.off = offsetof(struct cmd_common, nvml.library)                                         \
	}
#define CMD_OPT_DRIVER_ROOT                                                                                        \
	{                                                                                                          \
		.name = "driver-root", .kind = OPT_CALL, .arg = "DIR", .env = {"NVIDIA_DRIVER_ROOT"},              \
		.help = "where the driver is installed, below --root; default /, /run/nvidia/driver with the GPU " \
			"Operator",                                                                                \
		.call = cmd_set_driver_root                                                                        \
	}
/* NVML and the host: --nvml-library, --driver-root, --root */
#define CMD_OPTS_NVML CMD_OPT_NVML_LIBRARY, CMD_OPT_DRIVER_ROOT, CMD_OPT_ROOT
#define CMD_OPT_PODS                                                                            \
	{                                                                                       \
		.name = "pods", .kind = OPT_ARGV, .arg = "FILE",                                \
		.help = "kubectl get pods -A -o json output (pod facts, no API server needed)", \
		.off = offsetof(struct cmd_common, pods_file)                                   \
	}
#define CMD_OPT_NODE                                                                         \
	{                                                                                    \
		.name = "node", .kind = OPT_ARGV, .arg = "FILE",                             \
		.help = "kubectl get node NAME -o json output (capacity, taints, versions)", \
		.off = offsetof(struct cmd_common, node_file)                                \
	}
#define CMD_OPT_LOG_LEVEL LOG_OPT_LEVEL(offsetof(struct cmd_common, log_level))
