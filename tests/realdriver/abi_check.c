/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML ABI conformance (issue 12): our src/nvml/abi.h against NVIDIA's real nvml.h and the real
 * 535 libnvidia-ml.so.1. abi_check LIBRARY compares every row of abi_rows.h (ours, compiled here,
 * against abi_real.c's), checks every prototype of our symbol table, and dlsyms each of its
 * symbols in LIBRARY: a required one missing fails, an optional one missing is listed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "nvml/abi.h"
#include "abi_rows.h"

static const struct abi_row our_rows[] = {ABI_ROWS};

static const struct nvml_symbol symbols[] = {NVML_SYMBOLS(NVML_SYMBOL_ROW)};

int main(int argc, char **argv)
{
	unsigned n_rows = sizeof(our_rows) / sizeof(our_rows[0]), n_syms = sizeof(symbols) / sizeof(symbols[0]);
	unsigned bad = 0, optional_missing = 0;
	void *dl;

	if (argc != 2) {
		fprintf(stderr, "usage: abi_check LIBNVIDIA-ML\n");
		return 2;
	}
	if (n_rows != abi_real_n_rows || n_syms != abi_real_n_protos) {
		fprintf(stderr, "FAIL: row counts differ (%u/%u, %u/%u)\n", n_rows, abi_real_n_rows, n_syms,
			abi_real_n_protos);
		return 1;
	}
	for (unsigned i = 0; i < n_rows; i++)
		if (strcmp(our_rows[i].what, abi_real_rows[i].what) || our_rows[i].value != abi_real_rows[i].value) {
			fprintf(stderr, "FAIL: %s: ours %lld, nvml.h %lld\n", our_rows[i].what, our_rows[i].value,
				abi_real_rows[i].value);
			bad++;
		}
	for (unsigned i = 0; i < n_syms; i++)
		if (!abi_real_protos[i].same) {
			fprintf(stderr, "FAIL: %s: our prototype is not nvml.h's\n", abi_real_protos[i].symbol);
			bad++;
		}
	dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	for (unsigned i = 0; i < n_syms; i++)
		if (!dlsym(dl, symbols[i].name)) {
			fprintf(stderr, "%s: %s is not exported by %s\n", symbols[i].required ? "FAIL" : "note",
				symbols[i].name, argv[1]);
			bad += symbols[i].required;
			optional_missing += !symbols[i].required;
		}
	fflush(stderr);
	printf("%u layout/constant rows, %u prototypes, %u symbols (%u optional missing); %u failures\n", n_rows,
	       n_syms, n_syms, optional_missing, bad);
	printf("not compared (newer than this nvml.h): %s\n\n", ABI_NEWER_THAN_HEADER);
	dlclose(dl);
	return bad ? 1 : 0;
}
