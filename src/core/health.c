/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "health.h"

void health_options_default(struct health_options *o)
{
	*o = (struct health_options){.wait_ms = 100, .quiet_ms = 300000, .mig_poll_ms = 10000};
	xid_policy_default(&o->policy);
}

int health_start(struct nvml *nv, const struct node *n, const struct health_options *o, struct health_watcher **ret,
		 struct gerr *err)
{
	return gerr_set(err, ENOSYS, "health watcher not implemented yet");
}

void health_stop(struct health_watcher *w) {}

const char *health_kind_name(enum health_kind k)
{
	return "unknown";
}
