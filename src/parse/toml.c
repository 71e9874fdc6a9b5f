/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TOML 1.0 reader (toml.io/en/v1.0.0). Redefinition rules follow the spec's examples, which are
 * also what tomllib enforces: a [header] may not name a table twice, nor one made by dotted keys;
 * dotted keys may not reach into a table made by a header in another section; inline tables and
 * arrays are frozen once written.
 */
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

#define TOML_MAX_FILE    (4u << 20)
#define TOML_MAX_DEPTH   64
#define TOML_MAX_IMPORTS 64

enum {
	F_EXPLICIT = 1u << 0, /* named by a [header], or made by dotted keys in a finished section */
	F_PENDING = 1u << 1,  /* made by dotted keys in the current section */
	F_FROZEN = 1u << 2,   /* inline table or array value: cannot be extended */
	F_AOT = 1u << 3,      /* array made by [[header]] */
};

struct parser {
	const char *p, *end, *line_start;
	unsigned line;
	const char *name;
	struct gerr *err;
	struct toml **pending; /* tables to promote to F_EXPLICIT at the next header */
	size_t n_pending, cap_pending;
	int depth;
};

/* ---- values ---- */

static struct toml *tnew(enum toml_type type, const struct parser *ps)
{
	struct toml *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->type = type;
	if (ps) {
		t->line = ps->line;
		t->file = ps->name;
	}
	return t;
}

void toml_free(struct toml *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->n; k++) {
		if (t->keys)
			free(t->keys[k]);
		toml_free(t->vals[k]);
	}
	for (size_t k = 0; k < t->n_names; k++)
		free(t->names[k]);
	free(t->names);
	free(t->keys);
	free(t->vals);
	free(t->s);
	free(t);
}

/* Append (key may be NULL for arrays); takes ownership of key and v on success. */
static int tadd(struct toml *t, char *key, struct toml *v)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4;
		struct toml **nv = realloc(t->vals, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		t->vals = nv;
		if (t->type == TOML_TABLE) {
			char **nk = realloc(t->keys, cap * sizeof(*nk));

			if (!nk)
				return -ENOMEM;
			t->keys = nk;
		}
		t->cap = cap;
	}
	if (t->type == TOML_TABLE)
		t->keys[t->n] = key;
	t->vals[t->n++] = v;
	return 0;
}

static ssize_t tindex(const struct toml *t, const char *key)
{
	if (!t || t->type != TOML_TABLE)
		return -1;
	for (size_t k = 0; k < t->n; k++)
		if (streq(t->keys[k], key))
			return (ssize_t)k;
	return -1;
}

const struct toml *toml_get(const struct toml *t, const char *key)
{
	ssize_t k = tindex(t, key);

	return k < 0 ? NULL : t->vals[k];
}

const struct toml *toml_path(const struct toml *t, ...)
{
	va_list ap;
	const char *k;

	va_start(ap, t);
	while (t && (k = va_arg(ap, const char *)))
		t = toml_get(t, k);
	va_end(ap);
	return t;
}

const char *toml_string(const struct toml *t, const char *key, const char *fallback)
{
	const struct toml *v = toml_get(t, key);

	return v && v->type == TOML_STRING ? v->s : fallback;
}

int toml_bool(const struct toml *t, const char *key, int fallback)
{
	const struct toml *v = toml_get(t, key);

	return v && v->type == TOML_BOOL ? v->b : fallback;
}

int64_t toml_int(const struct toml *t, const char *key, int64_t fallback)
{
	const struct toml *v = toml_get(t, key);

	return v && v->type == TOML_INTEGER ? v->i : fallback;
}

/* ---- lexing helpers ---- */

static int perr(struct parser *ps, const char *at, const char *fmt, ...) _printf_(3, 4);
static int perr(struct parser *ps, const char *at, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return gerr_set(ps->err, EINVAL, "%s:%u:%u: %s", ps->name, ps->line, (unsigned)(at - ps->line_start) + 1, what);
}

static bool at_end(const struct parser *ps)
{
	return ps->p >= ps->end;
}

static void skip_ws(struct parser *ps)
{
	while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
}

static void newline(struct parser *ps)
{
	ps->line++;
	ps->line_start = ps->p;
}

