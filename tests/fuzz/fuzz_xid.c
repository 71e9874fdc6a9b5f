/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: kernel-log lines carrying XIDs (src/nvml/xid.h), one parser fed line by line as the
 * health watcher does, plus the PCI address and DP_*_HEALTHCHECKS parsers on the same lines.
 */
#include "fuzz.h"
#include "nvml/xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xid_kmsg_parser p = {0};
	char *text = fuzz_cstr(data, size);
	char *line, *save = NULL;
	const char *first = NULL;

	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct xid_kmsg k;
		struct pci_addr a;

		if (xid_kmsg_parse_line(&p, line, &k) == 1) {
			(void)xid_lookup(k.xid);
			(void)xid_recovery(k.xid);
		}
		(void)pci_addr_parse(line, &a);
		if (!first) {
			first = line;
		} else {
			struct xid_policy pol;
			struct gerr err = {0};

			if (xid_policy_parse(first, line, &pol, &err) >= 0)
				(void)xid_policy_is_critical(&pol, (unsigned)size);
		}
	}
	free(text);
	return 0;
}
