/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>

#include "util/base64.h"

/* 0..63 for a base64 digit, 64 for '=', -1 for anything else */
static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return c == '=' ? 64 : -1;
}

int base64_decode(const char *in, size_t len, uint8_t **ret, size_t *ret_len)
{
	uint8_t *out = malloc(len / 4 * 3 + 4);
	unsigned quad[4];
	size_t n = 0, q = 0, pad = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		int v = digit((unsigned char)in[i]);

		if (in[i] == '\r' || in[i] == '\n')
			continue;
		/* after the padding of the last quad nothing may follow; '=' only as its last one or two */
		if (v < 0 || (pad && (v != 64 || q < 2)) || (v == 64 && q < 2))
			goto bad;
		if (v == 64)
			pad++;
		quad[q++] = v == 64 ? 0 : (unsigned)v;
		if (q < 4)
			continue;
		out[n++] = (uint8_t)(quad[0] << 2 | quad[1] >> 4);
		if (pad < 2)
			out[n++] = (uint8_t)(quad[1] << 4 | quad[2] >> 2);
		if (pad < 1)
			out[n++] = (uint8_t)(quad[2] << 6 | quad[3]);
		q = 0;
		if (pad)
			pad = 3; /* the end: anything more is an error */
	}
	if (q)
		goto bad;
	out[n] = '\0';
	*ret = out;
	*ret_len = n;
	return 0;
bad:
	free(out);
	return -EINVAL;
}
