/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error text for the user. Core functions return -errno; where the user needs words they also fill
 * an optional struct gerr with what went wrong, where (file:line:col, device UUID) and what to do.
 */
#pragma once

#include "util/macro.h"

#define GERR_MAX 1024

struct gerr {
	int code; /* positive errno, 0 when unset */
	char msg[GERR_MAX];
};

/* Fill err (may be NULL) and return -errnum, so callers can write `return gerr_set(err, ENOENT, ...)`. */
int gerr_set(struct gerr *err, int errnum, const char *fmt, ...) _printf_(3, 4);

/*
 * A value of outside input (a path, a flag's argument) as a message quotes it: itself when short,
 * else its head and tail around "...", so the reason written after it still fits in the message.
 */
#define GERR_QUOTE_MAX 160
const char *gerr_quote(const char *s, char buf[static GERR_QUOTE_MAX]);

/* Prefix an existing message with more context ("reading config: " + old message). */
int gerr_prefix(struct gerr *err, const char *fmt, ...) _printf_(2, 3);
/* Add to an existing message what to do (old message + "; write 60s"); the old message is cut, if need be. */
int gerr_suffix(struct gerr *err, const char *fmt, ...) _printf_(2, 3);

#ifdef __clang_analyzer__
/*
 * The static analyzer reads one file at a time and so cannot know what err.c guarantees: both return a
 * negative errno, always. Without this it follows `return gerr_set(...)` as a success path and reports
 * the unset out-parameters read there. Analysis only: the compiled code calls the functions as declared.
 */
#define GERR_NEGATIVE_(call)                     \
	({                                       \
		int r_ = (call);                 \
		if (r_ >= 0)                     \
			__builtin_unreachable(); \
		r_;                              \
	})
#define gerr_set(...)    GERR_NEGATIVE_(gerr_set(__VA_ARGS__))
#define gerr_prefix(...) GERR_NEGATIVE_(gerr_prefix(__VA_ARGS__))
#define gerr_suffix(...) GERR_NEGATIVE_(gerr_suffix(__VA_ARGS__))
#endif
