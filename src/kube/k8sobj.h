/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes objects from YAML or JSON files (kubectl -o json/yaml output, manifests with several
 * `---` documents, `kind: List`), as jansson values, read by the one YAML reader (parse/yaml.h),
 * which types scalars the way kubectl and the API server (sigs.k8s.io/yaml) do.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "util/err.h"

/* Every document of text, Lists flattened to their items: a JSON array of objects. */
int k8sobj_parse(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err);
/* Same from a file, or stdin for "-". */
int k8sobj_load(const char *path, json_t **ret, struct gerr *err);

/*
 * The pod spec inside a workload: Pod → spec; Deployment, StatefulSet, DaemonSet, ReplicaSet,
 * Job → spec.template.spec; CronJob → spec.jobTemplate.spec.template.spec. NULL for other kinds.
 */
json_t *k8sobj_pod_spec(const json_t *obj);

/*
 * One Event of `kubectl get events -A -o json` (core/v1: involvedObject, message; events.k8s.io/v1:
 * regarding, note). Strings are borrowed from obj, "" when absent; false when obj is not an Event.
 */
struct k8s_event {
	const char *type;             /* "Warning" / "Normal" */
	const char *reason;           /* "FailedScheduling" */
	const char *message;          /* the text kubectl describe shows */
	const char *kind, *ns, *name; /* the object it is about */
	long long count;              /* times seen (count or series.count), 1 when absent */
};
bool k8sobj_event(const json_t *obj, struct k8s_event *ev);
