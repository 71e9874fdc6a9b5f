/* SPDX-License-Identifier: Apache-2.0 */
/* The option engine of every verb but plugin: getopt_long, env fallbacks, defaults and --help from one table. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/options.h"
#include "util/argv.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/opt.h"

#define MAX_ROWS    48
#define HELP_COLUMN 30 /* where the help text of an option starts */
#define HELP_WIDTH  110

/* Rows every verb gets after its own. */
static const struct cmd_opt extra_rows[] = {
    {.name = "help", .short_name = 'h', .kind = CMD_OPT_HELP, .help = "this text"},
    {.name = "version",
     .kind = CMD_OPT_VERSION,
     .help = "gpulet's version and the upstream version this command matches"},
};

/*
 * The upstream programs gpulet's verbs stand in for, and the upstream version whose flags, env vars
 * and output they were checked against (docs/reference/: device-plugin.md for k8s-device-plugin
 * v0.20.0, monitoring-doctor.md for dcgm-exporter, cdi.md for the NVIDIA Container Toolkit).
 */
static const struct {
	const char *verb, *program, *upstream;
} upstreams[] = {
    {"plugin", "nvidia-device-plugin", "NVIDIA k8s-device-plugin v0.20.0"},
    {"labels", "gpu-feature-discovery", "NVIDIA k8s-device-plugin v0.20.0 (GPU Feature Discovery)"},
    {"mps-control-daemon", "mps-control-daemon", "NVIDIA k8s-device-plugin v0.20.0"},
    {"exporter", "dcgm-exporter", "NVIDIA dcgm-exporter 4.5.3-4.8.2"},
    {"cdi", "nvidia-ctk cdi", "NVIDIA Container Toolkit (snapshot d34b304, 2026-08)"},
    {"cdi-hook", "nvidia-cdi-hook", "NVIDIA Container Toolkit (snapshot d34b304, 2026-08)"},
};

void cmd_print_version(FILE *f, const char *verb)
{
	size_t l = verb ? strcspn(verb, " ") : 0;

	fprintf(f, "gpulet version %s\n", GPULET_VERSION);
	for (size_t i = 0; i < ELEMENTSOF(upstreams); i++)
		if (!verb || (strlen(upstreams[i].verb) == l && strncmp(verb, upstreams[i].verb, l) == 0))
			fprintf(f, "gpulet %s replaces %s, matching %s\n", upstreams[i].verb, upstreams[i].program,
				upstreams[i].upstream);
}

int cmd_usage_error(const struct cmd_verb *v, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gpulet %s: ", v->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

int cmd_set_root(void *opts, const char *value, struct gerr *err)
{
	static char abs[PATH_MAX]; /* one --root per process */
	struct cmd_common *c = opts;

	if (!*value || *value == '/') {
		c->nvml.root = value;
		return 0;
	}
	if (!getcwd(abs, sizeof(abs)))
		return gerr_set(err, errno, "cannot make '%s' absolute: %s; give an absolute path", value,
				strerror(errno));
	if (strlen(abs) + 1 + strlen(value) >= sizeof(abs))
		return gerr_set(err, ENAMETOOLONG, "'%s' is too long", value);
	strcat(strcat(abs, "/"), value);
	c->nvml.root = abs;
	return 0;
}

int cmd_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int cmd_parse_user(const char *s, unsigned *ret_uid, unsigned *ret_gid)
{
	unsigned uid, gid;
	char tail;

	if (sscanf(s, "%u:%u%c", &uid, &gid, &tail) == 2) {
		*ret_uid = uid;
		*ret_gid = gid;
		return 0;
	}
	if (sscanf(s, "%u%c", &uid, &tail) == 1) {
		*ret_uid = *ret_gid = uid;
		return 0;
	}
	return -EINVAL;
}

bool cmd_print_json(const char *verb, json_t *doc)
{
	if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
		fprintf(stderr, "gpulet %s: out of memory\n", verb);
		return false;
	}
	putchar('\n');
	return true;
}

int cmd_set_log_level(void *opts, const char *value, struct gerr *err)
{
	return log_set_level_name(value) < 0 ? gerr_set(err, EINVAL, "unknown log level") : 0;
}

static size_t n_rows(const struct cmd_verb *v)
{
	size_t n = 0;

	while (v->opts[n].kind != CMD_OPT_END)
		n++;
	return n;
}

