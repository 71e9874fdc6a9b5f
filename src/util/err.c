/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
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

int(gerr_prefix)(struct gerr *err, const char *fmt, ...)
{
	char head[GERR_MAX], old[GERR_MAX];
	va_list ap;

	if (!err)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s%s", head, old);
	return -(err->code ? err->code : EINVAL);
}

int(gerr_suffix)(struct gerr *err, const char *fmt, ...)
{
	char tail[GERR_MAX], old[GERR_MAX];
	va_list ap;

	if (!err)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old)); /* never format a message into itself */
	/* what to do is kept whole: the old message gives way */
	snprintf(err->msg, sizeof(err->msg), "%.*s%s", (int)(sizeof(err->msg) - 1 - strlen(tail)), old, tail);
	return -(err->code ? err->code : EINVAL);
}

const char *gerr_quote(const char *s, char buf[static GERR_QUOTE_MAX])
{
	size_t len = strlen(s), head = GERR_QUOTE_MAX / 2, tail = GERR_QUOTE_MAX / 4;

	if (len < GERR_QUOTE_MAX)
		return s;
	snprintf(buf, GERR_QUOTE_MAX, "%.*s...%s (%zu bytes)", (int)head, s, s + len - tail, len);
	return buf;
}
