/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one option engine. A table of rows says everything about each option of a verb: long name,
 * short name, alias, env vars, config-file key, kind, default, help, where its value goes. Every
 * value, from every source (default, config file, env var, flag), goes through one setter,
 * optspec_set(), that parses the text into the typed field, so it is checked the same way wherever
 * it comes from. The layers are applied in one order, default < file < env < flag (upstream's
 * urfave/cli programs: docs/reference/go-parsing.md); getopt_long's arrays and --help come from the
 * same rows. Library code: nothing is printed here except --help into the FILE * the caller passes.
 */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/enumtab.h"
#include "util/err.h"
#include "util/macro.h"

enum optspec_kind {
	OPT_END,      /* ends a table */
	OPT_ARGV,     /* const char * at .off: the text as given, borrowed (argv, env and defaults outlive the
		       * options); never for a row with a config-file key */
	OPT_STR,      /* text at .off: char[.size] when .size is set (longer: an error), else an owned char *
		       * (optspec_free()) of at most .max characters when .max is set (longer: an error) */
	OPT_PATH,     /* as STR: "" or an absolute path without a ".." component */
	OPT_FILE,     /* as STR: a path read as given; a relative one is made absolute from the cwd */
	OPT_SET,      /* bool: true when given without a value; a value (env, file) is a boolean */
	OPT_BOOL,     /* bool from an optional BOOL (opt_parse_bool(); no value: true) */
	OPT_UINT,     /* unsigned, a number in [.min, .max] */
	OPT_DURATION, /* int64_t nanoseconds, Go's time.ParseDuration (opt_parse_duration()), within [.min, .max]
		       * milliseconds when .max is set; the words of .names stand for their values ("infinite": -1) */
	OPT_ENUM,     /* int: the value of one of .names */
	OPT_FLAGS,    /* unsigned: a comma list of .names, their values OR-ed; a repeated flag adds to the list;
		       * "" is an error, or no names with .empty_none */
	OPT_LIST,     /* struct optspec_list at .off: each value given is appended (a repeatable flag), borrowed as
		       * ARGV's; at most .max items (OPTSPEC_LIST_MAX when 0); never for a row with a key */
	OPT_CALL,     /* .call(opts, value, err) */
	OPT_HELP,     /* --help: the caller prints the help */
	OPT_VERSION,  /* --version: the caller prints the version */
};

struct optspec {
	const char *name;  /* long name, without "--" */
	int short_name;    /* 'o' for -o, 0 for none */
	const char *alias; /* a second long name with the same meaning, or NULL */
	enum optspec_kind kind;
	const char *arg;    /* argument name in --help ("DIR"); NULL: the option takes no value */
	const char *env[2]; /* env vars read when the flag is absent, first set wins */
	const char *key;    /* config-file key ("flags.plugin.passDeviceSpecs"), or NULL */
	const char *def;    /* default, applied through the same setter and shown in --help */
	const char *help;
	size_t off;                                                   /* where the value goes in opts */
	size_t size;                                                  /* STR, PATH, FILE: inline buffer */
	int (*call)(void *opts, const char *value, struct gerr *err); /* CALL */
	const char *want;              /* what a valid value looks like; FLAGS: what one item is ("strategy") */
	unsigned long min, max;        /* UINT; DURATION in ms; max: the longest owned STR/PATH/FILE text */
	unsigned long bare_ms;         /* DURATION: a bare number means this many ms (gpulet's own interval
					* options, which took plain seconds: 1000); 0: refused, as Go refuses it */
	const struct enum_name *names; /* ENUM, FLAGS; DURATION's words */
	size_t n_names;
	bool icase;      /* ENUM: a name matches in any case */
	bool empty_none; /* FLAGS: "" is the empty set (upstream drops an empty item there) */
	/*
	 * No command-line flag: the option is read from its env vars (and its config-file key) only, as
	 * an upstream program reads it (DP_DISABLE_HEALTHCHECKS); .name names it in the table, --help
	 * lists it by its env var.
	 */
	bool env_only;
	/* An env var set to "" gives "" in either env mode: a fact of the environment rather than a setting
	 * (probe's NVIDIA_VISIBLE_DEVICES, where "" asks for no GPU). */
	bool env_empty_is_value;
};
#define OPTSPEC_NAMES(t) .names = (t), .n_names = ELEMENTSOF(t)

