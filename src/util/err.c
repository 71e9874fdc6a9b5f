/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"

/* (name): not the analyzer-only wrapper macros of err.h */
int(gerr_set)(struct gerr *err, int errnum, const char *fmt, ...)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EINVAL;
	if (err) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = errnum;
	}
	return -errnum;
}

/* The message with more words before or after it; never formatted into itself. */
static int affix(struct gerr *err, bool after, const char *fmt, va_list ap)
{
	char more[GERR_MAX], old[GERR_MAX];

	if (!err)
		return -EINVAL;
	vsnprintf(more, sizeof(more), fmt, ap);
	memcpy(old, err->msg, sizeof(old));
	if (after) /* what to do is kept whole: the old message gives way */
		snprintf(err->msg, sizeof(err->msg), "%.*s%s", (int)(sizeof(err->msg) - 1 - strlen(more)), old, more);
	else
		snprintf(err->msg, sizeof(err->msg), "%s%s", more, old);
	return -(err->code ? err->code : EINVAL);
}

int(gerr_prefix)(struct gerr *err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = affix(err, false, fmt, ap);
	va_end(ap);
	return r;
}

int(gerr_suffix)(struct gerr *err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = affix(err, true, fmt, ap);
	va_end(ap);
	return r;
}

const char *gerr_quote(const char *s, char buf[static GERR_QUOTE_MAX])
{
	size_t len = strlen(s), head = GERR_QUOTE_MAX / 2, tail = GERR_QUOTE_MAX / 4;

	if (len < GERR_QUOTE_MAX)
		return s;
	snprintf(buf, GERR_QUOTE_MAX, "%.*s...%s (%zu bytes)", (int)head, s, s + len - tail, len);
	return buf;
}
