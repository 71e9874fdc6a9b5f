/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small TOML 1.0 reader, enough for containerd's config.toml (v2 and v3) and its `imports`
 * drop-ins. Debian ships no C TOML library, so this one is ours; it is checked against Python's
 * tomllib and `containerd config dump` (tests/integration/test_toml_peers.py).
 * Errors name file:line:col. Values are read-only after parsing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum toml_type {
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_DATETIME, /* kept as its source text, e.g. "1979-05-27T07:32:00Z" */
};

struct toml {
	enum toml_type type;
	char *s; /* STRING, DATETIME */
	int64_t i;
	double f;
	bool b;
	/* TABLE: keys[k] -> vals[k] in definition order; ARRAY: vals[k] */
	char **keys;
	struct toml **vals;
	size_t n, cap;
	unsigned flags;   /* parser bookkeeping (explicit, dotted, frozen, array of tables) */
	unsigned line;    /* where it was defined, 1-based; 0 for merged/synthetic values */
	const char *file; /* file it came from; the string is owned by the root (names below) */
	char **names;     /* root only: file names its values point at (moved along by toml_merge) */
	size_t n_names;
};

/* Parse text; name is used in messages ("config.toml:3:7: ..."). */
int toml_parse(const char *text, size_t len, const char *name, struct toml **ret, struct gerr *err);
/* Read and parse a file (at most 4 MiB). Values remember the file name. */
int toml_load_file(const char *path, struct toml **ret, struct gerr *err);
void toml_free(struct toml *t);
DEFINE_CLEANUP_FUNC(struct toml, toml_free)

/* Lookups; each returns NULL when absent or t is not a table. */
const struct toml *toml_get(const struct toml *t, const char *key);
/* Walk a path of keys: toml_path(t, "plugins", "io.containerd.grpc.v1.cri", "containerd", NULL). */
const struct toml *toml_path(const struct toml *t, ...) __attribute__((sentinel));
/* Typed leaves with a fallback when absent or of another type. */
const char *toml_string(const struct toml *t, const char *key, const char *fallback);
int toml_bool(const struct toml *t, const char *key, int fallback);
int64_t toml_int(const struct toml *t, const char *key, int64_t fallback);

/*
 * Merge src into dst (both tables): keys of src override dst. depth 0 replaces each top-level
 * value wholesale; depth < 0 merges tables recursively all the way down; depth N merges N levels
 * then replaces. src is consumed (moved into dst).
 */
int toml_merge(struct toml *dst, struct toml *src, int depth);

/* JSON form (jansson json_t *): tables → objects, arrays → arrays, datetimes → strings. */
struct json_t;
struct json_t *toml_to_json(const struct toml *t);

/*
 * containerd's config loading: read path, then every file its `imports` name (globs, relative to
 * the importing file's directory, recursively, each once), and merge them the way containerd
 * does: version 2 files replace each `plugins.<id>` table wholesale (containerd < 2.1), version 3
 * merges them key by key. All paths are below root. ret_files (optional) gets a NULL-terminated
 * list of the files read, in merge order.
 */
int toml_load_containerd(const char *root, const char *path, struct toml **ret, char ***ret_files, struct gerr *err);
