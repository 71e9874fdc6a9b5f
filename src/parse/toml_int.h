/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the TOML reader (parse/toml*.c): parser state, key paths, and the lexing and value
 * helpers its three files share. toml.c: values, merge, JSON, containerd loading; toml_lex.c:
 * whitespace, comments, strings, keys, scalars; toml_parse.c: arrays, inline tables, headers and
 * toml_parse() itself.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "parse/toml.h"
#include "util/err.h"
#include "util/macro.h"

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

struct key {
	char *part[TOML_MAX_DEPTH];
	size_t n;
	const char *at;
};

int toml_add(struct toml *t, char *key, struct toml *v);
struct toml *toml_new_value(enum toml_type type, const struct parser *ps);
ssize_t toml_index(const struct toml *t, const char *key);
void toml_skip_ws(struct parser *ps);
void toml_key_clear(struct key *k);
int toml_parse_key(struct parser *ps, struct key *k);
int toml_perr(struct parser *ps, const char *at, const char *fmt, ...) _printf_(3, 4);
#ifdef __clang_analyzer__
#define toml_perr(...) GERR_NEGATIVE_(toml_perr(__VA_ARGS__)) /* always < 0: see util/err.h */
#endif
int toml_skip_ws_nl(struct parser *ps);
bool toml_looks_datetime(const char *s, size_t n);
int toml_parse_string(struct parser *ps, bool multiline_ok, char **ret);
bool toml_at_end(const struct parser *ps);
int toml_parse_int(const char *tok, size_t n, int64_t *ret);
int toml_parse_float(const char *tok, size_t n, double *ret);
int toml_expect_eol(struct parser *ps);
bool toml_isdig(char c);
