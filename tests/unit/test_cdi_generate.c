/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi_generate() never returns a spec that fails at injection: a missing driver or dev root, control
 * node, libcuda or libnvidia-ml is an error naming it; a lost GPU, a missing GPU or MIG node, a
 * dangling library link and a missing expected library are warnings naming each item, and errors
 * with strict.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "cdi/cdi.h"
#include "test_cdi_helpers.h"

#define VERSION "550.54.15"

static struct node_mig migs[1] = {
    {.gi = 1, .ci = 0, .index = 0, .uuid = "MIG-aaaa", .gi_cap_minor = 12, .ci_cap_minor = 13},
};
static struct node_gpu gpus[3] = {
    {.index = 0, .minor = 0, .uuid = "GPU-0000", .pci_bus_id = "00000000:07:00.0"},
    {.index = 1, .minor = 3, .uuid = "GPU-1111", .mig_capable = true, .mig_enabled = true, .migs = migs, .n_migs = 1},
    {.index = 2, .minor = 5, .lost = true, .pci_bus_id = "00000000:0B:00.0"},
};
static struct node node2 = {.driver_version = VERSION, .gpus = gpus, .n_gpus = 2};
static struct node node3 = {.driver_version = VERSION, .gpus = gpus, .n_gpus = 3};

struct run {
	char *root;
	json_t *spec;
	struct warnings w;
	struct gerr err;
	int r;
};

static int setup(void **state)
{
	struct run *t = calloc(1, sizeof(*t));

	if (!t || !(t->root = mk_tempdir()) || mk_driver(t->root, NULL, VERSION) != 0)
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct run *t = *state;

	rm_tree(t->root);
	free(t->root);
	json_decref(t->spec);
	warnings_clear(&t->w);
	free(t);
	return 0;
}

static int gen(struct run *t, const struct node *n, const char *driver_root, const char *dev_root, bool strict)
{
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(t->root, driver_root, dev_root);
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;

	o.host = hp;
	o.strict = strict;
	o.warnings = &t->w;
	json_decref(t->spec);
	t->spec = NULL;
	warnings_clear(&t->w);
	t->err = (struct gerr){0};
	t->r = cdi_generate(n, &o, &t->spec, &t->err);
	if (t->r < 0)
		assert_null(t->spec);
	return t->r;
}

static void assert_msg(const char *msg, const char *a, const char *b)
{
	if (!strstr(msg, a) || (b && !strstr(msg, b)))
		fail_msg("'%s' lacks '%s'%s%s", msg, a, b ? " or " : "", b ? b : "");
}

static bool warned(const struct run *t, const char *a, const char *b)
{
	for (size_t i = 0; i < t->w.n; i++)
		if (strstr(t->w.items[i], a) && (!b || strstr(t->w.items[i], b)))
			return true;
	return false;
}

static void rm(const struct run *t, const char *rel)
{
	assert_int_equal(shf("rm -f '%s%s'", t->root, rel), 0);
}

static void test_complete_root_no_warnings(void **state)
{
	struct run *t = *state;

	assert_int_equal(gen(t, &node2, NULL, NULL, true), 0);
	assert_non_null(t->spec);
	assert_int_equal(t->w.n, 0);
}

/* A feature flag the generator cannot honour is never taken and then ignored: no spec, the flag named. */
static void test_feature_flags_refused(void **state)
{
	struct run *t = *state;
	_cleanup_(host_paths_freep) struct host_paths *hp = mk_paths(t->root, NULL, NULL);
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;

	o.host = hp;
	o.features = CDI_FEATURE_DISABLE_IPC | CDI_FEATURE_NO_NVSANDBOXUTILS;
	assert_int_equal(cdi_generate(&node2, &o, &t->spec, &t->err), 0);
	json_decref(TAKE_PTR(t->spec));
	o.features |= CDI_FEATURE_EXPLICIT_LIBRARIES;
	assert_int_equal(cdi_generate(&node2, &o, &t->spec, &t->err), -EOPNOTSUPP);
	assert_null(t->spec);
	assert_msg(t->err.msg, "enable-explicit-driver-libraries is not supported", "CDI_FEATURE_FLAGS");
	assert_int_equal(cdi_features_check(CDI_FEATURE_COHERENT_ANNOTATIONS, &t->err), -EOPNOTSUPP);
	assert_msg(t->err.msg, "enable-coherent-annotations", NULL);
}

static void test_missing_roots_are_errors(void **state)
{
	struct run *t = *state;

	assert_int_equal(gen(t, &node2, "/nonexistent", NULL, false), -ENOENT);
	assert_msg(t->err.msg, "driver root /nonexistent does not exist", "--driver-root");
	assert_int_equal(gen(t, &node2, NULL, "/no/dev/root", false), -ENOENT);
	assert_msg(t->err.msg, "dev root /no/dev/root does not exist", "--dev-root");
}

static void test_required_files_are_errors(void **state)
{
	struct run *t = *state;
	static const struct {
		const char *file, *msg;
	} rows[] = {
	    {"/dev/nvidiactl", "/dev/nvidiactl does not exist"},
	    {"/dev/nvidia-uvm", "/dev/nvidia-uvm does not exist"},
	    {"/usr/lib/x86_64-linux-gnu/libcuda.so." VERSION, "libcuda.so." VERSION " not found"},
	    {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." VERSION, "libnvidia-ml.so." VERSION " not found"},
	};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		rm(t, rows[i].file);
		assert_int_equal(gen(t, &node2, NULL, NULL, false), -ENOENT);
		assert_msg(t->err.msg, rows[i].msg, "Fix:");
		assert_int_equal(shf("touch '%s%s'", t->root, rows[i].file), 0);
	}
	assert_int_equal(gen(t, &node2, NULL, NULL, true), 0);
}

