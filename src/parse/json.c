/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "parse/json.h"

int json_parse_object(const char *name, const char *what, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	json_error_t je;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);

	if (!doc)
		return gerr_set(err, EINVAL, "%s:%d:%d: not valid JSON: %s", name, je.line, je.column, je.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return gerr_set(err, EINVAL, "%s: %s is a JSON object at the top level", name, what);
	}
	*ret = doc;
	return 0;
}
