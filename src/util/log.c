/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "util/enumtab.h"
#include "util/log.h"

static enum log_level current = LOG_LVL_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first row of a level is the name it is logged as; later rows are aliases --log-level accepts. */
const struct enum_name log_level_names[5] = {
    {LOG_LVL_DEBUG, "debug"}, {LOG_LVL_INFO, "info"},    {LOG_LVL_WARN, "warn"},
    {LOG_LVL_ERROR, "error"}, {LOG_LVL_WARN, "warning"},
};

int log_set_level_name(const char *name)
{
	return enum_from_name_icase(log_level_names, name, &current);
}

void log_set_level(enum log_level l)
{
	current = l;
}
enum log_level log_get_level(void)
{
	return current;
}

/* A bounded text buffer: what does not fit is cut. */
struct text {
	char *s;
	size_t len, cap; /* cap counts the terminating NUL */
};

static void text_putc(struct text *t, char c)
{
	if (t->len + 1 < t->cap)
		t->s[t->len++] = c;
	t->s[t->len] = '\0';
}

static void text_puts(struct text *t, const char *s)
{
	while (*s)
		text_putc(t, *s++);
}

/* go-logfmt's needsQuotedValueRune (docs/reference/logging.md): a space, '=', '"' or a control byte. */
static bool needs_quotes(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v <= ' ' || *v == '=' || *v == '"' || *v == 0x7f)
			return true;
	return false;
}

/* A value as go-logfmt writes it: bare when it can be, else quoted with \" \\ \n \r \t \u00XX. */
static void put_value(struct text *t, const char *v, bool quote)
{
	static const char hex[] = "0123456789abcdef";

	if (!quote && !needs_quotes(v)) {
		text_puts(t, v);
		return;
	}
	text_putc(t, '"');
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		const char *esc = c == '"'    ? "\\\""
				  : c == '\\' ? "\\\\"
				  : c == '\n' ? "\\n"
				  : c == '\r' ? "\\r"
				  : c == '\t' ? "\\t"
					      : NULL;

		if (esc) {
			text_puts(t, esc);
		} else if (c < 0x20 || c == 0x7f) {
			char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf], '\0'};
			text_puts(t, u);
		} else {
			text_putc(t, (char)c);
		}
	}
	text_putc(t, '"');
}

/*
 * The analyzer (LLVM 14) does not follow a va_list handed down by pointer, which C11 7.16 footnote 253
 * allows, and reports each va_arg() below as reading an uninitialised va_list: false, log_emit() starts it.
 */
/* NOLINTBEGIN(clang-analyzer-valist.Uninitialized) */

/* An integer conversion: its argument read by its length (h/hh are promoted to int), printed as %j. */
static void put_integer(struct text *t, char *spec, size_t n, char conv, int len, va_list *ap)
{
	_Static_assert(sizeof(size_t) == sizeof(long) && sizeof(ptrdiff_t) == sizeof(long) &&
			   sizeof(intmax_t) == sizeof(long long),
		       "z, t are long-sized and j long-long-sized on Linux ABIs");
	bool sgn = conv == 'd' || conv == 'i';
	intmax_t s = 0;
	uintmax_t u = 0;
	char out[128];

	if (len <= 0 && sgn)
		s = len == -2 ? (signed char)va_arg(*ap, int) : len == -1 ? (short)va_arg(*ap, int) : va_arg(*ap, int);
	else if (len <= 0)
		u = len == -2   ? (unsigned char)va_arg(*ap, unsigned)
		    : len == -1 ? (unsigned short)va_arg(*ap, unsigned)
				: va_arg(*ap, unsigned);
	else if (len >= 2 && sgn) /* ll, j */
		s = va_arg(*ap, long long);
	else if (len >= 2)
		u = va_arg(*ap, unsigned long long);
	else if (sgn) /* l, z, t */
		s = va_arg(*ap, long);
	else
		u = va_arg(*ap, unsigned long);
	spec[n] = 'j';
	spec[n + 1] = conv;
	spec[n + 2] = '\0';
	if (sgn)
		snprintf(out, sizeof(out), spec, s);
	else
		snprintf(out, sizeof(out), spec, u);
	text_puts(t, out);
}

/*
 * Format one printf conversion starting at f[0] == '%' with its argument from ap into t; returns
 * the length of the conversion. '*' widths are taken from ap and written into the spec, so each
 * snprintf() below has exactly one argument.
 */