static void test_partial_is_a_warning_and_strict_an_error(void **state)
{
	struct run *t = *state;

	/* a lost GPU, a missing GPU node (GPU 0), a missing MIG cap node, a missing expected library */
	rm(t, "/dev/nvidia0");
	rm(t, "/dev/nvidia-caps/nvidia-cap13");
	rm(t, "/usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so." VERSION);
	assert_int_equal(shf("ln -s libcuda.so.999 '%s/usr/lib/x86_64-linux-gnu/libcuda.so.1'", t->root), 0);
	assert_int_equal(gen(t, &node3, NULL, NULL, false), -ENODEV); /* nothing left to put in the spec */
	assert_msg(t->err.msg, "none of the 3 GPUs", NULL);
	assert_int_equal(shf("touch '%s/dev/nvidia0'", t->root), 0);
	assert_int_equal(gen(t, &node3, NULL, NULL, false), 0);
	assert_int_equal(t->w.n, 4);
	assert_true(warned(t, "GPU 2 at 00000000:0B:00.0", "lost"));
	assert_true(warned(t, "MIG-aaaa", "/dev/nvidia-caps/nvidia-cap13"));
	assert_true(warned(t, "libnvidia-nvvm.so", "NVVM"));
	assert_true(warned(t, "libcuda.so.1: dangling link to libcuda.so.999", NULL));
	/* only GPU 0 and "all" are left */
	assert_int_equal(json_array_size(json_object_get(t->spec, "devices")), 3);
	assert_int_equal(gen(t, &node3, NULL, NULL, true), -EIO);
	assert_msg(t->err.msg, "leave out 4 items (--strict)", "libcuda.so.999");
	assert_int_equal(t->w.n, 0); /* not handed over on failure */
}

/* The container path of the spec-level mount whose host path ends in suffix, or NULL. */
static const char *mounted_at(const json_t *spec, const char *suffix)
{
	const json_t *m;
	size_t i;

	json_array_foreach (json_object_get(json_object_get(spec, "containerEdits"), "mounts"), i, m) {
		const char *h = json_string_value(json_object_get(m, "hostPath"));

		if (strlen(h) >= strlen(suffix) && streq(h + strlen(h) - strlen(suffix), suffix))
			return json_string_value(json_object_get(m, "containerPath"));
	}
	return NULL;
}

/* ICD and vendor files at the loaders' standard paths; libraries named without the driver version. */
static void test_config_files_and_unversioned_libraries(void **state)
{
	struct run *t = *state;

	assert_int_equal(
	    shf("cd '%s' && mkdir -p etc/OpenCL/vendors usr/share/vulkan/icd.d usr/share/glvnd/egl_vendor.d "
		"vulkan/implicit_layer.d usr/local/share/egl/egl_external_platform.d && "
		"touch etc/OpenCL/vendors/nvidia.icd usr/share/vulkan/icd.d/nvidia_icd.json "
		"vulkan/implicit_layer.d/nvidia_layers.json usr/local/share/egl/egl_external_platform.d/"
		"15_nvidia_gbm.json && ln -s ../../../../real.json usr/share/glvnd/egl_vendor.d/10_nvidia.json "
		"&& touch real.json && cd usr/lib/x86_64-linux-gnu && touch libnvidia-egl-gbm.so.1.1.2 "
		"libnvidia-nvvm70.so.4 && ln -s libnvidia-egl-gbm.so.1.1.2 libnvidia-egl-gbm.so.1 && "
		"ln -s libnvidia-egl-gbm.so.1 libnvidia-egl-gbm.so && touch libnvidia-egl-wayland.so.1",
		t->root),
	    0);
	assert_int_equal(gen(t, &node2, NULL, NULL, true), 0);
	assert_string_equal(mounted_at(t->spec, "/etc/OpenCL/vendors/nvidia.icd"), "/etc/OpenCL/vendors/nvidia.icd");
	assert_string_equal(mounted_at(t->spec, "/usr/share/vulkan/icd.d/nvidia_icd.json"),
			    "/etc/vulkan/icd.d/nvidia_icd.json");
	/* the Vulkan files are also looked for at the driver root itself (GKE) */
	assert_string_equal(mounted_at(t->spec, "/vulkan/implicit_layer.d/nvidia_layers.json"),
			    "/etc/vulkan/implicit_layer.d/nvidia_layers.json");
	assert_string_equal(mounted_at(t->spec, "/usr/local/share/egl/egl_external_platform.d/15_nvidia_gbm.json"),
			    "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json");
	/* a link is followed inside the driver root: the file itself is mounted at the standard path */
	assert_string_equal(mounted_at(t->spec, "/real.json"), "/usr/share/glvnd/egl_vendor.d/10_nvidia.json");
	assert_non_null(mounted_at(t->spec, "/libnvidia-egl-gbm.so.1.1.2"));
	assert_non_null(mounted_at(t->spec, "/libnvidia-egl-gbm.so.1"));
	assert_non_null(mounted_at(t->spec, "/libnvidia-nvvm70.so.4"));
	/* no X.Y version of its own: not the EGL platform library file */
	assert_null(mounted_at(t->spec, "/libnvidia-egl-wayland.so.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_complete_root_no_warnings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_roots_are_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_feature_flags_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_required_files_are_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_partial_is_a_warning_and_strict_an_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_config_files_and_unversioned_libraries, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
