/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Value parsers shared by every option layer (flags, env vars, config-file text): one spelling of
 * each kind for the whole program.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * A boolean as Go's strconv.ParseBool reads it (1 t T TRUE true True, 0 f F FALSE false False;
 * docs/reference/go-parsing.md): the upstream programs read their flags and env vars so. YAML
 * booleans in config files are the YAML reader's business (parse/yaml.h), not this one's.
 * 0, or -EINVAL with *ret untouched.
 */
int opt_parse_bool(const char *s, bool *ret);

#define OPT_NSEC_PER_SEC  INT64_C(1000000000)
#define OPT_NSEC_PER_MSEC INT64_C(1000000)

/*
 * A duration as Go's time.ParseDuration reads it (docs/reference/go-parsing.md): a sign, then one or
 * more <number><unit> with units ns us µs ms s m h ("1m30s", "2h0m0s", "500ms", "1.5h"); "0" alone
 * is the only number without a unit. Nanoseconds in *ret_ns. 0; -EINVAL for bad syntax or a unit
 * missing or unknown; -ERANGE past int64 nanoseconds (about 292 years). *ret_ns untouched on error.
 */
int opt_parse_duration(const char *s, int64_t *ret_ns);
