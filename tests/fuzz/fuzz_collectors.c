/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: dcgm-exporter collectors CSV (src/exporter/collectors.h exp_collectors_parse). */
#include <string.h>

#include "fuzz.h"
#include "exporter/collectors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct exp_collectors c;
	struct gerr err = {0};

	if (exp_collectors_parse((const char *)data, size, "fuzz.csv", &c, &err) >= 0) {
		for (size_t i = 0; i < c.n; i++)
			if (!c.v[i].name || !c.v[i].type || !c.v[i].help || !c.v[i].line)
				__builtin_trap();
		exp_collectors_free(&c);
	} else if (!err.msg[0]) {
		__builtin_trap(); /* every refusal says why */
	}
	return 0;
}
