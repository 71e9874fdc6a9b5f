/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: containerd config.toml (src/parse/toml.h): parse, convert, merge into itself. */
#include <jansson.h>

#include "fuzz.h"
#include "parse/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toml *a = NULL, *b = NULL;
	struct gerr err = {0};

	if (toml_parse((const char *)data, size, "fuzz.toml", &a, &err) < 0)
		return 0;
	json_decref(toml_to_json(a));
	(void)toml_path(a, "plugins", "io.containerd.grpc.v1.cri", "containerd", NULL);
	(void)toml_string(a, "version", NULL);
	(void)toml_int(a, "version", 0);
	/* a second copy merged over the first exercises the ownership moves of toml_merge; src stays
	 * freeable whatever the outcome (its moved values are replaced by placeholders) */
	if (toml_parse((const char *)data, size, "fuzz2.toml", &b, &err) >= 0) {
		if (a->type == TOML_TABLE && b->type == TOML_TABLE)
			(void)toml_merge(a, b, -1);
		toml_free(b);
		json_decref(toml_to_json(a));
	}
	toml_free(a);
	return 0;
}