/* The row at index i, counting the rows every verb gets after its own. */
static const struct cmd_opt *row(const struct cmd_verb *v, size_t i)
{
	return i < n_rows(v) ? &v->opts[i] : &extra_rows[i - n_rows(v)];
}

/* Set one row from a value; src names where the value came from ("--flag", "env X", "default"). */
static int apply(const struct cmd_verb *v, const struct cmd_opt *o, void *opts, const char *value, const char *src)
{
	struct gerr err = {0};
	void *field = (char *)opts + o->off;
	int r = 0;

	switch (o->kind) {
	case CMD_OPT_STR:
		*(const char **)field = value;
		return 0;
	case CMD_OPT_SET:
		/* given on the command line: true; an env var of a switch is a boolean */
		if (!value)
			return *(bool *)field = true, 0;
		/* fall through */
	case CMD_OPT_BOOL:
		r = opt_parse_bool(value ? value : "true", field);
		if (r < 0)
			gerr_set(&err, EINVAL, "want true or false");
		break;
	case CMD_OPT_UINT: {
		unsigned long n;

		r = cmd_parse_uint(value, o->min, o->max, &n);
		if (r < 0)
			gerr_set(&err, EINVAL, "want %lu..%lu", o->min, o->max);
		else
			*(unsigned *)field = (unsigned)n;
		break;
	}
	case CMD_OPT_CALL:
		r = o->call(opts, value, &err);
		break;
	case CMD_OPT_HELP:
		cmd_help(v, stdout);
		return CMD_OPT_DONE;
	case CMD_OPT_VERSION:
		cmd_print_version(stdout, v->name);
		return CMD_OPT_DONE;
	case CMD_OPT_END:
		break;
	}
	if (r < 0) {
		const char *why = err.msg[0] ? err.msg : o->want ? o->want : "see --help";

		if (value)
			cmd_usage_error(v, "%s '%s' is not valid: %s", src, value, why);
		else
			cmd_usage_error(v, "%s: %s", src, why);
		return -EINVAL;
	}
	return r;
}

/*
 * The value of a row's env vars, or NULL; *name says which. An empty value is skipped, except for a
 * urfave verb, where the first env var that is set wins even when empty: a string takes "", a
 * switch false, any other kind keeps what it has (urfave/cli v2's Apply(), go-parsing.md).
 */
static const char *env_value(const struct cmd_verb *v, const struct cmd_opt *o, const char **name)
{
	for (size_t k = 0; k < ELEMENTSOF(o->env) && o->env[k]; k++) {
		const char *val = getenv(o->env[k]);

		*name = o->env[k];
		if (val && *val)
			return val;
		if (!val || !v->urfave)
			continue;
		if (o->kind == CMD_OPT_STR)
			return val;
		return o->kind == CMD_OPT_SET || o->kind == CMD_OPT_BOOL ? "false" : NULL;
	}
	return NULL;
}

