/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper for tests/integration/test_toml_peers.py: print a TOML file as JSON (what tomllib
 * would load), or with --containerd the merged containerd config (imports followed).
 * Exit 1 with "file:line:col: message" on stderr when the file is rejected.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "parse/toml.h"

int main(int argc, char **argv)
{
	struct toml *t = NULL;
	struct gerr err = {0};
	json_t *j;
	int r;

	if (argc == 4 && streq(argv[1], "--containerd"))
		r = toml_load_containerd(argv[2], argv[3], &t, NULL, &err);
	else if (argc == 2)
		r = toml_load_file(argv[1], &t, &err);
	else {
		fprintf(stderr, "usage: toml_dump FILE | --containerd ROOT PATH\n");
		return 2;
	}
	if (r < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	j = toml_to_json(t);
	json_dumpf(j, stdout, JSON_SORT_KEYS | JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	putchar('\n');
	json_decref(j);
	toml_free(t);
	return 0;
}
