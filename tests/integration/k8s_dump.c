/* SPDX-License-Identifier: Apache-2.0 */
/* Test helper for test_k8sobj_peers.py: print what k8sobj_load reads from FILE as JSON. */
#include <stdio.h>

#include "kube/k8sobj.h"

int main(int argc, char **argv)
{
	struct gerr err = {0};
	json_t *objs = NULL;

	if (argc != 2) {
		fprintf(stderr, "usage: k8s_dump FILE|-\n");
		return 2;
	}
	if (k8sobj_load(argv[1], &objs, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	json_dumpf(objs, stdout, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	putchar('\n');
	json_decref(objs);
	return 0;
}
