/* SPDX-License-Identifier: Apache-2.0 */
/* util/optspec: the one option engine: the setter per kind, env vars, the layers, getopt. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/opt.h"
#include "util/log.h"
#include "util/optspec.h"

enum { COLOR_RED = 1, COLOR_GREEN = 2, COLOR_BLUE = 4 };
static const struct enum_name colors[] = {{COLOR_RED, "red"}, {COLOR_GREEN, "green"}, {COLOR_BLUE, "blue"}};

struct t_opts {
	const char *argv_text;
	char *str, *path, *file;
	char buf[8];
	bool set, sw;
	unsigned n, bits;
	int64_t dur;
	int color;
	unsigned calls;
	char *file_seen;
};

static int count_call(void *opts, const char *value, struct gerr *err)
{
	struct t_opts *t = opts;

	(void)err;
	t->calls += value && streq(value, "stop") ? 100 : 1;
	return value && streq(value, "stop") ? OPTSPEC_DONE : 0;
}

#define F(x) offsetof(struct t_opts, x)
static const struct optspec rows[] = {
    {.name = "text", .short_name = 't', .kind = OPT_ARGV, .arg = "T", .env = {"T_TEXT"}, .off = F(argv_text)},
    {.name = "str",
     .kind = OPT_STR,
     .arg = "S",
     .env = {"T_STR1", "T_STR2"},
     .key = "a.str",
     .def = "d",
     .off = F(str)},
    {.name = "path", .kind = OPT_PATH, .arg = "P", .key = "a.path", .off = F(path), .max = 12},
    {.name = "file", .kind = OPT_FILE, .arg = "F", .env = {"T_FILE"}, .off = F(file)},
    {.name = "buf",
     .kind = OPT_STR,
     .arg = "B",
     .key = "a.buf",
     .off = F(buf),
     .size = sizeof(((struct t_opts *)0)->buf)},
    {.name = "set", .short_name = 's', .kind = OPT_SET, .env = {"T_SET"}, .off = F(set)},
    {.name = "sw", .alias = "switch", .kind = OPT_BOOL, .env = {"T_SW"}, .key = "a.sw", .def = "true", .off = F(sw)},
    {.name = "n", .kind = OPT_UINT, .arg = "N", .env = {"T_N"}, .def = "7", .off = F(n), .min = 1, .max = 10},
    {.name = "dur", .kind = OPT_DURATION, .arg = "D", .env = {"T_DUR"}, .key = "a.dur", .def = "1m30s", .off = F(dur)},
    {.name = "color",
     .kind = OPT_ENUM,
     .arg = "C",
     .env = {"T_COLOR"},
     .key = "a.color",
     .def = "red",
     .off = F(color),
     OPTSPEC_NAMES(colors)},
    {.name = "bits",
     .kind = OPT_FLAGS,
     .arg = "B",
     .env = {"T_BITS"},
     .def = "red",
     .off = F(bits),
     OPTSPEC_NAMES(colors)},
    {.name = "call", .kind = OPT_CALL, .arg = "X", .off = 0, .call = count_call},
    {.name = "list", .kind = OPT_CALL, .call = count_call}, /* takes no value: called with NULL */
    {.name = "help", .short_name = 'h', .kind = OPT_HELP},
    {.name = "version", .kind = OPT_VERSION},
    {0},
};

static const char *const env_names[] = {"T_TEXT", "T_STR1", "T_STR2", "T_FILE",  "T_SET",
					"T_SW",   "T_N",    "T_DUR",  "T_COLOR", "T_BITS"};

static int setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(env_names); i++)
		unsetenv(env_names[i]);
	return 0;
}

static const struct optspec_cli file_cli = {.rows = rows, .msg = OPT_MSG_NAME};

