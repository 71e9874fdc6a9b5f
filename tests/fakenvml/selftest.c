/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakenvml_selftest: the fake NVML, dlopened the way gpulet does, answers per fixture, and its
 * run-time injection (fixture reload: GPU lost, MIG re-partition, init failure; event file; fault
 * knobs) works. Expected values come from the fixture files and from docs/reference/nvml-abi.md.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "nvml/abi.h"
#include "peer_symbols.h"

#define FIELD(field, sym, args, req) nvmlReturn_t(*field) args;
struct fakenvml_api {
	NVML_SYMBOLS(FIELD)
};
#undef FIELD

static const struct {
	const char *symbol;
	size_t offset;
	int required;
} symbols[] = {
#define ROW(field, sym, args, req) {#sym, offsetof(struct fakenvml_api, field), req},
    NVML_SYMBOLS(ROW)
#undef ROW
};

#define PEER_NAME(sym) #sym,
static const char *const peer_symbols[] = {PEER_SYMBOLS(PEER_NAME)};
#undef PEER_NAME

/* The calls only NVIDIA's tools make, through dlsym as go-nvml binds them (not in fakenvml_api). */
typedef struct {
	unsigned id, slices, instances, sms, ce, dec, enc, jpeg, ofa;
} ci_profile_info_t;
static nvmlReturn_t (*gi_get_ci_by_id)(nvmlGpuInstance_t, unsigned, nvmlComputeInstance_t *);
static nvmlReturn_t (*ci_get_info)(nvmlComputeInstance_t, nvmlComputeInstanceInfo_t *);
static nvmlReturn_t (*gi_get_ci_profile_info)(nvmlGpuInstance_t, unsigned, unsigned, ci_profile_info_t *);

static const struct fakenvml_api *api;
static const char *(*error_string)(nvmlReturn_t);
static char tmpdir[] = "/tmp/fakenvml-selftest.XXXXXX";

#define MIB (1024ULL * 1024ULL)

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void lib_path(const char *variant, char *buf, size_t size)
{
	const char *full = getenv("FAKE_NVML_LIB");
	const char *build = getenv("GPULET_BUILD");

	if (!*variant && full)
		snprintf(buf, size, "%s", full);
	else
		snprintf(buf, size, "%s/fakenvml/%s%slibnvidia-ml.so.1", build ? build : "build", variant,
			 *variant ? "/" : "");
}

static void fixture_path(const char *name, char *buf, size_t size)
{
	const char *src = getenv("GPULET_SRC");

	snprintf(buf, size, "%s/tests/fixtures/%s.json", src ? src : ".", name);
}

static json_t *fixture_load(const char *name)
{
	char path[4096];
	json_error_t e;
	json_t *j;

	fixture_path(name, path, sizeof(path));
	j = json_load_file(path, 0, &e);
	if (!j)
		fail_msg("%s: %s", path, e.text);
	return j;
}

/* Write a fixture the way tests do at run time: temp file + rename. */
static void fixture_write(json_t *j, const char *path)
{
	char tmp[4200];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_equal(json_dump_file(j, tmp, JSON_INDENT(1)), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void use_fixture(const char *name)
{
	char path[4096];

	fixture_path(name, path, sizeof(path));
	setenv("FAKE_NVML_FIXTURE", path, 1);
}

static nvmlDevice_t gpu(unsigned i)
{
	nvmlDevice_t d = NULL;

	assert_int_equal(api->device_get_handle_by_index(i, &d), NVML_SUCCESS);
	return d;
}

static const char *gpu_uuid(json_t *fx, unsigned i)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(fx, "gpus"), i), "uuid"));
}

static const char *mig_uuid(json_t *fx, unsigned i, unsigned gi_pos)
{
	json_t *g = json_array_get(json_object_get(fx, "gpus"), i);
	json_t *gi = json_array_get(json_object_get(g, "mig"), gi_pos);

	return json_string_value(json_object_get(json_array_get(json_object_get(gi, "cis"), 0), "uuid"));
}

static void check_uuid(nvmlDevice_t d, const char *want)
{
	char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

	assert_int_equal(api->device_get_uuid(d, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, want);
}

static unsigned topo(unsigned a, unsigned b)
{
	int level = -1;

	assert_int_equal(api->device_get_topology_common_ancestor(gpu(a), gpu(b), &level), NVML_SUCCESS);
	return (unsigned)level;
}

/* ---- exports ------------------------------------------------------------------------------ */

static void test_exports(void **state)
{
	char path[4096];
	void *dl;

	/* Full: every symbol, at the address of its NVML_SYMBOLS field (name, field and type agree). */
	lib_path("", path, sizeof(path));
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(dl);
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *fn = dlsym(dl, symbols[i].symbol), *want;

		memcpy(&want, (const char *)api + symbols[i].offset, sizeof(want));
		if (!fn || fn != want)
			fail_msg("%s: exported %p, table %p", symbols[i].symbol, fn, want);
	}
	assert_non_null(dlsym(dl, "nvmlErrorString"));
	for (size_t i = 0; i < sizeof(peer_symbols) / sizeof(peer_symbols[0]); i++)
		if (!dlsym(dl, peer_symbols[i]))
			fail_msg("%s (PEER_SYMBOLS) not exported", peer_symbols[i]);
	dlclose(dl);

	/* old/: only the required ones. */
	lib_path("old", path, sizeof(path));
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(dl);
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++)
		if ((dlsym(dl, symbols[i].symbol) != NULL) != (symbols[i].required != 0))
			fail_msg("old variant: %s exported=%d required=%d", symbols[i].symbol,
				 dlsym(dl, symbols[i].symbol) != NULL, symbols[i].required);
	assert_non_null(dlsym(dl, "nvmlErrorString"));
	for (size_t i = 0; i < sizeof(peer_symbols) / sizeof(peer_symbols[0]); i++)
		if (dlsym(dl, peer_symbols[i]))
			fail_msg("old variant exports %s (PEER_SYMBOLS: the full one only)", peer_symbols[i]);
	dlclose(dl);

	/* broken/: all but nvmlDeviceGetCount_v2. */
	lib_path("broken", path, sizeof(path));
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(dl);
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++)
		if ((dlsym(dl, symbols[i].symbol) == NULL) != (strcmp(symbols[i].symbol, "nvmlDeviceGetCount_v2") == 0))
			fail_msg("broken variant: %s", symbols[i].symbol);
	dlclose(dl);
}

