/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: kubeconfig files as the Kubernetes client reads them (src/kapi/config.h): YAML or
 * JSON, contexts, clusters and users, base64 *-data fields, refused fields. Relative file names
 * resolve under a directory that does not exist; the current context and one named "c".
 */
#include "fuzz.h"
#include "kapi/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kapi_config *c = NULL;
	struct gerr err = {0};
	char *text = fuzz_cstr(data, size);

	if (!text)
		return 0;
	if (kapi_config_parse(text, size, "/nonexistent/fuzz/kubeconfig", NULL, &c, &err) >= 0)
		kapi_config_free(c);
	c = NULL;
	if (kapi_config_parse(text, size, "/nonexistent/fuzz/kubeconfig", "c", &c, &err) >= 0)
		kapi_config_free(c);
	free(text);
	return 0;
}