/* A file layer that sets keys from "key=value" pairs in the path itself (no file is read). */
static int load_pairs(void *opts, const char *path, struct gerr *err)
{
	struct t_opts *t = opts;
	_cleanup_free_ char *copy = strdup(path);
	char *save = NULL;

	free(t->file_seen);
	t->file_seen = strdup(path);
	for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');
		int r;

		*eq = '\0';
		r = optspec_set_key(&file_cli, opts, kv, eq + 1, "f.yaml:1:1", err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse(struct t_opts *t, enum optspec_env_mode mode, bool with_file, const char *const *args,
		 enum optspec_action *action, enum optspec_fail *fail, struct gerr *err)
{
	char *argv[32] = {(char *)"verb"};
	int argc = 1;
	struct optspec_cli c = {.rows = rows, .env = mode, .version_v = mode == OPT_ENV_EMPTY_URFAVE};

	if (with_file) {
		c.file_opt = "file";
		c.load_file = load_pairs;
	}
	for (; args && *args; args++)
		argv[argc++] = (char *)*args;
	/* a Go-style -name=v is rewritten into a string util/argv.c keeps for the process (a reparse reuses it) */
	return optspec_parse(&c, argc, argv, t, action, fail, err);
}

static void done(struct t_opts *t)
{
	optspec_free(rows, t);
	free(t->file_seen);
	memset(t, 0, sizeof(*t));
}

/* Defaults through the same setter; every kind parsed into its type. */
static void test_kinds(void **state)
{
	static const char *const args[] = {"--text=hi", "--str",          "s",      "--path=/p", "--buf",  "1234567",
					   "--set",     "--switch=false", "--n",    "10",        "--dur",  "2h0m0s",
					   "--color",   "blue",           "--bits", "red,green", "--bits", "blue",
					   NULL};
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, NULL, &a, &f, &err), 0);
	assert_string_equal(t.str, "d");
	assert_true(t.sw);
	assert_int_equal(t.n, 7);
	assert_int_equal(t.dur, 90 * OPT_NSEC_PER_SEC);
	assert_int_equal(t.color, COLOR_RED);
	assert_int_equal(t.bits, COLOR_RED);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, args, &a, &f, &err), 0);
	assert_int_equal(a, OPTSPEC_RUN);
	assert_string_equal(t.argv_text, "hi");
	assert_string_equal(t.str, "s");
	assert_string_equal(t.path, "/p");
	assert_string_equal(t.buf, "1234567");
	assert_true(t.set);
	assert_false(t.sw);
	assert_int_equal(t.n, 10);
	assert_int_equal(t.dur, 7200 * OPT_NSEC_PER_SEC);
	assert_int_equal(t.color, COLOR_BLUE);
	assert_int_equal(t.bits, COLOR_RED | COLOR_GREEN | COLOR_BLUE); /* a repeated list adds up */
	done(&t);
}

/* Every bad value fails with its source named, the same way from each source. */
static void test_errors_name_the_source(void **state)
{
	static const struct {
		const char *arg, *want;
	} bad[] = {
	    {"--path=rel", "--path 'rel' is not valid: must be an absolute path"},
	    {"--path=/a/../b", "'..'"},
	    {"--path=/23456789abcd",
	     "--path '/23456789abcd' is not valid: longer than 12 characters"}, /* an owned copy */
	    {"--buf=12345678", "--buf '12345678' is not valid: longer than 7 characters"},
	    {"--sw=yes", "want true or false"},
	    {"--n=11", "want a whole number in 1..10"},
	    {"--n=-1", "want a whole number in 1..10"},
	    {"--n= 5", "want a whole number"},
	    {"--n=+5", "want a whole number"},
	    {"--n=1_0", "want a whole number"},
	    {"--dur=-5s", "want at least 0ms"},
	    {"--dur=60", "Go duration"},
	    {"--color=pink", "must be one of red|green|blue"},
	    {"--bits=red,,pink", "an empty name in the list"},
	    {"--bits=", "an empty name in the list"},
	    {"--bits=red,", "an empty name in the list"},
	};
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		const char *args[] = {bad[i].arg, NULL};
		struct gerr err = {0};

		assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, args, &a, &f, &err) < 0);
		assert_int_equal(f, OPTSPEC_FAIL_VALUE);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("%s: '%s' lacks '%s'", bad[i].arg, err.msg, bad[i].want);
		done(&t);
	}
	setenv("T_COLOR", "pink", 1);
	{
		struct gerr err = {0};

		assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, NULL, &a, &f, &err) < 0);
		assert_non_null(strstr(err.msg, "env T_COLOR 'pink' is not valid"));
	}
	unsetenv("T_COLOR");
	{
		struct gerr err = {0};

		assert_true(
		    parse(&t, OPT_ENV_EMPTY_UNSET, true, (const char *[]){"--file=a.dur=5", NULL}, &a, &f, &err) < 0);
		assert_non_null(
		    strstr(err.msg, "f.yaml:1:1: a.dur: dur: want a Go duration such as 90s, 1m30s, 500ms, got \"5\""));
	}
	done(&t);
}

