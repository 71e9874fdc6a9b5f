/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>

#include "kapi/bucket.h"
#include "util/macro.h"

#define DEFAULT_QPS   5.0 /* client-go rest/config.go DefaultQPS */
#define DEFAULT_BURST 10  /* DefaultBurst */

void kapi_bucket_init(struct kapi_bucket *b, double qps, int burst, int64_t now_ns)
{
	b->qps = qps == 0 ? DEFAULT_QPS : qps;
	b->burst = burst <= 0 ? DEFAULT_BURST : burst;
	b->tokens = b->burst;
	b->last_ns = now_ns;
}

int64_t kapi_bucket_take(struct kapi_bucket *b, int64_t now_ns)
{
	if (b->qps < 0)
		return 0;
	if (now_ns > b->last_ns) {
		b->tokens = MIN(b->burst, b->tokens + (double)(now_ns - b->last_ns) * b->qps / 1e9);
		b->last_ns = now_ns;
	}
	b->tokens -= 1;
	return b->tokens >= 0 ? 0 : (int64_t)ceil(-b->tokens / b->qps * 1e9);
}