/* Defaults, then env vars: the layers under the command line. */
static int apply_defaults_and_env(const struct cmd_verb *v, void *opts)
{
	for (size_t i = 0; i < n_rows(v); i++) {
		const struct cmd_opt *o = &v->opts[i];
		const char *env = NULL, *val;
		int r = 0;

		if (o->def)
			r = apply(v, o, opts, o->def, "default");
		if (r >= 0 && (val = env_value(v, o, &env)))
			r = apply(v, o, opts, val, env);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A row's short letter: its own, or -v for --version in a urfave verb that has no other -v. */
static int short_of(const struct cmd_verb *v, const struct cmd_opt *o)
{
	if (o->short_name || o->kind != CMD_OPT_VERSION || !v->urfave)
		return o->short_name;
	for (size_t i = 0; i < n_rows(v); i++)
		if (v->opts[i].short_name == 'v')
			return 0;
	return 'v';
}

static int has_arg(const struct cmd_opt *o)
{
	if (o->kind == CMD_OPT_BOOL)
		return optional_argument;
	return o->arg ? required_argument : no_argument;
}

int cmd_parse(const struct cmd_verb *v, int argc, char **argv, void *opts)
{
	struct option lo[2 * MAX_ROWS + 1] = {0};
	char shorts[3 * MAX_ROWS + 1] = "", flag[64];
	size_t n = 0, total = n_rows(v) + ELEMENTSOF(extra_rows);
	int c, r;

	if (total > MAX_ROWS)
		return cmd_usage_error(v, "internal error: too many options");
	r = apply_defaults_and_env(v, opts);
	if (r < 0)
		return EXIT_USAGE;
	for (size_t i = 0; i < total; i++) {
		const struct cmd_opt *o = row(v, i);
		int sh = short_of(v, o), val = sh ? sh : 256 + (int)i;

		lo[n++] = (struct option){o->name, has_arg(o), NULL, val};
		if (o->alias)
			lo[n++] = (struct option){o->alias, has_arg(o), NULL, val};
		if (sh) {
			size_t l = strlen(shorts);

			shorts[l++] = (char)sh;
			if (has_arg(o) != no_argument)
				shorts[l++] = ':';
			if (has_arg(o) == optional_argument)
				shorts[l++] = ':';
			shorts[l] = '\0';
		}
	}
	argv_single_dash_longs(argc, argv, lo, shorts);
	optind = 1;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct cmd_opt *o = NULL;

		for (size_t i = 0; i < total && !o; i++)
			if (c == (short_of(v, row(v, i)) ? short_of(v, row(v, i)) : 256 + (int)i))
				o = row(v, i);
		if (!o) { /* getopt said what is wrong */
			cmd_help(v, stderr);
			return EXIT_USAGE;
		}
		snprintf(flag, sizeof(flag), "--%s", o->name);
		r = apply(v, o, opts, optarg, flag);
		if (r < 0)
			return EXIT_USAGE;
		if (r == CMD_OPT_DONE)
			return 0;
	}
	if (!v->operands && optind < argc)
		return cmd_usage_error(v, "unexpected argument '%s'", argv[optind]);
	return CMD_CONTINUE;
}

/* Print text from column `col` on, wrapping at HELP_WIDTH; continuation lines start at `col`. */
static void wrap(FILE *f, const char *text, size_t col, size_t at)
{
	while (*text) {
		size_t len = strcspn(text, " ");

		if (at > col && at + 1 + len > HELP_WIDTH) {
			fprintf(f, "\n%*s", (int)col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)len, text);
		at += len;
		text += len;
		while (*text == ' ')
			text++;
	}
}

static void help_row_print(FILE *f, const struct cmd_verb *v, const struct cmd_opt *o)
{
	int sh = short_of(v, o);
	char left[160], text[512], arg[48] = "";
	size_t at, l = 0;

	if (o->kind == CMD_OPT_BOOL)
		snprintf(arg, sizeof(arg), "[=BOOL]");
	else if (o->arg)
		snprintf(arg, sizeof(arg), " %s", o->arg);
	if (sh)
		l += (size_t)snprintf(left + l, sizeof(left) - l, "-%c, ", sh);
	l += (size_t)snprintf(left + l, sizeof(left) - l, "--%s%s", o->name, arg);
	if (o->alias)
		snprintf(left + l, sizeof(left) - l, ", --%s%s", o->alias, arg);
	l = (size_t)snprintf(text, sizeof(text), "%s", o->help);
	if (o->env[0] || o->def)
		snprintf(text + l, sizeof(text) - l, " (%s%s%s%s%s%s%s)", o->env[0] ? "env " : "",
			 o->env[0] ? o->env[0] : "", o->env[1] ? ", " : "", o->env[1] ? o->env[1] : "",
			 o->env[0] && o->def ? "; " : "", o->def ? "default " : "", o->def ? o->def : "");
	at = (size_t)fprintf(f, "  %s", left);
	if (at + 2 > HELP_COLUMN)
		fprintf(f, "\n%*s", HELP_COLUMN, "");
	else
		fprintf(f, "%*s", (int)(HELP_COLUMN - at), "");
	wrap(f, text, HELP_COLUMN, HELP_COLUMN);
	fputc('\n', f);
}

void cmd_help(const struct cmd_verb *v, FILE *f)
{
	fprintf(f, "Usage: gpulet %s %s\n\n", v->name, v->synopsis);
	if (v->about)
		fprintf(f, "%s\n\n", v->about);
	fprintf(f, "Options:\n");
	for (size_t i = 0; i < n_rows(v) + ELEMENTSOF(extra_rows); i++)
		help_row_print(f, v, row(v, i));
	if (v->notes)
		v->notes(f);
	if (v->footer)
		fprintf(f, "\n%s\n", v->footer);
	fprintf(f, "\nExample:\n  %s\n", v->example);
}
