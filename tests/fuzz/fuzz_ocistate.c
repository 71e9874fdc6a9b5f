/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the outside inputs of the CDI hook (src/cdihook/cdihook.h): the OCI state the runtime
 * writes on stdin, root.path of the bundle's config.json, its GPU memory variables
 * (apply-cuda-memory-limits) and the container's /proc/<pid>/cgroup. The first byte's low two bits pick which.
 */
#include <string.h>

#include "cdihook/cdihook.h"
#include "fuzz.h"

/* apply-cuda-memory-limits' two parsers: the config's variables, or a cgroup file (NUL-terminated copy). */
static void memlimits(int which, const uint8_t *data, size_t size)
{
	struct cdihook_memlimits m = {0};
	struct gerr err = {0};
	char *text, *path = NULL;

	if (which == 2) {
		if (cdihook_memlimits_from_config("fuzz-config.json", (const char *)data, size, &m, &err) == 0)
			cdihook_memlimits_clear(&m);
		return;
	}
	text = malloc(size + 1);
	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cdihook_cgroup_path("fuzz-cgroup", text, &path, &err) == 0)
		free(path);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_state s = {0};
	struct gerr err = {0};
	char *root = NULL;

	if (size == 0)
		return 0;
	if (data[0] & 2) {
		memlimits(data[0] & 3, data + 1, size - 1);
		return 0;
	}
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
