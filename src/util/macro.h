/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers every module uses: cleanup attributes, ownership transfer, array sizes. */
#pragma once

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x)  (sizeof(x) / sizeof((x)[0]))

/* Hand ownership of a pointer to the caller: returns it and nulls the local. */
#define TAKE_PTR(p)                      \
	({                               \
		__typeof__(p) _p_ = (p); \
		(p) = NULL;              \
		_p_;                     \
	})

#define TAKE_FD(fd)              \
	({                       \
		int _fd_ = (fd); \
		(fd) = -1;       \
		_fd_;            \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}
static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

/*
 * Double an array's allocation (first: the size of a first one): realloc of p to 2 * *cap elements of size
 * bytes. Returns the new array and updates *cap, or NULL (p and *cap untouched) when out of memory.
 */
static inline void *grow_alloc(void *p, size_t *cap, size_t size, size_t first)
{
	size_t c = *cap ? *cap * 2 : first;
	void *np = c > *cap ? reallocarray(p, c, size) : NULL; /* reallocarray: c * size may not wrap */

	if (np)
		*cap = c;
	return np;
}

/*
 * A byte buffer p of *cap bytes grown to hold at least need bytes, doubling from first but never past max
 * (a reader's bound on what one peer may make it hold). Returns the new buffer and updates *cap, or NULL
 * (p and *cap untouched) when need exceeds max or memory is out.
 */
static inline void *grow_bytes_max(void *p, size_t *cap, size_t need, size_t first, size_t max)
{
	size_t c = *cap ? *cap : first;
	void *np;

	if (need > max)
		return NULL;
	while (c < need && c <= max / 2)
		c *= 2;
	c = c < need ? max : c > max ? max : c;
	np = realloc(p, c);
	if (np)
		*cap = c;
	return np;
}

/* Free the owned pointer member(s) (one or two) of each of arr's n elements, then arr itself. */
#define free_members(arr, n, ...)                                                         \
	do {                                                                              \
		for (size_t _i_ = 0; _i_ < (n); _i_++) {                                  \
			FREE_MEMBERS_PICK_(__VA_ARGS__, FREE_MEMBERS_2_, FREE_MEMBERS_1_) \
			((arr)[_i_], __VA_ARGS__)                                         \
		}                                                                         \
		free(arr);                                                                \
	} while (0)
#define FREE_MEMBERS_PICK_(_1, _2, name, ...) name
#define FREE_MEMBERS_1_(e, a)                 free((e).a);
#define FREE_MEMBERS_2_(e, a, b)              free((e).a), free((e).b);

#define _cleanup_free_                        _cleanup_(freep)
#define _cleanup_close_                       _cleanup_(closep)
#define _cleanup_fclose_                      _cleanup_(fclosep)

/* Define a cleanup function for a type with its own free(), e.g. DEFINE_CLEANUP_FUNC(struct node, node_free). */
#define DEFINE_CLEANUP_FUNC(type, func)      \
	static inline void func##p(type **p) \
	{                                    \
		if (*p)                      \
			func(*p);            \
	}

#define streq(a, b) (strcmp((a), (b)) == 0)
/* streq() where either may be NULL: two NULLs are equal, a NULL and a string are not. */
static inline bool streq_ptr(const char *a, const char *b)
{
	return a == b || (a && b && streq(a, b));
}
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
/* Three-way comparison for qsort comparators: -1, 0 or 1. */
#define CMP(a, b) (((a) > (b)) - ((a) < (b)))
