/* SPDX-License-Identifier: Apache-2.0 */
/* Go-style single-dash long flags for getopt_long (argv.h). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/argv.h"
#include "util/macro.h"

static bool is_long(const struct option *lo, const char *name, size_t len, int *ret_has_arg)
{
	for (; lo->name; lo++)
		if (strlen(lo->name) == len && strncmp(lo->name, name, len) == 0) {
			*ret_has_arg = lo->has_arg;
			return true;
		}
	return false;
}

/* "no-such-option": a Go-style flag name (words joined by dashes), which no group of short options
 * with an attached value looks like ("-c500", "-f/etc/x.csv"): as "--no-such-option" getopt names it
 * unrecognized instead of reading "-n -o -such-option". */
static bool looks_long(const char *name, size_t len)
{
	size_t word = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789");

	return word > 0 && word < len && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == len &&
	       name[len - 1] != '-';
}

/* Is c a short option that takes a value, required or optional? */
static bool takes_value(char c, const char *shorts)
{
	const char *s = c == ':' ? NULL : strchr(shorts, c);

	return s && s[1] == ':';
}

/*
 * Is c a short option that requires a value ("-ofile-name" is -o with "file-name")? A switch that
 * only may take one (a Go bool: "-n=false", never "-nfalse") does not make "-no-such-option" its value.
 */
static bool requires_value(char c, const char *shorts)
{
	const char *s = c == ':' ? NULL : strchr(shorts, c);

	return s && s[1] == ':' && s[2] != ':';
}

/* Does a short-option group (the token without its '-') take the next token as a value? */
static bool short_group_takes_next(const char *group, const char *shorts)
{
	for (const char *c = group; *c; c++) {
		const char *s = *c == ':' ? NULL : strchr(shorts, *c);

		if (!s)
			return false;
		if (s[1] == ':') /* takes a value: the rest of the token, or (required, nothing left) the next one */
			return s[2] != ':' && c[1] == '\0';
	}
	return false;
}

/* The long name of short option c in lo, or NULL. */
static const char *long_of_short(const struct option *lo, char c)
{
	for (; lo->name; lo++)
		if (lo->val == c)
			return lo->name;
	return NULL;
}

/*
 * The rewritten text of token a: prefix (a '-', or "--NAME" for a short letter) and what follows
 * from a + skip. The same text is made once per process: a verb that parses the same argv again (the
 * plugin, mps-control-daemon and labels on SIGHUP) gets the copy made the first time, so a reload
 * does not leave one more string behind. NULL when out of memory.
 */
static char *rewrite(const char *a, const char *prefix, size_t skip)
{
	static char **made;
	static size_t n_made;
	char *text = NULL, **grown;

	if (asprintf(&text, "%s%s", prefix, a + skip) < 0)
		return NULL;
	for (size_t i = 0; i < n_made; i++)
		if (streq(made[i], text)) {
			free(text);
			return made[i];
		}
	grown = reallocarray(made, n_made + 1, sizeof(*made));
	if (!grown) {
		free(text);
		return NULL;
	}
	made = grown;
	return made[n_made++] = text;
}

void argv_single_dash_longs(int argc, char **argv, const struct option *lo, const char *shorts)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t len;
		int has_arg = no_argument;

		if (streq(a, "--"))
			return;
		if (a[0] != '-' || a[1] == '\0')
			continue; /* an operand, or "-" (stdin) */
		if (a[1] == '-') {
			len = strcspn(a + 2, "=");
			if (is_long(lo, a + 2, len, &has_arg) && has_arg == required_argument && !a[2 + len])
				i++; /* "--name value": the value is not an option */
			continue;
		}
		len = strcspn(a + 1, "=");
		if (len == 1 && a[2] == '=' && takes_value(a[1], shorts) && long_of_short(lo, a[1])) {
			/* "-o=-", Go's spelling of -o with the value "-": "--output-file=-" (an empty value stays one)
			 */
			_cleanup_free_ char *prefix = NULL;
			char *rewritten;

			if (asprintf(&prefix, "--%s", long_of_short(lo, a[1])) < 0 ||
			    !(rewritten = rewrite(a, prefix, 2)))
				return;
			argv[i] = rewritten;
			continue;
		}
		if (len >= 2 && strspn(a + 1, shorts) < len &&
		    (is_long(lo, a + 1, len, &has_arg) || (looks_long(a + 1, len) && !requires_value(a[1], shorts)))) {
			char *rewritten = rewrite(a, "-", 0);

			if (!rewritten)
				return; /* out of memory: getopt then reports the token as it is */
			argv[i] = rewritten;
			if (has_arg == required_argument && !a[1 + len])
				i++;
		} else if (short_group_takes_next(a + 1, shorts)) {
			i++;
		}
	}
}

/* Is name[0..len) the beginning of a longer option of lo (what getopt_long would take for it)? */
static bool is_prefix(const struct option *lo, const char *name, size_t len)
{
	for (; lo->name; lo++)
		if (strlen(lo->name) > len && strncmp(lo->name, name, len) == 0)
			return true;
	return false;
}

const char *argv_inexact_long(int argc, char *const *argv, const struct option *lo, const char *shorts)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t len;
		int has_arg = no_argument;

		if (streq(a, "--"))
			return NULL;
		if (a[0] != '-' || a[1] == '\0')
			continue;
		if (a[1] != '-') {
			if (short_group_takes_next(a + 1, shorts))
				i++;
			continue;
		}
		len = strcspn(a + 2, "=");
		if (!is_long(lo, a + 2, len, &has_arg)) {
			if (is_prefix(lo, a + 2, len))
				return a;
			continue; /* unknown: getopt says so where it stands */
		}
		if (has_arg == required_argument && !a[2 + len])
			i++; /* "--name value": the value is not an option */
	}
	return NULL;
}