/* default < file < env < flag; the file's path from its flag, else its env var. */
static void test_layers(void **state)
{
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	setenv("T_FILE", "a.color=green;a.str=file;a.dur=5s", 1);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, true, NULL, &a, &f, &err), 0);
	assert_int_equal(t.color, COLOR_GREEN);
	assert_string_equal(t.str, "file");
	assert_int_equal(t.dur, 5 * OPT_NSEC_PER_SEC);
	setenv("T_STR2", "env2", 1);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, true, NULL, &a, &f, &err), 0);
	assert_string_equal(t.str, "env2");
	setenv("T_STR1", "env1", 1); /* the first env var wins */
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, true, NULL, &a, &f, &err), 0);
	assert_string_equal(t.str, "env1");
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, true, (const char *[]){"--str=flag", NULL}, &a, &f, &err), 0);
	assert_string_equal(t.str, "flag");
	/* the flag names the file over the env var */
	assert_int_equal(
	    parse(&t, OPT_ENV_EMPTY_UNSET, true, (const char *[]){"--file=a.color=blue", NULL}, &a, &f, &err), 0);
	assert_int_equal(t.color, COLOR_BLUE);
	assert_string_equal(t.file_seen, "a.color=blue");
	assert_true(t.file[0] == '/'); /* a relative path made absolute */
	done(&t);
	setup(NULL);
}

/* urfave/cli v2: a set-but-empty env var counts (text "", switch false, number keeps its value). */
static void test_empty_env(void **state)
{
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	setenv("T_STR1", "", 1);
	setenv("T_STR2", "second", 1);
	setenv("T_SW", "", 1);
	setenv("T_N", "", 1);
	setenv("T_DUR", "", 1);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, NULL, &a, &f, &err), 0);
	assert_string_equal(t.str, "second");
	assert_true(t.sw);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_URFAVE, false, NULL, &a, &f, &err), 0);
	assert_string_equal(t.str, "");
	assert_false(t.sw);
	assert_int_equal(t.n, 7);
	assert_int_equal(t.dur, 90 * OPT_NSEC_PER_SEC);
	setenv("T_COLOR", "", 1); /* a choice set to "" is checked, and refused */
	assert_true(parse(&t, OPT_ENV_EMPTY_URFAVE, false, NULL, &a, &f, &err) < 0);
	done(&t);
	setup(NULL);
}

/* --version wins over --help; -v is --version with version_v; a CALL sees each repeat and may stop. */
static void test_actions(void **state)
{
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	assert_int_equal(
	    parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--help", "--version", NULL}, &a, &f, &err), 0);
	assert_int_equal(a, OPTSPEC_VERSION);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"-h", "--no-such", NULL}, &a, &f, &err),
			 0);
	assert_int_equal(a, OPTSPEC_HELP);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_URFAVE, false, (const char *[]){"-v", NULL}, &a, &f, &err), 0);
	assert_int_equal(a, OPTSPEC_VERSION);
	assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"-v", NULL}, &a, &f, &err) < 0);
	assert_int_equal(f, OPTSPEC_FAIL_USAGE);
	assert_non_null(strstr(err.msg, "unknown option '-v'"));
	assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--n", NULL}, &a, &f, &err) < 0);
	assert_non_null(strstr(err.msg, "'--n' needs a value"));
	assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"operand", NULL}, &a, &f, &err) < 0);
	assert_non_null(strstr(err.msg, "unexpected argument 'operand'"));
	t.calls = 0;
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false,
			       (const char *[]){"--call=a", "--call=b", "--call=stop", "--call=c", NULL}, &a, &f, &err),
			 0);
	assert_int_equal(t.calls, 102);
	assert_int_equal(a, OPTSPEC_STOP);
	/* Go-style single-dash long names, as urfave/cli takes them */
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"-color=green", NULL}, &a, &f, &err),
			 0);
	assert_int_equal(t.color, COLOR_GREEN);
	done(&t);
}

