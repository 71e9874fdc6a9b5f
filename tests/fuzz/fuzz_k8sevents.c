/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: what the cluster says (kubectl get events/pods/node -o json, src/kube/k8sobj.h and
 * src/doctor/cluster.h). One input is read as --events, as --pods and (its first object) as --node,
 * then the doctor's cluster checks judge it: the event reader, pod/plugin/operator readers, ConfigMap
 * configs parsed as YAML, scheduling rules.
 */
#include "doctor/cluster.h"
#include "fuzz.h"
#include "kube/k8sobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct host_paths *host;
	static struct doctor_options o = {.events_file = "fuzz.json"};
	struct doctor_ctx c = {0};
	struct gerr err = {0};
	json_t *objs = NULL;
	struct k8s_event ev;
	size_t i;
	json_t *obj;

	if (!host && host_paths_new(&(struct host_paths_options){.root = "/nonexistent"}, &host, NULL) < 0)
		abort();
	o.host = host;
	if (k8sobj_parse("fuzz-events", (const char *)data, size, &objs, &err) < 0)
		return 0;
	json_array_foreach (objs, i, obj)
		(void)k8sobj_event(obj, &ev);
	if (doctor_load_inputs(&c, &o) < 0) {
		json_decref(objs);
		return 0;
	}
	c.events = json_incref(objs);
	c.pods = objs;
	c.node_obj = json_incref(json_array_get(objs, 0));
	(void)doctor_check_inject(&c);
	(void)doctor_check_plugin_pods(&c);
	(void)doctor_check_cluster(&c);
	doctor_ctx_done(&c);
	return 0;
}
