/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet manpages DIR: the man pages, written from the command tree (cmd/tree.h) at build time:
 * gpulet.1, and gpulet-VERB.1 for each verb with options or sub-verbs of its own (gpulet-cdi-generate.1).
 * Each option is its row (optspec_man_row()), so a page says what --help says. Hidden from
 * `gpulet --help`: the build runs it (cmake/docs.cmake) and `make install` installs the pages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tree.h"
#include "util/fileio.h"
#include "util/macro.h"

struct manpages_cli {
	struct cmd_common c;
};

static const struct optspec manpages_opts[] = {{0}};

static const struct cmd_verb manpages_verb =
    CMD_VERB("manpages", "DIR", manpages_opts, "gpulet manpages build/man/man1",
	     .about = "Write gpulet's man pages into DIR: gpulet.1, and gpulet-VERB.1 for each command with options\n"
		      "or subcommands of its own, from the same option tables as --help.",
	     .operands = true);

/* What a man page's SEE ALSO, COMMANDS and file name call a node: "gpulet-cdi-generate". */
static void page_name(const struct cmd_node *n, char *buf, size_t size)
{
	size_t l = (size_t)snprintf(buf, size, "gpulet%s%s", n->depth ? "-" : "", n->path);

	for (char *p = buf; p < buf + MIN(l, size); p++)
		if (*p == ' ')
			*p = '-';
}

/* Whether a node gets its own page: gpulet, a verb with options of its own, a verb of verbs. */
static bool has_page(const struct cmd_node *n)
{
	const struct optspec *own = n->verb ? (n->verb->cli ? n->verb->cli->rows : n->verb->opts) : NULL;

	return n->depth == 0 || n->menu || (own && optspec_count(own) > 0);
}

static void roff_upper(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '-' || *s == ' ')
			fputs("\\-", f);
		else
			fputc(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s, f);
}

/* .nf block: text kept as laid out (tables, examples), indented. */
static void verbatim(FILE *f, const char *text)
{
	fputs(".RS 4\n.nf\n", f);
	optspec_roff(f, text);
	if (text[0] && text[strlen(text) - 1] != '\n')
		fputc('\n', f);
	fputs(".fi\n.RE\n", f);
}

/* A node's children in its menu: .TP word, the summary, where its page is. */
static void commands(FILE *f, const struct cmd_tree *t, size_t at)
{
	char name[160];

	fputs(".SH COMMANDS\n", f);
	for (size_t i = at + 1; i < t->n; i++) {
		const struct cmd_node *c = &t->nodes[i];

		if (c->parent != at)
			continue;
		fputs(".TP\n\\fB", f);
		optspec_roff(f, c->word);
		fputs("\\fR\n", f);
		optspec_roff(f, c->summary ? c->summary : "");
		page_name(c, name, sizeof(name));
		if (has_page(c)) {
			fputs(": see\n.BR ", f);
			optspec_roff(f, name);
			fputs(" (1)", f);
		}
		fputc('\n', f);
	}
}

/* The env vars a verb reads, each with the flag it stands for. */
static void environment(FILE *f, const struct optspec *rows)
{
	bool any = false;

	for (const struct optspec *o = rows; o->kind != OPT_END; o++)
		for (size_t k = 0; k < ELEMENTSOF(o->env) && o->env[k]; k++) {
			fputs(any ? "" : ".SH ENVIRONMENT\n", f);
			any = true;
			fputs(".TP\n\\fB", f);
			optspec_roff(f, o->env[k]);
			fputs("\\fR\n", f);
			if (o->env_only) {
				optspec_roff(f, o->help);
			} else {
				fputs("as \\fB\\-\\-", f);
				optspec_roff(f, o->name);
				fputs("\\fR (the flag wins)", f);
			}
			fputc('\n', f);
		}
}

/* A verb's part of its page: options, environment, notes, footer, example. */
static void verb_sections(FILE *f, const struct cmd_node *n)
{
	struct optspec rows[OPTSPEC_MAX_ROWS + 1];
	struct optspec_cli cli;
	_cleanup_free_ char *notes = NULL;
	size_t len;
	FILE *nf;

	if (cmd_node_rows(n, rows, &cli) < 0)
		return;
	fputs(".SH OPTIONS\n", f);
	for (const struct optspec *o = rows; o->kind != OPT_END; o++)
		optspec_man_row(f, o, optspec_short(&cli, o));
	environment(f, rows);
	if (n->verb->notes && (nf = open_memstream(&notes, &len))) {
		n->verb->notes(nf);
		if (fclose(nf) == 0 && len) {
			fputs(".SH NOTES\n", f);
			verbatim(f, notes + strspn(notes, "\n"));
		}
	}
	if (n->verb->footer || optspec_by_name(rows, "json")) {
		fputs(".SH EXIT STATUS\n", f);
		optspec_roff(f, n->verb->footer ? n->verb->footer : "0 success, 1 failure, 2 usage.");
		fputc('\n', f);
	}
	if (optspec_by_name(rows, "json"))
		fputs(".PP\nWith \\fB\\-\\-json\\fR, a run that fails without its document prints\n"
		      "{\"error\": {\"command\": \"gpulet \\fIVERB\\fR\", \"message\": \"...\", \"exit_code\": "
		      "\\fIN\\fR}}\n"
		      "on stdout, the message being the line said on stderr, and exits with that status.\n",
		      f);
	fputs(".SH EXAMPLE\n", f);
	verbatim(f, n->verb->example);
}

