/* SPDX-License-Identifier: Apache-2.0 */
/* What every benchmark in bench/ shares: a monotonic clock and a sink the optimizer cannot drop. */
#pragma once

#include <stddef.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile size_t bench_sink;
