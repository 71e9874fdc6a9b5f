/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the parsers of untrusted input in the CDI path: spec files (JSON via jansson,
 * YAML via libyaml into our tree builder), the validator over whatever parses, and ld.so.cache.
 * With -DGPULET_FUZZ=ON (clang) it is a libFuzzer target (fuzz_cdi); otherwise it is a CTest unit
 * test that runs a fixed number of seeded mutations of valid inputs, so ASan/UBSan see it in CI.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi/cdi.h"
#include "host/driver.h"
#include "host/ldcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"f.json", "f.yaml"};
	struct cdi_validate_options o = {.no_host_paths = true, .runtime_version = "0.5.0"};
	struct cdi_report rep = {0};
	json_t *spec = NULL;
	char *copy;

	if (size < 1)
		return 0;
	if (data[0] % 3 == 2) {
		struct ldcache *c = NULL;

		copy = malloc(size - 1 ? size - 1 : 1);
		if (!copy)
			return 0;
		memcpy(copy, data + 1, size - 1);
		if (ldcache_parse(copy, size - 1, &c, NULL) == 0)
			ldcache_free(c);
		else
			free(copy);
		return 0;
	}
	if (cdi_parse_spec(names[data[0] % 3], (const char *)data + 1, size - 1, &spec, NULL) == 0) {
		char *text = NULL;

		(void)cdi_validate_spec("f", spec, &o, &rep);
		(void)cdi_min_version(spec);
		if (cdi_format_spec(spec, CDI_FORMAT_YAML, &text, NULL) == 0)
			free(text);
		json_decref(spec);
		cdi_report_clear(&rep);
	}
	return 0;
}

#ifndef GPULET_LIBFUZZER
static const char *const seeds[] = {
    "\x00{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
    "bb\",\"devices\":[{\"name\":\"0\",\"containerEdits\":{\"env\":[\"A=1\"],"
    "\"deviceNodes\":[{\"path\":\"/dev/x\",\"hostPath\":\"/h/dev/x\",\"major\":1}],\"mounts\":[{\"hostPath\":\"/a\","
    "\"containerPath\":\"/a\",\"options\":[\"ro\"]}],\"hooks\":[{\"hookName\":\"prestart\",\"path\":\"/bin/true\","
    "\"timeout\":3}]}}],\"containerEdits\":{\"additionalGids\":[5],\"intelRdt\":{\"closID\":\"x\"}}}",
    "\x01---\ncdiVersion: 0.5.0\nkind: a.com/bb\ndevices:\n- name: \"1:0\"\n  containerEdits:\n    env: [&e A=1, *e]\n"
    "    deviceNodes:\n    - {path: /dev/x, type: c, major: 0x10}\n",
    /* keys of any case (renamed as Go reads them), a 'v' version, 'none' permissions */
    "\x04"
    "CDIVersion: v0.5.0\nKIND: a.com/bb\ndevices:\n- Name: d\n  containeredits:\n    ENV: [A=1]\n    env: [B=2]\n"
    "    devicenodes:\n    - {PATH: /dev/nvidia0, FileMode: -1, permissions: none}\nannotations: {KIND: x}\n",
    "\x02glibc-ld.so.cache1.1\x02\x00\x00\x00\x10\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x60\x00\x00\x00\x68\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x03\x03\x00\x00\x6e\x00\x00\x00\x68\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00libA.so\x00/l/a\x00libB.so\x00",
};
static const size_t seed_len[] = {0, 0, 0, 48 + 48 + 22};

/* xorshift: the same mutations every run, so a failure reproduces. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

int main(void)
{
	static const char tokens[] = "{}[]:,\"-\n #&*!|>'0123456789.e/=";
	uint32_t s = 0x9e3779b9;
	size_t runs = 0;

	for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		size_t len = seed_len[k] ? seed_len[k] : strlen(seeds[k] + 1) + 1;

		for (int i = 0; i < 6000; i++) {
			uint8_t buf[1024];
			size_t n = len < sizeof(buf) ? len : sizeof(buf);
			int edits = 1 + (int)(rnd(&s) % 4);

			memcpy(buf, seeds[k], n);
			for (int e = 0; e < edits && n > 1; e++) {
				size_t at = 1 + rnd(&s) % (n - 1);

				switch (rnd(&s) % 4) {
				case 0: /* flip a byte */
					buf[at] ^= (uint8_t)(1u << (rnd(&s) % 8));
					break;
				case 1: /* syntax token */
					buf[at] = (uint8_t)tokens[rnd(&s) % (sizeof(tokens) - 1)];
					break;
				case 2: /* truncate */
					n = at;
					break;
				default: /* duplicate a span */
					if (n + 16 < sizeof(buf)) {
						memmove(buf + at + 16, buf + at, n - at);
						n += 16;
					}
				}
			}
			LLVMFuzzerTestOneInput(buf, n);
			runs++;
		}
	}
	printf("ok: %zu mutated inputs parsed without a crash\n", runs);
	return 0;
}
#endif
