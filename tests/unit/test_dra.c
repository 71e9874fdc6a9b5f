/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's pure parts (src/dra/): resource.Quantity, NVIDIA's GpuConfig/MigDeviceConfig
 * (tests/fixtures/dra/gpuconfig.json), the MPS per-device limits, the devices and ResourceSlices of
 * each fake node (goldens in tests/golden/dra/, GPULET_UPDATE_GOLDEN=1 rewrites them) with the API's
 * limits checked here independently of the builder, a ResourceClaim read for this driver and pool
 * (tests/fixtures/dra/claims.json), the pool generation, the PCIe root from sysfs, the checkpoint.
 * Facts: docs/reference/dra.md.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "dra/checkpoint.h"
#include "dra/claim.h"
#include "dra/devices.h"
#include "dra/gpuconfig.h"
#include "dra/quantity.h"
#include "nvml/nvml.h"
#include "util/fileio.h"

#include "test_dra_helpers.h"

static const struct {
	const char *name;
	int value;
} errnos[] = {{"EINVAL", EINVAL}, {"EOPNOTSUPP", EOPNOTSUPP}, {"ESTALE", ESTALE}, {"ENODEV", ENODEV}};

static int errno_of(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(errnos); i++)
		if (streq(errnos[i].name, name))
			return errnos[i].value;
	fail_msg("unknown errno name %s", name);
	return 0;
}

static json_t *load_json(const char *rel)
{
	char path[1024];
	json_error_t je;
	json_t *j;

	snprintf(path, sizeof(path), "%s/%s", getenv("GPULET_SRC"), rel);
	j = json_load_file(path, 0, &je);
	if (!j)
		fail_msg("%s:%d: %s", path, je.line, je.text);
	return j;
}

static char *tmpdir(void)
{
	char t[] = "/tmp/gpulet-dra-test.XXXXXX";

	assert_non_null(mkdtemp(t));
	return strdup(t);
}

