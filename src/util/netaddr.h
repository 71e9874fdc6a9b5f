/* SPDX-License-Identifier: Apache-2.0 */
/* A listen address as the Prometheus exporters write it: ":9400", "0.0.0.0:9400", "[::1]:9400", "9400". */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

#include "util/err.h"

/*
 * Parse addr into *ss (port 0 = any free port; no host = every IPv4 address). flag names the option in
 * the error ("--address"). Returns 0, or -EINVAL with what is wrong and an example in err.
 */
int net_parse_address(const char *flag, const char *addr, struct sockaddr_storage *ss, socklen_t *len, bool *v6,
		      struct gerr *err);
