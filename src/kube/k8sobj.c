/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	size_t len = 0;
	int r;

	if (streq(path, "-")) {
		size_t cap = 0;

		for (;;) {
			size_t n;

			if (len + 4096 > cap) {
				char *nt = cap < K8S_MAX_FILE ? realloc(text, cap + 65536) : NULL;

				if (!nt)
					return gerr_set(err, EFBIG, "stdin: more than %u bytes", K8S_MAX_FILE);
				text = nt;
				cap += 65536;
			}
			n = fread(text + len, 1, cap - len - 1, stdin);
			len += n;
			if (n == 0)
				break;
		}
		if (!text)
			return -ENOMEM;
		text[len] = '\0';
	} else {
		r = read_file(path, K8S_MAX_FILE, &text, &len, err);
		if (r < 0)
			return r;
	}
	return k8sobj_parse(streq(path, "-") ? "<stdin>" : path, text, len, ret, err);
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
