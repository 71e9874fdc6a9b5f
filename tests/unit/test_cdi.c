/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI core: generation from a node model built here, the minimum-version table, YAML output read
 * back, owned atomic writes, validation problem codes and JSON paths, dir precedence and listing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "cdi/cdi.h"
#include "cdi/hooks.h"
#include "util/fileio.h"
#include "test_cdi_helpers.h"

/* Two GPUs: GPU 0 plain, GPU 1 (minor 3) with MIG on and two instances. */
static struct node_mig migs[2] = {
    {.gi = 1, .ci = 0, .index = 0, .uuid = "MIG-aaaa", .gi_cap_minor = 12, .ci_cap_minor = 13},
    {.gi = 2, .ci = 0, .index = 2, .uuid = "MIG-bbbb", .gi_cap_minor = 21, .ci_cap_minor = 22},
};
static struct node_gpu gpus[2] = {
    {.index = 0, .minor = 0, .uuid = "GPU-0000"},
    {.index = 1, .minor = 3, .uuid = "GPU-1111", .mig_capable = true, .mig_enabled = true, .migs = migs, .n_migs = 2},
};
static struct node test_node = {.driver_version = "550.54.15", .gpus = gpus, .n_gpus = 2};

static json_t *gen(const char *dev_root, unsigned names, struct gerr *err)
{
	_cleanup_free_ char *root = mk_tempdir();
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
	json_t *spec = NULL;
	int r;

	if (!root)
		abort();
	hp = mk_paths(root, NULL, dev_root);
	o.host = hp;
	o.names = names;
	assert_int_equal(mk_driver(root, dev_root, test_node.driver_version), 0);
	r = cdi_generate(&test_node, &o, &spec, err);
	rm_tree(root);
	return r < 0 ? NULL : spec;
}

static const json_t *device(const json_t *spec, const char *name)
{
	const json_t *d;
	size_t i;

	json_array_foreach (json_object_get(spec, "devices"), i, d)
		if (streq(json_string_value(json_object_get(d, "name")), name))
			return d;
	return NULL;
}

/* The device's node paths joined by spaces. */
static char *node_paths(const json_t *dev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const json_t *n;
	size_t i;

	json_array_foreach (json_object_get(json_object_get(dev, "containerEdits"), "deviceNodes"), i, n)
		fprintf(f, "%s%s", i ? " " : "", json_string_value(json_object_get(n, "path")));
	fclose(f);
	return buf;
}

static void assert_no_errors(const json_t *spec)
{
	struct cdi_validate_options o = {.no_host_paths = true, .runtime_version = "0.5.0"};
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};

	assert_int_equal(cdi_validate_spec("generated", spec, &o, &rep), 0);
	for (size_t i = 0; i < rep.n_problems; i++)
		print_message("%s %s %s\n", rep.problems[i].code, rep.problems[i].json_path, rep.problems[i].message);
	assert_int_equal(rep.n_problems, 0);
}

static void test_generate_devices(void **state)
{
	struct gerr err = {0};
	json_auto_t *spec = gen(NULL, 0, &err);
	const char *want[] = {"0", "GPU-0000", "1:0", "MIG-aaaa", "1:2", "MIG-bbbb", "all"};
	const json_t *devs;
	_cleanup_free_ char *p0 = NULL, *pm = NULL, *pall = NULL;

	assert_non_null(spec);
	devs = json_object_get(spec, "devices");
	assert_int_equal(json_array_size(devs), ELEMENTSOF(want));
	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(devs, i), "name")), want[i]);
	assert_null(device(spec, "1")); /* MIG enabled: no full-GPU device */
	assert_string_equal(json_string_value(json_object_get(spec, "kind")), "nvidia.com/gpu");
	/* digit-first names need 0.5.0; nothing newer is used */
	assert_string_equal(json_string_value(json_object_get(spec, "cdiVersion")), "0.5.0");
	p0 = node_paths(device(spec, "GPU-0000"));
	assert_string_equal(p0, "/dev/nvidia0");
	pm = node_paths(device(spec, "1:2"));
	assert_string_equal(pm, "/dev/nvidia3 /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap22");
	pall = node_paths(device(spec, "all"));
	assert_string_equal(
	    pall, "/dev/nvidia0 /dev/nvidia3 /dev/nvidia-caps/nvidia-cap12 "
		  "/dev/nvidia-caps/nvidia-cap13 /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap22");
	/* spec-level env: legacy hook off, our marker */
	{
		const json_t *env = json_object_get(json_object_get(spec, "containerEdits"), "env");

		assert_string_equal(json_string_value(json_array_get(env, 0)), "NVIDIA_VISIBLE_DEVICES=void");
		assert_string_equal(json_string_value(json_array_get(env, json_array_size(env) - 1)),
				    "GPULET_CDI_SPEC=nvidia.com/gpu");
	}
	assert_no_errors(spec);
}

