/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the fuzz targets. Each target defines LLVMFuzzerTestOneInput; under -DGPULET_FUZZ=ON
 * it is linked with libFuzzer (cmake/fuzz.cmake), in every other build with replay.c, which
 * feeds it each corpus file (CTest reliability_fuzz_corpus), so a fixed crash stays fixed.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The parsers under test take C strings or (text, len); give them a NUL-terminated heap copy so
 * ASan sees every read past the input. NULL on out-of-memory (the target then returns). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return NULL;
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}
