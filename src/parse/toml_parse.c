/* SPDX-License-Identifier: Apache-2.0 */
/* TOML structure: values, arrays, inline tables, [headers] and [[arrays of tables]], toml_parse(). */
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

static int parse_value(struct parser *ps, struct toml **ret);

static void freeze(struct toml *t)
{
	t->flags |= F_FROZEN;
	for (size_t k = 0; k < t->n; k++)
		freeze(t->vals[k]);
}

/*
 * After a list item: skip blanks (newlines and comments too in an array; an inline table stays on one line),
 * then ',' (1: another item follows) or close (0: the list ends), else the error msg.
 */
static int list_next(struct parser *ps, char close, const char *msg)
{
	int r = 0;

	if (close == ']')
		r = toml_skip_ws_nl(ps);
	else
		toml_skip_ws(ps);
	if (r < 0)
		return r;
	if (toml_at_end(ps) || (*ps->p != ',' && *ps->p != close))
		return toml_perr(ps, ps->p, "%s", msg);
	return *ps->p++ == ',';
}

static int parse_array(struct parser *ps, struct toml **ret)
{
	_cleanup_(toml_freep) struct toml *a = toml_new_value(TOML_ARRAY, ps);
	int r;

	if (!a)
		return -ENOMEM;
	ps->p++; /* [ */
	do {
		struct toml *v;

		r = toml_skip_ws_nl(ps);
		if (r < 0)
			return r;
		if (toml_at_end(ps))
			return toml_perr(ps, ps->p, "unterminated array");
		if (*ps->p == ']') {
			ps->p++;
			break;
		}
		r = parse_value(ps, &v);
		if (r < 0)
			return r;
		if (toml_add(a, NULL, v) < 0) {
			toml_free(v);
			return -ENOMEM;
		}
	} while ((r = list_next(ps, ']', "expected ',' or ']' in an array")) > 0);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(a);
	return 0;
}

static int set_key(struct parser *ps, struct toml *table, struct key *k, struct toml *v);

