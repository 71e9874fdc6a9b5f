/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: workload YAML/JSON of `gpulet lint` (src/kube/k8sobj.h), then the lint rules on it. */
#include "doctor/doctor.h"
#include "fuzz.h"
#include "kube/k8sobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct host_paths *host;
	static struct doctor_options o;
	struct lint_options lo = {.runtime_class = "nvidia", .driver_version = "535.54.03"};
	struct doctor_ctx c = {.o = &o};
	struct gerr err = {0};
	json_t *objs = NULL;

	if (!host && host_paths_new(&(struct host_paths_options){.root = "/nonexistent"}, &host, NULL) < 0)
		abort();
	o.host = host;
	if (k8sobj_parse("fuzz-podyaml", (const char *)data, size, &objs, &err) < 0)
		return 0;
	lint_objects(&c, "fuzz", objs, &lo);
	json_decref(objs);
	doctor_ctx_done(&c);
	return 0;
}