static void rmrf(const char *dir)
{
	char cmd[256];

	if (dir && strncmp(dir, "/tmp/gpulet-dra-test.", 21) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* ---- resource.Quantity (apimachinery's rules: docs/reference/dra.md §6.4) ---- */

static void test_quantity(void **state)
{
	static const struct {
		const char *in;
		int64_t v;
	} ok[] = {
	    {"10Gi", 10737418240LL},
	    {"512Mi", 536870912},
	    {"1G", 1000000000},
	    {"1e3", 1000},
	    {"1E3", 1000},
	    {"1.5Ki", 1536},
	    {"0.5", 1},
	    {"100m", 1},
	    {"-1", -1},
	    {"+7", 7},
	    {"0", 0},
	    {".5Gi", 536870912},
	    {"007", 7},
	    {"1e-3", 1},
	    {"2k", 2000},
	};
	static const char *const bad[] = {"", "10Gb", "abc", "1e", "--1", "Gi", "1 Gi", "1.2.3", "1e+"};
	struct gerr err = {0};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		if (quantity_parse(ok[i].in, &v, &err) < 0)
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (v != ok[i].v)
			fail_msg("%s: %lld, want %lld", ok[i].in, (long long)v, (long long)ok[i].v);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (quantity_parse(bad[i], &v, &err) != -EINVAL)
			fail_msg("'%s' was taken", bad[i]);
	assert_int_equal(quantity_parse("9Ei", &v, &err), -ERANGE);
	assert_int_equal(quantity_parse("1234567890123456789012345678901234567890", &v, &err), -ERANGE);
}

static void test_quantity_format(void **state)
{
	static const struct {
		uint64_t v;
		const char *out;
	} rows[] = {{0, "0"},
		    {14, "14"},
		    {1023, "1023"},
		    {1024, "1Ki"},
		    {1025, "1025"},
		    {3072, "3Ki"},
		    {4864ULL << 20, "4864Mi"},
		    {40ULL << 30, "40Gi"},
		    {1ULL << 60, "1Ei"},
		    {81559ULL << 20, "81559Mi"}};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		quantity_format_binary(rows[i].v, buf, sizeof(buf));
		assert_string_equal(buf, rows[i].out);
	}
}

/* ---- GpuConfig / MigDeviceConfig ---- */

static void check_sharing(const char *name, const struct dra_sharing *s, const json_t *want)
{
	const json_t *per = json_object_get(want, "perDevice");
	const char *key;
	json_t *v;

	assert_string_equal(dra_cfg_kind_name(s->kind), json_string_value(json_object_get(want, "kind")));
	if (!streq(dra_strategy_name(s->strategy), json_string_value(json_object_get(want, "strategy"))))
		fail_msg("%s: strategy %s", name, dra_strategy_name(s->strategy));
	if (json_object_get(want, "interval"))
		assert_int_equal(s->interval, json_integer_value(json_object_get(want, "interval")));
	if (json_object_get(want, "threadPct"))
		assert_int_equal(s->thread_pct, json_integer_value(json_object_get(want, "threadPct")));
	if (json_object_get(want, "pinned"))
		assert_int_equal(s->pinned, json_integer_value(json_object_get(want, "pinned")));
	assert_int_equal(s->n_per_dev, json_object_size(per));
	json_object_foreach ((json_t *)per, key, v) {
		bool found = false;

		for (size_t i = 0; i < s->n_per_dev; i++)
			if (streq(s->per_dev[i].key, key)) {
				assert_int_equal(s->per_dev[i].bytes, json_integer_value(v));
				found = true;
			}
		if (!found)
			fail_msg("%s: per-device %s missing", name, key);
	}
}

static void test_gpuconfig(void **state)
{
	json_t *doc = load_json("tests/fixtures/dra/gpuconfig.json"), *c;
	size_t i;

	(void)state;
	json_array_foreach (json_object_get(doc, "cases"), i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const json_t *g = json_object_get(c, "gates");
		struct dra_gates gates = {true, true};
		struct dra_sharing s = {0};
		struct gerr err = {0};
		int r;

		if (g)
			gates = (struct dra_gates){json_is_true(json_object_get(g, "time_slicing")),
						   json_is_true(json_object_get(g, "mps"))};
		r = dra_gpuconfig_parse(json_object_get(c, "params"), &gates, &s, &err);
		if (json_object_get(c, "ok")) {
			if (r < 0)
				fail_msg("%s: %s", name, err.msg);
			check_sharing(name, &s, json_object_get(c, "ok"));
			dra_sharing_clear(&s);
			continue;
		}
		if (r >= 0)
			fail_msg("%s: accepted", name);
		if (r != -errno_of(json_string_value(json_object_get(c, "errno"))) ||
		    !strstr(err.msg, json_string_value(json_object_get(c, "error"))))
			fail_msg("%s: %d \"%s\"", name, r, err.msg);
	}
	json_decref(doc);
}

static void test_mps_pinned(void **state)
{
	const char *uuids[] = {"GPU-a", "GPU-b", "MIG-c"};
	struct dra_gates all = {true, true};
	struct dra_sharing s;
	uint64_t mib[3];
	struct gerr err = {0};
	json_t *p =
	    json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:{s:s, s:s}}}}", "apiVersion", DRA_CONFIG_API_VERSION, "kind",
		      "GpuConfig", "sharing", "strategy", "MPS", "mpsConfig", "defaultPinnedDeviceMemoryLimit", "2Gi",
		      "defaultPerDevicePinnedMemoryLimit", "1", "512Mi", "MIG-c", "3000Mi");

	(void)state;
	assert_int_equal(dra_gpuconfig_parse(p, &all, &s, &err), 0);
	/* the default for every device, then the entries by index and by UUID (NVIDIA's Normalize()) */
	assert_int_equal(dra_mps_pinned_mib(&s, uuids, 3, mib, &err), 0);
	assert_int_equal(mib[0], 2048);
	assert_int_equal(mib[1], 512);
	assert_int_equal(mib[2], 3000);
	dra_sharing_clear(&s);
	json_decref(p);
	/* an index past the group, and a limit under 1 MiB */
	p = json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}}}}", "apiVersion", DRA_CONFIG_API_VERSION, "kind", "GpuConfig",
		      "sharing", "strategy", "MPS", "mpsConfig", "defaultPerDevicePinnedMemoryLimit", "3", "1Gi");
	assert_int_equal(dra_gpuconfig_parse(p, &all, &s, &err), 0);
	assert_int_equal(dra_mps_pinned_mib(&s, uuids, 3, mib, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"3\" is neither the UUID"));
	dra_sharing_clear(&s);
	json_decref(p);
	p = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion", DRA_CONFIG_API_VERSION, "kind", "GpuConfig",
		      "sharing", "strategy", "MPS", "mpsConfig", "defaultPinnedDeviceMemoryLimit", "1000Ki");
	assert_int_equal(dra_gpuconfig_parse(p, &all, &s, &err), 0);
	assert_int_equal(dra_mps_pinned_mib(&s, uuids, 3, mib, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "set too low"));
	dra_sharing_clear(&s);
	json_decref(p);
}

