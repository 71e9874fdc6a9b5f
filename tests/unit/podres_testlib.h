/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet's PodResources List answer as bytes, for the tests of its readers. */
#pragma once

#include <stdint.h>
#include <stdlib.h>

#include "gpulet_podres.pb-c.h"

/* The packed ListPodResourcesResponse of one pod ns/name with the one container c (malloc'd). */
static inline uint8_t *podres_test_pack_one(const char *ns, const char *name, V1__ContainerResources *c, size_t *len)
{
	V1__ContainerResources *cs[] = {c};
	V1__PodResources p = V1__POD_RESOURCES__INIT, *pods[] = {&p};
	V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;

	p.name = (char *)name, p.namespace_ = (char *)ns, p.n_containers = 1, p.containers = cs;
	resp.n_pod_resources = 1, resp.pod_resources = pods;
	*len = v1__list_pod_resources_response__get_packed_size(&resp);
	uint8_t *buf = malloc(*len);
	if (buf)
		v1__list_pod_resources_response__pack(&resp, buf);
	return buf;
}