static int parse_inline_table(struct parser *ps, struct toml **ret)
{
	_cleanup_(toml_freep) struct toml *t = toml_new_value(TOML_TABLE, ps);
	int r;

	if (!t)
		return -ENOMEM;
	ps->p++; /* { */
	toml_skip_ws(ps);
	if (!toml_at_end(ps) && *ps->p == '}') {
		ps->p++;
		*ret = TAKE_PTR(t);
		return 0;
	}
	do {
		struct key k;
		struct toml *v;

		r = toml_parse_key(ps, &k);
		if (r < 0)
			return r;
		if (toml_at_end(ps) || *ps->p != '=') {
			toml_key_clear(&k);
			return toml_perr(ps, ps->p, "expected '=' after a key in an inline table");
		}
		ps->p++;
		toml_skip_ws(ps);
		r = parse_value(ps, &v);
		if (r < 0) {
			toml_key_clear(&k);
			return r;
		}
		r = set_key(ps, t, &k, v);
		toml_key_clear(&k);
		if (r < 0)
			return r;
	} while ((r = list_next(ps, '}', "expected ',' or '}' in an inline table (which must stay on one line)")) > 0);
	if (r < 0)
		return r;
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
		return toml_perr(ps, s, "values nested deeper than %d", TOML_MAX_DEPTH);
	}
	if (toml_at_end(ps)) {
		r = toml_perr(ps, s, "expected a value");
	} else if (*s == '"' || *s == '\'') {
		char *str;

		r = toml_parse_string(ps, true, &str);
		if (r >= 0) {
			v = toml_new_value(TOML_STRING, ps);
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
		if (e + 1 < ps->end && *e == ' ' && e - s == 10 && toml_looks_datetime(s, 10) && toml_isdig(e[1])) {
			e++;
			while (e < ps->end && !strchr(" \t\r\n,]}#", *e))
				e++;
		}
		n = (size_t)(e - s);
		v = toml_new_value(TOML_BOOL, ps);
		if (!v) {
			r = -ENOMEM;
		} else if ((n == 4 && !strncmp(s, "true", 4)) || (n == 5 && !strncmp(s, "false", 5))) {
			v->b = n == 4;
			r = 0;
		} else if (toml_looks_datetime(s, n)) {
			v->type = TOML_DATETIME;
			v->s = strndup(s, n);
			r = v->s ? 0 : -ENOMEM;
		} else if ((r = toml_parse_int(s, n, &v->i)) == 0) {
			v->type = TOML_INTEGER;
		} else if (r == -ERANGE) {
			r = toml_perr(ps, s, "integer '%.*s' does not fit in 64 bits", (int)n, s);
		} else if (toml_parse_float(s, n, &v->f) == 0) {
			v->type = TOML_FLOAT;
			r = 0;
		} else {
			r = toml_perr(ps, s, n ? "invalid value '%.*s'" : "expected a value%.*s", (int)n, s);
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
		struct toml **np = grow_alloc(ps->pending, &ps->cap_pending, sizeof(*np), 16);

		if (!np)
			return -ENOMEM;
		ps->pending = np;
	}
	ps->pending[ps->n_pending++] = t;
	return 0;
}

/* Child table `name` of t, created when absent. Dotted-key walks mark new tables pending. */
static int child_table(struct parser *ps, struct toml *t, const char *name, bool dotted, struct toml **ret,
		       const char *at)
{
	ssize_t k = toml_index(t, name);
	struct toml *c;

	if (k >= 0) {
		c = t->vals[k];
		if (c->type == TOML_ARRAY && (c->flags & F_AOT) && !dotted) {
			c = c->vals[c->n - 1];
		} else if (c->type != TOML_TABLE) {
			return toml_perr(ps, at, "key '%s' is already a value (line %u), not a table", name, c->line);
		}
		if (c->flags & F_FROZEN)
			return toml_perr(ps, at, "table '%s' was written inline (line %u) and cannot be extended", name,
					 c->line);
		if (dotted && (c->flags & F_EXPLICIT))
			return toml_perr(ps, at, "table '%s' was defined in another section (line %u)", name, c->line);
		*ret = c;
		return 0;
	}
	c = toml_new_value(TOML_TABLE, ps);
	if (!c)
		return -ENOMEM;
	char *kn = strdup(name);
	if (!kn || toml_add(t, kn, c) < 0) {
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
	if (toml_index(t, k->part[k->n - 1]) >= 0) {
		unsigned prev = toml_get(t, k->part[k->n - 1])->line;

		toml_free(v);
		return toml_perr(ps, k->at, "key '%s' is defined twice (first on line %u)", k->part[k->n - 1], prev);
	}
	kn = strdup(k->part[k->n - 1]);
	if (!kn || toml_add(t, kn, v) < 0) {
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
	r = toml_parse_key(ps, &k);
	if (r < 0)
		return r;
	if (toml_at_end(ps) || *ps->p != ']' || (aot && (ps->end - ps->p < 2 || ps->p[1] != ']'))) {
		toml_key_clear(&k);
		return toml_perr(
		    ps, at, aot ? "unclosed table array header, expected ']]'" : "unclosed table header, expected ']'");
	}
	ps->p += aot ? 2 : 1;
	for (size_t i = 0; i + 1 < k.n; i++) {
		r = child_table(ps, t, k.part[i], false, &t, at);
		if (r < 0)
			goto out;
	}
	last = k.part[k.n - 1];
	idx = toml_index(t, last);
	if (aot) {
		struct toml *arr;

		if (idx < 0) {
			char *kn = strdup(last);

			arr = toml_new_value(TOML_ARRAY, ps);
			if (!arr || !kn || toml_add(t, kn, arr) < 0) {
				free(kn);
				toml_free(arr);
				r = -ENOMEM;
				goto out;
			}
			arr->flags |= F_AOT;
		} else {
			arr = t->vals[idx];
			if (arr->type != TOML_ARRAY || !(arr->flags & F_AOT)) {
				r = toml_perr(ps, at, "'%s' is already defined (line %u) and is not an array of tables",
					      last, arr->line);
				goto out;
			}
		}
		c = toml_new_value(TOML_TABLE, ps);
		if (!c || toml_add(arr, NULL, c) < 0) {
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
			r = toml_perr(ps, at, "table '%s' is defined twice (first on line %u)", last, c->line);
			goto out;
		}
		c->line = ps->line;
	}
	c->flags |= F_EXPLICIT;
	*ret = c;
	r = 0;
out:
	toml_key_clear(&k);
	return r;
}

int toml_parse(const char *text, size_t len, const char *name, struct toml **ret, struct gerr *err)
{
	struct parser ps = {.p = text, .end = text + len, .line_start = text, .line = 1, .name = name, .err = err};
	_cleanup_(toml_freep) struct toml *root = toml_new_value(TOML_TABLE, &ps);
	struct toml *cur;
	int r = 0;

	if (!root)
		return -ENOMEM;
	root->flags |= F_EXPLICIT;
	cur = root;
	if (memchr(text, '\0', len))
		return toml_perr(&ps, (const char *)memchr(text, '\0', len), "NUL byte in the file");
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		ps.p += 3, ps.line_start = ps.p;
	while (r >= 0 && !toml_at_end(&ps)) {
		toml_skip_ws(&ps);
		if (toml_at_end(&ps))
			break;
		if (*ps.p == '#' || *ps.p == '\n' || *ps.p == '\r') {
			r = toml_expect_eol(&ps);
		} else if (*ps.p == '[') {
			r = parse_header(&ps, root, &cur);
			if (r >= 0)
				r = toml_expect_eol(&ps);
		} else {
			struct key k;
			struct toml *v;

			r = toml_parse_key(&ps, &k);
			if (r < 0)
				break;
			if (toml_at_end(&ps) || *ps.p != '=') {
				toml_key_clear(&k);
				r = toml_perr(&ps, ps.p, "expected '=' after key");
				break;
			}
			ps.p++;
			toml_skip_ws(&ps);
			r = parse_value(&ps, &v);
			if (r >= 0)
				r = set_key(&ps, cur, &k, v);
			toml_key_clear(&k);
			if (r >= 0)
				r = toml_expect_eol(&ps);
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
