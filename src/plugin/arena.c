/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/arena.h"

struct arena_block {
	struct arena_block *next;
	max_align_t data[];
};

void *arena_alloc(struct arena *a, size_t size)
{
	struct arena_block *b = calloc(1, sizeof(*b) + (size ? size : 1));

	if (!b) {
		a->failed = 1;
		return NULL;
	}
	b->next = a->head;
	a->head = b;
	return b->data;
}

char *arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc(a, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(p = arena_alloc(a, (size_t)n + 1)))
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_block *b = a->head;

		a->head = b->next;
		free(b);
	}
	a->failed = 0;
}
