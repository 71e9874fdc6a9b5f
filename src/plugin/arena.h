/* SPDX-License-Identifier: Apache-2.0 */
/* A bump allocator for one reply: protobuf-c messages are built in it, packed, then freed at once. */
#pragma once

#include <stddef.h>

#include "util/macro.h"

struct arena_block;
struct arena {
	struct arena_block *head;
	int failed; /* an allocation failed: the reply must not be sent */
};

void *arena_alloc(struct arena *a, size_t size); /* zeroed; NULL and a->failed on ENOMEM */
char *arena_strdup(struct arena *a, const char *s);
char *arena_printf(struct arena *a, const char *fmt, ...) _printf_(2, 3);
void arena_release(struct arena *a);
