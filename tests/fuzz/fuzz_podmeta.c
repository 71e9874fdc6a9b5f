/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the pods of this node as the API server lists them to `gpulet exporter` (their labels
 * become Prometheus labels: src/exporter/podmeta.h exp_podmeta_set()), read with pod labels on and an
 * allowlist of two patterns.
 */
#include <jansson.h>

#include "exporter/podmeta.h"
#include "fuzz.h"

/* every label text is empty or ,name="value"... with each value's quotes closed */
static void check_labels(const char *s)
{
	bool quoted = false;

	if (*s && *s != ',')
		__builtin_trap();
	for (; *s; s++) {
		if (quoted && *s == '\\' && s[1])
			s++;
		else if (*s == '"')
			quoted = !quoted;
	}
	if (quoted)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct exp_allowlist allow;
	static bool compiled;
	static const char *const patterns[] = {"^app$", "team"};
	struct exp_podmeta pm = {.allow = &allow, .labels = true};
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	const json_t *list = json_is_object(doc) ? json_object_get(doc, "items") : doc;

	if (!compiled && exp_allowlist_compile(patterns, 2, &allow, NULL) == 0)
		compiled = true;
	pthread_mutex_init(&pm.lock, NULL);
	if (compiled && exp_podmeta_set(&pm, list) == 0)
		for (size_t i = 0; i < pm.n; i++) {
			check_labels(pm.pods[i].labels);
			if (exp_podmeta_find(&pm, pm.pods[i].ns, pm.pods[i].name) == NULL)
				__builtin_trap();
		}
	exp_podmeta_stop(&pm);
	json_decref(doc);
	return 0;
}
