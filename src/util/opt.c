/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "util/enumtab.h"
#include "util/macro.h"
#include "util/opt.h"

/* Go's strconv.ParseBool spellings, exactly (case matters: "tRUE" is not one). */
static const struct enum_name go_bools[] = {
    {true, "1"},  {true, "t"},  {true, "T"},  {true, "TRUE"},   {true, "true"},   {true, "True"},
    {false, "0"}, {false, "f"}, {false, "F"}, {false, "FALSE"}, {false, "false"}, {false, "False"},
};

int opt_parse_bool(const char *s, bool *ret)
{
	int v;

	if (enum_from_name(go_bools, s, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Go's unitMap (src/time/format.go): both micro signs, U+00B5 and U+03BC, spell microseconds. */
static const struct {
	const char *name;
	uint64_t ns;
} go_units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000},
    {"\xce\xbcs", 1000},
    {"ms", 1000000},
    {"s", UINT64_C(1000000000)},
    {"m", UINT64_C(60000000000)},
    {"h", UINT64_C(3600000000000)},
};

#define DURATION_MAX ((uint64_t)INT64_MAX)

/* Digits at *p into *v; false on overflow past 2^63 (Go's leadingInt). */
static bool leading_int(const char **p, uint64_t *v, size_t *n)
{
	for (*v = 0, *n = 0; **p >= '0' && **p <= '9'; (*p)++, (*n)++) {
		if (*v > (UINT64_C(1) << 63) / 10)
			return false;
		*v = *v * 10 + (uint64_t)(**p - '0');
		if (*v > UINT64_C(1) << 63)
			return false;
	}
	return true;
}

/* Fraction digits at *p: *f / *scale; digits past what int64 holds are read and dropped (Go's leadingFraction). */
static void leading_fraction(const char **p, uint64_t *f, double *scale, size_t *n)
{
	bool overflow = false;

	for (*f = 0, *scale = 1, *n = 0; **p >= '0' && **p <= '9'; (*p)++, (*n)++) {
		if (overflow)
			continue;
		if (*f > DURATION_MAX / 10) {
			overflow = true;
			continue;
		}
		uint64_t y = *f * 10 + (uint64_t)(**p - '0');

		if (y > UINT64_C(1) << 63) {
			overflow = true;
			continue;
		}
		*f = y;
		*scale *= 10;
	}
}

/* One <number><unit> at *p added to *total; 0 or -errno. */
static int component(const char **p, uint64_t *total)
{
	const char *s = *p;
	uint64_t v, f = 0, unit = 0;
	size_t nint, nfrac = 0, ulen;
	double scale = 1;

	if (!(*s == '.' || (*s >= '0' && *s <= '9')))
		return -EINVAL;
	if (!leading_int(&s, &v, &nint))
		return -ERANGE;
	if (*s == '.') {
		s++;
		leading_fraction(&s, &f, &scale, &nfrac);
	}
	if (nint == 0 && nfrac == 0)
		return -EINVAL; /* "." or ".s": no digits */
	ulen = strcspn(s, ".0123456789");
	for (size_t i = 0; i < ELEMENTSOF(go_units) && !unit; i++)
		if (strlen(go_units[i].name) == ulen && strncmp(go_units[i].name, s, ulen) == 0)
			unit = go_units[i].ns;
	if (!unit)
		return -EINVAL; /* missing or unknown unit */
	if (v > (UINT64_C(1) << 63) / unit)
		return -ERANGE;
	v *= unit;
	if (f > 0) {
		v += (uint64_t)((double)f * ((double)unit / scale)); /* float64 as Go: exact enough for any input */
		if (v > UINT64_C(1) << 63)
			return -ERANGE;
	}
	*total += v;
	if (*total > UINT64_C(1) << 63)
		return -ERANGE;
	*p = s + ulen;
	return 0;
}

int opt_parse_duration(const char *s, int64_t *ret_ns)
{
	uint64_t total = 0;
	bool neg = false;
	int r;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (streq(s, "0"))
		return *ret_ns = 0, 0;
	if (!*s)
		return -EINVAL;
	while (*s)
		if ((r = component(&s, &total)) < 0)
			return r;
	if (!neg && total > DURATION_MAX)
		return -ERANGE;
	*ret_ns = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}