/* The values of an OPT_LIST row, in the order given. */
#define OPTSPEC_LIST_MAX 512
struct optspec_list {
	size_t n;
	const char *v[OPTSPEC_LIST_MAX];
};

/* What a set-but-empty env var means (docs/reference/go-parsing.md). */
enum optspec_env_mode {
	OPT_ENV_EMPTY_UNSET,  /* an empty env var is as if unset: the next one is read */
	OPT_ENV_EMPTY_URFAVE, /* urfave/cli v2: the first set one wins; "" for text, false for a switch, a
			       * number or duration keeps its value */
};

#define OPTSPEC_DONE 1

/* The most rows a verb's table may have, --help and --version included. */
#define OPTSPEC_MAX_ROWS 64

/* Where a row's value came from: the last layer that gave it. */
enum optspec_src {
	OPTSPEC_SRC_NONE,    /* nothing: no default, not given */
	OPTSPEC_SRC_DEFAULT, /* the row's .def */
	OPTSPEC_SRC_FILE,    /* the config file */
	OPTSPEC_SRC_ENV,     /* an env var (which: .env[env]), set even when its "" left the value alone */
	OPTSPEC_SRC_FLAG,    /* the command line */
};

/*
 * The "given" record of a parse, per row (the index of the row in the verb's table): its source,
 * which env var, and whether the value given was "" (an option that cannot serve "" refuses it
 * naming where it came from: exporter --address).
 */
struct optspec_given {
	unsigned char src[OPTSPEC_MAX_ROWS]; /* enum optspec_src */
	unsigned char env[OPTSPEC_MAX_ROWS];
	bool empty[OPTSPEC_MAX_ROWS];
};

/* Rows in a table, up to OPT_END. */
size_t optspec_count(const struct optspec *rows);

/* The row whose config-file key is key, or NULL. */
const struct optspec *optspec_by_key(const struct optspec *rows, const char *key);
/* The row whose long name (or alias) is name, or NULL. */
const struct optspec *optspec_by_name(const struct optspec *rows, const char *name);

/*
 * The one setter: value (NULL: a flag given without one) parsed into o's field of opts. 0, or a
 * negative errno with err saying what a valid value is (the caller adds where the value came from);
 * OPTSPEC_DONE for HELP and VERSION, which set nothing.
 */
int optspec_set(const struct optspec *o, void *opts, const char *value, struct gerr *err);

/*
 * The value of o's env vars, or NULL (none set, or an empty one that leaves the option alone);
 * *name says which one was read.
 */
const char *optspec_env(const struct optspec *o, enum optspec_env_mode mode, const char **name);

/*
 * The rule of a host path option (OPT_PATH and the verbs' --root and --driver-root): absolute
 * unless relative_ok, and no ".." component. 0, or -EINVAL with err saying what is wrong.
 */
int optspec_check_path(const char *v, bool relative_ok, struct gerr *err);

/* Free the owned strings (STR, PATH, FILE) of opts and set them to NULL. */
void optspec_free(const struct optspec *rows, void *opts);

/* The word of an ENUM row's value, or "?" */
const char *optspec_enum_name(const struct optspec *o, int value);

/* Whether a flag takes a value: getopt_long's has_arg of a row. */
int optspec_has_arg(const struct optspec *o);

/* A flag users bring from elsewhere, and what to use instead. */
struct optspec_hint {
	const char *flag, *hint;
};

/* How a bad value is reported: "<src> 'v' is not valid: <why>", or "<src>: <name>: <why>, got \"v\"". */
enum optspec_msg { OPT_MSG_VALUE, OPT_MSG_NAME };

/* How a verb's command line is read. */
struct optspec_cli {
	const struct optspec *rows; /* ends with OPT_END; HELP and VERSION rows among them */
	enum optspec_env_mode env;
	enum optspec_msg msg;
	bool version_v;                   /* -v is --version (urfave/cli's alias) when no row takes -v */
	bool operands;                    /* arguments after the options are the verb's (else: an error) */
	bool getopt_says;                 /* getopt prints its own message for an unknown option or a missing value */
	bool stop_at_operand;             /* the first operand ends the options (a verb of verbs: cdi-hook ACTION) */
	const struct optspec_hint *hints; /* ends with a NULL flag; or NULL */
	/*
	 * The config-file layer, between the defaults and the env vars: file_opt names the row whose value
	 * (flag, else env var) is the file's path; load_file reads it and sets each key with
	 * optspec_set_key(). NULL: the verb has no file.
	 */
	const char *file_opt;
	int (*load_file)(void *opts, const char *path, struct gerr *err);
	/* Values that follow from others, after every layer; or NULL. */
	int (*finish)(void *opts, struct gerr *err);
	/* Where in opts the engine keeps the struct optspec_given of the parse; 0: it keeps none. */
	size_t given_off;
};