static void test_generate_versions_and_names(void **state)
{
	json_auto_t *uuid = gen(NULL, CDI_NAMES_UUID, NULL), *devroot = gen("/run/nvidia/driver", CDI_NAMES_UUID, NULL);
	json_auto_t *index = gen(NULL, CDI_NAMES_INDEX, NULL);
	const json_t *n;

	/* uuid names, dev root "/": no hostPath, no digit-first name → the earliest version */
	assert_string_equal(json_string_value(json_object_get(uuid, "cdiVersion")), "0.3.0");
	assert_non_null(device(uuid, "MIG-aaaa"));
	assert_null(device(uuid, "0"));
	/* hostPath differs from path → 0.5.0 */
	assert_string_equal(json_string_value(json_object_get(devroot, "cdiVersion")), "0.5.0");
	n = json_array_get(
	    json_object_get(json_object_get(device(devroot, "GPU-0000"), "containerEdits"), "deviceNodes"), 0);
	assert_string_equal(json_string_value(json_object_get(n, "hostPath")), "/run/nvidia/driver/dev/nvidia0");
	assert_string_equal(json_string_value(json_object_get(n, "path")), "/dev/nvidia0");
	assert_null(device(index, "GPU-0000"));
	assert_non_null(device(index, "1:0"));
	assert_no_errors(uuid);
	assert_no_errors(devroot);
}

