/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the two outside inputs of the CDI hook (src/cdihook/cdihook.h): the OCI state the
 * runtime writes on stdin, and root.path of the bundle's config.json. The first byte picks which.
 */
#include "cdihook/cdihook.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_state s = {0};
	struct gerr err = {0};
	char *root = NULL;

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		if (oci_config_root("fuzz-config.json", (const char *)data + 1, size - 1, &root, &err) == 0)
			free(root);
		return 0;
	}
	if (oci_state_parse("fuzz-state", (const char *)data + 1, size - 1, &s, &err) == 0) {
		/* only the crun "root" form: no bundle file is read */
		if (s.root && *s.root && oci_state_rootfs(&s, &root, &err) == 0)
			free(root);
		oci_state_clear(&s);
	}
	return 0;
}