/* gpulet's own interval options: a Go duration, or a bare number in the row's unit (seconds). */
static void test_bare_unit(void **state)
{
	static const struct optspec row = {
	    .name = "every", .kind = OPT_DURATION, .arg = "D", .min = 1000, .max = 3600 * 1000, .bare_ms = 1000};
	static const struct {
		const char *text;
		int64_t ns;
	} ok[] = {{"90", 90 * OPT_NSEC_PER_SEC}, {"1m30s", 90 * OPT_NSEC_PER_SEC}, {"1", OPT_NSEC_PER_SEC}};
	static const char *const bad[] = {"0", "3601", "999999999999", "1.5", "-5", " 5"};
	struct gerr err = {0};
	int64_t ns = 0;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		assert_int_equal(optspec_set(&row, &ns, ok[i].text, &err), 0);
		assert_int_equal(ns, ok[i].ns);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (optspec_set(&row, &ns, bad[i], &err) == 0)
			fail_msg("'%s' was taken", bad[i]);
}

/* Go's ParseUint(s, 0) forms; list items trimmed on both sides. */
static void test_go_forms(void **state)
{
	static const struct {
		const char *arg;
		unsigned n;
	} nums[] = {{"--n=0x0a", 10}, {"--n=010", 8}, {"--n=0b101", 5}, {"--n=0o7", 7}, {"--n=9", 9}};
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(nums); i++) {
		assert_int_equal(
		    parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){nums[i].arg, NULL}, &a, &f, &err), 0);
		assert_int_equal(t.n, nums[i].n);
		done(&t);
	}
	assert_int_equal(
	    parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--bits= red , blue ", NULL}, &a, &f, &err), 0);
	assert_int_equal(t.bits, COLOR_RED | COLOR_BLUE);
	/* Go's "-t=-" is -t with "-" (getopt alone would take "=-") */
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"-t=-", NULL}, &a, &f, &err), 0);
	assert_string_equal(t.argv_text, "-");
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"-t=", NULL}, &a, &f, &err), 0);
	assert_string_equal(t.argv_text, "");
	done(&t);
}

/* What getopt_long alone gets wrong: prefixes, the token of a bad short option, groups, a stale env var. */
static void test_getopt_edges(void **state)
{
	char many[300] = "-";
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	/* a unique prefix is not the option ("--colo" is not --color), even before --help */
	assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--colo=red", NULL}, &a, &f, &err) < 0);
	assert_non_null(strstr(err.msg, "unknown option '--colo=red'"));
	assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--help", "--colo", NULL}, &a, &f, &err) <
		    0);
	/* the bad letter of a group is named, not the token before it */
	assert_true(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--n=3", "-sZs", NULL}, &a, &f, &err) < 0);
	assert_non_null(strstr(err.msg, "unknown option '-Z'"));
	/* the next parse starts afresh (optind 0), not inside the group the last one stopped in */
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--n=4", NULL}, &a, &f, &err), 0);
	assert_int_equal(t.n, 4);
	assert_false(t.set);
	/* one token, many options: more than argv has tokens */
	memset(many + 1, 's', sizeof(many) - 2);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){many, many, NULL}, &a, &f, &err), 0);
	assert_true(t.set);
	/* a flag wins over its env var, which is not even checked */
	setenv("T_COLOR", "pink", 1);
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--color=green", NULL}, &a, &f, &err),
			 0);
	assert_int_equal(t.color, COLOR_GREEN);
	unsetenv("T_COLOR");
	/* a CALL row that takes no value is called with NULL */
	t.calls = 0;
	assert_int_equal(parse(&t, OPT_ENV_EMPTY_UNSET, false, (const char *[]){"--list", NULL}, &a, &f, &err), 0);
	assert_int_equal(t.calls, 1);
	done(&t);
}

/* A table that breaks the engine's rules fails every parse with an internal error. */
static void test_bad_tables(void **state)
{
	static const struct optspec argv_key[] = {{.name = "a", .kind = OPT_ARGV, .arg = "A", .key = "k"}, {0}};
	static const struct optspec uint_range[] = {{.name = "a", .kind = OPT_UINT, .arg = "N"}, {0}};
	static const struct optspec twice[] = {
	    {.name = "a", .kind = OPT_SET}, {.name = "b", .alias = "a", .kind = OPT_SET}, {0}};
	static const struct optspec size_on_bool[] = {{.name = "a", .kind = OPT_BOOL, .size = 8}, {0}};
	static const struct optspec *const bad[] = {argv_key, uint_range, twice, size_on_bool};
	char *argv[] = {(char *)"verb", NULL};
	struct t_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct optspec_cli c = {.rows = bad[i]};
		struct gerr err = {0};

		assert_true(optspec_parse(&c, 1, argv, &t, &a, &f, &err) < 0);
		assert_non_null(strstr(err.msg, "internal error: option table: --"));
	}
}

