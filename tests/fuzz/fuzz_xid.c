/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the kernel-log XID parser, the PCI address parser and the health-check env
 * policy (all read text gpulet does not control). Built with -fsanitize=fuzzer when GPULET_FUZZ is
 * on; otherwise main() below replays mutations of seed lines deterministically, so the suite (and its
 * ASan build) exercises the same entry point.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct xid_kmsg_parser p = {0};
	struct xid_kmsg x;
	struct pci_addr a;
	struct xid_policy pol;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	/* every line through one parser, as the watcher does */
	for (char *line = s, *nl; line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (xid_kmsg_parse_line(&p, line, &x) == 1 &&
		    (!memchr(x.text, '\0', sizeof(x.text)) || !memchr(x.pci_text, '\0', sizeof(x.pci_text))))
			abort();
		(void)pci_addr_parse(line, &a);
		(void)xid_policy_parse(line, NULL, &pol, NULL);
	}
	free(s);
	return 0;
}

#ifndef GPULET_FUZZING
static const char *const seeds[] = {
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "6,1234,5678,-;NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper",
    "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system has\nNVRM: fallen off "
    "the bus and is not responding to commands.",
    "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.",
    "13,31,all,xids, 48",
    "00000000:3B:00.0",
};

int main(int argc, char **argv)
{
	unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
	uint32_t seed = 0x9e3779b9;
	char buf[512];

	for (unsigned it = 0; it < iters; it++) {
		const char *src = seeds[it % (sizeof(seeds) / sizeof(seeds[0]))];
		size_t len = strlen(src);
		memcpy(buf, src, len);
		/* a few byte flips, a truncation or an extension per input */
		for (int k = 0; k < 4; k++) {
			seed = seed * 1664525 + 1013904223;
			size_t pos = (seed >> 8) % (len ? len : 1);
			switch (seed % 4) {
			case 0:
				buf[pos] = (char)(seed >> 24);
				break;
			case 1:
				len = pos;
				break;
			case 2:
				if (len + 8 < sizeof(buf)) {
					memset(buf + len, (seed >> 16) % 2 ? ':' : '9', 8);
					len += 8;
				}
				break;
			default:
				buf[pos] = "():,.-;\n"[(seed >> 20) % 8];
			}
		}
		LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	}
	printf("%u mutated inputs parsed\n", iters);
	return 0;
}
#endif
