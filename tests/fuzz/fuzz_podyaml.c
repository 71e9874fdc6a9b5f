/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: workload YAML/JSON given to `gpulet lint` (src/core/k8sobj.h): every document, Lists
 * flattened, each object's pod spec looked up and the result serialised. */
#include "fuzz.h"
#include "k8sobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *objs = NULL, *obj;
	struct gerr err = {0};
	size_t i, n = 0;

	if (k8sobj_parse("fuzz.yaml", (const char *)data, size, &objs, &err) < 0)
		return 0;
	json_array_foreach (objs, i, obj) {
		json_t *spec = k8sobj_pod_spec(obj);

		if (spec && json_object_get(spec, "containers"))
			n++;
	}
	free(json_dumps(objs, JSON_COMPACT));
	(void)n;
	json_decref(objs);
	return 0;
}