/* DRM nodes from the GPU's sysfs drm/ dir (card*, renderD*; not controlD*), full GPUs only. */
static void test_generate_drm_nodes(void **state)
{
	_cleanup_free_ char *root = mk_tempdir(), *p0 = NULL, *pall = NULL;
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
	json_auto_t *spec = NULL;
	struct gerr err = {0};

	if (!root)
		abort();
	assert_int_equal(
	    shf("mkdir -p '%s/sys/bus/pci/devices/0000:0a:00.0/drm/renderD128' "
		"'%s/sys/bus/pci/devices/0000:0a:00.0/drm/card0' '%s/sys/bus/pci/devices/0000:0a:00.0/drm/controlD64'",
		root, root, root),
	    0);
	assert_int_equal(mk_driver(root, NULL, test_node.driver_version), 0);
	/* udev's by-path links: the card's becomes the device's create-symlinks hook; a link to a node the
	 * device does not have (controlD64) and one of another GPU are not */
	assert_int_equal(shf("cd '%s' && mkdir -p dev/dri/by-path && touch dev/dri/card0 dev/dri/renderD128 && "
			     "ln -s ../card0 dev/dri/by-path/pci-0000:0a:00.0-card && "
			     "ln -s ../controlD64 dev/dri/by-path/pci-0000:0a:00.0-render && "
			     "ln -s ../card1 dev/dri/by-path/pci-0000:0b:00.0-card",
			     root),
			 0);
	snprintf(gpus[0].pci_bus_id, sizeof(gpus[0].pci_bus_id), "00000000:0A:00.0");
	hp = mk_paths(root, NULL, NULL);
	o.host = hp;
	assert_int_equal(cdi_generate(&test_node, &o, &spec, &err), 0);
	gpus[0].pci_bus_id[0] = 0;
	p0 = node_paths(device(spec, "0"));
	assert_string_equal(p0, "/dev/nvidia0 /dev/dri/card0 /dev/dri/renderD128");
	pall = node_paths(device(spec, "all"));
	assert_non_null(strstr(pall, "/dev/dri/card0 /dev/dri/renderD128"));
	for (size_t i = 0; i < 3; i++) {
		const char *name = (const char *[]){"0", "GPU-0000", "all"}[i];
		const json_t *hooks = json_object_get(json_object_get(device(spec, name), "containerEdits"), "hooks");
		const json_t *args = json_object_get(json_array_get(hooks, 0), "args");
		const json_t *mem = json_object_get(json_array_get(hooks, 1), "args");
		size_t n = json_array_size(args), k = json_array_size(mem);

		/* the by-path links, then GPU 0's memory limits (createRuntime; GPU 1 has MIG on: none) */
		assert_int_equal(json_array_size(hooks), 2);
		assert_string_equal(json_string_value(json_array_get(args, n - 3)), "create-symlinks");
		assert_string_equal(json_string_value(json_array_get(args, n - 1)),
				    "../card0::/dev/dri/by-path/pci-0000:0a:00.0-card");
		assert_string_equal(json_string_value(json_object_get(json_array_get(hooks, 1), "hookName")),
				    "createRuntime");
		assert_string_equal(json_string_value(json_array_get(mem, k - 5)), "apply-cuda-memory-limits");
		assert_string_equal(json_string_value(json_array_get(mem, k - 4)), "--driver-root");
		assert_string_equal(json_string_value(json_array_get(mem, k - 2)), "--gpu-id");
		assert_string_equal(json_string_value(json_array_get(mem, k - 1)), "GPU-0000");
	}
	assert_null(json_object_get(json_object_get(device(spec, "1:2"), "containerEdits"), "hooks"));
	json_decref(spec);
	spec = NULL;
	/* --cdi-disable-hooks create-symlinks: only the memory limits; and with chmod enabled, /dev/dri's */
	{
		struct cdi_hook_options h = {.disabled = CDI_HOOK_CREATE_SYMLINKS, .enabled = CDI_HOOK_CHMOD};
		const json_t *hooks;

		o.hooks = &h;
		snprintf(gpus[0].pci_bus_id, sizeof(gpus[0].pci_bus_id), "00000000:0A:00.0");
		assert_int_equal(cdi_generate(&test_node, &o, &spec, &err), 0);
		hooks = json_object_get(json_object_get(device(spec, "0"), "containerEdits"), "hooks");
		assert_int_equal(json_array_size(hooks), 2);
		assert_string_equal(
		    json_string_value(json_array_get(json_object_get(json_array_get(hooks, 0), "args"), 2)), "--mode");
		assert_string_equal(
		    json_string_value(json_array_get(json_object_get(json_array_get(hooks, 0), "args"), 5)),
		    "/dev/dri");
		json_decref(spec);
		spec = NULL;
		/* and the memory limits off too: no device hook */
		h.disabled |= CDI_HOOK_MEMORY_LIMITS;
		h.enabled = 0;
		assert_int_equal(cdi_generate(&test_node, &o, &spec, &err), 0);
		gpus[0].pci_bus_id[0] = 0;
		assert_null(json_object_get(json_object_get(device(spec, "0"), "containerEdits"), "hooks"));
	}
	rm_tree(root);
}

static void test_generate_refuses(void **state)
{
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
	struct node empty = {0};
	struct gerr err = {0};
	json_t *spec = NULL;

	o.class = "g"; /* 1-char class */
	assert_int_equal(cdi_generate(&test_node, &o, &spec, &err), -EINVAL);
	o.class = NULL;
	o.vendor = "-bad";
	assert_int_equal(cdi_generate(&test_node, &o, &spec, &err), -EINVAL);
	o.vendor = NULL;
	assert_int_equal(cdi_generate(&empty, &o, &spec, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "no GPUs"));
	assert_null(spec);
}

