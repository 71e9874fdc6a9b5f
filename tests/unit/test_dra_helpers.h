/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the DRA unit tests (after <cmocka.h>): a node of the fake NVML loaded from a fixture. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include "nvml/node.h"
#include "nvml/nvml.h"

static struct nvml *nv; /* one for the run (the fake keeps its fixture in globals) */

/* tests/fixtures/<fixture>.json as the node, its files under root; the test fails when it cannot. */
static inline struct node *load_node(const char *fixture, const char *root)
{
	char path[1024];
	struct node *n = NULL;
	struct gerr err = {0};

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s.json", getenv("GPULET_SRC"), fixture);
	setenv("FAKE_NVML_FIXTURE", path, 1);
	if (!nv && nvml_open(getenv("FAKE_NVML_LIB"), NULL, &nv, &err) < 0)
		fail_msg("nvml_open: %s", err.msg);
	if (node_load(nv, root, &n, &err) < 0)
		fail_msg("node_load %s: %s", fixture, err.msg);
	return n;
}
