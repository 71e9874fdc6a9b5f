/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "resources.h"

int resources_build(const struct node *n, const struct resource_options *o, struct resource_set **ret, struct gerr *err)
{
	return gerr_set(err, ENOSYS, "resources not implemented yet");
}

void resource_set_free(struct resource_set *s)
{
	free(s);
}

const struct resource *resources_find(const struct resource_set *s, const char *name)
{
	return NULL;
}

const struct rdevice *resource_find_device(const struct resource *r, const char *id)
{
	return NULL;
}

int resources_set_health(struct resource_set *s, const struct node *n, const char *gpu_uuid, int gi, int ci,
			 bool healthy, const char *reason)
{
	return -ENOSYS;
}