/* Each row: a spec fragment, the version it needs (SPEC.md version table). */
static void test_min_version_table(void **state)
{
	static const struct {
		const char *json, *version;
	} rows[] = {
	    {"{\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}", "0.3.0"},
	    {"{\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/a\","
	     "\"containerPath\":\"/a\",\"type\":\"bind\"}]}}]}",
	     "0.4.0"},
	    {"{\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"0\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}", "0.5.0"},
	    {"{\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}],\"containerEdits\":"
	     "{\"deviceNodes\":[{\"path\":\"/dev/a\",\"hostPath\":\"/x/dev/a\"}]}}",
	     "0.5.0"},
	    {"{\"kind\":\"a.com/b.c\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}", "0.6.0"},
	    {"{\"kind\":\"a.com/bb\",\"annotations\":{\"a\":\"b\"},\"devices\":[]}", "0.6.0"},
	    {"{\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"additionalGids\":[5]}}]}",
	     "0.7.0"},
	    {"{\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"intelRdt\":{\"closID\":\"a\"}}}]}",
	     "0.7.0"},
	    {"{\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"netDevices\":[{\"name\":\"a\","
	     "\"hostInterfaceName\":\"b\"}]}}]}",
	     "1.1.0"},
	};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		json_auto_t *j = json_loads(rows[i].json, 0, NULL);

		assert_non_null(j);
		if (!streq(cdi_min_version(j), rows[i].version))
			fail_msg("row %zu: %s, want %s", i, cdi_min_version(j), rows[i].version);
	}
}

static void test_yaml_round_trip(void **state)
{
	static const char *const tricky[] = {"0",   "1:0",   "yes",    "no",        "",    "null", "~",
					     "-1",  "0x10",  "1e3",    "true",      "on",  "a: b", "#x",
					     "- x", " lead", "trail ", "new\nline", "ünï", ".5"};
	json_auto_t *spec = gen("/drv root", 0, NULL), *back = NULL;
	_cleanup_free_ char *text = NULL;
	struct gerr err = {0};
	json_t *env = json_object_get(json_object_get(spec, "containerEdits"), "env");

	for (size_t i = 0; i < ELEMENTSOF(tricky); i++)
		assert_int_equal(json_array_append_new(env, json_string(tricky[i])), 0);
	assert_int_equal(json_object_set_new(spec, "num", json_integer(-42)), 0);
	assert_int_equal(json_object_set_new(spec, "flag", json_false()), 0);
	assert_int_equal(cdi_format_spec(spec, CDI_FORMAT_YAML, &text, &err), 0);
	assert_true(strncmp(text, "---", 3) == 0);
	assert_non_null(strstr(text, "name: \"0\""));
	assert_int_equal(cdi_parse_spec("x.yaml", text, strlen(text), &back, &err), 0);
	if (!json_equal(spec, back))
		fail_msg("YAML did not read back equal:\n%s", text);
}

static void test_yaml_parse_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} rows[] = {
	    {"a: 1\na: 2\n", "x.yaml:2:1: duplicate key"},
	    {"a: [1, 2\n", "x.yaml:"},
	    {"- 1\n- 2\n", "top level"},
	    {"a: 1\n---\nb: 2\n", "more than one YAML document"},
	    {"a: *nope\n", "unknown YAML alias"},
	};
	/* not "y:"/"n:": those keys are booleans for sigs.k8s.io/yaml (tests/unit/test_yaml.c) */
	const char *anchors = "x: &e [\"A=1\"]\nal: *e\noct: 010\nh: 0x1f\nf: 1.5\ns: !!str 12\nq: '7'\nb: Yes\nz: ~\n";
	json_auto_t *j = NULL;
	struct gerr err = {0};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		json_t *k = NULL;

		assert_true(cdi_parse_spec("x.yaml", rows[i].text, strlen(rows[i].text), &k, &err) < 0);
		assert_null(k);
		if (!strstr(err.msg, rows[i].msg))
			fail_msg("row %zu: '%s' lacks '%s'", i, err.msg, rows[i].msg);
	}
	assert_int_equal(cdi_parse_spec("x.yaml", anchors, strlen(anchors), &j, &err), 0);
	assert_true(json_equal(json_object_get(j, "x"), json_object_get(j, "al")));
	assert_int_equal(json_integer_value(json_object_get(j, "oct")), 8); /* YAML 1.1 octal */
	assert_int_equal(json_integer_value(json_object_get(j, "h")), 31);
	assert_true(json_is_real(json_object_get(j, "f")));
	assert_string_equal(json_string_value(json_object_get(j, "s")), "12");
	assert_string_equal(json_string_value(json_object_get(j, "q")), "7");
	assert_true(json_is_true(json_object_get(j, "b")));
	assert_true(json_is_null(json_object_get(j, "z")));
	/* JSON files: jansson with line:column */
	assert_true(cdi_parse_spec("x.json", "{\n \"a\": 1,\n \"a\": 2}", 20, &j, &err) < 0);
	assert_non_null(strstr(err.msg, "x.json:3:"));
}

