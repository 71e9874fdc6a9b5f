/* SPDX-License-Identifier: Apache-2.0 */
/* TOML lexing: whitespace and comments, strings with escapes, dotted keys, integers, floats, datetimes. */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/fileio.h"
#include "parse/toml.h"
#include "parse/toml_int.h"

/* ---- lexing helpers ---- */

/* (toml_perr): not the analyzer-only wrapper macro of toml_int.h */
int(toml_perr)(struct parser *ps, const char *at, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return gerr_set(ps->err, EINVAL, "%s:%u:%u: %s", ps->name, ps->line, (unsigned)(at - ps->line_start) + 1, what);
}

bool toml_at_end(const struct parser *ps)
{
	return ps->p >= ps->end;
}

void toml_skip_ws(struct parser *ps)
{
	while (!toml_at_end(ps) && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
}

static void toml_newline(struct parser *ps)
{
	ps->line++;
	ps->line_start = ps->p;
}

/* Comment to end of line; control characters other than tab are not allowed in comments. */
static int toml_skip_comment(struct parser *ps)
{
	if (toml_at_end(ps) || *ps->p != '#')
		return 0;
	for (; !toml_at_end(ps) && *ps->p != '\n'; ps->p++) {
		unsigned char c = (unsigned char)*ps->p;

		if ((c < 0x20 && c != '\t' && !(c == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')) || c == 0x7f)
			return toml_perr(ps, ps->p, "control character 0x%02x in a comment", c);
	}
	return 0;
}

/* Skip whitespace and a comment, then one newline: 1 when a newline was taken, 0 when not. */
static int skip_line_end(struct parser *ps)
{
	int r;

	toml_skip_ws(ps);
	r = toml_skip_comment(ps);
	if (r < 0)
		return r;
	if (toml_at_end(ps))
		return 0;
	if (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')
		ps->p++;
	if (*ps->p != '\n')
		return 0;
	ps->p++;
	toml_newline(ps);
	return 1;
}

/* Expect end of line (after optional whitespace and comment). */
int toml_expect_eol(struct parser *ps)
{
	int r = skip_line_end(ps);

	if (r == 0 && !toml_at_end(ps))
		return toml_perr(ps, ps->p, "expected the end of the line, found '%c'", *ps->p);
	return MIN(r, 0);
}

/* Whitespace, comments and newlines, as allowed inside arrays. */
int toml_skip_ws_nl(struct parser *ps)
{
	int r;

	while ((r = skip_line_end(ps)) > 0)
		;
	return r;
}

/* ---- strings ---- */

struct buf {
	char *s;
	size_t n, cap;
};

static int toml_bput(struct buf *b, const char *s, size_t n)
{
	while (b->n + n + 1 > b->cap) {
		char *ns = grow_alloc(b->s, &b->cap, 1, MAX(b->n + n + 1, (size_t)16));

		if (!ns)
			return -ENOMEM;
		b->s = ns;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

static int toml_bput_utf8(struct buf *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return toml_bput(b, u, n);
}

static int toml_escape(struct parser *ps, struct buf *b)
{
	static const struct {
		char in, out;
	} simple[] = {{'b', '\b'}, {'t', '\t'}, {'n', '\n'}, {'f', '\f'}, {'r', '\r'}, {'"', '"'}, {'\\', '\\'}};
	const char *at = ps->p;
	char c;
	unsigned digits;
	uint32_t cp = 0;

	ps->p++; /* backslash */
	if (toml_at_end(ps))
		return toml_perr(ps, at, "unfinished escape sequence");
	c = *ps->p++;
	for (size_t k = 0; k < ELEMENTSOF(simple); k++)
		if (c == simple[k].in)
			return toml_bput(b, &simple[k].out, 1);
	if (c != 'u' && c != 'U')
		return toml_perr(ps, at, "invalid escape sequence '\\%c'", c);
	digits = c == 'u' ? 4 : 8;
	for (unsigned k = 0; k < digits; k++, ps->p++) {
		char h = toml_at_end(ps) ? 0 : *ps->p;
		unsigned v;

		if (h >= '0' && h <= '9')
			v = (unsigned)(h - '0');
		else if (h >= 'a' && h <= 'f')
			v = (unsigned)(h - 'a' + 10);
		else if (h >= 'A' && h <= 'F')
			v = (unsigned)(h - 'A' + 10);
		else
			return toml_perr(ps, at, "\\%c needs %u hex digits", c, digits);
		cp = cp * 16 + v;
	}
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return toml_perr(ps, at, "\\%c%0*X is not a Unicode scalar value", c, (int)digits, cp);
	return toml_bput_utf8(b, cp);
}

static bool toml_is_ctrl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/*
 * A string at ps->p: "basic", 'literal', """multi-line basic""", '''multi-line literal'''.
 * multiline_ok is false for keys.
 */
int toml_parse_string(struct parser *ps, bool multiline_ok, char **ret)
{
	const char *start = ps->p;
	char q = *ps->p;
	bool ml = ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q;
	struct buf b = {0};
	int r = 0;

	if (ml && !multiline_ok)
		return toml_perr(ps, start, "a multi-line string cannot be a key");
	ps->p += ml ? 3 : 1;
	if (ml) { /* a newline right after the opening delimiter is trimmed */
		if (ps->p < ps->end && *ps->p == '\n')
			ps->p++, toml_newline(ps);
		else if (ps->end - ps->p >= 2 && ps->p[0] == '\r' && ps->p[1] == '\n')
			ps->p += 2, toml_newline(ps);
	}
	if (toml_bput(&b, "", 0) < 0)
		return -ENOMEM;
	for (;;) {
		unsigned char c;

		if (toml_at_end(ps)) {
			r = toml_perr(ps, start, "unterminated string");
			break;
		}
		c = (unsigned char)*ps->p;
		if (c == (unsigned char)q) {
			if (!ml) {
				ps->p++;
				break;
			}
			if (ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q) {
				/* up to two quotes may end the content: """a"""" is a" */
				size_t extra = 0;

				while (extra < 2 && ps->p + 3 + extra < ps->end && ps->p[3 + extra] == q)
					extra++;
				r = toml_bput(&b, ps->p, extra);
				ps->p += 3 + extra;
				break;
			}
			r = toml_bput(&b, ps->p++, 1);
		} else if (c == '\\' && q == '"') {
			if (ml) { /* line-ending backslash: drop it and all whitespace/newlines after it */
				const char *s = ps->p + 1;

				while (s < ps->end && (*s == ' ' || *s == '\t'))
					s++;
				if (s < ps->end && (*s == '\n' || (*s == '\r' && s + 1 < ps->end && s[1] == '\n'))) {
					ps->p = s;
					while (!toml_at_end(ps) &&
					       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
						(*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n'))) {
						if (*ps->p == '\n') {
							ps->p++;
							toml_newline(ps);
						} else {
							ps->p++;
						}
					}
					continue;
				}
			}
			r = toml_escape(ps, &b);
		} else if (c == '\n' && ml) {
			ps->p++;
			r = toml_bput(&b, "\n", 1);
			toml_newline(ps);
		} else if (c == '\r' && ml && ps->p + 1 < ps->end && ps->p[1] == '\n') {
			ps->p += 2;
			r = toml_bput(&b, "\n", 1);
			toml_newline(ps);
		} else if (toml_is_ctrl(c)) {
			r = toml_perr(
			    ps, ps->p,
			    c == '\n' ? "newline in a single-line string" : "control character 0x%02x in a string", c);
		} else {
			r = toml_bput(&b, ps->p++, 1);
		}
		if (r < 0)
			break;
	}
	if (r < 0) {
		free(b.s);
		return r;
	}
	*ret = b.s;
	return 0;
}

/* ---- keys ---- */

static bool toml_is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

void toml_key_clear(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->part[i]);
	k->n = 0;
}

/* A dotted key: a.b."c d".'e', whitespace allowed around dots. */
int toml_parse_key(struct parser *ps, struct key *k)
{
	k->n = 0;
	k->at = ps->p;
	for (;;) {
		char *part;
		int r;

		toml_skip_ws(ps);
		if (k->n == TOML_MAX_DEPTH) {
			toml_key_clear(k);
			return toml_perr(ps, k->at, "key has more than %d parts", TOML_MAX_DEPTH);
		}
		if (!toml_at_end(ps) && (*ps->p == '"' || *ps->p == '\'')) {
			r = toml_parse_string(ps, false, &part);
			if (r < 0) {
				toml_key_clear(k);
				return r;
			}
		} else {
			const char *s = ps->p;

			while (!toml_at_end(ps) && toml_is_bare(*ps->p))
				ps->p++;
			if (ps->p == s) {
				toml_key_clear(k);
				return toml_at_end(ps) ? toml_perr(ps, s, "expected a key")
						       : toml_perr(ps, s, "expected a key, found '%c'", *s);
			}
			part = strndup(s, (size_t)(ps->p - s));
			if (!part) {
				toml_key_clear(k);
				return -ENOMEM;
			}
		}
		k->part[k->n++] = part;
		toml_skip_ws(ps);
		if (toml_at_end(ps) || *ps->p != '.')
			return 0;
		ps->p++;
	}
}

/* ---- scalars ---- */

bool toml_isdig(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits with single underscores between them; base 10/16/8/2. Returns chars consumed or -1. */
static int toml_digits_ok(const char *s, size_t n, int base)
{
	bool prev_digit = false;

	if (n == 0)
		return -1;
	for (size_t k = 0; k < n; k++) {
		char c = s[k];
		bool d;

		if (c == '_') {
			if (!prev_digit || k + 1 == n)
				return -1;
			prev_digit = false;
			continue;
		}
		switch (base) {
		case 16:
			d = toml_isdig(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
			break;
		case 8:
			d = c >= '0' && c <= '7';
			break;
		case 2:
			d = c == '0' || c == '1';
			break;
		default:
			d = toml_isdig(c);
		}
		if (!d)
			return -1;
		prev_digit = true;
	}
	return 0;
}

int toml_parse_int(const char *tok, size_t n, int64_t *ret)
{
	char clean[128];
	size_t m = 0;
	int base = 10;
	const char *s = tok;
	char *endp;
	bool neg = false;
	unsigned long long v;

	if (n >= sizeof(clean))
		return -ERANGE;
	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
		base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
		s += 2;
		n -= 2;
	} else {
		if (*s == '+' || *s == '-') {
			neg = *s == '-';
			s++;
			n--;
		}
		if (n > 1 && s[0] == '0')
			return -EINVAL; /* leading zeros */
	}
	if (toml_digits_ok(s, n, base) < 0)
		return -EINVAL;
	for (size_t k = 0; k < n; k++)
		if (s[k] != '_')
			clean[m++] = s[k];
	clean[m] = '\0';
	errno = 0;
	v = strtoull(clean, &endp, base);
	if (errno || *endp)
		return -ERANGE;
	if (neg ? v > (unsigned long long)INT64_MAX + 1 : v > INT64_MAX)
		return -ERANGE;
	*ret = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

int toml_parse_float(const char *tok, size_t n, double *ret)
{
	char clean[128];
	size_t m = 0, k = 0;
	const char *s = tok;

	if (n >= sizeof(clean))
		return -ERANGE;
	if (*s == '+' || *s == '-')
		k = 1;
	if (n - k == 3 && (!strncmp(s + k, "inf", 3) || !strncmp(s + k, "nan", 3))) {
		double v = s[k] == 'i' ? INFINITY : NAN;

		*ret = s[0] == '-' ? -v : v;
		return 0;
	}
	/* int part: digits without leading zero */
	{
		size_t a = k;

		while (k < n && (toml_isdig(s[k]) || s[k] == '_'))
			k++;
		if (toml_digits_ok(s + a, k - a, 10) < 0 || (k - a > 1 && s[a] == '0'))
			return -EINVAL;
		if (k < n && s[k] == '.') {
			size_t f = ++k;

			while (k < n && (toml_isdig(s[k]) || s[k] == '_'))
				k++;
			if (toml_digits_ok(s + f, k - f, 10) < 0)
				return -EINVAL;
		}
		if (k < n && (s[k] == 'e' || s[k] == 'E')) {
			size_t e;

			k++;
			if (k < n && (s[k] == '+' || s[k] == '-'))
				k++;
			e = k;
			while (k < n && (toml_isdig(s[k]) || s[k] == '_'))
				k++;
			if (toml_digits_ok(s + e, k - e, 10) < 0)
				return -EINVAL;
		}
		if (k != n)
			return -EINVAL;
	}
	for (k = 0; k < n; k++)
		if (s[k] != '_')
			clean[m++] = s[k];
	clean[m] = '\0';
	*ret = strtod(clean, NULL);
	return 0;
}

/* Shape check for RFC 3339 date-times, local dates and local times (TOML §Offset Date-Time etc.). */
bool toml_looks_datetime(const char *s, size_t n)
{
	size_t k = 0;

	if (n >= 10 && toml_isdig(s[0]) && toml_isdig(s[1]) && toml_isdig(s[2]) && toml_isdig(s[3]) && s[4] == '-' &&
	    toml_isdig(s[5]) && toml_isdig(s[6]) && s[7] == '-' && toml_isdig(s[8]) && toml_isdig(s[9])) {
		k = 10;
		if (k == n)
			return true;
		if (s[k] != 'T' && s[k] != 't' && s[k] != ' ')
			return false;
		k++;
	}
	if (n - k < 8 || !toml_isdig(s[k]) || !toml_isdig(s[k + 1]) || s[k + 2] != ':' || !toml_isdig(s[k + 3]) ||
	    !toml_isdig(s[k + 4]) || s[k + 5] != ':' || !toml_isdig(s[k + 6]) || !toml_isdig(s[k + 7]))
		return false;
	k += 8;
	if (k < n && s[k] == '.') {
		size_t f = ++k;

		while (k < n && toml_isdig(s[k]))
			k++;
		if (k == f)
			return false;
	}
	if (k < n && (s[k] == 'Z' || s[k] == 'z'))
		k++;
	else if (k < n && (s[k] == '+' || s[k] == '-')) {
		if (n - k != 6 || !toml_isdig(s[k + 1]) || !toml_isdig(s[k + 2]) || s[k + 3] != ':' ||
		    !toml_isdig(s[k + 4]) || !toml_isdig(s[k + 5]))
			return false;
		k += 6;
	}
	return k == n;
}
