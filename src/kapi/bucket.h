/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client-side rate limit: client-go's token bucket (k8s.io/client-go v0.34.4
 * util/flowcontrol/throttle.go over golang.org/x/time/rate): it starts full with `burst` tokens,
 * refills at `qps` per second up to `burst`, and each request takes one, waiting when none is left.
 * Pure (the caller gives the time and sleeps), so unit tests drive it with a fake clock.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct kapi_bucket {
	double qps; /* < 0: no limit */
	double burst;
	double tokens;   /* may go below 0: requests already promised a later slot */
	int64_t last_ns; /* when tokens was computed */
};

/* qps 0 and burst 0 mean client-go's defaults (5, 10); qps < 0 disables the limit. */
void kapi_bucket_init(struct kapi_bucket *b, double qps, int burst, int64_t now_ns);

/* Take a token at now_ns: the nanoseconds to wait before sending (0: at once). */
int64_t kapi_bucket_take(struct kapi_bucket *b, int64_t now_ns);