/* What the command line asks for: run, print the help or the version, or stop (a CALL row did its work: exit 0). */
enum optspec_action { OPTSPEC_RUN, OPTSPEC_HELP, OPTSPEC_VERSION, OPTSPEC_STOP };

/* What went wrong in optspec_parse(): the command line's shape, a value, or the config file (reading or a value in it).
 */
enum optspec_fail { OPTSPEC_OK, OPTSPEC_FAIL_USAGE, OPTSPEC_FAIL_VALUE, OPTSPEC_FAIL_FILE };

/*
 * Apply the layers to opts: defaults, the config file, env vars, then the flags of argv (argv[0] is
 * the verb). --version wins over --help wherever they are; with either, no value is applied; past
 * either, other flags are not checked. A CALL row returning OPTSPEC_DONE stops the flags there
 * (*action OPTSPEC_STOP).
 * 0 with optind at the first operand, or a negative errno with err naming the source of the
 * bad value ("--flag", "env X", "file:line:col key") and *fail saying which kind of failure.
 */
int optspec_parse(const struct optspec_cli *c, int argc, char **argv, void *opts, enum optspec_action *action,
		  enum optspec_fail *fail, struct gerr *err);

/* A config-file value: key's row set from text; where is "file:line:col". -ENOKEY when no row has key. */
int optspec_set_key(const struct optspec_cli *c, void *opts, const char *key, const char *text, const char *where,
		    struct gerr *err);

/* Only the defaults (a reader of the config file without the command line). */
int optspec_defaults(const struct optspec_cli *c, void *opts, struct gerr *err);

/*
 * Where the value of rows[i] came from, by the given record g (NULL: none kept, OPTSPEC_SRC_NONE);
 * the source in words into buf when buf is not NULL: "--name", "env NAME", "the config file", "the
 * default".
 */
enum optspec_src optspec_source(const struct optspec *rows, size_t i, const struct optspec_given *g, char *buf,
				size_t size);

/* A row's short letter in cli: its own, or -v for --version (version_v). */
int optspec_short(const struct optspec_cli *c, const struct optspec *o);

/*
 * The rows as text (optspec_doc.c): --help, man pages and shell completion all take a row's words
 * from these, so they say the same.
 */

/* Where --help text wraps. */
#define OPTSPEC_HELP_WIDTH 110

/* One row of --help on f: "  -o, --name ARG   help (env X; default D; file K)". */
void optspec_help_row(FILE *f, const struct optspec *o, int short_name);
/* text on f from column col on, wrapped at OPTSPEC_HELP_WIDTH, continuation lines starting at col; at: where f is. */
void optspec_wrap(FILE *f, const char *text, size_t col, size_t at);

/* One row as a man page item (roff: .TP, the flag in bold, its argument in italics, the help). */
void optspec_man_row(FILE *f, const struct optspec *o, int short_name);
/* text for roff: backslashes and dashes escaped, a break allowed after a comma, a line that starts with '.' or '\'' not
 * a request. */
void optspec_roff(FILE *f, const char *text);

/* What a row's value is, for a shell completing it. */
enum optspec_value {
	OPTSPEC_VALUE_NONE,  /* the flag takes no value */
	OPTSPEC_VALUE_TEXT,  /* anything: nothing to offer */
	OPTSPEC_VALUE_FILE,  /* a file (OPT_FILE, OPT_PATH, an argument named FILE or PATH) */
	OPTSPEC_VALUE_DIR,   /* a directory (an argument named DIR) */
	OPTSPEC_VALUE_WORD,  /* one of .names (OPT_ENUM) */
	OPTSPEC_VALUE_WORDS, /* a comma list of .names (OPT_FLAGS) */
	OPTSPEC_VALUE_BOOL,  /* an optional =true|false (OPT_BOOL) */
};
enum optspec_value optspec_value(const struct optspec *o);