/* --log-level: one row for every verb (util/log.h), any case, "warning" for warn; a plain ENUM row is exact. */
static void test_log_level_row(void **state)
{
	static const struct optspec row = LOG_OPT_LEVEL(0);
	static const struct {
		const char *text;
		int want;
	} ok[] = {{"INFO", LOG_LVL_INFO}, {"warning", LOG_LVL_WARN}, {"Warn", LOG_LVL_WARN}, {"DEBUG", LOG_LVL_DEBUG}};
	struct gerr err = {0};
	struct t_opts t = {0};
	int level = -1;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		assert_int_equal(optspec_set(&row, &level, ok[i].text, &err), 0);
		assert_int_equal(level, ok[i].want);
	}
	assert_int_equal(optspec_set(&row, &level, "loud", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "warning"));
	assert_int_equal(optspec_set(optspec_by_name(rows, "color"), &t, "RED", &err), -EINVAL);
}

/* The given record: where each row's value came from, and "" given; urfave's empty env var counts as given. */
static void test_given(void **state)
{
	struct g_opts {
		const char *a, *b;
		unsigned n;
		struct optspec_given given;
	};
	static const struct optspec g_rows[] = {
	    {.name = "a", .kind = OPT_ARGV, .arg = "A", .env = {"T_GA1", "T_GA2"}, .off = offsetof(struct g_opts, a)},
	    {.name = "b", .kind = OPT_ARGV, .arg = "B", .def = "d", .off = offsetof(struct g_opts, b)},
	    {.name = "n",
	     .kind = OPT_UINT,
	     .arg = "N",
	     .env = {"T_GN"},
	     .def = "3",
	     .off = offsetof(struct g_opts, n),
	     .max = 9},
	    {0},
	};
	const struct optspec_cli c = {
	    .rows = g_rows, .env = OPT_ENV_EMPTY_URFAVE, .given_off = offsetof(struct g_opts, given)};
	char *argv[] = {(char *)"verb", (char *)"--b=", NULL};
	struct g_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};
	char words[64];

	(void)state;
	setenv("T_GA2", "", 1);
	setenv("T_GN", "", 1);
	assert_int_equal(optspec_parse(&c, 2, argv, &t, &a, &f, &err), 0);
	/* a: the second env var, set to "" */
	assert_int_equal(optspec_source(g_rows, 0, &t.given, words, sizeof(words)), OPTSPEC_SRC_ENV);
	assert_string_equal(words, "env T_GA2");
	assert_true(t.given.empty[0]);
	/* b: "" on the command line over its default */
	assert_int_equal(optspec_source(g_rows, 1, &t.given, words, sizeof(words)), OPTSPEC_SRC_FLAG);
	assert_string_equal(words, "--b");
	assert_true(t.given.empty[1] && t.b && !t.b[0]);
	/* n: urfave keeps a number for an empty env var, which still counts as given (and empty) */
	assert_int_equal(t.n, 3);
	assert_int_equal(optspec_source(g_rows, 2, &t.given, NULL, 0), OPTSPEC_SRC_ENV);
	assert_true(t.given.empty[2]);
	unsetenv("T_GA2");
	unsetenv("T_GN");
	assert_int_equal(optspec_parse(&c, 1, argv, &t, &a, &f, &err), 0);
	assert_int_equal(optspec_source(g_rows, 0, &t.given, NULL, 0), OPTSPEC_SRC_NONE);
	assert_int_equal(optspec_source(g_rows, 1, &t.given, words, sizeof(words)), OPTSPEC_SRC_DEFAULT);
	assert_string_equal(words, "the default");
	assert_int_equal(optspec_source(g_rows, 1, NULL, NULL, 0), OPTSPEC_SRC_NONE);
}