static void test_write_spec(void **state)
{
	_cleanup_free_ char *tmp = mk_tempdir(), *dir = NULL, *path = NULL, *link = NULL, *body = NULL;
	json_auto_t *spec = gen(NULL, 0, NULL), *other = NULL;
	struct gerr err = {0};
	struct stat st1, st2;
	mode_t old_umask;

	assert_true(asprintf(&dir, "%s/var/run/cdi", tmp) > 0);
	assert_true(asprintf(&path, "%s/nvidia.com-gpu.json", dir) > 0);
	old_umask = umask(077);
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	umask(old_umask);
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(st1.st_mode & 07777, 0644);
	assert_int_equal(stat(dir, &st2), 0);
	assert_true(S_ISDIR(st2.st_mode));
	/* same content: file untouched (same inode, no rename) */
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino);
	/* same content but a wrong mode: rewritten 0644 (a runtime user must read it) */
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(st1.st_mode & 07777, 0644);
	/* ours, changed: replaced */
	assert_int_equal(json_object_set_new(spec, "cdiVersion", json_string("0.6.0")), 0);
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_int_not_equal(st1.st_ino, st2.st_ino);
	/* foreign file with our name: refused and left alone */
	assert_int_equal(
	    shf("printf '{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[]}' > '%s'", path), 0);
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "not written by gpulet"));
	assert_int_equal(read_file(path, 4096, &body, NULL, NULL), 0);
	assert_non_null(strstr(body, "\"devices\":[]"));
	/* another kind's marker is not ours either */
	other = gen(NULL, 0, NULL);
	assert_int_equal(json_object_set_new(other, "kind", json_string("other.com/gpu")), 0);
	{
		json_t *env = json_object_get(json_object_get(other, "containerEdits"), "env");

		assert_int_equal(
		    json_array_set_new(env, json_array_size(env) - 1, json_string("GPULET_CDI_SPEC=other.com/gpu")), 0);
	}
	assert_int_equal(cdi_write_spec(dir, "x.yaml", other, &err), 0);
	assert_int_equal(cdi_write_spec(dir, "x.yaml", spec, &err), -EEXIST);
	/* a symlinked spec dir is refused */
	assert_true(asprintf(&link, "%s/linked", tmp) > 0);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(cdi_write_spec(link, "a.json", spec, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "symlink"));
	/* names runtimes do not read, or paths */
	assert_int_equal(cdi_write_spec(dir, "a.yml", spec, &err), -EINVAL);
	assert_int_equal(cdi_write_spec(dir, "../a.json", spec, &err), -EINVAL);
	rm_tree(tmp);
}

/*
 * The race a check by path loses, made certain: when lstat() is called on swap_path, the file there is
 * replaced by a FIFO right after the real lstat() answered. A check by path then opens the FIFO and
 * blocks; the fd-based check never calls lstat() on it.
 */
static const char *swap_path;

int lstat(const char *path, struct stat *st)
{
	int (*real)(const char *, struct stat *) = (int (*)(const char *, struct stat *))dlsym(RTLD_NEXT, "lstat");
	int r = real(path, st);

	if (swap_path && streq(path, swap_path)) {
		swap_path = NULL;
		if (unlink(path) < 0 || mkfifo(path, 0644) < 0)
			return -1;
	}
	return r;
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("blocked on a FIFO");
}

