/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet_internal_checkpoint: both DeviceIDs layouts, errors with positions, lookups. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "kube/checkpoint.h"

/* Kubernetes >= 1.20: DeviceIDs is NUMA node -> IDs */
static const char v2[] =
    "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"uid-1\",\"ContainerName\":\"train\","
    "\"ResourceName\":\"nvidia.com/gpu\",\"DeviceIDs\":{\"0\":[\"GPU-a\"],\"1\":[\"GPU-b\",\"GPU-c\"]},"
    "\"AllocResp\":\"CgA=\"}],\"RegisteredDevices\":{\"nvidia.com/gpu\":[\"GPU-a\",\"GPU-b\",\"GPU-c\",\"GPU-d\"],"
    "\"nvidia.com/mig-1g.5gb\":[\"MIG-x\"]}},\"Checksum\":4107874421}";
/* Kubernetes < 1.20: DeviceIDs is a list */
static const char v1[] = "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"uid-2\",\"ContainerName\":\"c\","
			 "\"ResourceName\":\"nvidia.com/gpu\",\"DeviceIDs\":[\"GPU-z\"],\"AllocResp\":\"\"}],"
			 "\"RegisteredDevices\":{}},\"Checksum\":1}";

static void test_numa_map(void **state)
{
	struct checkpoint *c = NULL;

	assert_int_equal(checkpoint_parse(v2, strlen(v2), "ck", &c, NULL), 0);
	assert_int_equal(c->format, 2);
	assert_int_equal(c->checksum, 4107874421u);
	assert_int_equal(c->n_entries, 1);
	assert_string_equal(c->entries[0].pod_uid, "uid-1");
	assert_string_equal(c->entries[0].container, "train");
	assert_string_equal(c->entries[0].resource, "nvidia.com/gpu");
	assert_int_equal(c->entries[0].n_ids, 3);
	assert_string_equal(c->entries[0].device_ids[2], "GPU-c");
	assert_int_equal(checkpoint_find_resource(c, "nvidia.com/gpu")->n_ids, 4);
	assert_string_equal(checkpoint_find_resource(c, "nvidia.com/mig-1g.5gb")->device_ids[0], "MIG-x");
	assert_null(checkpoint_find_resource(c, "nvidia.com/gpu.shared"));
	checkpoint_free(c);
}

static void test_list_layout(void **state)
{
	struct checkpoint *c = NULL;

	assert_int_equal(checkpoint_parse(v1, strlen(v1), "ck", &c, NULL), 0);
	assert_int_equal(c->format, 1);
	assert_int_equal(c->entries[0].n_ids, 1);
	assert_string_equal(c->entries[0].device_ids[0], "GPU-z");
	assert_int_equal(c->n_registered, 0);
	checkpoint_free(c);
}

static void test_errors(void **state)
{
	struct checkpoint *c = NULL;
	struct gerr err = {0};
	const char *bad_json = "{\"Data\":\n {\"PodDeviceEntries\": [}";
	const char *no_data = "{\"Checksum\": 1}";
	const char *bad_ids = "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"u\",\"DeviceIDs\":\"GPU-a\"}]}}";

	assert_int_equal(checkpoint_parse(bad_json, strlen(bad_json), "ck", &c, &err), -EINVAL);
	assert_null(c);
	assert_non_null(strstr(err.msg, "ck:2:"));
	assert_int_equal(checkpoint_parse(no_data, strlen(no_data), "ck", &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "Data"));
	assert_int_equal(checkpoint_parse(bad_ids, strlen(bad_ids), "ck", &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "PodDeviceEntries[0].DeviceIDs"));
	assert_int_equal(checkpoint_load("/nonexistent/ck", &c, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_numa_map),
	    cmocka_unit_test(test_list_layout),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
