/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include <strings.h>

#include "util/enumtab.h"

const void *enum_row_by_value(const void *rows, size_t n, size_t stride, size_t value_off, int value)
{
	const char *row = rows;

	for (size_t i = 0; i < n; i++, row += stride) {
		int v;

		memcpy(&v, row + value_off, sizeof(v));
		if (v == value)
			return row;
	}
	return NULL;
}

const void *enum_row_by_name(const void *rows, size_t n, size_t stride, size_t value_off, size_t name_off,
			     const char *name, bool icase)
{
	const char *row = rows;

	(void)value_off;
	if (!name)
		return NULL;
	for (size_t i = 0; i < n; i++, row += stride) {
		const char *s;

		memcpy(&s, row + name_off, sizeof(s));
		if (s && (icase ? strcasecmp(s, name) : strcmp(s, name)) == 0)
			return row;
	}
	return NULL;
}