/* gpulet's page names every page; a verb's names gpulet's, its parent's and its children's. */
static void see_also(FILE *f, const struct cmd_tree *t, size_t at)
{
	const struct cmd_node *n = &t->nodes[at];
	char name[160];
	bool first = true;

	fputs(".SH SEE ALSO\n", f);
	for (size_t i = 0; i < t->n; i++) {
		const struct cmd_node *o = &t->nodes[i];
		bool related = n->depth == 0 ? i != 0 : i == 0 || (i == n->parent && i != at) || o->parent == at;

		if (!related || !has_page(o) || i == at)
			continue;
		page_name(o, name, sizeof(name));
		fputs(first ? ".BR " : ",\n.BR ", f);
		optspec_roff(f, name);
		fputs(" (1)", f);
		first = false;
	}
	fputc('\n', f);
}

static void write_page(FILE *f, const struct cmd_program *p, const struct cmd_tree *t, size_t at)
{
	const struct cmd_node *n = &t->nodes[at];
	char name[160];

	page_name(n, name, sizeof(name));
	fputs(".TH ", f);
	roff_upper(f, name);
	/* no hyphenation, ragged right: flags and paths stay whole, as typed */
	fputs(" 1 \"\" \"gpulet " GPULET_VERSION "\" \"gpulet manual\"\n.nh\n.ad l\n.SH NAME\n", f);
	optspec_roff(f, name);
	fputs(" \\- ", f);
	optspec_roff(f, n->depth ? (n->summary ? n->summary : "") : p->summary);
	fputs("\n.SH SYNOPSIS\n.B gpulet", f);
	if (n->depth) {
		fputc(' ', f);
		optspec_roff(f, n->path);
	}
	fputc('\n', f);
	optspec_roff(f, n->verb ? n->verb->synopsis : "COMMAND [OPTIONS]");
	fputc('\n', f);
	for (size_t i = 0; i < p->n_aliases; i++)
		if (n->depth && !p->aliases[i].image_only && streq(p->aliases[i].verb, n->path)) {
			fputs(".br\n.B ", f);
			optspec_roff(f, p->aliases[i].program);
			fputs("\n[OPTIONS]\n", f);
		}
	fputs(".SH DESCRIPTION\n", f);
	optspec_roff(f, n->depth == 0 ? p->about : n->verb && n->verb->about ? n->verb->about : n->summary);
	fputc('\n', f);
	if (n->menu)
		commands(f, t, at);
	if (n->verb)
		verb_sections(f, n);
	if (n->depth == 0) {
		fputs(
		    ".SH OPTIONS\n.TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nthe commands\n"
		    ".TP\n\\fB\\-v\\fR, \\fB\\-\\-version\\fR\ngpulet's version and the upstream version each "
		    "command matches\n.SH PROGRAM NAMES\nInvoked under an upstream program's name (a link to gpulet), "
		    "gpulet runs the command that replaces it:\n",
		    f);
		cmd_aliases_print(f, p, optspec_roff, ".TP\n\\fB", "\\fR\ngpulet ", "\n");
	}
	see_also(f, t, at);
}

static int write_pages(const struct cmd_program *p, const struct cmd_tree *t, const char *dir)
{
	for (size_t i = 0; i < t->n; i++) {
		_cleanup_free_ char *text = NULL, *path = NULL;
		struct gerr err = {0};
		char name[160];
		size_t len;
		FILE *f;

		if (!has_page(&t->nodes[i]))
			continue;
		page_name(&t->nodes[i], name, sizeof(name));
		if (!(f = open_memstream(&text, &len)) || asprintf(&path, "%s/%s.1", dir, name) < 0) {
			if (f)
				fclose(f);
			return cmd_fail("manpages", "out of memory");
		}
		write_page(f, p, t, i);
		if (fclose(f) != 0)
			return cmd_fail("manpages", "out of memory");
		if (write_file_atomic(path, text, len, 0644, &err) < 0)
			return cmd_fail("manpages", "%s", err.msg);
	}
	return 0;
}

int cmd_manpages(const struct cmd_program *p, int argc, char **argv)
{
	_cleanup_(cmd_tree_clear) struct cmd_tree t = {0};
	struct manpages_cli cli = {0};
	int r = cmd_parse(&manpages_verb, argc, argv, &cli);

	if (r != CMD_CONTINUE)
		return r;
	if (argc - optind != 1)
		return cmd_usage_error(&manpages_verb, "give one DIR to write the pages into");
	if (cmd_tree_load(p, &t) < 0)
		return 1;
	return write_pages(p, &t, argv[optind]);
}
