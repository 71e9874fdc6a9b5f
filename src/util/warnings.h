/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one warning accumulator: what a reader or a generator skipped and a user should hear about,
 * one line per item, in the order they came (a config file's unknown keys, what a CDI spec leaves
 * out, a driver library's dangling link). Library code collects; the command or the daemon's loop
 * prints or logs them.
 */
#pragma once

#include <stddef.h>

#include "util/macro.h"

struct warnings {
	char **items; /* owned lines, n of them */
	size_t n, cap;
};

#include <stdbool.h>

/* Append a line, unless once and the same line is already there; 0 or -ENOMEM (w unchanged). */
int warnings_addf(struct warnings *w, bool once, const char *fmt, ...) _printf_(3, 4);
#define warnings_add(w, ...) warnings_addf((w), false, __VA_ARGS__)
/* once: two ways of finding one thing (a cache and a dir scan meeting the same link) say it once */
#define warnings_add_once(w, ...) warnings_addf((w), true, __VA_ARGS__)
/* Every line of from appended to w (from stays); 0 or -ENOMEM. */
int warnings_extend(struct warnings *w, const struct warnings *from);

/* The lines joined with sep, malloc'd ("" for none); NULL when out of memory. */
char *warnings_join(const struct warnings *w, const char *sep);

/* Free every line and the list; w is empty again. */
void warnings_clear(struct warnings *w);
