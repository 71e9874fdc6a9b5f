/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resource.Quantity parsing and binary-SI formatting (docs/reference/dra.md §6.4): the suffix
 * tables and the rounding are apimachinery's (quantity.go parseQuantityString(), suffix.go;
 * Value() is ScaledValue(0), which rounds up).
 */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "dra/quantity.h"

/* suffix.go newSuffixer(): binary 2^e and decimal 10^e suffixes */
static const struct {
	const char *s;
	unsigned base;
	int exp;
} suffixes[] = {
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"", 10, 0},   {"k", 10, 3},  {"M", 10, 6},
    {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
};

#define DIGITS_MAX 36 /* fits __int128 with room for a multiply by 10 */

/* suffix text -> base and exponent; "e<int>" / "E<int>" is a decimal exponent (DecimalExponent) */
static int suffix_of(const char *s, unsigned *base, int *exp)
{
	for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
		if (streq(s, suffixes[i].s)) {
			*base = suffixes[i].base;
			*exp = suffixes[i].exp;
			return 0;
		}
	if ((s[0] == 'e' || s[0] == 'E') && s[1]) {
		const char *p = s + 1;
		int sign = 1, v = 0;

		if (*p == '+' || *p == '-')
			sign = *p++ == '-' ? -1 : 1;
		if (!*p)
			return -EINVAL;
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || v > 1000)
				return -EINVAL;
			v = v * 10 + (*p - '0');
		}
		*base = 10;
		*exp = sign * v;
		return 0;
	}
	return -EINVAL;
}

int quantity_parse(const char *text, int64_t *ret, struct gerr *err)
{
	char q[GERR_QUOTE_MAX];
	const char *p = text;
	__int128 n = 0, div = 1;
	unsigned base, digits = 0;
	int exp, scale10 = 0;
	bool neg = false, any = false;

	if (!text || !*text)
		return gerr_set(err, EINVAL, "an empty quantity: want a number with an optional suffix, such as 10Gi");
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	for (bool frac = false;; p++) {
		if (*p == '.' && !frac) {
			frac = true;
			continue;
		}
		if (*p < '0' || *p > '9')
			break;
		if ((n || *p != '0') && ++digits > DIGITS_MAX)
			return gerr_set(err, ERANGE, "quantity '%s' has too many digits", gerr_quote(text, q));
		n = n * 10 + (*p - '0');
		any = true;
		scale10 -= frac;
	}
	if (!any || suffix_of(p, &base, &exp) < 0)
		return gerr_set(err, EINVAL,
				"quantity '%s' is not valid: want a number with an optional suffix Ki, Mi, Gi, Ti, "
				"Pi, Ei, k, M, G, T, P, E, m or an exponent (e9)",
				gerr_quote(text, q));
	if (base == 2) {
		for (int i = 0; i < exp; i++)
			if ((n *= 2) > (__int128)INT64_MAX * 1000000000000000000LL)
				return gerr_set(err, ERANGE, "quantity '%s' is too large", gerr_quote(text, q));
	} else
		scale10 += exp;
	for (; scale10 > 0; scale10--)
		if ((n *= 10) > (__int128)INT64_MAX * 1000000000000000000LL)
			return gerr_set(err, ERANGE, "quantity '%s' is too large", gerr_quote(text, q));
	for (; scale10 < 0 && div <= (__int128)INT64_MAX * 10; scale10++)
		div *= 10;
	if (scale10 < 0) /* more than ~19 fraction digits below one: rounds up to 1 (or 0) */
		n = n ? 1 : 0, div = 1;
	/* Value() rounds up: ceil for positive, toward zero for negative */
	n = neg ? -(n / div) : n / div + (n % div != 0);
	if (n > INT64_MAX || n < INT64_MIN)
		return gerr_set(err, ERANGE, "quantity '%s' does not fit 64 bits", gerr_quote(text, q));
	*ret = (int64_t)n;
	return 0;
}

void quantity_format_binary(uint64_t v, char *buf, size_t size)
{
	static const char *const sfx[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
	size_t k = 0;

	if (v >= 1024)
		while (k + 1 < ELEMENTSOF(sfx) && v && v % 1024 == 0) {
			v /= 1024;
			k++;
		}
	snprintf(buf, size, "%llu%s", (unsigned long long)v, sfx[k]);
}
