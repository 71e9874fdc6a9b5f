/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: an ld.so.cache image, old, new or combined format (src/host/ldcache.h). */
#include "host/ldcache.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ldcache *c = NULL;
	struct gerr err = {0};
	/* exactly size bytes (no NUL padding) so a read one past the end is caught */
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	if (size)
		memcpy(copy, data, size);
	if (ldcache_parse(copy, size, &c, &err) < 0) {
		free(copy); /* ownership passes only on success */
		return 0;
	}
	for (size_t i = 0; i < c->n_entries; i++)
		(void)strlen(c->entries[i].key), (void)strlen(c->entries[i].value);
	ldcache_free(c);
	return 0;
}
