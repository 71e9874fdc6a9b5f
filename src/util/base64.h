/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one base64 decoder: Go's base64.StdEncoding, which encoding/json uses for a []byte field
 * (kubelet's checkpoint AllocResp, a kubeconfig's *-data fields). Padding is required, as there;
 * '\r' and '\n' are skipped anywhere, as Go's decoder does (PEM-like wrapped input).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Decode in[0..len) into a new buffer *ret (NUL-terminated after its *ret_len bytes, so a decoded
 * text can be used as a C string). Returns 0, -EINVAL (not base64: a stray character, wrong length,
 * padding not at the end) or -ENOMEM. *ret and *ret_len are written only on success.
 */
int base64_decode(const char *in, size_t len, uint8_t **ret, size_t *ret_len);