/* ---- devices and ResourceSlices of the fake nodes ---- */

/* The API's rules for a slice (k8s.io/api v0.34.4 resource/v1 types.go), checked on their own. */
static void check_api_limits(const json_t *slices)
{
	json_t *slice, *dev;
	size_t i, k;

	json_array_foreach (slices, i, slice) {
		const json_t *spec = json_object_get(slice, "spec");
		json_t *names = json_object();

		assert_string_equal(json_string_value(json_object_get(slice, "apiVersion")), "resource.k8s.io/v1");
		assert_true(json_array_size(json_object_get(spec, "devices")) <= 128);
		assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "pool"), "name")),
				    json_string_value(json_object_get(spec, "nodeName")));
		json_array_foreach (json_object_get(spec, "devices"), k, dev) {
			const char *name = json_string_value(json_object_get(dev, "name"));
			const char *key;
			json_t *a;

			/* a DNS label, once per pool */
			assert_true(strlen(name) <= 63);
			assert_int_equal(strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-"), strlen(name));
			assert_null(json_object_get(names, name));
			json_object_set_new(names, name, json_true());
			assert_true(json_object_size(json_object_get(dev, "attributes")) +
					json_object_size(json_object_get(dev, "capacity")) <=
				    32);
			json_object_foreach (json_object_get(dev, "attributes"), key, a) {
				assert_int_equal(json_object_size(a),
						 1); /* exactly one of int, bool, string, version */
				if (json_is_string(json_object_get(a, "string")))
					assert_true(strlen(json_string_value(json_object_get(a, "string"))) <= 64);
			}
		}
		json_decref(names);
	}
}

static void check_golden(const char *name, const json_t *got)
{
	char path[1024];
	json_t *want;
	json_error_t je;

	snprintf(path, sizeof(path), "%s/tests/golden/dra/%s.slices.json", getenv("GPULET_SRC"), name);
	if (getenv("GPULET_UPDATE_GOLDEN")) {
		assert_int_equal(json_dump_file(got, path, JSON_INDENT(1) | JSON_SORT_KEYS), 0);
		return;
	}
	want = json_load_file(path, 0, &je);
	if (!want)
		fail_msg("%s: %s (GPULET_UPDATE_GOLDEN=1 writes it)", path, je.text);
	if (!json_equal(want, got)) {
		char *s = json_dumps(got, JSON_INDENT(1) | JSON_SORT_KEYS);

		fail_msg("%s differs; got:\n%s", path, s);
	}
	json_decref(want);
}

static void test_slices_golden(void **state)
{
	static const char *const fixtures[] = {"dgx-a100", "dgx-h100",  "mixed", "mig-ci-split",
					       "degraded", "single-t4", "no-gpu"};
	char *root = tmpdir();

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(fixtures); i++) {
		struct node *n = load_node(fixtures[i], root);
		struct dra_devices d = {0};
		json_t *slices = NULL, *doc;
		struct gerr err = {0};

		assert_int_equal(dra_devices_build(n, root, &d, &err), 0);
		if (dra_slices_build(
			&d,
			&(struct dra_slice_options){
			    .driver = "gpu.nvidia.com", .node_name = "node-a", .node_uid = "0a1b-uid", .generation = 3},
			&slices, &err) < 0)
			fail_msg("%s: %s", fixtures[i], err.msg);
		check_api_limits(slices);
		doc = json_pack("{s:o, s:O}", "slices", slices, "leftOut", d.left_out);
		check_golden(fixtures[i], doc);
		json_decref(doc);
		dra_devices_clear(&d);
		node_free(n);
	}
	rmrf(root);
	free(root);
}

