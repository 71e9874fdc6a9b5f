/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a process's /proc/<pid>/cgroup, its pod UID (src/exporter/procs.h exp_cgroup_pod_uid). */
#include "fuzz.h"
#include "exporter/procs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char uid[40];

	(void)exp_cgroup_pod_uid((const char *)data, size, uid, sizeof(uid));
	return 0;
}
