/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints the linker version script of a fake NVML variant, from the same NVML_SYMBOLS table
 * gpulet's loader uses, so the exports follow the ABI header:
 *   full    every symbol (a current driver)
 *   old     only the required ones (a driver too old for the optional features)
 *   broken  every symbol but nvmlDeviceGetCount_v2 (a library gpulet must refuse)
 * nvmlErrorString and the fakenvml_api check table are exported by all; the full one also exports
 * PEER_SYMBOLS (calls only NVIDIA's own tools make, for tests/oracles).
 */
#include <stdio.h>
#include <string.h>

#include "nvml/abi.h"
#include "peer_symbols.h"

static const struct nvml_symbol symbols[] = {NVML_SYMBOLS(NVML_SYMBOL_ROW)};
#define PEER_NAME(sym) #sym,
static const char *const peers[] = {PEER_SYMBOLS(PEER_NAME)};

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "full";

	if (strcmp(mode, "full") && strcmp(mode, "old") && strcmp(mode, "broken")) {
		fprintf(stderr, "usage: %s full|old|broken\n", argv[0]);
		return 2;
	}
	printf("{\n  global:\n    nvmlErrorString;\n    fakenvml_api;\n");
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		if (!strcmp(mode, "old") && !symbols[i].required)
			continue;
		if (!strcmp(mode, "broken") && !strcmp(symbols[i].name, "nvmlDeviceGetCount_v2"))
			continue;
		printf("    %s;\n", symbols[i].name);
	}
	for (size_t i = 0; !strcmp(mode, "full") && i < sizeof(peers) / sizeof(peers[0]); i++)
		printf("    %s;\n", peers[i]);
	printf("  local:\n    *;\n};\n");
	return 0;
}
