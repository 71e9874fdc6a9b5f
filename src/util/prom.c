/* SPDX-License-Identifier: Apache-2.0 */
#include "util/prom.h"

void prom_escape(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (const char *p = in ? in : ""; *p && o + 2 < size; p++) {
		if (*p == '\\' || *p == '"') {
			out[o++] = '\\';
			out[o++] = *p;
		} else if (*p == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else
			out[o++] = *p;
	}
	if (size)
		out[o < size ? o : size - 1] = '\0';
}