/* What NVIDIA's example claims select on is there, typed as NVIDIA types it. */
static void test_slice_attributes(void **state)
{
	char *root = tmpdir();
	struct node *n = load_node("mixed", root);
	struct dra_devices d = {0};
	json_t *slices = NULL, *devs, *gpu, *mig, *a;
	struct gerr err = {0};

	(void)state;
	assert_int_equal(dra_devices_build(n, root, &d, &err), 0);
	assert_int_equal(
	    dra_slices_build(&d,
			     &(struct dra_slice_options){
				 .driver = "gpu.nvidia.com", .node_name = "node-a", .node_uid = NULL, .generation = 1},
			     &slices, &err),
	    0);
	devs = json_object_get(json_object_get(json_array_get(slices, 0), "spec"), "devices");
	gpu = json_object_get(json_array_get(devs, 0), "attributes");
	mig = json_object_get(json_array_get(devs, 1), "attributes");
	assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 0), "name")), "gpu-0");
	assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 1), "name")),
			    "gpu-1-mig-1g5gb-19-0");
	/* the DeviceClasses' selectors: device.attributes['gpu.nvidia.com'].type == 'gpu' / 'mig' */
	assert_string_equal(json_string_value(json_object_get(json_object_get(gpu, "type"), "string")), "gpu");
	assert_string_equal(json_string_value(json_object_get(json_object_get(mig, "type"), "string")), "mig");
	/* gpu-test4: profile == '1g.5gb', constraint matchAttribute gpu.nvidia.com/parentUUID */
	assert_string_equal(json_string_value(json_object_get(json_object_get(mig, "profile"), "string")), "1g.5gb");
	assert_string_equal(json_string_value(json_object_get(json_object_get(mig, "parentUUID"), "string")),
			    n->gpus[1].uuid);
	/* gpu-test6: productName.lowerAscii() and index == 0 (an int) */
	assert_string_equal(json_string_value(json_object_get(json_object_get(gpu, "productName"), "string")),
			    "Tesla T4");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(gpu, "index"), "int")), 0);
	/* versions are semver: "7.5" -> 7.5.0, CUDA 12040 -> 12.4.0 */
	a = json_object_get(gpu, "cudaComputeCapability");
	assert_string_equal(json_string_value(json_object_get(a, "version")), "7.5.0");
	assert_string_equal(json_string_value(json_object_get(json_object_get(gpu, "cudaDriverVersion"), "version")),
			    "12.4.0");
	assert_string_equal(json_string_value(json_object_get(json_object_get(gpu, "architecture"), "string")),
			    "Turing");
	assert_string_equal(json_string_value(json_object_get(json_object_get(gpu, "brand"), "string")), "Tesla");
	assert_null(json_object_get(json_object_get(json_array_get(slices, 0), "metadata"), "ownerReferences"));
	json_decref(slices);
	dra_devices_clear(&d);
	node_free(n);
	rmrf(root);
	free(root);
}

static void test_slice_owner_and_generation(void **state)
{
	char *root = tmpdir();
	struct node *n = load_node("dgx-a100", root);
	struct dra_devices d = {0}, fewer = {0};
	json_t *a = NULL, *b = NULL, *c = NULL, *owner;
	struct gerr err = {0};

	(void)state;
	assert_int_equal(dra_devices_build(n, root, &d, &err), 0);
	assert_int_equal(
	    dra_slices_build(&d,
			     &(struct dra_slice_options){
				 .driver = "gpu.nvidia.com", .node_name = "node-a", .node_uid = "u-1", .generation = 4},
			     &a, &err),
	    0);
	owner =
	    json_array_get(json_object_get(json_object_get(json_array_get(a, 0), "metadata"), "ownerReferences"), 0);
	assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Node");
	assert_string_equal(json_string_value(json_object_get(owner, "uid")), "u-1");
	assert_true(json_is_true(json_object_get(owner, "controller")));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(json_array_get(a, 0), "metadata"), "generateName")),
	    "node-a-gpu.nvidia.com-");
	/* the same devices at another generation: no bump; a device less: a bump */
	assert_int_equal(
	    dra_slices_build(&d,
			     &(struct dra_slice_options){
				 .driver = "gpu.nvidia.com", .node_name = "node-a", .node_uid = "u-1", .generation = 9},
			     &b, &err),
	    0);
	assert_int_equal(dra_slices_next_generation(a, b, 4), 4);
	fewer = d;
	fewer.n--;
	assert_int_equal(
	    dra_slices_build(&fewer,
			     &(struct dra_slice_options){
				 .driver = "gpu.nvidia.com", .node_name = "node-a", .node_uid = "u-1", .generation = 4},
			     &c, &err),
	    0);
	assert_int_equal(dra_slices_next_generation(a, c, 4), 5);
	assert_int_equal(dra_slices_next_generation(NULL, c, 0), 1);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	dra_devices_clear(&d);
	node_free(n);
	rmrf(root);
	free(root);
}

