/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes resource.Quantity, the two things the DRA driver needs of it: the integer value of a
 * quantity a user wrote (an MPS pinned-memory limit, "10Gi", "512M", "1e9") and the canonical
 * text of a byte count it publishes as device capacity ("40Gi"). Rules: k8s.io/apimachinery
 * v0.34.4 pkg/api/resource (docs/reference/dra.md §6.4).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/*
 * What Quantity.Value() returns for text: the value rounded up to an integer. Accepted: an
 * optional sign, digits with an optional fraction, then nothing, a binary suffix (Ki Mi Gi Ti Pi
 * Ei), a decimal one (n u m k M G T P E) or an exponent (e3, E-2). -EINVAL with err saying why
 * (the text is quoted), -ERANGE past int64.
 */
int quantity_parse(const char *text, int64_t *ret, struct gerr *err);

/* The canonical text of a non-negative count of bytes, as Quantity.String() of a BinarySI value:
 * below 1024 the number, else the largest exact power of 1024 suffix ("4864Mi", "40Gi"). */
void quantity_format_binary(uint64_t v, char *buf, size_t size);
