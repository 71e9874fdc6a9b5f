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
#include "parse/toml_int.h"

/* ---- values ---- */

struct toml *toml_new_value(enum toml_type type, const struct parser *ps)
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
int toml_add(struct toml *t, char *key, struct toml *v)
{
	if (t->n == t->cap) {
		size_t cap = t->cap;
		struct toml **nv = grow_alloc(t->vals, &cap, sizeof(*nv), 4);

		if (!nv)
			return -ENOMEM;
		t->vals = nv;
		if (t->type == TOML_TABLE) {
			char **nk = reallocarray(t->keys, cap, sizeof(*nk)); /* as many as vals */

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

ssize_t toml_index(const struct toml *t, const char *key)
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
	ssize_t k = toml_index(t, key);

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
		ssize_t d = toml_index(dst, src->keys[k]);
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
		} else if (toml_add(dst, src->keys[k], sv) < 0) {
			return -ENOMEM;
		} else {
			src->keys[k] = NULL;
		}
		src->vals[k] = toml_new_value(TOML_BOOL, NULL); /* placeholder so src stays freeable */
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