/* /sys/bus/pci/devices/<bdf> links into /sys/devices/pci<domain>:<bus>/...: the first part is the root. */
static void test_pcie_root(void **state)
{
	char *root = tmpdir(), path[512], out[64];

	(void)state;
	snprintf(path, sizeof(path),
		 "mkdir -p %s/sys/bus/pci/devices %s/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0 && "
		 "ln -s ../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0 %s/sys/bus/pci/devices/0000:3b:00.0 && "
		 "ln -s /sys/devices/platform/x/0000:3c:00.0 %s/sys/bus/pci/devices/0000:3c:00.0 && "
		 "ln -s ../../../devices/pci0000:3a/0000:3d:00.0 %s/sys/bus/pci/devices/0000:3e:00.0",
		 root, root, root, root, root);
	assert_int_equal(system(path), 0);
	assert_int_equal(dra_pcie_root(root, "0000:3b:00.0", out, sizeof(out)), 0);
	assert_string_equal(out, "pci0000:3a");
	/* not under /sys/devices/pci*, a link to another device, no link: no root */
	assert_int_equal(dra_pcie_root(root, "0000:3c:00.0", out, sizeof(out)), -EINVAL);
	assert_int_equal(dra_pcie_root(root, "0000:3e:00.0", out, sizeof(out)), -EINVAL);
	assert_int_equal(dra_pcie_root(root, "0000:99:00.0", out, sizeof(out)), -ENOENT);
	rmrf(root);
	free(root);
}

/* ---- a ResourceClaim for this driver ---- */

static void test_claims(void **state)
{
	json_t *doc = load_json("tests/fixtures/dra/claims.json"), *c;
	char *root = tmpdir();
	struct node *n = load_node("mixed", root);
	struct dra_devices d = {0};
	struct dra_gates gates = {true, true};
	struct dra_claim_check chk = {.driver = "gpu.nvidia.com", .pool = "node-a", .devices = &d, .gates = &gates};
	struct gerr err = {0};
	size_t i;

	(void)state;
	assert_int_equal(dra_devices_build(n, root, &d, &err), 0);
	json_array_foreach (json_object_get(doc, "cases"), i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const json_t *w = json_object_get(c, "want"), *ok = json_object_get(c, "ok"), *e;
		struct dra_claim_ref ref = {json_string_value(json_object_get(w, "ns")),
					    json_string_value(json_object_get(w, "name")),
					    json_string_value(json_object_get(w, "uid"))};
		struct dra_claim cl = {0};
		int r;
		size_t k;

		err = (struct gerr){0};
		r = dra_claim_parse(json_object_get(c, "claim"), &ref, &chk, &cl, &err);
		if (!ok) {
			if (r != -errno_of(json_string_value(json_object_get(c, "errno"))) ||
			    !strstr(err.msg, json_string_value(json_object_get(c, "error"))))
				fail_msg("%s: %d \"%s\"", name, r, err.msg);
			continue;
		}
		if (r < 0)
			fail_msg("%s: %s", name, err.msg);
		assert_int_equal(cl.n_results, json_array_size(json_object_get(ok, "results")));
		json_array_foreach (json_object_get(ok, "results"), k, e) {
			assert_string_equal(cl.results[k].request, json_string_value(json_object_get(e, "request")));
			assert_string_equal(cl.results[k].device, json_string_value(json_object_get(e, "device")));
			assert_int_equal(cl.results[k].group, json_integer_value(json_object_get(e, "group")));
			assert_int_equal(cl.results[k].admin, json_is_true(json_object_get(e, "admin")));
		}
		assert_int_equal(cl.n_groups, json_array_size(json_object_get(ok, "groups")));
		json_array_foreach (json_object_get(ok, "groups"), k, e) {
			if (!streq(cl.groups[k].source, json_string_value(json_object_get(e, "source"))))
				fail_msg("%s: group %zu from %s", name, k, cl.groups[k].source);
			assert_string_equal(dra_strategy_name(cl.groups[k].sharing.strategy),
					    json_string_value(json_object_get(e, "strategy")));
			if (json_object_get(e, "interval"))
				assert_int_equal(cl.groups[k].sharing.interval,
						 json_integer_value(json_object_get(e, "interval")));
		}
		dra_claim_clear(&cl);
	}
	dra_devices_clear(&d);
	node_free(n);
	json_decref(doc);
	rmrf(root);
	free(root);
}

