/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: kubelet's PodResources List answer (src/kube/podres.h), protobuf bytes from the
 * kubelet socket: device-plugin devices and DRA claims' dynamic resources into the holders map.
 */
#include "fuzz.h"
#include "kube/podres.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const extra[] = {"example.com/gpu", NULL};
	struct podres_map *m = NULL;
	struct gerr err = {0};

	if (podres_map_from_list(data, size, extra, &m, &err) < 0)
		return 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct podres_device *h = NULL;
		size_t n = podres_find(m, m->v[i].base, &h);

		if (n == 0 || !h)
			__builtin_trap(); /* every entry is found under its own key */
	}
	podres_map_free(m);
	return 0;
}
