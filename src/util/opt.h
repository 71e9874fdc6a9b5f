/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Value parsers shared by every option layer (flags, env vars, config-file text): one spelling of
 * each kind for the whole program.
 */
#pragma once

#include <stdbool.h>

/*
 * A boolean as Go's strconv.ParseBool reads it (1 t T TRUE true True, 0 f F FALSE false False;
 * docs/reference/go-parsing.md): the upstream programs read their flags and env vars so. YAML
 * booleans in config files are the YAML reader's business (parse/yaml.h), not this one's.
 * 0, or -EINVAL with *ret untouched.
 */
int opt_parse_bool(const char *s, bool *ret);
