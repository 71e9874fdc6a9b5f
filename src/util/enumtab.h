/* SPDX-License-Identifier: Apache-2.0 */
/*
 * enum <-> string: one idiom for every table that names the values of an enum (NVML return codes,
 * log levels, doctor links and severities, XID severities, gRPC status codes, ...).
 *
 * A table is an array of rows with an int-sized field `value` and a `const char *name`; rows may
 * carry more columns (an errno, a help text). Lookups are linear: the tables are short and read
 * far from any hot path.
 *
 *	static const struct enum_name level_names[] = {{LOG_LVL_DEBUG, "debug"}, {LOG_LVL_INFO, "info"}};
 *	const char *s = enum_to_name(level_names, l, "?");
 *	if (enum_from_name(level_names, "info", &l) < 0) ...
 *
 * A value listed twice answers with its first row; so does a name (aliases go after the main row).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/macro.h"

/* The plain two-column row. */
struct enum_name {
	int value;
	const char *name;
};

/* The row whose value is value, or whose name is name (case-insensitive when icase); NULL when none. */
const void *enum_row_by_value(const void *rows, size_t n, size_t stride, size_t value_off, int value);
const void *enum_row_by_name(const void *rows, size_t n, size_t stride, size_t value_off, size_t name_off,
			     const char *name, bool icase);

/* Row geometry of table t; checks that `value` is int-sized and `name` a string. */
#define ENUM_TABLE_(t)                      \
	(t), ELEMENTSOF(t), sizeof((t)[0]), \
	    offsetof(__typeof__((t)[0]), value) + 0 * sizeof(char[sizeof((t)[0].value) == sizeof(int) ? 1 : -1])
#define ENUM_NAME_OFF_(t) (offsetof(__typeof__((t)[0]), name) + 0 * sizeof((t)[0].name[0]))

/* Typed row lookups: a pointer to the row of t, NULL when absent. */
#define enum_row(t, v)       ((__typeof__(&(t)[0]))enum_row_by_value(ENUM_TABLE_(t), (int)(v)))
#define enum_row_named(t, s) ((__typeof__(&(t)[0]))enum_row_by_name(ENUM_TABLE_(t), ENUM_NAME_OFF_(t), (s), false))

/* The name of value v in t, fallback when t has no such value. */
#define enum_to_name(t, v, fallback)                           \
	({                                                     \
		__typeof__(&(t)[0]) row_ = enum_row((t), (v)); \
		row_ ? row_->name : (fallback);                \
	})

/* Value of name s in t into *ret (written only on success); 0, or -EINVAL when t has no such name. */
#define enum_from_name_(t, s, ret, icase)                                                                   \
	({                                                                                                  \
		__typeof__(&(t)[0]) row_ =                                                                  \
		    (__typeof__(&(t)[0]))enum_row_by_name(ENUM_TABLE_(t), ENUM_NAME_OFF_(t), (s), (icase)); \
		if (row_)                                                                                   \
			*(ret) = (__typeof__(*(ret)))row_->value;                                           \
		row_ ? 0 : -EINVAL;                                                                         \
	})
#define enum_from_name(t, s, ret)       enum_from_name_((t), (s), (ret), false)
#define enum_from_name_icase(t, s, ret) enum_from_name_((t), (s), (ret), true)