/* ---- fixtures ----------------------------------------------------------------------------- */

static void test_dgx_a100(void **state)
{
	json_auto_t *fx = fixture_load("dgx-a100");
	char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	unsigned count, u, cur, pend;
	int major, minor;
	nvmlPciInfo_t pci;
	nvmlMemory_t mem;
	nvmlDevice_t mig, parent, by_uuid;
	nvmlDeviceAttributes_t attr;
	nvmlGpuInstanceProfileInfo_t prof;
	nvmlGpuInstance_t gi;
	nvmlGpuInstanceInfo_t gi_info;
	nvmlUtilization_t util;
	unsigned long long ecc;
	nvmlProcessInfo_t procs[4];
	int v;

	use_fixture("dgx-a100");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->system_get_driver_version(buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "550.54.15");
	assert_int_equal(api->system_get_nvml_version(buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "12.550.54.15");
	assert_int_equal(api->system_get_cuda_driver_version(&v), NVML_SUCCESS);
	assert_int_equal(v, 12040);
	assert_int_equal(api->device_get_count(&count), NVML_SUCCESS);
	assert_int_equal(count, 8);

	for (unsigned i = 0; i < 8; i++) {
		check_uuid(gpu(i), gpu_uuid(fx, i));
		assert_int_equal(api->device_get_minor_number(gpu(i), &u), NVML_SUCCESS);
		assert_int_equal(u, i);
		assert_int_equal(api->device_get_index(gpu(i), &u), NVML_SUCCESS);
		assert_int_equal(u, i);
		assert_int_equal(api->device_get_numa_node_id(gpu(i), &u), NVML_SUCCESS);
		assert_int_equal(u, i < 4 ? 0 : 1);
	}
	assert_int_equal(api->device_get_name(gpu(0), buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA A100-SXM4-40GB");
	assert_int_equal(api->device_get_uuid(gpu(0), buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(api->device_get_pci_info(gpu(0), &pci), NVML_SUCCESS);
	assert_string_equal(pci.busId, "00000000:07:00.0");
	assert_string_equal(pci.busIdLegacy, "0000:07:00.0");
	assert_int_equal(pci.bus, 7);
	assert_int_equal(pci.pciDeviceId, 0x20B010DE);
	assert_int_equal(api->device_get_memory_info(gpu(1), &mem), NVML_SUCCESS);
	assert_int_equal(mem.total, 40960 * MIB);
	assert_int_equal(mem.used + mem.free, mem.total);
	assert_int_equal(api->device_get_cuda_compute_capability(gpu(0), &major, &minor), NVML_SUCCESS);
	assert_int_equal(major * 10 + minor, 80);
	assert_int_equal(api->device_get_architecture(gpu(0), &u), NVML_SUCCESS);
	assert_int_equal(u, 7);

	/* MIG: off on GPU 0, on for GPU 6 with 4 devices, 7 slots. */
	assert_int_equal(api->device_get_mig_mode(gpu(0), &cur, &pend), NVML_SUCCESS);
	assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(0), 0, &mig), NVML_ERROR_NOT_FOUND);
	assert_int_equal(api->device_get_mig_mode(gpu(6), &cur, &pend), NVML_SUCCESS);
	assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
	assert_int_equal(pend, NVML_DEVICE_MIG_ENABLE);
	assert_int_equal(api->device_get_max_mig_device_count(gpu(6), &u), NVML_SUCCESS);
	assert_int_equal(u, 7);
	count = 0;
	for (unsigned i = 0; i < 7; i++) {
		nvmlReturn_t r = api->device_get_mig_device_handle_by_index(gpu(6), i, &mig);

		assert_true(r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND);
		count += r == NVML_SUCCESS;
	}
	assert_int_equal(count, 4);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 7, &mig), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(7), 0, &mig), NVML_SUCCESS);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 0, &mig), NVML_SUCCESS);
	assert_ptr_not_equal(mig, gpu(6));
	check_uuid(mig, mig_uuid(fx, 6, 0));
	assert_int_equal(api->device_is_mig_device_handle(mig, &u), NVML_SUCCESS);
	assert_int_equal(u, 1);
	assert_int_equal(api->device_is_mig_device_handle(gpu(6), &u), NVML_SUCCESS);
	assert_int_equal(u, 0);
	assert_int_equal(api->device_get_device_handle_from_mig_device_handle(mig, &parent), NVML_SUCCESS);
	assert_ptr_equal(parent, gpu(6));
	assert_int_equal(api->device_get_device_handle_from_mig_device_handle(gpu(6), &parent),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->device_get_gpu_instance_id(mig, &u), NVML_SUCCESS);
	assert_int_equal(u, 2);
	assert_int_equal(api->device_get_compute_instance_id(mig, &u), NVML_SUCCESS);
	assert_int_equal(u, 0);
	assert_int_equal(api->device_get_gpu_instance_id(gpu(6), &u), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_minor_number(mig, &u), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_name(mig, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
	assert_int_equal(api->device_get_attributes(mig, &attr), NVML_SUCCESS);
	assert_int_equal(attr.gpuInstanceSliceCount, 3);
	assert_int_equal(attr.computeInstanceSliceCount, 3);
	assert_int_equal(attr.memorySizeMB, 19968);
	assert_int_equal(attr.multiprocessorCount, 42);
	assert_int_equal(api->device_get_attributes(gpu(6), &attr), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_memory_info(mig, &mem), NVML_SUCCESS);
	assert_int_equal(mem.total, 19968 * MIB);
	assert_int_equal(api->device_get_handle_by_uuid(mig_uuid(fx, 6, 0), &by_uuid), NVML_SUCCESS);
	assert_ptr_equal(by_uuid, mig);
	assert_int_equal(api->device_get_handle_by_uuid(gpu_uuid(fx, 3), &by_uuid), NVML_SUCCESS);
	assert_ptr_equal(by_uuid, gpu(3));
	assert_int_equal(api->device_get_handle_by_uuid("GPU-00000000-0000-0000-0000-000000000000", &by_uuid),
			 NVML_ERROR_NOT_FOUND);
	assert_int_equal(api->device_get_gpu_instance_by_id(gpu(6), 2, &gi), NVML_SUCCESS);
	assert_int_equal(api->gpu_instance_get_info(gi, &gi_info), NVML_SUCCESS);
	assert_ptr_equal(gi_info.device, gpu(6));
	assert_int_equal(gi_info.id, 2);
	assert_int_equal(gi_info.profileId, 9);
	assert_int_equal(gi_info.placement.start, 4);
	assert_int_equal(gi_info.placement.size, 4);
	assert_int_equal(api->device_get_gpu_instance_by_id(gpu(6), 4, &gi), NVML_ERROR_NOT_FOUND);

	/* GPU instance profiles, A100-40GB (docs/reference/nvml-abi.md). */
	static const struct {
		unsigned profile, slices;
		unsigned long long mb;
	} profiles[] = {
	    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 1, 4864},  {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 2, 9856},
	    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 3, 19968}, {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 4, 19968},
	    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 7, 40192},
	};
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		assert_int_equal(api->device_get_gpu_instance_profile_info(gpu(0), profiles[i].profile, &prof),
				 NVML_SUCCESS);
		assert_int_equal(prof.sliceCount, profiles[i].slices);
		assert_int_equal(prof.memorySizeMB, profiles[i].mb);
	}
	assert_int_equal(api->device_get_gpu_instance_profile_info(gpu(0), NVML_GPU_INSTANCE_PROFILE_8_SLICE, &prof),
			 NVML_ERROR_NOT_SUPPORTED);

	/* Topology: PCIe pairs share a switch, NUMA halves; 12 NVLinks to the NVSwitches. */
	assert_int_equal(topo(0, 1), NVML_TOPOLOGY_MULTIPLE);
	assert_int_equal(topo(0, 2), NVML_TOPOLOGY_NODE);
	assert_int_equal(topo(0, 4), NVML_TOPOLOGY_SYSTEM);
	assert_int_equal(topo(5, 5), NVML_TOPOLOGY_INTERNAL);
	for (unsigned l = 0; l < 12; l++) {
		assert_int_equal(api->device_get_nvlink_state(gpu(3), l, &v), NVML_SUCCESS);
		assert_int_equal(v, NVML_FEATURE_ENABLED);
	}
	assert_int_equal(api->device_get_nvlink_state(gpu(3), 12, &v), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->device_get_nvlink_remote_pci_info(gpu(3), 11, &pci), NVML_SUCCESS);
	assert_string_equal(pci.busId, "00000000:C9:00.0");
	assert_int_equal(pci.pciDeviceId, 0x1AF110DE);

	/* Telemetry. */
	assert_int_equal(api->device_get_utilization_rates(gpu(0), &util), NVML_SUCCESS);
	assert_int_equal(util.gpu, 87);
	assert_int_equal(api->device_get_utilization_rates(mig, &util), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_temperature(gpu(0), NVML_TEMPERATURE_GPU, &u), NVML_SUCCESS);
	assert_int_equal(u, 58);
	assert_int_equal(api->device_get_power_usage(gpu(0), &u), NVML_SUCCESS);
	assert_int_equal(u, 312000);
	assert_int_equal(api->device_get_clock_info(gpu(1), NVML_CLOCK_SM, &u), NVML_SUCCESS);
	assert_int_equal(u, 1410);
	assert_int_equal(api->device_get_clock_info(gpu(1), NVML_CLOCK_MEM, &u), NVML_SUCCESS);
	assert_int_equal(u, 1215);
	assert_int_equal(
	    api->device_get_total_ecc_errors(gpu(1), NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &ecc),
	    NVML_SUCCESS);
	assert_int_equal(ecc, 0);
	{
		unsigned corr, unc, pending, failure;

		assert_int_equal(api->device_get_remapped_rows(gpu(1), &corr, &unc, &pending, &failure), NVML_SUCCESS);
		assert_int_equal(corr + unc + pending + failure, 0);
	}
	u = 0;
	assert_int_equal(api->device_get_compute_running_processes(gpu(0), &u, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(u, 1);
	u = 4;
	assert_int_equal(api->device_get_compute_running_processes(gpu(0), &u, procs), NVML_SUCCESS);
	assert_int_equal(u, 1);
	assert_int_equal(procs[0].pid, 4242);
	assert_int_equal(procs[0].usedGpuMemory, 30720 * MIB);
	assert_int_equal(procs[0].gpuInstanceId, 0xFFFFFFFFu);
	assert_int_equal(api->device_get_memory_info(gpu(0), &mem), NVML_SUCCESS);
	assert_int_equal(mem.used, 30720 * MIB);
	/* A process inside GPU 6's GI 9 shows on that MIG device only. */
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 2, &mig), NVML_SUCCESS);
	u = 4;
	assert_int_equal(api->device_get_compute_running_processes(mig, &u, procs), NVML_SUCCESS);
	assert_int_equal(u, 1);
	assert_int_equal(procs[0].gpuInstanceId, 9);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 0, &mig), NVML_SUCCESS);
	u = 4;
	assert_int_equal(api->device_get_compute_running_processes(mig, &u, procs), NVML_SUCCESS);
	assert_int_equal(u, 0);

	assert_string_equal(error_string(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
	assert_int_equal(api->device_get_count(&count), NVML_ERROR_UNINITIALIZED);
}

static void test_dgx_h100(void **state)
{
	char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	nvmlGpuInstanceProfileInfo_t prof;
	unsigned count, cur, pend;
	nvmlMemory_t mem;
	int major, minor, v;

	use_fixture("dgx-h100");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_count(&count), NVML_SUCCESS);
	assert_int_equal(count, 8);
	assert_int_equal(api->device_get_name(gpu(7), buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA H100 80GB HBM3");
	assert_int_equal(api->device_get_memory_info(gpu(7), &mem), NVML_SUCCESS);
	assert_int_equal(mem.total, 81559 * MIB);
	assert_int_equal(api->device_get_cuda_compute_capability(gpu(7), &major, &minor), NVML_SUCCESS);
	assert_int_equal(major * 10 + minor, 90);
	assert_int_equal(api->device_get_mig_mode(gpu(7), &cur, &pend), NVML_SUCCESS);
	assert_int_equal(cur, 0);
	assert_int_equal(api->device_get_gpu_instance_profile_info(gpu(7), NVML_GPU_INSTANCE_PROFILE_7_SLICE, &prof),
			 NVML_SUCCESS);
	assert_int_equal(prof.sliceCount, 7);
	assert_int_equal(api->device_get_nvlink_state(gpu(0), 17, &v), NVML_SUCCESS);
	assert_int_equal(api->device_get_nvlink_state(gpu(0), 18, &v), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static void test_single_t4(void **state)
{
	unsigned count, cur, pend, u, a, b, c2, d;
	nvmlGpuInstanceProfileInfo_t prof;
	char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	int v;

	use_fixture("single-t4");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_count(&count), NVML_SUCCESS);
	assert_int_equal(count, 1);
	assert_int_equal(api->device_get_name(gpu(0), buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "Tesla T4");
	assert_int_equal(api->device_get_mig_mode(gpu(0), &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_max_mig_device_count(gpu(0), &u), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_gpu_instance_profile_info(gpu(0), 0, &prof), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_nvlink_state(gpu(0), 0, &v), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_remapped_rows(gpu(0), &a, &b, &c2, &d), NVML_ERROR_NOT_SUPPORTED);
	u = 0;
	assert_int_equal(
	    api->device_get_retired_pages(gpu(0), NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &u, NULL),
	    NVML_SUCCESS);
	assert_int_equal(u, 0);
	assert_int_equal(api->device_get_architecture(gpu(0), &u), NVML_SUCCESS);
	assert_int_equal(u, 6);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static void test_no_gpu(void **state)
{
	nvmlDevice_t d;
	unsigned count = 99;
	char buf[80];

	use_fixture("no-gpu");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_count(&count), NVML_SUCCESS);
	assert_int_equal(count, 0);
	assert_int_equal(api->device_get_handle_by_index(0, &d), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->system_get_driver_version(buf, sizeof(buf)), NVML_SUCCESS);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static void test_pcie_4gpu(void **state)
{
	nvmlPciInfo_t pci, peer;
	int v;
	unsigned active;

	use_fixture("pcie-4gpu");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(topo(0, 1), NVML_TOPOLOGY_SINGLE);
	assert_int_equal(topo(2, 3), NVML_TOPOLOGY_HOSTBRIDGE);
	assert_int_equal(topo(1, 2), NVML_TOPOLOGY_SYSTEM);
	assert_int_equal(topo(3, 0), NVML_TOPOLOGY_SYSTEM);
	/* GPU 0: 12 links to GPU 1; GPU 2: 4 of 12 links up, to GPU 3. */
	for (unsigned g = 0; g < 4; g += 2) {
		assert_int_equal(api->device_get_pci_info(gpu(g + 1), &peer), NVML_SUCCESS);
		active = 0;
		for (unsigned l = 0; l < 12; l++) {
			assert_int_equal(api->device_get_nvlink_state(gpu(g), l, &v), NVML_SUCCESS);
			if (v != NVML_FEATURE_ENABLED) {
				assert_int_equal(api->device_get_nvlink_remote_pci_info(gpu(g), l, &pci),
						 NVML_ERROR_NOT_SUPPORTED);
				continue;
			}
			active++;
			assert_int_equal(api->device_get_nvlink_remote_pci_info(gpu(g), l, &pci), NVML_SUCCESS);
			assert_string_equal(pci.busId, peer.busId);
			assert_int_equal(pci.pciDeviceId, peer.pciDeviceId);
		}
		assert_int_equal(active, g == 0 ? 12 : 4);
	}
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static void test_mixed(void **state)
{
	unsigned cur, pend, n = 0;
	nvmlDevice_t mig;

	use_fixture("mixed");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_mig_mode(gpu(0), &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_mig_mode(gpu(1), &cur, &pend), NVML_SUCCESS);
	assert_int_equal(cur, 1);
	for (unsigned i = 0; i < 7; i++)
		n += api->device_get_mig_device_handle_by_index(gpu(1), i, &mig) == NVML_SUCCESS;
	assert_int_equal(n, 7);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

/* GI 2 of mig-ci-split's GPU 0 (3g.40gb, 3 slices) as go-nvlib reaches a MIG device's profile. */
static void peer_calls_ci_split(void)
{
	nvmlComputeInstanceInfo_t info;
	nvmlGpuInstanceInfo_t gi_info;
	nvmlComputeInstance_t ci;
	ci_profile_info_t p;
	nvmlGpuInstance_t gi;

	assert_int_equal(api->device_get_gpu_instance_by_id(gpu(0), 2, &gi), NVML_SUCCESS);
	assert_int_equal(api->gpu_instance_get_info(gi, &gi_info), NVML_SUCCESS);
	assert_int_equal(gi_get_ci_by_id(gi, 1, &ci), NVML_SUCCESS);
	assert_int_equal(gi_get_ci_by_id(gi, 3, &ci), NVML_ERROR_NOT_FOUND);
	assert_int_equal(gi_get_ci_by_id(gi, 1, &ci), NVML_SUCCESS);
	assert_int_equal(ci_get_info(ci, &info), NVML_SUCCESS);
	assert_int_equal(info.id, 1);
	assert_int_equal(info.profileId, 0); /* NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE */
	assert_ptr_equal(info.gpuInstance, gi);
	assert_ptr_equal(info.device, gpu(0));
	assert_int_equal(info.placement.start, 1);
	assert_int_equal(info.placement.size, 1);
	/* profile 2 = 3 slices: the whole GI; 4 slices (profile 3) does not fit; engine profile 1: none */
	assert_int_equal(gi_get_ci_profile_info(gi, 2, 0, &p), NVML_SUCCESS);
	assert_int_equal(p.id, 2);
	assert_int_equal(p.slices, 3);
	assert_int_equal(p.instances, 1);
	assert_int_equal(gi_get_ci_profile_info(gi, 0, 0, &p), NVML_SUCCESS);
	assert_int_equal(p.instances, 3);
	assert_int_equal(p.sms, 20);
	assert_int_equal(gi_get_ci_profile_info(gi, 3, 0, &p), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(gi_get_ci_profile_info(gi, 0, 1, &p), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(gi_get_ci_profile_info(gi, 9, 0, &p), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(ci_get_info((nvmlComputeInstance_t)&p, &info), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_mig_ci_split(void **state)
{
	char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	nvmlDeviceAttributes_t attr;
	nvmlDevice_t mig;
	nvmlMemory_t mem;
	unsigned cur, pend, u;

	use_fixture("mig-ci-split");
	assert_int_equal(api->init(), NVML_SUCCESS);
	/* Index 1..3: three 1-slice compute instances sharing GI 2 (3g.40gb). */
	for (unsigned i = 1; i < 4; i++) {
		assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(0), i, &mig), NVML_SUCCESS);
		assert_int_equal(api->device_get_gpu_instance_id(mig, &u), NVML_SUCCESS);
		assert_int_equal(u, 2);
		assert_int_equal(api->device_get_compute_instance_id(mig, &u), NVML_SUCCESS);
		assert_int_equal(u, i - 1);
		assert_int_equal(api->device_get_attributes(mig, &attr), NVML_SUCCESS);
		assert_int_equal(attr.gpuInstanceSliceCount, 3);
		assert_int_equal(attr.computeInstanceSliceCount, 1);
		assert_int_equal(attr.multiprocessorCount, 20);
		assert_int_equal(attr.memorySizeMB, 40448);
		assert_int_equal(api->device_get_memory_info(mig, &mem), NVML_SUCCESS);
		assert_int_equal(mem.total, 40448 * MIB);
		assert_int_equal(api->device_get_name(mig, buf, sizeof(buf)), NVML_SUCCESS);
		assert_string_equal(buf, "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb");
	}
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(0), 4, &mig), NVML_ERROR_NOT_FOUND);
	peer_calls_ci_split();
	/* GPU 1: MIG off, enable pending. */
	assert_int_equal(api->device_get_mig_mode(gpu(1), &cur, &pend), NVML_SUCCESS);
	assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
	assert_int_equal(pend, NVML_DEVICE_MIG_ENABLE);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(1), 0, &mig), NVML_ERROR_NOT_FOUND);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static void test_degraded(void **state)
{
	unsigned long long v;
	unsigned count, corr, unc, pending, failure, t;
	nvmlDevice_t d;

	use_fixture("degraded");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_count(&count), NVML_SUCCESS);
	assert_int_equal(count, 3);
	assert_int_equal(
	    api->device_get_total_ecc_errors(gpu(1), NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v),
	    NVML_SUCCESS);
	assert_int_equal(v, 1);
	assert_int_equal(
	    api->device_get_total_ecc_errors(gpu(1), NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &v),
	    NVML_SUCCESS);
	assert_int_equal(v, 512);
	assert_int_equal(api->device_get_remapped_rows(gpu(1), &corr, &unc, &pending, &failure), NVML_SUCCESS);
	assert_int_equal(unc, 1);
	assert_int_equal(pending, 1);
	assert_int_equal(api->device_get_temperature(gpu(1), NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
	assert_int_equal(t, 89);
	assert_int_equal(
	    api->device_get_total_ecc_errors(gpu(0), NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v),
	    NVML_SUCCESS);
	assert_int_equal(v, 0);
	assert_int_equal(api->device_get_handle_by_index(2, &d), NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

/* ---- run-time injection ------------------------------------------------------------------- */

static void tmp_fixture(json_t *fx, char *path, size_t size)
{
	snprintf(path, size, "%s/fixture.json", tmpdir);
	fixture_write(fx, path);
	setenv("FAKE_NVML_FIXTURE", path, 1);
}

static void test_reload(void **state)
{
	json_auto_t *fx = fixture_load("dgx-a100");
	json_t *g3 = json_array_get(json_object_get(fx, "gpus"), 3);
	json_t *g6 = json_array_get(json_object_get(fx, "gpus"), 6);
	nvmlDevice_t h3, h, kept, gone, mig;
	unsigned u, n;
	char path[4096], uuid_kept[96], uuid_gone[96];
	json_t *migs, *entry;

	tmp_fixture(fx, path, sizeof(path));
	assert_int_equal(api->init(), NVML_SUCCESS);
	h3 = gpu(3);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 0, &kept), NVML_SUCCESS);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 1, &gone), NVML_SUCCESS);
	snprintf(uuid_kept, sizeof(uuid_kept), "%s", mig_uuid(fx, 6, 0));
	snprintf(uuid_gone, sizeof(uuid_gone), "%s", mig_uuid(fx, 6, 1));

	/* GPU lost: calls on a held handle and new lookups answer GPU_IS_LOST; others are unaffected. */
	json_object_set_new(g3, "lost", json_true());
	fixture_write(fx, path);
	assert_int_equal(api->device_get_minor_number(h3, &u), NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(api->device_get_handle_by_index(3, &h), NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(api->device_get_handle_by_uuid(gpu_uuid(fx, 3), &h), NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(api->device_get_minor_number(gpu(2), &u), NVML_SUCCESS);
	assert_int_equal(api->device_get_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 8);

	/* Recovery: the same handle works again and lookups give the same pointer. */
	json_object_set_new(g3, "lost", json_false());
	fixture_write(fx, path);
	assert_int_equal(api->device_get_minor_number(h3, &u), NVML_SUCCESS);
	assert_int_equal(u, 3);
	assert_ptr_equal(gpu(3), h3);

	/* MIG re-partition of GPU 6: keep the 3g.20gb, replace the rest by 1g.5gb instances. */
	migs = json_array();
	json_array_append(migs, json_array_get(json_object_get(g6, "mig"), 0));
	for (unsigned k = 0; k < 4; k++) {
		char uuid[64];

		snprintf(uuid, sizeof(uuid), "MIG-0000000%u-aaaa-4bbb-8ccc-dddddddddddd", k);
		entry = json_pack("{s:i, s:i, s:[i,i], s:[{s:i, s:s}]}", "gi", 9 + k, "gi_profile", 0, "placement", k,
				  1, "cis", "ci", 0, "uuid", uuid);
		json_array_append_new(migs, entry);
	}
	json_object_set_new(g6, "mig", migs);
	fixture_write(fx, path);
	n = 0;
	for (unsigned i = 0; i < 7; i++)
		n += api->device_get_mig_device_handle_by_index(gpu(6), i, &mig) == NVML_SUCCESS;
	assert_int_equal(n, 5);
	check_uuid(kept, uuid_kept); /* same handle, same MIG device */
	assert_int_equal(api->device_get_uuid(gone, uuid_gone, sizeof(uuid_gone)), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->device_get_handle_by_uuid("MIG-00000003-aaaa-4bbb-8ccc-dddddddddddd", &mig),
			 NVML_SUCCESS);
	assert_int_equal(api->device_get_gpu_instance_id(mig, &u), NVML_SUCCESS);
	assert_int_equal(u, 12);

	/* A GPU removed from the fixture: its handle answers INVALID_ARGUMENT, count drops. */
	json_array_remove(json_object_get(fx, "gpus"), 5);
	fixture_write(fx, path);
	assert_int_equal(api->device_get_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 7);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);

	/* Init failure by name; removed again, init works. */
	json_object_set_new(fx, "init_error", json_string("DRIVER_NOT_LOADED"));
	fixture_write(fx, path);
	assert_int_equal(api->init(), NVML_ERROR_DRIVER_NOT_LOADED);
	json_object_set_new(fx, "init_error", json_string("LIB_RM_VERSION_MISMATCH"));
	fixture_write(fx, path);
	assert_int_equal(api->init(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
	json_object_del(fx, "init_error");
	fixture_write(fx, path);
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

struct appender {
	const char *path;
	const char *lines;
	long delay_ms;
	long written_at;
};

static void append(const char *path, const char *lines)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(lines, f);
	fclose(f);
}

static void *append_later(void *arg)
{
	struct appender *a = arg;

	usleep((useconds_t)a->delay_ms * 1000);
	a->written_at = now_ms();
	append(a->path, a->lines);
	return NULL;
}

static void test_events(void **state)
{
	json_auto_t *fx = fixture_load("dgx-a100");
	char path[4096], events[4200], line[256];
	nvmlEventSet_t set, late;
	nvmlEventData_t e;
	struct appender a;
	pthread_t t;
	long got_at;
	unsigned long long types;

	tmp_fixture(fx, path, sizeof(path));
	snprintf(events, sizeof(events), "%s/events", tmpdir);
	append(events, "# events before any set exist are not delivered\nxid 0 79\n");
	setenv("FAKE_NVML_EVENTS", events, 1);
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_supported_event_types(gpu(0), &types), NVML_SUCCESS);
	assert_true(types & nvmlEventTypeXidCriticalError);
	assert_int_equal(api->event_set_create(&set), NVML_SUCCESS);
	assert_int_equal(
	    api->device_register_events(gpu(0), nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError, set),
	    NVML_SUCCESS);
	assert_int_equal(api->device_register_events(gpu(6), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
	assert_int_equal(api->device_register_events(gpu(1), 0x10 /* clock: not supported */, set),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->event_set_wait(set, &e, 20), NVML_ERROR_TIMEOUT);

	/* Appended while Wait is blocked: delivered within 100 ms; GPU 1's line is skipped. */
	snprintf(line, sizeof(line), "xid 1 79\nxid %s 48\n", gpu_uuid(fx, 0));
	a = (struct appender){events, line, 30, 0};
	assert_int_equal(pthread_create(&t, NULL, append_later, &a), 0);
	assert_int_equal(api->event_set_wait(set, &e, 5000), NVML_SUCCESS);
	got_at = now_ms();
	pthread_join(t, NULL);
	/* Polled (every 5 ms), not found at the timeout: the bound is loose for loaded CI machines. */
	print_message("event delivered %ld ms after the append\n", got_at - a.written_at);
	assert_true(got_at - a.written_at < 1000);
	assert_ptr_equal(e.device, gpu(0));
	assert_int_equal(e.eventType, nvmlEventTypeXidCriticalError);
	assert_int_equal(e.eventData, 48);
	assert_int_equal(e.gpuInstanceId, 0xFFFFFFFFu);
	assert_int_equal(e.computeInstanceId, 0xFFFFFFFFu);

	/* A second set sees only what comes after it. */
	assert_int_equal(api->event_set_create(&late), NVML_SUCCESS);
	assert_int_equal(api->device_register_events(gpu(0), nvmlEventTypeDoubleBitEccError, late), NVML_SUCCESS);

	snprintf(line, sizeof(line), "sbe 0\ndbe 0\nxid %s 31\nxid 6 43 10 0\nwait_error UNKNOWN\n",
		 mig_uuid(fx, 6, 2));
	append(events, line);
	assert_int_equal(api->event_set_wait(set, &e, 100), NVML_SUCCESS); /* sbe not registered: skipped */
	assert_int_equal(e.eventType, nvmlEventTypeDoubleBitEccError);
	assert_int_equal(e.eventData, 0);
	assert_int_equal(api->event_set_wait(set, &e, 100), NVML_SUCCESS);
	assert_ptr_equal(e.device, gpu(6));
	assert_int_equal(e.eventData, 31);
	assert_int_equal(e.gpuInstanceId, 9);
	assert_int_equal(e.computeInstanceId, 0);
	assert_int_equal(api->event_set_wait(set, &e, 100), NVML_SUCCESS);
	assert_int_equal(e.eventData, 43);
	assert_int_equal(e.gpuInstanceId, 10);
	assert_int_equal(api->event_set_wait(set, &e, 100), NVML_ERROR_UNKNOWN);
	assert_int_equal(api->event_set_wait(set, &e, 20), NVML_ERROR_TIMEOUT);

	assert_int_equal(api->event_set_wait(late, &e, 100), NVML_SUCCESS);
	assert_int_equal(e.eventType, nvmlEventTypeDoubleBitEccError);
	assert_int_equal(api->event_set_wait(late, &e, 100), NVML_ERROR_UNKNOWN);
	assert_int_equal(api->event_set_wait(late, &e, 10), NVML_ERROR_TIMEOUT);

	/* Rewriting the fixture with another MIG layout announces a MigConfigChange; telemetry does not. */
	assert_int_equal(api->device_register_events(gpu(6), nvmlEventMigConfigChange, set), NVML_SUCCESS);
	json_object_set_new(json_array_get(json_object_get(fx, "gpus"), 6), "telemetry",
			    json_pack("{s:i}", "temperature_c", 70));
	fixture_write(fx, path);
	assert_int_equal(api->event_set_wait(set, &e, 20), NVML_ERROR_TIMEOUT);
	json_array_remove(json_object_get(json_array_get(json_object_get(fx, "gpus"), 6), "mig"), 3);
	fixture_write(fx, path);
	assert_int_equal(api->event_set_wait(set, &e, 100), NVML_SUCCESS);
	assert_int_equal(e.eventType, nvmlEventMigConfigChange);
	assert_ptr_equal(e.device, gpu(6));
	assert_int_equal(e.gpuInstanceId, 0xFFFFFFFFu);
	assert_int_equal(api->event_set_wait(set, &e, 20), NVML_ERROR_TIMEOUT);
	assert_int_equal(api->event_set_wait(late, &e, 10), NVML_ERROR_TIMEOUT); /* not registered for it */

	/* A test that truncates the file starts the sets over at its beginning. */
	assert_int_equal(truncate(events, 0), 0);
	append(events, "xid 0 94\n");
	assert_int_equal(api->event_set_wait(set, &e, 100), NVML_SUCCESS);
	assert_int_equal(e.eventData, 94);

	assert_int_equal(api->event_set_free(set), NVML_SUCCESS);
	assert_int_equal(api->event_set_free(late), NVML_SUCCESS);
	assert_int_equal(api->event_set_wait(set, &e, 10), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
	unsetenv("FAKE_NVML_EVENTS");
}

struct slow_call {
	nvmlDevice_t dev;
	nvmlReturn_t r;
	long took_ms;
};

static void *power_call(void *arg)
{
	struct slow_call *s = arg;
	long start = now_ms();
	unsigned mw;

	s->r = api->device_get_power_usage(s->dev, &mw);
	s->took_ms = now_ms() - start;
	return NULL;
}

static void test_fault_knobs(void **state)
{
	json_auto_t *fx = fixture_load("dgx-a100");
	json_t *gpus = json_object_get(fx, "gpus");
	char path[4096], buf[80];
	nvmlUtilization_t util;
	struct slow_call s;
	pthread_t t;
	unsigned mw;
	long start;

	json_object_set_new(json_array_get(gpus, 0), "fail",
			    json_pack("{s:s}", "nvmlDeviceGetUtilizationRates", "UNKNOWN"));
	json_object_set_new(json_array_get(gpus, 1), "fail",
			    json_pack("{s:{s:i}}", "delay_ms", "nvmlDeviceGetPowerUsage", 2000));
	json_object_set_new(fx, "fail", json_pack("{s:s}", "nvmlSystemGetDriverVersion", "NO_PERMISSION"));
	tmp_fixture(fx, path, sizeof(path));
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_utilization_rates(gpu(0), &util), NVML_ERROR_UNKNOWN);
	assert_int_equal(api->device_get_utilization_rates(gpu(1), &util), NVML_SUCCESS);
	assert_int_equal(api->system_get_driver_version(buf, sizeof(buf)), NVML_ERROR_NO_PERMISSION);

	/* A hung call on GPU 1 does not hold up a call on GPU 0. */
	s = (struct slow_call){gpu(1), -1, 0};
	assert_int_equal(pthread_create(&t, NULL, power_call, &s), 0);
	usleep(50 * 1000);
	start = now_ms();
	assert_int_equal(api->device_get_power_usage(gpu(0), &mw), NVML_SUCCESS);
	print_message("call on GPU 0 took %ld ms while GPU 1 hangs for 2000 ms\n", now_ms() - start);
	assert_true(now_ms() - start < 1000);
	pthread_join(t, NULL);
	assert_int_equal(s.r, NVML_SUCCESS);
	assert_true(s.took_ms >= 2000);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static void test_bad_fixture(void **state)
{
	json_auto_t *fx = fixture_load("single-t4");
	char path[4096], buf[4200];
	unsigned count;
	FILE *f;

	setenv("FAKE_NVML_FIXTURE", "/nonexistent/fixture.json", 1);
	assert_int_equal(api->init(), NVML_ERROR_DRIVER_NOT_LOADED);

	snprintf(path, sizeof(path), "%s/broken.json", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"gpus\": [", f);
	fclose(f);
	setenv("FAKE_NVML_FIXTURE", path, 1);
	assert_int_equal(api->init(), NVML_ERROR_UNKNOWN);

	/* A rewrite that does not parse leaves the previous fixture in force. */
	tmp_fixture(fx, path, sizeof(path));
	assert_int_equal(api->init(), NVML_SUCCESS);
	snprintf(buf, sizeof(buf), "%s.tmp", path);
	f = fopen(buf, "w");
	assert_non_null(f);
	fputs("{ not json", f);
	fclose(f);
	assert_int_equal(rename(buf, path), 0);
	assert_int_equal(api->device_get_count(&count), NVML_SUCCESS);
	assert_int_equal(count, 1);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

static int setup(void **state)
{
	char path[4096];
	void *dl;

	lib_path("", path, sizeof(path));
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	api = dlsym(dl, "fakenvml_api");
	*(void **)&error_string = dlsym(dl, "nvmlErrorString");
	*(void **)&gi_get_ci_by_id = dlsym(dl, "nvmlGpuInstanceGetComputeInstanceById");
	*(void **)&ci_get_info = dlsym(dl, "nvmlComputeInstanceGetInfo_v2");
	*(void **)&gi_get_ci_profile_info = dlsym(dl, "nvmlGpuInstanceGetComputeInstanceProfileInfo");
	if (!api || !error_string || !mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- exporter counters (issue 14): field values, energy, PCIe, codecs, memory v2, GPM ------- */
static void test_exporter_counters(void **state)
{
	nvmlFieldValue_t f[3] = {{.fieldId = NVML_FI_DEV_MEMORY_TEMP},
				 {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = 0xffffffffu},
				 {.fieldId = 9999}};
	nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
	nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
	nvmlGpmSample_t s1, s2;
	nvmlGpmMetricsGet_t mg = {.version = NVML_GPM_METRICS_GET_VERSION, .numMetrics = 2};
	unsigned long long mj;
	unsigned u, period;
	nvmlDevice_t mh;

	use_fixture("dgx-h100");
	assert_int_equal(api->init(), NVML_SUCCESS);
	assert_int_equal(api->device_get_field_values(gpu(0), 3, f), NVML_SUCCESS);
	assert_int_equal(f[0].nvmlReturn, NVML_SUCCESS);
	assert_int_equal(f[0].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
	assert_int_equal(f[0].value.uiVal, 38);
	assert_int_equal(f[1].value.ullVal, 123456);
	assert_int_equal(f[2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_total_energy_consumption(gpu(0), &mj), NVML_SUCCESS);
	assert_true(mj > 0);
	assert_int_equal(api->device_get_encoder_utilization(gpu(0), &u, &period), NVML_SUCCESS);
	assert_int_equal(api->device_get_pcie_throughput(gpu(0), NVML_PCIE_UTIL_RX_BYTES, &u), NVML_SUCCESS);
	assert_int_equal(u, 4096);
	assert_int_equal(api->device_get_memory_info_v2(gpu(0), &m2), NVML_SUCCESS);
	assert_int_equal(m2.reserved, 637 * MIB);
	assert_int_equal(m2.total, m2.free + m2.used + m2.reserved);
	m2.version = 1;
	assert_int_equal(api->device_get_memory_info_v2(gpu(0), &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	/* GPM: two samples in order make one reading; the metric ids of nvml.h */
	assert_int_equal(api->gpm_query_device_support(gpu(0), &sup), NVML_SUCCESS);
	assert_int_equal(sup.isSupportedDevice, 1);
	assert_int_equal(api->gpm_sample_alloc(&s1), NVML_SUCCESS);
	assert_int_equal(api->gpm_sample_alloc(&s2), NVML_SUCCESS);
	assert_int_equal(api->gpm_sample_get(gpu(0), s1), NVML_SUCCESS);
	mg.sample1 = s1;
	mg.sample2 = s1;
	assert_int_equal(api->gpm_metrics_get(&mg), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->gpm_sample_get(gpu(0), s2), NVML_SUCCESS);
	mg.sample2 = s2;
	mg.metrics[0].metricId = NVML_GPM_METRIC_ANY_TENSOR_UTIL;
	mg.metrics[1].metricId = 30 /* NVDEC 0: not in the fixture */;
	assert_int_equal(api->gpm_metrics_get(&mg), NVML_SUCCESS);
	assert_int_equal(mg.metrics[0].nvmlReturn, NVML_SUCCESS);
	assert_true(mg.metrics[0].value == 44.0);
	assert_int_equal(mg.metrics[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
	mg.sample1 = s2;
	mg.sample2 = s1; /* out of order */
	assert_int_equal(api->gpm_metrics_get(&mg), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(api->gpm_sample_free(s1), NVML_SUCCESS);
	assert_int_equal(api->gpm_sample_free(s2), NVML_SUCCESS);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);

	/* Ampere: no GPM; codec utilisation and PCIe replays are GPU-only calls */
	use_fixture("dgx-a100");
	assert_int_equal(api->init(), NVML_SUCCESS);
	sup.isSupportedDevice = 7;
	assert_int_equal(api->gpm_query_device_support(gpu(0), &sup), NVML_SUCCESS);
	assert_int_equal(sup.isSupportedDevice, 0);
	assert_int_equal(api->gpm_sample_alloc(&s1), NVML_SUCCESS);
	assert_int_equal(api->gpm_sample_get(gpu(0), s1), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->gpm_sample_free(s1), NVML_SUCCESS);
	assert_int_equal(api->device_get_mig_device_handle_by_index(gpu(6), 0, &mh), NVML_SUCCESS);
	assert_int_equal(api->device_get_decoder_utilization(mh, &u, &period), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(api->device_get_pcie_replay_counter(gpu(6), &u), NVML_SUCCESS);
	assert_int_equal(api->shutdown(), NVML_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exports),     cmocka_unit_test(test_dgx_a100),
	    cmocka_unit_test(test_dgx_h100),    cmocka_unit_test(test_single_t4),
	    cmocka_unit_test(test_no_gpu),      cmocka_unit_test(test_pcie_4gpu),
	    cmocka_unit_test(test_mixed),       cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_events),      cmocka_unit_test(test_fault_knobs),
	    cmocka_unit_test(test_bad_fixture), cmocka_unit_test(test_mig_ci_split),
	    cmocka_unit_test(test_degraded),    cmocka_unit_test(test_exporter_counters),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
