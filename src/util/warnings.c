/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/warnings.h"

/* Take line (owned) into w, or drop it when once and w has it. */
static int take(struct warnings *w, char *line, bool once)
{
	char **items;

	for (size_t i = 0; once && i < w->n; i++)
		if (streq(w->items[i], line)) {
			free(line);
			return 0;
		}
	if (w->n == w->cap) {
		items = grow_alloc(w->items, &w->cap, sizeof(*items), 8);
		if (!items) {
			free(line);
			return -ENOMEM;
		}
		w->items = items;
	}
	w->items[w->n++] = line;
	return 0;
}

int warnings_addf(struct warnings *w, bool once, const char *fmt, ...)
{
	char *line;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : take(w, line, once);
}

int warnings_extend(struct warnings *w, const struct warnings *from)
{
	for (size_t i = 0; i < from->n; i++) {
		char *line = strdup(from->items[i]);

		if (!line || take(w, line, false) < 0)
			return -ENOMEM;
	}
	return 0;
}

char *warnings_join(const struct warnings *w, const char *sep)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < w->n; i++)
		len += strlen(w->items[i]) + (i ? strlen(sep) : 0);
	s = p = malloc(len);
	if (!s)
		return NULL;
	*p = '\0';
	for (size_t i = 0; i < w->n; i++)
		p = stpcpy(stpcpy(p, i ? sep : ""), w->items[i]);
	return s;
}

void warnings_clear(struct warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->items[i]);
	free(w->items);
	*w = (struct warnings){0};
}