/* LIST rows append every value given; env-only rows are no flag; FLAGS with empty_none take "" as none. */
static void test_list_env_only_flags(void **state)
{
	struct l_opts {
		struct optspec_list dirs;
		const char *only;
		unsigned bits;
		bool quiet;
		const char *fact;
	};
	static const struct optspec l_rows[] = {
	    {.name = "dir", .kind = OPT_LIST, .arg = "D", .off = offsetof(struct l_opts, dirs), .max = 2},
	    {.name = "only",
	     .kind = OPT_ARGV,
	     .arg = "X",
	     .env = {"T_ONLY"},
	     .env_only = true,
	     .off = offsetof(struct l_opts, only)},
	    {.name = "bits",
	     .kind = OPT_FLAGS,
	     .arg = "B",
	     .env = {"T_EBITS"},
	     .empty_none = true,
	     .off = offsetof(struct l_opts, bits),
	     OPTSPEC_NAMES(colors)},
	    {.name = "quiet", .kind = OPT_SET, .off = offsetof(struct l_opts, quiet)},
	    {.name = "fact",
	     .kind = OPT_ARGV,
	     .arg = "X",
	     .env = {"T_FACT"},
	     .env_only = true,
	     .env_empty_is_value = true,
	     .off = offsetof(struct l_opts, fact)},
	    {0},
	};
	const struct optspec_cli c = {.rows = l_rows, .env = OPT_ENV_EMPTY_URFAVE, .operands = true};
	const struct optspec_cli stop = {.rows = l_rows, .operands = true, .stop_at_operand = true};
	char *argv[] = {(char *)"verb", (char *)"--dir=a", (char *)"--dir", (char *)"b", NULL};
	char *three[] = {(char *)"verb", (char *)"--dir=a", (char *)"--dir=b", (char *)"--dir=c", NULL};
	char *flag[] = {(char *)"verb", (char *)"--only=x", NULL};
	char *op[] = {(char *)"verb", (char *)"run", (char *)"--quiet", NULL};
	struct l_opts t = {0};
	enum optspec_action a;
	enum optspec_fail f;
	struct gerr err = {0};

	(void)state;
	setenv("T_ONLY", "from-env", 1);
	setenv("T_EBITS", "", 1);
	assert_int_equal(optspec_parse(&c, 4, argv, &t, &a, &f, &err), 0);
	assert_int_equal(t.dirs.n, 2);
	assert_string_equal(t.dirs.v[0], "a");
	assert_string_equal(t.dirs.v[1], "b");
	assert_string_equal(t.only, "from-env");
	assert_int_equal(t.bits, 0);
	memset(&t, 0, sizeof(t));
	assert_true(optspec_parse(&c, 4, three, &t, &a, &f, &err) < 0);
	assert_non_null(strstr(err.msg, "given more than 2 times"));
	/* an env-only row is no command-line flag */
	assert_true(optspec_parse(&c, 2, flag, &t, &a, &f, &err) < 0);
	assert_non_null(strstr(err.msg, "unknown option '--only=x'"));
	setenv("T_EBITS", "red,,blue", 1);
	memset(&t, 0, sizeof(t));
	assert_int_equal(optspec_parse(&c, 1, argv, &t, &a, &f, &err), 0);
	assert_int_equal(t.bits, COLOR_RED | COLOR_BLUE);
	/* stop_at_operand: what follows the first operand is the operand's; an empty env var is unset in this
	 * mode, except for a row whose "" is a value */
	memset(&t, 0, sizeof(t));
	setenv("T_ONLY", "", 1);
	setenv("T_FACT", "", 1);
	assert_int_equal(optspec_parse(&stop, 3, op, &t, &a, &f, &err), 0);
	assert_false(t.quiet);
	assert_string_equal(op[optind], "run");
	assert_null(t.only);
	assert_non_null(t.fact);
	assert_string_equal(t.fact, "");
	unsetenv("T_FACT");
	unsetenv("T_ONLY");
	unsetenv("T_EBITS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_kinds, setup),
	    cmocka_unit_test_setup(test_errors_name_the_source, setup),
	    cmocka_unit_test_setup(test_layers, setup),
	    cmocka_unit_test_setup(test_empty_env, setup),
	    cmocka_unit_test_setup(test_actions, setup),
	    cmocka_unit_test_setup(test_go_forms, setup),
	    cmocka_unit_test_setup(test_getopt_edges, setup),
	    cmocka_unit_test(test_bare_unit),
	    cmocka_unit_test(test_bad_tables),
	    cmocka_unit_test(test_log_level_row),
	    cmocka_unit_test(test_given),
	    cmocka_unit_test(test_list_env_only_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
