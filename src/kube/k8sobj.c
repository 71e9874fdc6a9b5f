/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "kube/k8sobj.h"
#include "parse/yaml.h"

#define K8S_MAX_FILE (32u << 20)

static int add_object(json_t *out, json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	json_t *items = json_object_get(doc, "items");

	if (json_is_null(doc))
		return 0; /* empty document between --- */
	if (kind && strlen(kind) >= 4 && streq(kind + strlen(kind) - 4, "List") && json_is_array(items))
		return json_array_extend(out, items);
	return json_array_append(out, doc);
}

int k8sobj_parse(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	json_auto_t *docs = NULL, *out = json_array();
	json_t *doc;
	size_t i;
	int r;

	if (!out)
		return -ENOMEM;
	/* kubectl and the API server read manifests with sigs.k8s.io/yaml: the last duplicate key wins */
	r = yaml_to_json(text, len, name, YAML_ALL_DOCUMENTS, &docs, NULL, err);
	if (r < 0)
		return r;
	json_array_foreach (docs, i, doc)
		if (add_object(out, doc) < 0)
			return -ENOMEM;
	*ret = TAKE_PTR(out);
	return 0;
}

int k8sobj_load(const char *path, json_t **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	bool in = streq(path, "-");
	size_t len = 0;
	int r;

	r = in ? read_fd(STDIN_FILENO, "stdin", K8S_MAX_FILE, &text, &len, err)
	       : read_file(path, K8S_MAX_FILE, &text, &len, err);
	if (r < 0)
		return r;
	return k8sobj_parse(in ? "<stdin>" : path, text, len, ret, err);
}

json_t *k8sobj_pod_spec(const json_t *obj)
{
	static const struct {
		const char *kind;
		const char *path[6];
	} kinds[] = {
	    {"Pod", {"spec"}},
	    {"Deployment", {"spec", "template", "spec"}},
	    {"StatefulSet", {"spec", "template", "spec"}},
	    {"DaemonSet", {"spec", "template", "spec"}},
	    {"ReplicaSet", {"spec", "template", "spec"}},
	    {"ReplicationController", {"spec", "template", "spec"}},
	    {"Job", {"spec", "template", "spec"}},
	    {"CronJob", {"spec", "jobTemplate", "spec", "template", "spec"}},
	};
	const char *kind = json_string_value(json_object_get(obj, "kind"));

	for (size_t k = 0; kind && k < ELEMENTSOF(kinds); k++) {
		json_t *v = (json_t *)obj;

		if (!streq(kind, kinds[k].kind))
			continue;
		for (size_t i = 0; v && i < ELEMENTSOF(kinds[k].path) && kinds[k].path[i]; i++)
			v = json_object_get(v, kinds[k].path[i]);
		return json_is_object(v) ? v : NULL;
	}
	return NULL;
}

static const char *str_or_empty(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

bool k8sobj_event(const json_t *obj, struct k8s_event *ev)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const json_t *about = json_object_get(obj, "involvedObject"), *count;

	if (!json_is_object(obj) || (kind && !streq(kind, "Event")))
		return false;
	if (!json_is_object(about))
		about = json_object_get(obj, "regarding"); /* events.k8s.io/v1 */
	if (!kind && !json_is_object(about))
		return false;
	ev->type = str_or_empty(obj, "type");
	ev->reason = str_or_empty(obj, "reason");
	ev->message = str_or_empty(obj, "message");
	if (!*ev->message)
		ev->message = str_or_empty(obj, "note");
	ev->kind = str_or_empty(about, "kind");
	ev->ns = str_or_empty(about, "namespace");
	ev->name = str_or_empty(about, "name");
	count = json_object_get(obj, "count");
	if (!json_is_integer(count))
		count = json_object_get(json_object_get(obj, "series"), "count");
	ev->count = json_is_integer(count) && json_integer_value(count) > 0 ? json_integer_value(count) : 1;
	return true;
}