static void test_remove_spec_guards(void **state)
{
	_cleanup_free_ char *tmp = mk_tempdir(), *dir = NULL, *path = NULL, *body = NULL;
	json_auto_t *spec = gen(NULL, 0, NULL);
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	struct gerr err = {0};
	struct stat st;
	int r;

	(void)state;
	assert_true(asprintf(&dir, "%s/cdi", tmp) > 0);
	assert_true(asprintf(&path, "%s/nvidia.com-gpu.json", dir) > 0);
	signal(SIGALRM, on_alarm);
	alarm(10);
	/* ours: removed; then nothing there */
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	assert_int_equal(cdi_remove_spec(dir, "nvidia.com-gpu.json", kind, &err), 1);
	assert_int_equal(cdi_remove_spec(dir, "nvidia.com-gpu.json", kind, &err), 0);
	/* a FIFO with our name: refused at once, left there; writing over it is refused too */
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(cdi_remove_spec(dir, "nvidia.com-gpu.json", kind, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), -EEXIST);
	assert_int_equal(cdi_spec_replaceable(path, kind, &err), -EEXIST);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(unlink(path), 0);
	/* a FIFO swapped in after the type check: never opened for a blocking read */
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	swap_path = path;
	r = cdi_remove_spec(dir, "nvidia.com-gpu.json", kind, &err);
	swap_path = NULL;
	assert_true(r == 1 || (r == -EEXIST && lstat(path, &st) == 0 && S_ISFIFO(st.st_mode)));
	unlink(path);
	assert_int_equal(cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err), 0);
	swap_path = path;
	r = cdi_write_spec(dir, "nvidia.com-gpu.json", spec, &err);
	swap_path = NULL;
	assert_true(r == 0 || r == -EEXIST);
	unlink(path);
	/* a symlink to our own spec: refused, the link and its target left alone */
	assert_int_equal(cdi_write_spec(dir, "a.json", spec, &err), 0);
	assert_int_equal(symlink("a.json", path), 0);
	assert_int_equal(cdi_remove_spec(dir, "nvidia.com-gpu.json", kind, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "symlink"));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(unlink(path), 0);
	/* a foreign file: refused and left alone */
	assert_int_equal(
	    shf("printf '{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[]}' > '%s'", path), 0);
	assert_int_equal(cdi_remove_spec(dir, "nvidia.com-gpu.json", kind, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "not written by gpulet"));
	assert_int_equal(read_file(path, 4096, &body, NULL, NULL), 0);
	assert_non_null(strstr(body, "\"devices\":[]"));
	/* through the dir fd: the same answers by name */
	{
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY);

		assert_true(dfd >= 0);
		assert_int_equal(cdi_spec_replaceable_at(dfd, "nvidia.com-gpu.json", path, kind, NULL, &err), -EEXIST);
		assert_int_equal(cdi_spec_replaceable_at(dfd, "a.json", "a.json", kind, &st, &err), 1);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(cdi_spec_replaceable_at(dfd, "none.json", "none.json", kind, NULL, &err), 0);
	}
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	rm_tree(tmp);
}

/* One broken spec per row: the code and JSON path validate must report. */
static void test_validate_codes(void **state)
{
	static const struct {
		const char *json, *code, *path;
	} rows[] = {
	    {"{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "version-too-new", "$.cdiVersion"},
	    {"{\"cdiVersion\":\"9.9.9\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "invalid-version", "$.cdiVersion"},
	    {"{\"cdiVersion\":\"0.2.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "invalid-version", "$.cdiVersion"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"x.com/"
	     "y\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "class-too-short", "$.kind"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"foo\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A="
	     "1\"]}}]}",
	     "invalid-kind", "$.kind"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"b "
	     "c\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "invalid-device-name", "$.devices[0].name"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"],\"bogus\":1}}]}",
	     "unknown-field", "$.devices[0].containerEdits.bogus"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/"
	     "x\",\"major\":\"1\"}]}}]}",
	     "wrong-type", "$.devices[0].containerEdits.deviceNodes[0].major"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"=1\"]}}]}",
	     "invalid-env", "$.devices[0].containerEdits.env"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"hooks\":[{\"hookName\":\"bogus\",\"path\":\"/bin/"
	     "true\"}]}}]}",
	     "invalid-hook", "$.devices[0].containerEdits.hooks[0].hookName"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/bb\",\"devices\":[]}", "no-devices", "$.devices"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}]}",
	     "empty-edits", "$.devices[0].containerEdits"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/bb\",\"devices\":[{\"name\":\"x\"}]}", "missing-field",
	     "$.devices[0].containerEdits"},
	    {"{\"cdiVersion\":\"0.3.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"0\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "version-too-low", "$.cdiVersion"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}},"
	     "{\"name\":\"x\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}",
	     "duplicate-name", "$.devices[1].name"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/"
	     "nvidia-gone\"}]}}]}",
	     "host-path-missing", "$.devices[0].containerEdits.deviceNodes[0].path"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/"
	     "x\",\"hostPath\":\"/etc/hostname\"}]}}]}",
	     "not-a-device-node", "$.devices[0].containerEdits.deviceNodes[0].hostPath"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/no/such/"
	     "lib.so\",\"containerPath\":\"/l\"}]}}]}",
	     "host-path-missing", "$.devices[0].containerEdits.mounts[0].hostPath"},
	    {"{\"cdiVersion\":\"0.5.0\",\"kind\":\"a.com/"
	     "bb\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"dev/"
	     "x\",\"type\":\"q\",\"major\":1}]}}]}",
	     "invalid-value", "$.devices[0].containerEdits.deviceNodes[0].type"},
	};
	struct cdi_validate_options o = {.runtime_version = "0.5.0", .runtime_name = "podman-4.3"};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
		json_auto_t *j = json_loads(rows[i].json, 0, NULL);
		bool found = false;

		assert_non_null(j);
		assert_int_equal(cdi_validate_spec("f.json", j, &o, &rep), 0);
		for (size_t k = 0; k < rep.n_problems; k++) {
			const struct cdi_problem *p = &rep.problems[k];

			if (streq(p->code, rows[i].code) && streq(p->json_path, rows[i].path)) {
				found = true;
				assert_string_equal(p->file, "f.json");
				assert_true(p->fix[0] && p->message[0]);
			}
		}
		if (!found) {
			for (size_t k = 0; k < rep.n_problems; k++)
				print_message("  got %s at %s: %s\n", rep.problems[k].code, rep.problems[k].json_path,
					      rep.problems[k].message);
			fail_msg("row %zu: no %s at %s", i, rows[i].code, rows[i].path);
		}
		assert_true(rep.n_errors > 0);
	}
}