static void test_request_main(void **state)
{
	char buf[32];

	(void)state;
	dra_request_main("gpu/small", buf, sizeof(buf));
	assert_string_equal(buf, "gpu");
	dra_request_main("gpu", buf, sizeof(buf));
	assert_string_equal(buf, "gpu");
}

/* ---- the checkpoint ---- */

static void test_checkpoint(void **state)
{
	char *dir = tmpdir(), path[512], aside[560];
	struct dra_checkpoint *cp = NULL;
	enum dra_cp_found found;
	struct gerr err = {0};
	json_t *rec;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, DRA_CHECKPOINT_FILE);
	assert_int_equal(dra_checkpoint_open(path, "boot-1", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_NEW);
	assert_int_equal(access(path, F_OK), 0); /* written at once */
	assert_int_equal(dra_checkpoint_put(cp, "u-1", json_pack("{s:s}", "state", DRA_STATE_COMPLETED), &err), 0);
	assert_int_equal(dra_checkpoint_put(cp, "u-2", json_pack("{s:s}", "state", DRA_STATE_STARTED), &err), 0);
	dra_checkpoint_free(cp);

	/* the same boot: as written */
	assert_int_equal(dra_checkpoint_open(path, "boot-1", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_SAME);
	assert_true(dra_claim_completed(dra_checkpoint_claim(cp, "u-1")));
	assert_false(dra_claim_completed(dra_checkpoint_claim(cp, "u-2")));
	assert_int_equal(dra_checkpoint_del(cp, "u-2", &err), 0);
	assert_int_equal(dra_checkpoint_del(cp, "u-2", &err), 0); /* twice: nothing */
	dra_checkpoint_free(cp);

	/* another boot: every claim is to be prepared again */
	assert_int_equal(dra_checkpoint_open(path, "boot-2", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_REBOOT);
	rec = dra_checkpoint_claim(cp, "u-1");
	assert_false(dra_claim_completed(rec));
	assert_true(json_is_true(json_object_get(rec, "rebooted")));
	assert_null(dra_checkpoint_claim(cp, "u-2"));
	dra_checkpoint_free(cp);
	/* ... and that was saved: the next open is the same boot */
	assert_int_equal(dra_checkpoint_open(path, "boot-2", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_SAME);
	dra_checkpoint_free(cp);

	/* an unknown boot id never counts as a reboot */
	assert_int_equal(dra_checkpoint_open(path, "", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_SAME);
	dra_checkpoint_free(cp);

	/* a torn or foreign file: moved aside, started empty, said */
	FILE *f = fopen(path, "w");
	fputs("{\"kind\": \"gpulet-dra-checkpoint\", \"version\": 1, \"claims\": {\"x\": {\"state\": \"Half\"}}, ", f);
	fclose(f);
	err = (struct gerr){0};
	assert_int_equal(dra_checkpoint_open(path, "boot-2", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_CORRUPT);
	assert_non_null(strstr(err.msg, "moved aside"));
	snprintf(aside, sizeof(aside), "%s.corrupt", path);
	assert_int_equal(access(aside, F_OK), 0);
	assert_int_equal(json_object_size(dra_checkpoint_claims(cp)), 0);
	dra_checkpoint_free(cp);
	/* a record of an unknown state is not guessed at either */
	f = fopen(path, "w");
	fputs("{\"kind\": \"gpulet-dra-checkpoint\", \"version\": 1, \"nodeBootID\": \"b\", \"claims\": {\"x\": "
	      "{\"state\": \"Half\"}}}",
	      f);
	fclose(f);
	assert_int_equal(dra_checkpoint_open(path, "b", &cp, &found, &err), 0);
	assert_int_equal(found, DRA_CP_CORRUPT);
	assert_non_null(strstr(err.msg, "claim x: no valid state"));
	dra_checkpoint_free(cp);
	rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_quantity),
	    cmocka_unit_test(test_quantity_format),
	    cmocka_unit_test(test_gpuconfig),
	    cmocka_unit_test(test_mps_pinned),
	    cmocka_unit_test(test_slices_golden),
	    cmocka_unit_test(test_slice_attributes),
	    cmocka_unit_test(test_slice_owner_and_generation),
	    cmocka_unit_test(test_pcie_root),
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_request_main),
	    cmocka_unit_test(test_checkpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