/* Comment to end of line; control characters other than tab are not allowed in comments. */
static int skip_comment(struct parser *ps)
{
	if (at_end(ps) || *ps->p != '#')
		return 0;
	for (; !at_end(ps) && *ps->p != '\n'; ps->p++) {
		unsigned char c = (unsigned char)*ps->p;

		if ((c < 0x20 && c != '\t' && !(c == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')) || c == 0x7f)
			return perr(ps, ps->p, "control character 0x%02x in a comment", c);
	}
	return 0;
}

/* Expect end of line (after optional whitespace and comment). */
static int expect_eol(struct parser *ps)
{
	int r;

	skip_ws(ps);
	r = skip_comment(ps);
	if (r < 0)
		return r;
	if (at_end(ps))
		return 0;
	if (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')
		ps->p++;
	if (*ps->p != '\n')
		return perr(ps, ps->p, "expected the end of the line, found '%c'", *ps->p);
	ps->p++;
	newline(ps);
	return 0;
}

/* Whitespace, comments and newlines, as allowed inside arrays. */
static int skip_ws_nl(struct parser *ps)
{
	for (;;) {
		int r;

		skip_ws(ps);
		r = skip_comment(ps);
		if (r < 0)
			return r;
		if (at_end(ps))
			return 0;
		if (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')
			ps->p++;
		if (*ps->p != '\n')
			return 0;
		ps->p++;
		newline(ps);
	}
}

/* ---- strings ---- */

struct buf {
	char *s;
	size_t n, cap;
};

static int bput(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = MAX(b->cap * 2, b->n + n + 16);
		char *ns = realloc(b->s, cap);

		if (!ns)
			return -ENOMEM;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

static int bput_utf8(struct buf *b, uint32_t cp)
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
	return bput(b, u, n);
}

static int escape(struct parser *ps, struct buf *b)
{
	static const struct {
		char in, out;
	} simple[] = {{'b', '\b'}, {'t', '\t'}, {'n', '\n'}, {'f', '\f'}, {'r', '\r'}, {'"', '"'}, {'\\', '\\'}};
	const char *at = ps->p;
	char c;
	unsigned digits;
	uint32_t cp = 0;

	ps->p++; /* backslash */
	if (at_end(ps))
		return perr(ps, at, "unfinished escape sequence");
	c = *ps->p++;
	for (size_t k = 0; k < ELEMENTSOF(simple); k++)
		if (c == simple[k].in)
			return bput(b, &simple[k].out, 1);
	if (c != 'u' && c != 'U')
		return perr(ps, at, "invalid escape sequence '\\%c'", c);
	digits = c == 'u' ? 4 : 8;
	for (unsigned k = 0; k < digits; k++, ps->p++) {
		char h = at_end(ps) ? 0 : *ps->p;
		unsigned v;

		if (h >= '0' && h <= '9')
			v = (unsigned)(h - '0');
		else if (h >= 'a' && h <= 'f')
			v = (unsigned)(h - 'a' + 10);
		else if (h >= 'A' && h <= 'F')
			v = (unsigned)(h - 'A' + 10);
		else
			return perr(ps, at, "\\%c needs %u hex digits", c, digits);
		cp = cp * 16 + v;
	}
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return perr(ps, at, "\\%c%0*X is not a Unicode scalar value", c, (int)digits, cp);
	return bput_utf8(b, cp);
}

static bool is_ctrl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/*
 * A string at ps->p: "basic", 'literal', """multi-line basic""", '''multi-line literal'''.
 * multiline_ok is false for keys.
 */
static int parse_string(struct parser *ps, bool multiline_ok, char **ret)
{
	const char *start = ps->p;
	char q = *ps->p;
	bool ml = ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q;
	struct buf b = {0};
	int r = 0;

	if (ml && !multiline_ok)
		return perr(ps, start, "a multi-line string cannot be a key");
	ps->p += ml ? 3 : 1;
	if (ml) { /* a newline right after the opening delimiter is trimmed */
		if (ps->p < ps->end && *ps->p == '\n')
			ps->p++, newline(ps);
		else if (ps->end - ps->p >= 2 && ps->p[0] == '\r' && ps->p[1] == '\n')
			ps->p += 2, newline(ps);
	}
	if (bput(&b, "", 0) < 0)
		return -ENOMEM;
	for (;;) {
		unsigned char c;

		if (at_end(ps)) {
			r = perr(ps, start, "unterminated string");
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
				r = bput(&b, ps->p, extra);
				ps->p += 3 + extra;
				break;
			}
			r = bput(&b, ps->p++, 1);
		} else if (c == '\\' && q == '"') {
			if (ml) { /* line-ending backslash: drop it and all whitespace/newlines after it */
				const char *s = ps->p + 1;

				while (s < ps->end && (*s == ' ' || *s == '\t'))
					s++;
				if (s < ps->end && (*s == '\n' || (*s == '\r' && s + 1 < ps->end && s[1] == '\n'))) {
					ps->p = s;
					while (!at_end(ps) &&
					       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
						(*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n'))) {
						if (*ps->p == '\n') {
							ps->p++;
							newline(ps);
						} else {
							ps->p++;
						}
					}
					continue;
				}
			}
			r = escape(ps, &b);
		} else if (c == '\n' && ml) {
			ps->p++;
			r = bput(&b, "\n", 1);
			newline(ps);
		} else if (c == '\r' && ml && ps->p + 1 < ps->end && ps->p[1] == '\n') {
			ps->p += 2;
			r = bput(&b, "\n", 1);
			newline(ps);
		} else if (is_ctrl(c)) {
			r = perr(ps, ps->p,
				 c == '\n' ? "newline in a single-line string" : "control character 0x%02x in a string",
				 c);
		} else {
			r = bput(&b, ps->p++, 1);
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

static bool is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

struct key {
	char *part[TOML_MAX_DEPTH];
	size_t n;
	const char *at;
};

static void key_clear(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->part[i]);
	k->n = 0;
}

/* A dotted key: a.b."c d".'e', whitespace allowed around dots. */
static int parse_key(struct parser *ps, struct key *k)
{
	k->n = 0;
	k->at = ps->p;
	for (;;) {
		char *part;
		int r;

		skip_ws(ps);
		if (k->n == TOML_MAX_DEPTH) {
			key_clear(k);
			return perr(ps, k->at, "key has more than %d parts", TOML_MAX_DEPTH);
		}
		if (!at_end(ps) && (*ps->p == '"' || *ps->p == '\'')) {
			r = parse_string(ps, false, &part);
			if (r < 0) {
				key_clear(k);
				return r;
			}
		} else {
			const char *s = ps->p;

			while (!at_end(ps) && is_bare(*ps->p))
				ps->p++;
			if (ps->p == s) {
				key_clear(k);
				return at_end(ps) ? perr(ps, s, "expected a key")
						  : perr(ps, s, "expected a key, found '%c'", *s);
			}
			part = strndup(s, (size_t)(ps->p - s));
			if (!part) {
				key_clear(k);
				return -ENOMEM;
			}
		}
		k->part[k->n++] = part;
		skip_ws(ps);
		if (at_end(ps) || *ps->p != '.')
			return 0;
		ps->p++;
	}
}

/* ---- scalars ---- */

static bool isdig(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits with single underscores between them; base 10/16/8/2. Returns chars consumed or -1. */
static int digits_ok(const char *s, size_t n, int base)
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
			d = isdig(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
			break;
		case 8:
			d = c >= '0' && c <= '7';
			break;
		case 2:
			d = c == '0' || c == '1';
			break;
		default:
			d = isdig(c);
		}
		if (!d)
			return -1;
		prev_digit = true;
	}
	return 0;
}

static int parse_int(const char *tok, size_t n, int64_t *ret)
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
	if (digits_ok(s, n, base) < 0)
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

static int parse_float(const char *tok, size_t n, double *ret)
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

		while (k < n && (isdig(s[k]) || s[k] == '_'))
			k++;
		if (digits_ok(s + a, k - a, 10) < 0 || (k - a > 1 && s[a] == '0'))
			return -EINVAL;
		if (k < n && s[k] == '.') {
			size_t f = ++k;

			while (k < n && (isdig(s[k]) || s[k] == '_'))
				k++;
			if (digits_ok(s + f, k - f, 10) < 0)
				return -EINVAL;
		}
		if (k < n && (s[k] == 'e' || s[k] == 'E')) {
			size_t e;

			k++;
			if (k < n && (s[k] == '+' || s[k] == '-'))
				k++;
			e = k;
			while (k < n && (isdig(s[k]) || s[k] == '_'))
				k++;
			if (digits_ok(s + e, k - e, 10) < 0)
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
static bool looks_datetime(const char *s, size_t n)
{
	size_t k = 0;

	if (n >= 10 && isdig(s[0]) && isdig(s[1]) && isdig(s[2]) && isdig(s[3]) && s[4] == '-' && isdig(s[5]) &&
	    isdig(s[6]) && s[7] == '-' && isdig(s[8]) && isdig(s[9])) {
		k = 10;
		if (k == n)
			return true;
		if (s[k] != 'T' && s[k] != 't' && s[k] != ' ')
			return false;
		k++;
	}
	if (n - k < 8 || !isdig(s[k]) || !isdig(s[k + 1]) || s[k + 2] != ':' || !isdig(s[k + 3]) || !isdig(s[k + 4]) ||
	    s[k + 5] != ':' || !isdig(s[k + 6]) || !isdig(s[k + 7]))
		return false;
	k += 8;
	if (k < n && s[k] == '.') {
		size_t f = ++k;

		while (k < n && isdig(s[k]))
			k++;
		if (k == f)
			return false;
	}
	if (k < n && (s[k] == 'Z' || s[k] == 'z'))
		k++;
	else if (k < n && (s[k] == '+' || s[k] == '-')) {
		if (n - k != 6 || !isdig(s[k + 1]) || !isdig(s[k + 2]) || s[k + 3] != ':' || !isdig(s[k + 4]) ||
		    !isdig(s[k + 5]))
			return false;
		k += 6;
	}
	return k == n;
}

static int parse_value(struct parser *ps, struct toml **ret);

static void freeze(struct toml *t)
{
	t->flags |= F_FROZEN;
	for (size_t k = 0; k < t->n; k++)
		freeze(t->vals[k]);
}

static int parse_array(struct parser *ps, struct toml **ret)
{
	_cleanup_(toml_freep) struct toml *a = tnew(TOML_ARRAY, ps);
	int r;

	if (!a)
		return -ENOMEM;
	ps->p++; /* [ */
	for (;;) {
		struct toml *v;

		r = skip_ws_nl(ps);
		if (r < 0)
			return r;
		if (at_end(ps))
			return perr(ps, ps->p, "unterminated array");
		if (*ps->p == ']') {
			ps->p++;
			break;
		}
		r = parse_value(ps, &v);
		if (r < 0)
			return r;
		if (tadd(a, NULL, v) < 0) {
			toml_free(v);
			return -ENOMEM;
		}
		r = skip_ws_nl(ps);
		if (r < 0)
			return r;
		if (!at_end(ps) && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (!at_end(ps) && *ps->p == ']') {
			ps->p++;
			break;
		}
		return perr(ps, ps->p, "expected ',' or ']' in an array");
	}
	*ret = TAKE_PTR(a);
	return 0;
}

static int set_key(struct parser *ps, struct toml *table, struct key *k, struct toml *v);

static int parse_inline_table(struct parser *ps, struct toml **ret)
{
	_cleanup_(toml_freep) struct toml *t = tnew(TOML_TABLE, ps);
	int r;

	if (!t)
		return -ENOMEM;
	ps->p++; /* { */
	skip_ws(ps);
	if (!at_end(ps) && *ps->p == '}') {
		ps->p++;
		*ret = TAKE_PTR(t);
		return 0;
	}
	for (;;) {
		struct key k;
		struct toml *v;

		r = parse_key(ps, &k);
		if (r < 0)
			return r;
		if (at_end(ps) || *ps->p != '=') {
			key_clear(&k);
			return perr(ps, ps->p, "expected '=' after a key in an inline table");
		}
		ps->p++;
		skip_ws(ps);
		r = parse_value(ps, &v);
		if (r < 0) {
			key_clear(&k);
			return r;
		}
		r = set_key(ps, t, &k, v);
		key_clear(&k);
		if (r < 0)
			return r;
		skip_ws(ps);
		if (!at_end(ps) && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (!at_end(ps) && *ps->p == '}') {
			ps->p++;
			break;
		}
		return perr(ps, ps->p, "expected ',' or '}' in an inline table (which must stay on one line)");
	}
	*ret = TAKE_PTR(t);
	return 0;
}

static int parse_value(struct parser *ps, struct toml **ret)
{
	const char *s = ps->p, *e;
	struct toml *v;
	size_t n;
	int r;

	if (++ps->depth > TOML_MAX_DEPTH) {
		ps->depth--;
		return perr(ps, s, "values nested deeper than %d", TOML_MAX_DEPTH);
	}
	if (at_end(ps)) {
		r = perr(ps, s, "expected a value");
	} else if (*s == '"' || *s == '\'') {
		char *str;

		r = parse_string(ps, true, &str);
		if (r >= 0) {
			v = tnew(TOML_STRING, ps);
			if (!v) {
				free(str);
				r = -ENOMEM;
			} else {
				v->s = str;
				*ret = v;
			}
		}
	} else if (*s == '[') {
		r = parse_array(ps, ret);
	} else if (*s == '{') {
		r = parse_inline_table(ps, ret);
	} else {
		/* bare token; a space may separate a date from its time */
		e = s;
		while (e < ps->end && !strchr(" \t\r\n,]}#", *e))
			e++;
		if (e + 1 < ps->end && *e == ' ' && e - s == 10 && looks_datetime(s, 10) && isdig(e[1])) {
			e++;
			while (e < ps->end && !strchr(" \t\r\n,]}#", *e))
				e++;
		}
		n = (size_t)(e - s);
		v = tnew(TOML_BOOL, ps);
		if (!v) {
			r = -ENOMEM;
		} else if ((n == 4 && !strncmp(s, "true", 4)) || (n == 5 && !strncmp(s, "false", 5))) {
			v->b = n == 4;
			r = 0;
		} else if (looks_datetime(s, n)) {
			v->type = TOML_DATETIME;
			v->s = strndup(s, n);
			r = v->s ? 0 : -ENOMEM;
		} else if ((r = parse_int(s, n, &v->i)) == 0) {
			v->type = TOML_INTEGER;
		} else if (r == -ERANGE) {
			r = perr(ps, s, "integer '%.*s' does not fit in 64 bits", (int)n, s);
		} else if (parse_float(s, n, &v->f) == 0) {
			v->type = TOML_FLOAT;
			r = 0;
		} else {
			r = perr(ps, s, n ? "invalid value '%.*s'" : "expected a value%.*s", (int)n, s);
		}
		if (r < 0)
			toml_free(v);
		else
			*ret = v;
		ps->p = e;
	}
	ps->depth--;
	if (r >= 0 && ((*ret)->type == TOML_ARRAY || (*ret)->type == TOML_TABLE))
		freeze(*ret);
	return r;
}

/* ---- tables ---- */

static int pend(struct parser *ps, struct toml *t)
{
	if (ps->n_pending == ps->cap_pending) {
		size_t cap = ps->cap_pending ? ps->cap_pending * 2 : 16;
		struct toml **np = realloc(ps->pending, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		ps->pending = np;
		ps->cap_pending = cap;
	}
	ps->pending[ps->n_pending++] = t;
	return 0;
}

/* Child table `name` of t, created when absent. Dotted-key walks mark new tables pending. */
static int child_table(struct parser *ps, struct toml *t, const char *name, bool dotted, struct toml **ret,
		       const char *at)
{
	ssize_t k = tindex(t, name);
	struct toml *c;

	if (k >= 0) {
		c = t->vals[k];
		if (c->type == TOML_ARRAY && (c->flags & F_AOT) && !dotted) {
			c = c->vals[c->n - 1];
		} else if (c->type != TOML_TABLE) {
			return perr(ps, at, "key '%s' is already a value (line %u), not a table", name, c->line);
		}
		if (c->flags & F_FROZEN)
			return perr(ps, at, "table '%s' was written inline (line %u) and cannot be extended", name,
				    c->line);
		if (dotted && (c->flags & F_EXPLICIT))
			return perr(ps, at, "table '%s' was defined in another section (line %u)", name, c->line);
		*ret = c;
		return 0;
	}
	c = tnew(TOML_TABLE, ps);
	if (!c)
		return -ENOMEM;
	char *kn = strdup(name);
	if (!kn || tadd(t, kn, c) < 0) {
		free(kn);
		toml_free(c);
		return -ENOMEM;
	}
	if (dotted) {
		c->flags |= F_PENDING;
		if (pend(ps, c) < 0)
			return -ENOMEM;
	}
	*ret = c;
	return 0;
}

/* key = value inside table (dotted keys create sub-tables). Takes ownership of v. */
static int set_key(struct parser *ps, struct toml *table, struct key *k, struct toml *v)
{
	struct toml *t = table;
	char *kn;
	int r;

	for (size_t i = 0; i + 1 < k->n; i++) {
		r = child_table(ps, t, k->part[i], true, &t, k->at);
		if (r < 0) {
			toml_free(v);
			return r;
		}
	}
	if (tindex(t, k->part[k->n - 1]) >= 0) {
		unsigned prev = toml_get(t, k->part[k->n - 1])->line;

		toml_free(v);
		return perr(ps, k->at, "key '%s' is defined twice (first on line %u)", k->part[k->n - 1], prev);
	}
	kn = strdup(k->part[k->n - 1]);
	if (!kn || tadd(t, kn, v) < 0) {
		free(kn);
		toml_free(v);
		return -ENOMEM;
	}
	return 0;
}

static int parse_header(struct parser *ps, struct toml *root, struct toml **ret)
{
	const char *at = ps->p;
	bool aot = ps->end - ps->p >= 2 && ps->p[1] == '[';
	struct key k;
	struct toml *t = root, *c;
	const char *last;
	ssize_t idx;
	int r;

	for (size_t i = 0; i < ps->n_pending; i++) {
		ps->pending[i]->flags &= ~F_PENDING;
		ps->pending[i]->flags |= F_EXPLICIT;
	}
	ps->n_pending = 0;
	ps->p += aot ? 2 : 1;
	r = parse_key(ps, &k);
	if (r < 0)
		return r;
	if (at_end(ps) || *ps->p != ']' || (aot && (ps->end - ps->p < 2 || ps->p[1] != ']'))) {
		key_clear(&k);
		return perr(ps, at,
			    aot ? "unclosed table array header, expected ']]'" : "unclosed table header, expected ']'");
	}
	ps->p += aot ? 2 : 1;
	for (size_t i = 0; i + 1 < k.n; i++) {
		r = child_table(ps, t, k.part[i], false, &t, at);
		if (r < 0)
			goto out;
	}
	last = k.part[k.n - 1];
	idx = tindex(t, last);
	if (aot) {
		struct toml *arr;

		if (idx < 0) {
			char *kn = strdup(last);

			arr = tnew(TOML_ARRAY, ps);
			if (!arr || !kn || tadd(t, kn, arr) < 0) {
				free(kn);
				toml_free(arr);
				r = -ENOMEM;
				goto out;
			}
			arr->flags |= F_AOT;
		} else {
			arr = t->vals[idx];
			if (arr->type != TOML_ARRAY || !(arr->flags & F_AOT)) {
				r = perr(ps, at, "'%s' is already defined (line %u) and is not an array of tables",
					 last, arr->line);
				goto out;
			}
		}
		c = tnew(TOML_TABLE, ps);
		if (!c || tadd(arr, NULL, c) < 0) {
			toml_free(c);
			r = -ENOMEM;
			goto out;
		}
	} else if (idx < 0) {
		r = child_table(ps, t, last, false, &c, at);
		if (r < 0)
			goto out;
	} else {
		c = t->vals[idx];
		if (c->type != TOML_TABLE || (c->flags & (F_EXPLICIT | F_FROZEN))) {
			r = perr(ps, at, "table '%s' is defined twice (first on line %u)", last, c->line);
			goto out;
		}
		c->line = ps->line;
	}
	c->flags |= F_EXPLICIT;
	*ret = c;
	r = 0;
out:
	key_clear(&k);
	return r;
}

int toml_parse(const char *text, size_t len, const char *name, struct toml **ret, struct gerr *err)
{
	struct parser ps = {.p = text, .end = text + len, .line_start = text, .line = 1, .name = name, .err = err};
	_cleanup_(toml_freep) struct toml *root = tnew(TOML_TABLE, &ps);
	struct toml *cur;
	int r = 0;

	if (!root)
		return -ENOMEM;
	root->flags |= F_EXPLICIT;
	cur = root;
	if (memchr(text, '\0', len))
		return perr(&ps, (const char *)memchr(text, '\0', len), "NUL byte in the file");
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		ps.p += 3, ps.line_start = ps.p;
	while (r >= 0 && !at_end(&ps)) {
		skip_ws(&ps);
		if (at_end(&ps))
			break;
		if (*ps.p == '#' || *ps.p == '\n' || *ps.p == '\r') {
			r = expect_eol(&ps);
		} else if (*ps.p == '[') {
			r = parse_header(&ps, root, &cur);
			if (r >= 0)
				r = expect_eol(&ps);
		} else {
			struct key k;
			struct toml *v;

			r = parse_key(&ps, &k);
			if (r < 0)
				break;
			if (at_end(&ps) || *ps.p != '=') {
				key_clear(&k);
				r = perr(&ps, ps.p, "expected '=' after key");
				break;
			}
			ps.p++;
			skip_ws(&ps);
			r = parse_value(&ps, &v);
			if (r >= 0)
				r = set_key(&ps, cur, &k, v);
			key_clear(&k);
			if (r >= 0)
				r = expect_eol(&ps);
		}
	}
	free(ps.pending);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(root);
	return 0;
}

int toml_load_file(const char *path, struct toml **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	char *name;
	struct toml *t;
	size_t len;
	int r;

	r = read_file(path, TOML_MAX_FILE, &text, &len, err);
	if (r < 0)
		return r;
	name = strdup(path);
	if (!name)
		return -ENOMEM;
	r = toml_parse(text, len, name, &t, err);
	if (r < 0) {
		free(name);
		return r;
	}
	t->names = malloc(sizeof(char *));
	if (!t->names) {
		free(name);
		toml_free(t);
		return -ENOMEM;
	}
	t->names[t->n_names++] = name;
	*ret = t;
	return 0;
}

/* ---- merge ---- */

int toml_merge(struct toml *dst, struct toml *src, int depth)
{
	char **nn;

	if (src->n_names) {
		nn = realloc(dst->names, (dst->n_names + src->n_names) * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		dst->names = nn;
		memcpy(dst->names + dst->n_names, src->names, src->n_names * sizeof(*nn));
		dst->n_names += src->n_names;
		src->n_names = 0;
	}
	for (size_t k = 0; k < src->n; k++) {
		ssize_t d = tindex(dst, src->keys[k]);
		struct toml *sv = src->vals[k];

		if (d >= 0 && depth != 0 && dst->vals[d]->type == TOML_TABLE && sv->type == TOML_TABLE) {
			int r = toml_merge(dst->vals[d], sv, depth < 0 ? depth : depth - 1);

			if (r < 0)
				return r;
			continue;
		}
		if (d >= 0) {
			toml_free(dst->vals[d]);
			dst->vals[d] = sv;
		} else if (tadd(dst, src->keys[k], sv) < 0) {
			return -ENOMEM;
		} else {
			src->keys[k] = NULL;
		}
		src->vals[k] = tnew(TOML_BOOL, NULL); /* placeholder so src stays freeable */
		if (!src->vals[k])
			return -ENOMEM;
	}
	return 0;
}

/* ---- JSON ---- */

struct json_t *toml_to_json(const struct toml *t)
{
	json_t *j;

	switch (t->type) {
	case TOML_STRING:
	case TOML_DATETIME:
		return json_string(t->s);
	case TOML_INTEGER:
		return json_integer(t->i);
	case TOML_FLOAT:
		return json_real(t->f);
	case TOML_BOOL:
		return json_boolean(t->b);
	case TOML_ARRAY:
		j = json_array();
		for (size_t k = 0; j && k < t->n; k++)
			if (json_array_append_new(j, toml_to_json(t->vals[k])) < 0) {
				json_decref(j);
				return NULL;
			}
		return j;
	case TOML_TABLE:
		j = json_object();
		for (size_t k = 0; j && k < t->n; k++)
			if (json_object_set_new(j, t->keys[k], toml_to_json(t->vals[k])) < 0) {
				json_decref(j);
				return NULL;
			}
		return j;
	}
	return NULL;
}

/* ---- containerd ---- */

struct load_state {
	const char *root;
	char *seen[TOML_MAX_IMPORTS];
	size_t n_seen;
	struct toml *merged;
	int depth; /* merge depth chosen from the main file's version */
};

static bool seen(struct load_state *st, const char *path)
{
	for (size_t k = 0; k < st->n_seen; k++)
		if (streq(st->seen[k], path))
			return true;
	return false;
}

/* Glob one `imports` entry (relative to dir) below root and queue what it matches. */
static int queue_import(struct load_state *st, const char *dir, const char *entry, char **queue, size_t *n_queue)
{
	_cleanup_free_ char *abs = NULL, *pat = NULL;
	glob_t g = {0};

	if (entry[0] == '/')
		abs = strdup(entry);
	else if (asprintf(&abs, "%s/%s", dir, entry) < 0)
		abs = NULL;
	pat = abs ? root_path(st->root, abs) : NULL;
	if (!pat)
		return -ENOMEM;
	if (glob(pat, 0, NULL, &g) != 0)
		return 0; /* containerd: a pattern that matches nothing is not an error */
	for (size_t m = 0; m < g.gl_pathc && *n_queue < TOML_MAX_IMPORTS; m++) {
		/* gl_pathv = <root><abs-expanded>; strip the root prefix again */
		const char *rel = g.gl_pathv[m] + strlen(pat) - strlen(abs);

		queue[*n_queue] = strdup(rel);
		if (!queue[*n_queue]) {
			globfree(&g);
			return -ENOMEM;
		}
		(*n_queue)++;
	}
	globfree(&g);
	return 0;
}

/*
 * containerd's LoadConfig: breadth-first over imports, each file merged over what came before,
 * each file read once (services/server/config/config.go).
 */
static int load_all(struct load_state *st, const char *path, struct gerr *err)
{
	char *queue[TOML_MAX_IMPORTS] = {0};
	size_t n_queue = 0, head = 0;
	int r = 0;

	queue[n_queue] = strdup(path);
	if (!queue[n_queue])
		return -ENOMEM;
	n_queue++;
	for (; head < n_queue && r >= 0; head++) {
		_cleanup_free_ char *host = root_path(st->root, queue[head]);
		_cleanup_free_ char *dir = strdup(queue[head]);
		struct toml *t = NULL;
		const struct toml *imports;

		if (!host || !dir) {
			r = -ENOMEM;
			break;
		}
		if (seen(st, queue[head]))
			continue;
		st->seen[st->n_seen] = strdup(queue[head]);
		if (!st->seen[st->n_seen]) {
			r = -ENOMEM;
			break;
		}
		st->n_seen++;
		r = toml_load_file(host, &t, err);
		if (r < 0)
			break;
		*strrchr(dir, '/') = '\0';
		imports = toml_get(t, "imports");
		for (size_t k = 0; imports && imports->type == TOML_ARRAY && k < imports->n && r >= 0; k++)
			if (imports->vals[k]->type == TOML_STRING)
				r = queue_import(st, dir, imports->vals[k]->s, queue, &n_queue);
		if (!st->merged) {
			/* version 3 (containerd 2.x) merges plugin tables key by key; 2 replaces them */
			st->depth = toml_int(t, "version", 1) >= 3 ? -1 : 2;
			st->merged = t;
		} else if (r >= 0) {
			/* depth 2: root -> "plugins" -> each plugin id replaced (containerd < 2.1, #5837) */
			r = toml_merge(st->merged, t, st->depth);
			toml_free(t);
		} else {
			toml_free(t);
		}
	}
	for (size_t k = 0; k < n_queue; k++)
		free(queue[k]);
	return r;
}

int toml_load_containerd(const char *root, const char *path, struct toml **ret, char ***ret_files, struct gerr *err)
{
	struct load_state st = {.root = root};
	int r;

	r = load_all(&st, path, err);
	if (r >= 0 && ret_files) {
		char **files = calloc(st.n_seen + 1, sizeof(char *));

		if (!files) {
			r = -ENOMEM;
		} else {
			memcpy(files, st.seen, st.n_seen * sizeof(char *));
			st.n_seen = 0;
			*ret_files = files;
		}
	}
	for (size_t k = 0; k < st.n_seen; k++)
		free(st.seen[k]);
	if (r < 0) {
		toml_free(st.merged);
		return r;
	}
	/* containerd keeps the imports list it was given; the merged view shows the main file's */
	*ret = st.merged;
	return 0;
}
