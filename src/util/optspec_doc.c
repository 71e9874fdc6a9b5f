/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rows as text for people and shells: a --help row, a man page item (roff), and what a value
 * completes to. The words of a row (names, argument, env vars, default, file key) are put together
 * here once, so --help, the man pages and the completion scripts cannot tell different stories.
 */
#include <stdio.h>
#include <string.h>

#include "util/optspec.h"

#define HELP_COLUMN 30 /* where the help text of an option starts */

void optspec_wrap(FILE *f, const char *text, size_t col, size_t at)
{
	while (*text) {
		size_t len = strcspn(text, " ");

		if (at > col && at + 1 + len > OPTSPEC_HELP_WIDTH) {
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

/* The argument after a flag in --help: " DIR", "[=BOOL]", or "". */
static const char *arg_text(const struct optspec *o, char *buf, size_t size)
{
	if (o->kind == OPT_BOOL)
		snprintf(buf, size, "[=BOOL]");
	else if (o->arg)
		snprintf(buf, size, " %s", o->arg);
	else
		buf[0] = '\0';
	return buf;
}

/* The help text with what is around it: "help (env X, Y; default D; file K)". */
static void row_text(const struct optspec *o, char *buf, size_t size)
{
	size_t l = (size_t)snprintf(buf, size, "%s", o->help);

	if (l < size && (o->env[0] || o->def || o->key))
		snprintf(buf + l, size - l, " (%s%s%s%s%s%s%s%s%s)", o->env[0] ? "env " : "",
			 o->env[0] ? o->env[0] : "", o->env[1] ? ", " : "", o->env[1] ? o->env[1] : "",
			 o->env[0] && o->def ? "; " : "", o->def ? "default " : "", o->def ? o->def : "",
			 o->key ? (o->env[0] || o->def ? "; file " : "file ") : "", o->key ? o->key : "");
}

void optspec_help_row(FILE *f, const struct optspec *o, int short_name)
{
	char left[160], text[1024], arg[48];
	size_t at, l = 0;

	arg_text(o, arg, sizeof(arg));
	if (short_name)
		l += (size_t)snprintf(left + l, sizeof(left) - l, "-%c, ", short_name);
	if (o->env_only) /* no flag: named by its env var, which the text below names again */
		snprintf(left, sizeof(left), "env %s%s%s", o->env[0], o->arg ? "=" : "", o->arg ? o->arg : "");
	else
		l += (size_t)snprintf(left + l, sizeof(left) - l, "--%s%s", o->name, arg);
	if (o->alias && !o->env_only)
		snprintf(left + l, sizeof(left) - l, ", --%s%s", o->alias, arg);
	row_text(o, text, sizeof(text));
	at = (size_t)fprintf(f, "  %s", left);
	if (at + 2 > HELP_COLUMN)
		fprintf(f, "\n%*s", HELP_COLUMN, "");
	else
		fprintf(f, "%*s", (int)(HELP_COLUMN - at), "");
	optspec_wrap(f, text, HELP_COLUMN, HELP_COLUMN);
	fputc('\n', f);
}

void optspec_roff(FILE *f, const char *text)
{
	bool bol = true; /* at the beginning of an output line */

	for (const char *p = text; *p; p++) {
		if (bol && (*p == '.' || *p == '\''))
			fputs("\\&", f); /* not a request */
		bol = *p == '\n';
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f); /* a dash to type, as the man pages' convention wants it */
		else if (*p == ',')
			fputs(",\\:", f); /* a line may break after it: {"a":[{b,c}]} has no blank */
		else
			fputc(*p, f);
	}
}

/* One font run: \fB...\fR (bold) or \fI...\fR (italic) around escaped text. */
static void roff_font(FILE *f, char font, const char *text)
{
	fprintf(f, "\\f%c", font);
	optspec_roff(f, text);
	fputs("\\fR", f);
}

void optspec_man_row(FILE *f, const struct optspec *o, int short_name)
{
	const char *names[] = {o->name, o->alias};
	char text[1024], s[4];

	fputs(".TP\n", f);
	if (o->env_only) {
		roff_font(f, 'B', o->env[0]);
		if (o->arg) {
			fputc('=', f);
			roff_font(f, 'I', o->arg);
		}
		fputs(" (environment only)\n", f);
	} else {
		if (short_name) {
			snprintf(s, sizeof(s), "-%c", short_name);
			roff_font(f, 'B', s);
			fputs(", ", f);
		}
		for (size_t i = 0; i < ELEMENTSOF(names) && names[i]; i++) {
			fputs(i ? ", \\fB\\-\\-" : "\\fB\\-\\-", f);
			optspec_roff(f, names[i]);
			fputs("\\fR", f);
			if (o->kind == OPT_BOOL) {
				fputs("[=\\fIBOOL\\fR]", f);
			} else if (o->arg) {
				fputc(' ', f);
				roff_font(f, 'I', o->arg);
			}
		}
		fputc('\n', f);
	}
	row_text(o, text, sizeof(text));
	optspec_roff(f, text);
	fputc('\n', f);
}

/* What an argument's name says about its value, first match wins ("DIR|FILE|-" is a file). */
static const struct {
	const char *word;
	enum optspec_value value;
} arg_words[] = {
    {"FILE", OPTSPEC_VALUE_FILE},
    {"PATH", OPTSPEC_VALUE_FILE},
    {"DIR", OPTSPEC_VALUE_DIR},
};

enum optspec_value optspec_value(const struct optspec *o)
{
	if (o->kind == OPT_BOOL)
		return OPTSPEC_VALUE_BOOL;
	if (optspec_has_arg(o) == no_argument)
		return OPTSPEC_VALUE_NONE;
	if (o->kind == OPT_ENUM)
		return OPTSPEC_VALUE_WORD;
	if (o->kind == OPT_FLAGS)
		return OPTSPEC_VALUE_WORDS;
	if (o->kind == OPT_FILE)
		return OPTSPEC_VALUE_FILE;
	for (size_t i = 0; i < ELEMENTSOF(arg_words); i++)
		if (o->arg && strstr(o->arg, arg_words[i].word))
			return arg_words[i].value;
	return o->kind == OPT_PATH ? OPTSPEC_VALUE_FILE : OPTSPEC_VALUE_TEXT;
}