static const char *const spec_a = "{\"cdiVersion\":\"0.5.0\",\"kind\":\"v.com/gpu\",\"devices\":["
				  "{\"name\":\"d0\",\"containerEdits\":{\"env\":[\"A=1\"]}},"
				  "{\"name\":\"d1\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}";

static bool has_problem(const struct cdi_report *rep, const char *code, const char *file_suffix)
{
	for (size_t i = 0; i < rep->n_problems; i++) {
		size_t fl = strlen(rep->problems[i].file), sl = strlen(file_suffix);

		if (streq(rep->problems[i].code, code) && fl >= sl &&
		    streq(rep->problems[i].file + fl - sl, file_suffix))
			return true;
	}
	return false;
}

static void test_dirs_precedence_and_list(void **state)
{
	_cleanup_free_ char *root = mk_tempdir();
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	struct cdi_validate_options o = {0};
	json_auto_t *list = NULL;
	struct gerr err = {0};
	const json_t *e;
	size_t i;

	o.root = root;
	/* /etc/cdi: a.json and b.json both define d0 (conflict); /var/run/cdi/c.yaml redefines d1 */
	assert_int_equal(
	    shf("mkdir -p '%s/etc/cdi' '%s/var/run/cdi' && cd '%s/etc/cdi' && printf '%%s' '%s' > a.json && "
		"printf '%%s' '%s' | sed 's/d1/d9/' > b.json && printf '%s' > ../../var/run/cdi/c.yaml && "
		"cp a.json ignored.txt && cp a.json z.yml && printf '{' > broken.json",
		root, root, root, spec_a, spec_a,
		"cdiVersion: 0.5.0\\nkind: v.com/gpu\\ndevices:\\n- name: d1\\n  containerEdits:\\n    env: [B=2]\\n"),
	    0);
	assert_int_equal(cdi_validate_dirs(NULL, 0, &o, &rep), 0);
	assert_true(has_problem(&rep, "duplicate-device", "/etc/cdi/a.json"));
	assert_true(has_problem(&rep, "duplicate-device", "/etc/cdi/b.json"));
	assert_true(has_problem(&rep, "shadowed-device", "/etc/cdi/a.json"));
	assert_true(has_problem(&rep, "not-scanned", "/etc/cdi/z.yml"));
	assert_true(has_problem(&rep, "parse-error", "/etc/cdi/broken.json"));
	assert_false(has_problem(&rep, "duplicate-device", "/var/run/cdi/c.yaml"));
	assert_int_equal(rep.n_files, 5); /* a, b, broken, z.yml, c.yaml; not ignored.txt */

	assert_int_equal(cdi_list_dirs(root, NULL, 0, &list, &err), 0);
	assert_int_equal(json_array_size(list), 3); /* d0 (conflict), d1 (from c.yaml), d9 */
	json_array_foreach (list, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *file = json_string_value(json_object_get(e, "file"));

		if (streq(name, "v.com/gpu=d0"))
			assert_true(json_is_true(json_object_get(e, "conflict")));
		else if (streq(name, "v.com/gpu=d1")) {
			assert_non_null(strstr(file, "/var/run/cdi/c.yaml"));
			assert_false(json_is_true(json_object_get(e, "conflict")));
			assert_int_equal(json_array_size(json_object_get(e, "shadows")), 1);
		} else
			assert_string_equal(name, "v.com/gpu=d9");
	}
	rm_tree(root);
}

