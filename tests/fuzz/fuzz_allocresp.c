/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: kubelet checkpoint AllocResp (src/kube/allocresp.h). The input is decoded as the
 * base64 text itself, and, base64-encoded here, as the protobuf ContainerAllocateResponse bytes.
 */
#include "fuzz.h"
#include "kube/allocresp.h"

static char *b64(const uint8_t *d, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *p = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v =
		    (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);

		*p++ = a[v >> 18 & 63];
		*p++ = a[v >> 12 & 63];
		*p++ = i + 1 < n ? a[v >> 6 & 63] : '=';
		*p++ = i + 2 < n ? a[v & 63] : '=';
	}
	*p = '\0';
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), *enc = b64(data, size);
	struct allocresp a;
	struct gerr err = {0};

	if (text)
		(void)allocresp_decode(text, &a, &err);
	if (enc)
		(void)allocresp_decode(enc, &a, &err);
	free(text);
	free(enc);
	return 0;
}
