/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one strict reader of a JSON document that must be an object (a CDI spec in a *.json file,
 * the OCI state a hook reads on stdin): jansson with duplicate keys refused, as the strict Go
 * decoders that read the same files (the CDI library's, the runtime's) refuse them.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

/*
 * text[0..len) into *ret, a new reference to an object. name and what only word the errors:
 * -EINVAL with "NAME:LINE:COL: not valid JSON: why" (a duplicate key included), or "NAME: WHAT is a
 * JSON object at the top level". *ret written only on success.
 */
int json_parse_object(const char *name, const char *what, const char *text, size_t len, json_t **ret, struct gerr *err);