static void test_unreadable_for_runtime_user(void **state)
{
	_cleanup_free_ char *root = mk_tempdir(), *file = NULL;
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0}, rep2 = {0};
	struct cdi_validate_options o = {.runtime_uid = 4242, .runtime_gid = 4242};
	const char *files[1];

	o.root = root;
	assert_true(asprintf(&file, "%s/etc/cdi/a.json", root) > 0);
	assert_int_equal(
	    shf("mkdir -p '%s/etc/cdi' && printf '%%s' '%s' > '%s' && chmod 600 '%s'", root, spec_a, file, file), 0);
	files[0] = file;
	assert_int_equal(cdi_validate_files(files, 1, &o, &rep), 0);
	assert_true(has_problem(&rep, "unreadable", "/etc/cdi/a.json"));
	/* a dir the runtime cannot list */
	assert_int_equal(shf("chmod 644 '%s' && chmod 700 '%s/etc/cdi'", file, root), 0);
	assert_int_equal(cdi_validate_dirs(NULL, 0, &o, &rep2), 0);
	assert_true(has_problem(&rep2, "dir-unreadable", "/etc/cdi"));
	rm_tree(root);
}

static void test_names_and_runtimes(void **state)
{
	assert_true(cdi_vendor_valid("k8s.device-plugin.nvidia.com"));
	assert_false(cdi_vendor_valid("9abc"));
	assert_false(cdi_vendor_valid("abc-"));
	assert_true(cdi_class_valid("gpu"));
	assert_false(cdi_class_valid("g"));
	assert_true(cdi_device_name_valid("0"));
	assert_true(cdi_device_name_valid("1:0"));
	assert_true(cdi_device_name_valid("MIG-8a1c3c1e-8f2d-5f43-b4d6-1f3e5c1d0a9b"));
	assert_false(cdi_device_name_valid("b c"));
	assert_false(cdi_device_name_valid(":0"));
	assert_false(cdi_device_name_valid(""));
	assert_string_equal(cdi_runtime_max_version("podman-4.3"), "0.5.0");
	assert_null(cdi_runtime_max_version("nope"));
}

static void test_report_json(void **state)
{
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	struct cdi_validate_options o = {.runtime_version = "0.5.0"};
	json_auto_t *j = json_loads("{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/bb\",\"devices\":[]}", 0, NULL),
		    *doc = NULL;
	const json_t *p;

	assert_int_equal(cdi_validate_spec("f.json", j, &o, &rep), 0);
	doc = cdi_report_to_json(&rep);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "errors")), (json_int_t)rep.n_errors);
	p = json_array_get(json_object_get(doc, "problems"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "severity")), "error");
	assert_non_null(json_object_get(p, "category"));
	assert_non_null(json_object_get(p, "fix"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generate_devices),         cmocka_unit_test(test_generate_versions_and_names),
	    cmocka_unit_test(test_generate_drm_nodes),       cmocka_unit_test(test_generate_refuses),
	    cmocka_unit_test(test_min_version_table),        cmocka_unit_test(test_yaml_round_trip),
	    cmocka_unit_test(test_yaml_parse_errors),        cmocka_unit_test(test_write_spec),
	    cmocka_unit_test(test_remove_spec_guards),       cmocka_unit_test(test_validate_codes),
	    cmocka_unit_test(test_dirs_precedence_and_list), cmocka_unit_test(test_unreadable_for_runtime_user),
	    cmocka_unit_test(test_names_and_runtimes),       cmocka_unit_test(test_report_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