static size_t put_conversion(struct text *t, const char *f, va_list *ap)
{
	char spec[64], out[4096];
	size_t n = 0, i = 1;
	int len = 0; /* hh: -2, h: -1, l: 1, ll or j: 2, z or t: 1, L: 3 */

	spec[n++] = '%';
	while (f[i] && strchr("-+ #0'", f[i]) && n < 8)
		spec[n++] = f[i++];
	for (int part = 0; part < 2; part++) { /* width, then .precision */
		if (part == 1) {
			if (f[i] != '.')
				break;
			spec[n++] = f[i++];
		}
		if (f[i] == '*') {
			n += (size_t)snprintf(spec + n, 16, "%d", va_arg(*ap, int));
			i++;
		}
		while (f[i] >= '0' && f[i] <= '9' && n < 40)
			spec[n++] = f[i++];
	}
	for (; f[i] && strchr("hljztLq", f[i]); i++)
		len = f[i] == 'h'                  ? len - 1
		      : f[i] == 'l' || f[i] == 'q' ? len + 1
		      : f[i] == 'j'                ? 2
		      : f[i] == 'L'                ? 3
						   : 1;
	if (f[i] && strchr("diouxX", f[i])) {
		put_integer(t, spec, n, f[i], len, ap);
		return i + 1;
	}
	if (len == 3 && f[i] && strchr("eEfFgGaA", f[i]))
		spec[n++] = 'L';
	spec[n++] = f[i];
	spec[n] = '\0';
	out[0] = '\0';
	switch (f[i]) {
	case 'e':
	case 'E':
	case 'f':
	case 'F':
	case 'g':
	case 'G':
	case 'a':
	case 'A':
		if (len == 3) {
			long double ld = va_arg(*ap, long double);
			snprintf(out, sizeof(out), spec, ld);
		} else {
			double d = va_arg(*ap, double);
			snprintf(out, sizeof(out), spec, d);
		}
		break;
	case 'c': {
		int c = va_arg(*ap, int);
		snprintf(out, sizeof(out), spec, c);
		break;
	}
	case 's': {
		const char *str = va_arg(*ap, const char *);
		snprintf(out, sizeof(out), spec, str);
		break;
	}
	case 'p': {
		void *ptr = va_arg(*ap, void *);
		snprintf(out, sizeof(out), spec, ptr);
		break;
	}
	case '%':
		text_putc(t, '%');
		break;
	case 'm': /* glibc: strerror(errno), no argument */
		text_puts(t, strerror(errno));
		break;
	default: /* %n or a malformed spec: -Wformat rejects both at compile time */
		assert(!"unsupported conversion in a log format");
		return f[i] ? i + 1 : i;
	}
	text_puts(t, out);
	return i + 1;
}

/* NOLINTEND(clang-analyzer-valist.Uninitialized) */

/*
 * Write the pairs of the printf format kv: keys as written, each value formatted on its own and
 * written by put_value(). A value is the format text after '=' up to the next space, or, when it
 * opens with '"', up to the closing '"' (such a value is always quoted, as before escaping existed).
 */
static void put_pairs(struct text *line, const char *kv, va_list *ap)
{
	char vbuf[8192];
	const char *f = kv;

	while (*f) {
		if (*f != '=') {
			if (*f == '%')
				f += put_conversion(line, f, ap);
			else
				text_putc(line, *f++);
			continue;
		}
		text_putc(line, *f++);
		bool quoted = *f == '"';
		char end = quoted ? '"' : ' ';
		struct text v = {.s = vbuf, .cap = sizeof(vbuf)};

		vbuf[0] = '\0';
		if (quoted)
			f++;
		while (*f && *f != end) {
			if (*f == '%')
				f += put_conversion(&v, f, ap);
			else
				text_putc(&v, *f++);
		}
		if (quoted && *f)
			f++;
		put_value(line, vbuf, quoted);
	}
}

void log_emit(enum log_level l, const char *msg, const char *kv, ...)
{
	char ts[64], buf[16384];
	struct text line = {.s = buf, .cap = sizeof(buf) - 1}; /* room for the '\n' */
	struct timespec now;
	struct tm tm;

	if (l < current)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, sizeof(buf), "time=%s.%03ldZ level=%s msg=", ts, now.tv_nsec / 1000000,
		 enum_to_name(log_level_names, l, "?"));
	line.len = strlen(buf);
	put_value(&line, msg ? msg : "", true);
	if (kv && *kv) {
		va_list ap;

		text_putc(&line, ' ');
		va_start(ap, kv);
		put_pairs(&line, kv, &ap);
		va_end(ap);
	}
	buf[line.len++] = '\n';
	pthread_mutex_lock(&log_lock);
	fwrite(buf, 1, line.len, stderr);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}
