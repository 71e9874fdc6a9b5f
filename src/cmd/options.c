/* SPDX-License-Identifier: Apache-2.0 */
/* Every verb's command line: the engine (util/optspec.h) with the printing, --help and --version around it. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/options.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

/* Rows every verb gets after its own. */
static const struct optspec extra_rows[] = {
    {.name = "help", .short_name = 'h', .kind = OPT_HELP, .help = "this text"},
    {.name = "version", .kind = OPT_VERSION, .help = "gpulet's version and the upstream version this command matches"},
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
    {"config-manager", "config-manager", "NVIDIA k8s-device-plugin v0.20.0"},
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

/*
 * A --json run's outcome: the verb that reads --json (NULL: none), whether the run asked for JSON,
 * whether the verb printed its document, and the first error it said (cmd_exit()).
 */
static struct {
	const char *verb;
	bool json, printed;
	char message[1024];
} outcome;

static void say(const char *verb, const char *fmt, va_list ap)
{
	va_list copy;

	va_copy(copy, ap);
	if (!outcome.message[0])
		vsnprintf(outcome.message, sizeof(outcome.message), fmt, copy);
	va_end(copy);
	fprintf(stderr, "gpulet%s%s: ", verb ? " " : "", verb ? verb : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int cmd_usage_error(const struct cmd_verb *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(v->name, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int cmd_fail(const char *verb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(verb, fmt, ap);
	va_end(ap);
	return 1;
}

int cmd_exit(int rc)
{
	_cleanup_free_ char *cmd = NULL;
	json_t *doc;

	if (rc == 0 || !outcome.json || outcome.printed)
		return rc;
	if (asprintf(&cmd, "gpulet %s", outcome.verb) < 0)
		return rc;
	/* a failure that said nothing on stderr is a bug: the message then says so rather than be empty */
	doc = json_pack("{s:{s:s, s:s, s:i}}", "error", "command", cmd, "message",
			outcome.message[0] ? outcome.message : "failed without a message (a bug: please report it)",
			"exit_code", rc);
	if (doc && json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0)
		putchar('\n');
	json_decref(doc);
	return rc;
}

int cmd_set_driver_root(void *opts, const char *value, struct gerr *err)
{
	int r = optspec_check_path(value, false, err);

	if (r < 0)
		return r;
	((struct cmd_common *)opts)->nvml.driver_root = value;
	return 0;
}

int cmd_set_root(void *opts, const char *value, struct gerr *err)
{
	/* a relative --root made absolute, for the life of the process: a verb's options borrow it (as they
	 * borrow argv), and a reload of the same argv gets the same text back */
	static char *kept;
	struct cmd_common *c = opts;
	char *abs;
	int r = optspec_check_path(value, true, err);

	if (r < 0)
		return r;
	if (!*value || *value == '/') {
		c->nvml.root = value;
		return 0;
	}
	r = path_absolute(value, &abs, err);
	if (r < 0)
		return r;
	if (kept && streq(kept, abs)) {
		free(abs);
	} else {
		free(kept);
		kept = abs;
	}
	c->nvml.root = kept;
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
		cmd_fail(verb, "out of memory");
		return false;
	}
	putchar('\n');
	outcome.printed = true;
	return true;
}

/* The verb's rows, then --help and --version, in rows (room for OPTSPEC_MAX_ROWS + 1). */
static int all_rows(const struct cmd_verb *v, struct optspec *rows)
{
	const struct optspec *own = v->cli ? v->cli->rows : v->opts;
	size_t n = optspec_count(own);

	if (n + ELEMENTSOF(extra_rows) > OPTSPEC_MAX_ROWS)
		return -E2BIG;
	memcpy(rows, own, n * sizeof(*rows));
	memcpy(rows + n, extra_rows, sizeof(extra_rows));
	rows[n + ELEMENTSOF(extra_rows)] = (struct optspec){0};
	return 0;
}

static struct optspec_cli cli_of(const struct cmd_verb *v, const struct optspec *rows)
{
	struct optspec_cli c = {
	    .env = v->urfave ? OPT_ENV_EMPTY_URFAVE : OPT_ENV_EMPTY_UNSET,
	    /* -v is --version on every verb, unless a row takes -v (upstream's meaning of it wins) */
	    .version_v = true,
	    .getopt_says = true, /* getopt's own message, then the help */
	    .given_off = offsetof(struct cmd_common, given),
	};

	if (v->cli)
		c = *v->cli;
	c.rows = rows;
	c.operands = v->operands || v->stop_at_operand;
	c.stop_at_operand = v->stop_at_operand;
	return c;
}

int cmd_verb_rows(const struct cmd_verb *v, struct optspec *rows, struct optspec_cli *cli)
{
	int r = all_rows(v, rows);

	if (r < 0)
		return r;
	*cli = cli_of(v, rows);
	return 0;
}

static const struct cmd_describer *describer;

void cmd_describe(const struct cmd_describer *d)
{
	describer = d;
}

bool cmd_describing(const struct cmd_verb *v)
{
	if (describer && v)
		describer->verb(describer->data, v);
	return describer;
}

/* The verb's --json: the shared row CMD_OPT_JSON, whose value is struct cmd_common's. */
static bool has_json_row(const struct cmd_verb *v, const struct optspec *rows)
{
	const struct optspec *o = optspec_by_name(rows, "json");

	return !v->cli && o && o->kind == OPT_SET && o->off == offsetof(struct cmd_common, json);
}

/* Whether argv asks for --json (or -json) before a "--": known before the parse, which may fail. */
static bool argv_json(int argc, char **argv)
{
	for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
		if (streq(argv[i], "--json") || streq(argv[i], "-json"))
			return true;
	return false;
}

/* Whether the verb's --log-level is CMD_OPT_LOG_LEVEL (a verb with a .cli has its own struct and sets the level). */
static bool uses_common_log_level(const struct optspec *rows)
{
	const struct optspec *o = optspec_by_name(rows, "log-level");

	return o && o->off == offsetof(struct cmd_common, log_level);
}

int cmd_parse(const struct cmd_verb *v, int argc, char **argv, void *opts)
{
	struct optspec rows[OPTSPEC_MAX_ROWS + 1];
	struct optspec_cli cli;
	enum optspec_action action;
	enum optspec_fail fail;
	struct gerr err = {0};

	if (describer) { /* the words of a verb's path: hand it over; a verb of verbs goes on to its menu */
		describer->verb(describer->data, v);
		optind = 1;
		return v->stop_at_operand ? CMD_CONTINUE : 0;
	}
	if (all_rows(v, rows) < 0)
		return cmd_usage_error(v, "internal error: too many options");
	cli = cli_of(v, rows);
	if (has_json_row(v, rows)) {
		outcome.verb = v->name;
		outcome.json = argv_json(argc, argv);
		/* a usage error of a --json run is one line, the engine's (getopt's is followed by the help) */
		cli.getopt_says = !outcome.json;
	}
	if (optspec_parse(&cli, argc, argv, opts, &action, &fail, &err) < 0) {
		if (fail == OPTSPEC_FAIL_FILE) { /* a bad config file fails the run, it is not a usage error */
			fprintf(stderr, "gpulet %s: %s\n", v->name, err.msg);
			return 1;
		}
		if (fail == OPTSPEC_FAIL_VALUE) {
			cmd_usage_error(v, "%s", err.msg);
			return v->value_exit ?: EXIT_USAGE;
		}
		if (!err.msg[0]) { /* getopt said what is wrong */
			cmd_help(v, stderr);
			return EXIT_USAGE;
		}
		return cmd_usage_error(v, "%s; see 'gpulet %s --help'", err.msg, v->name);
	}
	if (!v->cli && uses_common_log_level(rows))
		log_set_level(((struct cmd_common *)opts)->log_level);
	if (has_json_row(v, rows))
		outcome.json = ((struct cmd_common *)opts)->json;
	if (action == OPTSPEC_HELP)
		cmd_help(v, stdout);
	if (action == OPTSPEC_VERSION)
		cmd_print_version(stdout, v->name);
	return action == OPTSPEC_RUN ? CMD_CONTINUE : 0;
}

enum optspec_src cmd_source(const struct cmd_verb *v, const void *opts, const char *name, char *buf, size_t size)
{
	const struct optspec *rows = v->cli ? v->cli->rows : v->opts;
	const struct optspec *o = optspec_by_name(rows, name);
	size_t off = v->cli ? v->cli->given_off : offsetof(struct cmd_common, given);
	const struct optspec_given *g = off ? (const struct optspec_given *)((const char *)opts + off) : NULL;

	if (!o)
		return OPTSPEC_SRC_NONE;
	return optspec_source(rows, (size_t)(o - rows), g, buf, size);
}

static bool is_help_word(const char *a)
{
	return streq(a, "--help") || streq(a, "-h") || streq(a, "help");
}

static bool is_version_word(const char *a)
{
	return streq(a, "--version") || streq(a, "-version") || streq(a, "-v");
}

const char *cmd_menu_row(const struct cmd_menu *m, size_t i, const char **ret_summary)
{
	const char *row = (const char *)m->rows + i * m->stride, *name, *summary = NULL;

	memcpy(&name, row, sizeof(name));
	if (m->summary_off)
		memcpy(&summary, row + m->summary_off, sizeof(summary));
	*ret_summary = summary;
	return name;
}

/* Whether row i is listed (in the help, the completion and the man pages). */
static bool menu_listed(const struct cmd_menu *m, size_t i)
{
	const char *summary;

	cmd_menu_row(m, i, &summary);
	return !m->summary_off || summary;
}

void cmd_menu_list(const struct cmd_menu *m, FILE *f)
{
	const char *name, *summary;
	size_t width = 0;

	for (size_t i = 0; i < m->n; i++)
		if (menu_listed(m, i))
			width = MAX(width, strlen(cmd_menu_row(m, i, &summary)));
	for (size_t i = 0; i < m->n; i++) {
		if (!menu_listed(m, i))
			continue;
		name = cmd_menu_row(m, i, &summary);
		if (!summary) {
			fprintf(f, "  %s\n", name);
			continue;
		}
		fprintf(f, "  %-*s  ", (int)width, name);
		optspec_wrap(f, summary, width + 4, width + 4);
		fputc('\n', f);
	}
}

/* The verb whose version a menu's -v prints: "gpulet cdi" is cdi's, gpulet's own every verb's (NULL). */
static const char *menu_verb(const struct cmd_menu *m)
{
	const char *space = strchr(m->name, ' ');

	return space ? space + 1 : NULL;
}

const void *cmd_menu_pick(const struct cmd_menu *m, int argc, char **argv, int *rc)
{
	if (describer && argc == 0) {
		describer->menu(describer->data, m);
		*rc = 0;
		return NULL;
	}
	/* a row first: gpulet's own `help` verb is a row */
	for (size_t i = 0; argc > 0 && i < m->n; i++) {
		const char *summary;

		if (streq(argv[0], cmd_menu_row(m, i, &summary)))
			return (const char *)m->rows + i * m->stride;
	}
	*rc = EXIT_USAGE;
	if (describer) /* nothing there: nothing to say */
		return NULL;
	if (argc > 0 && (is_help_word(argv[0]) || is_version_word(argv[0]))) {
		if (is_help_word(argv[0]))
			m->help(stdout);
		else
			cmd_print_version(stdout, menu_verb(m));
		*rc = 0;
		return NULL;
	}
	if (m->unknown_ok) {
		fprintf(stderr, "%s: warning: %s %s%s '%s'; nothing done (a spec from a newer toolkit?)\n", m->name,
			argc > 0 ? "unsupported" : "no", m->word, argc > 0 ? "" : " given", argc > 0 ? argv[0] : "");
		*rc = 0;
		return NULL;
	}
	if (argc > 0)
		fprintf(stderr, "%s: unknown %s '%s'\n\n", m->name, m->word, argv[0]);
	m->help(stderr);
	return NULL;
}

void cmd_help(const struct cmd_verb *v, FILE *f)
{
	struct optspec rows[OPTSPEC_MAX_ROWS + 1];
	struct optspec_cli cli;

	if (all_rows(v, rows) < 0)
		return;
	cli = cli_of(v, rows);
	fprintf(f, "Usage: gpulet %s %s\n\n", v->name, v->synopsis);
	if (v->about)
		fprintf(f, "%s\n\n", v->about);
	fprintf(f, "Options:\n");
	for (const struct optspec *o = rows; o->kind != OPT_END; o++)
		optspec_help_row(f, o, optspec_short(&cli, o));
	if (v->notes)
		v->notes(f);
	if (v->footer)
		fprintf(f, "\n%s\n", v->footer);
	fprintf(f, "\nExample:\n  %s\n", v->example);
}
