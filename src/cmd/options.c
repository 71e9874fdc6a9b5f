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
		fprintf(stderr, "gpulet %s: out of memory\n", verb);
		return false;
	}
	putchar('\n');
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
	    .version_v = v->urfave,
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

	if (all_rows(v, rows) < 0)
		return cmd_usage_error(v, "internal error: too many options");
	cli = cli_of(v, rows);
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

const void *cmd_menu_pick(const struct cmd_menu *m, int argc, char **argv, int *rc)
{
	const char *row = m->rows;

	if (argc > 0 && is_help_word(argv[0])) {
		m->help(stdout);
		*rc = 0;
		return NULL;
	}
	for (size_t i = 0; argc > 0 && i < m->n; i++, row += m->stride) {
		const char *name;

		memcpy(&name, row, sizeof(name));
		if (streq(argv[0], name))
			return row;
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
	*rc = EXIT_USAGE;
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
