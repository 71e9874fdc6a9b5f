/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NodePrepareResources / NodeUnprepareResources of the DRA driver (src/dra/prepare.c) on a fake node
 * (tests/lib/mkroot.sh, the fake NVML): one CDI spec per claim, answered again and rewritten when
 * lost, removed by unprepare; a device given to one claim at a time; half-prepared claims undone at
 * start and after a reboot; TimeSlicing through a stand-in nvidia-smi that records its calls; MPS with
 * NVIDIA's real nvidia-cuda-mps-control (tests/lib/realdriver.py) as the per-claim daemon.
 * Then the same through the real wire: the daemon in this process, claims fed through its claim
 * source, kubelet played by tests/integration/dra_standin.py (python3-grpcio) on the real sockets.
 *
 * Runs in a private mount namespace (the MPS test mounts a tmpfs, the daemon's /dev/shm is bound
 * in another), so nothing of it outlives the process. Facts: docs/reference/dra.md §7, §8.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cdi/cdi.h"
#include "dra/dra.h"
#include "dra/prepare.h"
#include "nvml/nvml.h"
#include "plugin/mps.h"
#include "test_cdi_helpers.h"
#include "util/fileio.h"

#define PLUGIN_DIR "/var/lib/kubelet/plugins/gpu.nvidia.com"
#define CDI_DIR    "/var/run/cdi"
#define GPU0       "gpu-0"
#define MIG0       "gpu-1-mig-1g5gb-19-0"
#define MIG1       "gpu-1-mig-1g5gb-19-1"

/* a stand-in for nvidia-smi: it records its arguments, and fails when FAIL exists beside the log */
static const char smi_script[] =
    "#!/bin/sh\n"
    "echo \"$@\" >> '%s/smi.calls'\n"
    "if [ -e '%s/smi.fail' ]; then echo 'Unable to set the time slice: no GPU'; exit 3; fi\n"
    "echo ok\n";

static struct nvml *nv;

struct t {
	char *dir, root[512];
	struct node *node;
	struct dra_devices devs;
	struct dra_checkpoint *cp;
	struct dra_gates gates;
	struct dra_prep p;
	struct host_paths *hp;     /* root t->root, driver root / */
	struct host_paths *hp_lib; /* the same with the fake NVML named */
};

static char *slurp(const char *path)
{
	char *text = NULL;

	return read_file(path, 1 << 20, &text, NULL, NULL) < 0 ? NULL : text;
}

static void write_boot(struct t *t, const char *id)
{
	assert_int_equal(shf("mkdir -p %s/proc/sys/kernel/random && echo %s > %s/proc/sys/kernel/random/boot_id",
			     t->root, id, t->root),
			 0);
}

static void open_cp(struct t *t, enum dra_cp_found want)
{
	char path[600], boot[64];
	enum dra_cp_found found;
	struct gerr err = {0};

	snprintf(path, sizeof(path), "%s" PLUGIN_DIR "/" DRA_CHECKPOINT_FILE, t->root);
	assert_int_equal(dra_boot_id(t->root, boot, sizeof(boot)), 0);
	if (dra_checkpoint_open(path, boot, &t->cp, &found, &err) < 0)
		fail_msg("checkpoint: %s", err.msg);
	assert_int_equal(found, want);
	t->p.cp = t->cp;
}

static int write_smi(struct t *t)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/usr/bin/nvidia-smi", t->root);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, smi_script, t->dir, t->dir);
	fclose(f);
	return chmod(path, 0755);
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));
	char tmpl[] = "/tmp/gpulet-dra-prep.XXXXXX", fixture[512];
	struct gerr err = {0};

	if (!t || !mkdtemp(tmpl))
		return -1;
	t->dir = strdup(tmpl);
	snprintf(t->root, sizeof(t->root), "%s/root", t->dir);
	if (shf("%s/tests/lib/mkroot.sh %s mixed >/dev/null", getenv("GPULET_SRC"), t->root) != 0 ||
	    shf("mkdir -p %s" PLUGIN_DIR " %s/usr/bin && touch %s/usr/bin/gpulet-cdi-hook", t->root, t->root,
		t->root) != 0 ||
	    write_smi(t) < 0)
		return -1;
	write_boot(t, "boot-1");
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/mixed.json", getenv("GPULET_SRC"));
	setenv("FAKE_NVML_FIXTURE", fixture, 1);
	if ((!nv && nvml_open(getenv("FAKE_NVML_LIB"), NULL, &nv, &err) < 0) ||
	    node_load(nv, t->root, &t->node, &err) < 0 || dra_devices_build(t->node, t->root, &t->devs, &err) < 0) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	t->gates = (struct dra_gates){true, true};
	t->hp = mk_paths(t->root, "/", NULL);
	if (host_paths_new(&(struct host_paths_options){.root = t->root,
							.driver_root = "/",
							.nvml_library = getenv("FAKE_NVML_LIB")},
			   &t->hp_lib, NULL) < 0)
		return -1;
	t->p = (struct dra_prep){.driver = "gpu.nvidia.com",
				 .pool = "node-a",
				 .devices = &t->devs,
				 .gates = &t->gates,
				 .cdi = {.driver = "gpu.nvidia.com",
					 .host = t->hp,
					 .hook_path = "/usr/bin/gpulet-cdi-hook",
					 .cdi_root = CDI_DIR},
				 .share = {.root = t->root, .driver_root = "/", .plugin_dir = PLUGIN_DIR}};
	open_cp(t, DRA_CP_NEW);
	*state = t;
	return 0;
}

/* What a failed test left mounted under its dir (the MPS tmpfs), so that the dir can go. */
static void umount_under(const char *dir)
{
	char line[2048], *mnt;
	FILE *f = fopen("/proc/self/mounts", "re");

	while (f && fgets(line, sizeof(line), f))
		if ((mnt = strchr(line, ' ')) && strncmp(++mnt, dir, strlen(dir)) == 0) {
			*strchr(mnt, ' ') = '\0';
			(void)umount2(mnt, MNT_DETACH);
		}
	if (f)
		fclose(f);
}

static int teardown(void **state)
{
	struct t *t = *state;

	umount_under(t->dir);
	dra_checkpoint_free(t->cp);
	dra_devices_clear(&t->devs);
	node_free(t->node);
	host_paths_free(t->hp);
	host_paths_free(t->hp_lib);
	if (strncmp(t->dir, "/tmp/gpulet-dra-prep.", 21) == 0)
		shf("rm -rf '%s'", t->dir);
	free(t->dir);
	free(t);
	return 0;
}

/* A ResourceClaim as the API returns it: uid, results [request, device, admin]..., and config (or NULL). */
static json_t *claim(const char *uid, const char *name, json_t *config, const char *req, const char *dev, ...)
{
	json_t *results = json_array();
	va_list ap;

	va_start(ap, dev);
	for (; req; req = va_arg(ap, const char *), dev = req ? va_arg(ap, const char *) : NULL)
		json_array_append_new(results, json_pack("{s:s, s:s, s:s, s:s}", "request", req, "driver",
							 "gpu.nvidia.com", "pool", "node-a", "device", dev));
	va_end(ap);
	return json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:{s:o, s:o}}}}", "metadata", "name", name, "namespace", "team",
			 "uid", uid, "status", "allocation", "devices", "results", results, "config",
			 config ? config : json_array());
}

static json_t *ts_config(const char *interval)
{
	return json_pack("[{s:s, s:{s:s, s:{s:s, s:s, s:{s:s, s:{s:s}}}}}]", "source", "FromClaim", "opaque", "driver",
			 "gpu.nvidia.com", "parameters", "apiVersion", DRA_CONFIG_API_VERSION, "kind", "GpuConfig",
			 "sharing", "strategy", "TimeSlicing", "timeSlicingConfig", "interval", interval);
}

static int prep(struct t *t, json_t *c, json_t **ret, struct gerr *err)
{
	const json_t *meta = json_object_get(c, "metadata");
	struct dra_claim_ref ref = {"team", json_string_value(json_object_get(meta, "name")),
				    json_string_value(json_object_get(meta, "uid"))};
	int r = dra_prepare(&t->p, c, &ref, ret, err);

	json_decref(c);
	return r;
}

static bool spec_exists(struct t *t, const char *uid)
{
	char path[700];

	snprintf(path, sizeof(path), "%s" CDI_DIR "/k8s.gpu.nvidia.com-claim_%s.yaml", t->root, uid);
	return access(path, F_OK) == 0;
}

static json_t *read_spec(struct t *t, const char *uid)
{
	char path[700];
	json_t *spec = NULL;
	struct gerr err = {0};

	snprintf(path, sizeof(path), "%s" CDI_DIR "/k8s.gpu.nvidia.com-claim_%s.yaml", t->root, uid);
	if (cdi_read_spec(path, &spec, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	return spec;
}

static const char *smi_calls(struct t *t, char *buf, size_t size)
{
	char path[600];
	_cleanup_free_ char *text = NULL;

	snprintf(path, sizeof(path), "%s/smi.calls", t->dir);
	text = slurp(path);
	snprintf(buf, size, "%s", text ? text : "");
	return buf;
}

/* ---- one claim, start to end ---- */

static void test_prepare_unprepare(void **state)
{
	struct t *t = *state;
	const char *uid = "0b1c2d3e-0000-4000-8000-00000000000a";
	json_t *ans = NULL, *again = NULL, *spec, *dev;
	struct cdi_validate_options vo = {.root = t->root};
	struct cdi_report rep = {0};
	struct gerr err = {0};
	char path[700], id[256];
	size_t i;

	if (prep(t, claim(uid, "c1", NULL, "gpu", GPU0, "mig/small", MIG0, NULL), &ans, &err) < 0)
		fail_msg("%s", err.msg);
	/* what kubelet gets: per device its main request, the pool, the name and one CDI id */
	assert_int_equal(json_array_size(ans), 2);
	dev = json_array_get(ans, 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(dev, "requests"), 0)), "mig");
	assert_string_equal(json_string_value(json_object_get(dev, "poolName")), "node-a");
	assert_string_equal(json_string_value(json_object_get(dev, "deviceName")), MIG0);
	snprintf(id, sizeof(id), "k8s.gpu.nvidia.com/claim=%s-" MIG0, uid);
	assert_string_equal(json_string_value(json_array_get(json_object_get(dev, "cdiDeviceIDs"), 0)), id);
	/* the spec: kind k8s.gpu.nvidia.com/claim, exactly the claim's devices, valid, the MIG caps nodes */
	spec = read_spec(t, uid);
	assert_string_equal(json_string_value(json_object_get(spec, "kind")), "k8s.gpu.nvidia.com/claim");
	assert_int_equal(json_array_size(json_object_get(spec, "devices")), 2);
	json_array_foreach (json_object_get(spec, "devices"), i, dev) {
		char want[128];

		snprintf(want, sizeof(want), "%s-%s", uid, i ? MIG0 : GPU0);
		assert_string_equal(json_string_value(json_object_get(dev, "name")), want);
	}
	/* the MIG device: its GI and CI access nodes */
	dev = json_array_get(json_object_get(spec, "devices"), 1);
	{
		size_t k, caps = 0;
		json_t *node;

		json_array_foreach (json_object_get(json_object_get(dev, "containerEdits"), "deviceNodes"), k, node)
			caps += strncmp(json_string_value(json_object_get(node, "path")) ?: "",
					"/dev/nvidia-caps/nvidia-cap", 27) == 0;
		assert_int_equal(caps, 2);
	}
	snprintf(path, sizeof(path), "%s" CDI_DIR "/k8s.gpu.nvidia.com-claim_%s.yaml", t->root, uid);
	assert_int_equal(cdi_validate_files((const char *[]){path}, 1, &vo, &rep), 0);
	if (rep.n_errors)
		fail_msg("spec invalid: %s %s", rep.problems[0].code, rep.problems[0].message);
	cdi_report_clear(&rep);
	json_decref(spec);
	assert_true(dra_claim_completed(dra_checkpoint_claim(t->cp, uid)));

	/* again: the same answer (kubelet restarted); with the spec gone (a reboot-less wipe) it is back */
	assert_int_equal(prep(t, claim(uid, "c1", NULL, "gpu", GPU0, "mig/small", MIG0, NULL), &again, &err), 0);
	assert_true(json_equal(ans, again));
	json_decref(again);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(prep(t, claim(uid, "c1", NULL, "gpu", GPU0, "mig/small", MIG0, NULL), &again, &err), 0);
	assert_true(json_equal(ans, again));
	assert_true(spec_exists(t, uid));
	json_decref(again);

	/* unprepare: spec and record gone; twice is fine */
	assert_int_equal(dra_unprepare(&t->p, uid, &err), 0);
	assert_false(spec_exists(t, uid));
	assert_null(dra_checkpoint_claim(t->cp, uid));
	assert_int_equal(dra_unprepare(&t->p, uid, &err), 0);
	json_decref(ans);
}

/* The checkpoint is what a restarted plugin knows: a prepared claim is not prepared twice. */
static void test_restart_keeps_prepared(void **state)
{
	struct t *t = *state;
	const char *uid = "0b1c2d3e-0000-4000-8000-00000000000b";
	json_t *ans = NULL, *again = NULL;
	struct gerr err = {0};
	char buf[2048];

	assert_int_equal(prep(t, claim(uid, "c2", ts_config("Long"), "gpu", GPU0, NULL), &ans, &err), 0);
	dra_checkpoint_free(t->cp);
	open_cp(t, DRA_CP_SAME);
	assert_int_equal(dra_prepare_cleanup(&t->p, NULL, NULL), 0);
	assert_int_equal(shf("rm -f %s/smi.calls", t->dir), 0);
	assert_int_equal(prep(t, claim(uid, "c2", ts_config("Long"), "gpu", GPU0, NULL), &again, &err), 0);
	assert_true(json_equal(ans, again));
	/* nothing applied again: no nvidia-smi call */
	assert_string_equal(smi_calls(t, buf, sizeof(buf)), "");
	json_decref(ans);
	json_decref(again);
}

static void test_one_claim_per_device(void **state)
{
	struct t *t = *state;
	json_t *ans = NULL, *admin;
	struct gerr err = {0};

	assert_int_equal(prep(t, claim("aaaa-1", "first", NULL, "gpu", GPU0, NULL), &ans, &err), 0);
	json_decref(ans);
	ans = NULL;
	assert_int_equal(prep(t, claim("aaaa-2", "second", NULL, "gpu", GPU0, NULL), &ans, &err), -EBUSY);
	assert_non_null(strstr(err.msg, "device gpu-0 is already prepared for claim team/first (aaaa-1)"));
	assert_false(spec_exists(t, "aaaa-2"));
	assert_null(dra_checkpoint_claim(t->cp, "aaaa-2"));
	/* with admin access the device may be shared (NVIDIA's rule) */
	admin = claim("aaaa-3", "admin", NULL, "gpu", GPU0, NULL);
	json_object_set_new(
	    json_array_get(
		json_object_get(
		    json_object_get(json_object_get(json_object_get(admin, "status"), "allocation"), "devices"),
		    "results"),
		0),
	    "adminAccess", json_true());
	assert_int_equal(prep(t, admin, &ans, &err), 0);
	json_decref(ans);
}

/* A bad claim fails alone, nothing left of it; the checks of claim.c reach kubelet's words. */
static void test_refused_claims(void **state)
{
	struct t *t = *state;
	json_t *ans = NULL, *c;
	struct gerr err = {0};

	assert_int_equal(prep(t, claim("bbbb-1", "gone", NULL, "gpu", "gpu-7", NULL), &ans, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "ResourceClaim team/gone: device gpu-7 is not a device of this node"));
	c = claim("bbbb-2", "replaced", NULL, "gpu", GPU0, NULL);
	json_object_set_new(json_object_get(c, "metadata"), "uid", json_string("bbbb-9"));
	json_object_set_new(json_object_get(c, "metadata"), "name", json_string("replaced"));
	assert_int_equal(dra_prepare(&t->p, c, &(struct dra_claim_ref){"team", "replaced", "bbbb-2"}, &ans, &err),
			 -ESTALE);
	json_decref(c);
	c = claim("../bbbb", "evil", NULL, "gpu", GPU0, NULL);
	assert_int_equal(prep(t, c, &ans, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "is not a Kubernetes uid"));
	assert_int_equal(json_object_size(dra_checkpoint_claims(t->cp)), 0);
}

/* ---- TimeSlicing ---- */

static void test_timeslicing(void **state)
{
	struct t *t = *state;
	const char *uid = "cccc-1";
	const char *gpu = t->devs.v[0].gpu->uuid;
	json_t *ans = NULL, *rec;
	struct gerr err = {0};
	char buf[2048], want[512];

	assert_int_equal(prep(t, claim(uid, "ts", ts_config("Long"), "gpu", GPU0, "m", MIG0, NULL), &ans, &err), 0);
	/* NVIDIA's order: compute mode DEFAULT, then the time slice; only for the whole GPU */
	snprintf(want, sizeof(want), "-i %s -c DEFAULT\ncompute-policy -i %s --set-timeslice 3\n", gpu, gpu);
	assert_string_equal(smi_calls(t, buf, sizeof(buf)), want);
	rec = dra_checkpoint_claim(t->cp, uid);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(json_object_get(rec, "groups"), 0), "strategy")),
	    "TimeSlicing");
	assert_int_equal(shf("rm -f %s/smi.calls", t->dir), 0);
	assert_int_equal(dra_unprepare(&t->p, uid, &err), 0);
	snprintf(want, sizeof(want), "compute-policy -i %s --set-timeslice 0\n", gpu);
	assert_string_equal(smi_calls(t, buf, sizeof(buf)), want);
	json_decref(ans);
}

/* What a prepare costs on disk: PrepareStarted and PrepareCompleted, plus one write per group whose
 * sharing did something to undo; a claim prepared before costs none, an unprepare one. */
static void test_checkpoint_writes(void **state)
{
	struct t *t = *state;
	json_t *ans = NULL;
	struct gerr err = {0};
	unsigned long n = dra_checkpoint_saves(t->cp);

	/* no sharing (a GPU and a MIG device): nothing to undo, no write between the two */
	assert_int_equal(prep(t, claim("abab-1", "plain", NULL, "gpu", GPU0, "m", MIG0, NULL), &ans, &err), 0);
	assert_int_equal(dra_checkpoint_saves(t->cp) - n, 2);
	json_decref(ans);
	n = dra_checkpoint_saves(t->cp);
	assert_int_equal(prep(t, claim("abab-1", "plain", NULL, "gpu", GPU0, "m", MIG0, NULL), &ans, &err), 0);
	assert_int_equal(dra_checkpoint_saves(t->cp) - n, 0);
	json_decref(ans);
	assert_int_equal(dra_unprepare(&t->p, "abab-1", &err), 0);
	assert_int_equal(dra_checkpoint_saves(t->cp) - n, 1);
	/* time-slicing changed the GPU: on disk before anything else is done */
	n = dra_checkpoint_saves(t->cp);
	assert_int_equal(prep(t, claim("abab-2", "ts", ts_config("Long"), "gpu", GPU0, NULL), &ans, &err), 0);
	assert_int_equal(dra_checkpoint_saves(t->cp) - n, 3);
	json_decref(ans);
}

static void test_timeslicing_fails_cleanly(void **state)
{
	struct t *t = *state;
	json_t *ans = NULL;
	struct gerr err = {0};
	char path[600];

	/* the tool fails: the claim fails with its words, nothing is left */
	assert_int_equal(shf("touch %s/smi.fail", t->dir), 0);
	assert_int_equal(prep(t, claim("dddd-1", "ts", ts_config("Short"), "gpu", GPU0, NULL), &ans, &err), -EIO);
	assert_non_null(strstr(err.msg, "TimeSlicing sharing (FromClaim config 0)"));
	assert_non_null(strstr(err.msg, "nvidia-smi -i"));
	assert_false(spec_exists(t, "dddd-1"));
	assert_null(dra_checkpoint_claim(t->cp, "dddd-1"));
	/* no tool at all */
	snprintf(path, sizeof(path), "%s/usr/bin/nvidia-smi", t->root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(prep(t, claim("dddd-2", "ts", ts_config("Short"), "gpu", GPU0, NULL), &ans, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nvidia-smi not found"));
	assert_null(dra_checkpoint_claim(t->cp, "dddd-2"));
	/* the gate off, as NVIDIA's default: refused before anything runs */
	t->gates.time_slicing = false;
	assert_int_equal(prep(t, claim("dddd-3", "ts", ts_config("Short"), "gpu", GPU0, NULL), &ans, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "TimeSlicingSettings=false"));
}

/* ---- what a restart finds ---- */

static void test_half_prepared_undone_at_start(void **state)
{
	struct t *t = *state;
	const char *gpu = t->devs.v[0].gpu->uuid;
	struct gerr err = {0};
	json_t *rec, *ans = NULL;
	char buf[2048], want[512];

	/* a crash after the time slice was set and the spec written, before PrepareCompleted */
	assert_int_equal(prep(t, claim("eeee-1", "half", ts_config("Medium"), "gpu", GPU0, NULL), &ans, &err), 0);
	json_decref(ans);
	rec = dra_checkpoint_claim(t->cp, "eeee-1");
	json_object_set_new(rec, "state", json_string(DRA_STATE_STARTED));
	assert_int_equal(dra_checkpoint_save(t->cp, &err), 0);
	dra_checkpoint_free(t->cp);
	assert_int_equal(shf("rm -f %s/smi.calls", t->dir), 0);
	open_cp(t, DRA_CP_SAME);
	assert_int_equal(dra_prepare_cleanup(&t->p, NULL, NULL), 1);
	snprintf(want, sizeof(want), "compute-policy -i %s --set-timeslice 0\n", gpu);
	assert_string_equal(smi_calls(t, buf, sizeof(buf)), want);
	assert_false(spec_exists(t, "eeee-1"));
	assert_null(dra_checkpoint_claim(t->cp, "eeee-1"));
}

static void test_reboot(void **state)
{
	struct t *t = *state;
	json_t *ans = NULL, *again = NULL;
	struct gerr err = {0};

	assert_int_equal(prep(t, claim("ffff-1", "r", NULL, "gpu", GPU0, NULL), &ans, &err), 0);
	dra_checkpoint_free(t->cp);
	/* the node reboots: /var/run is a new tmpfs, the boot id changes */
	assert_int_equal(shf("rm -rf %s" CDI_DIR, t->root), 0);
	write_boot(t, "boot-2");
	open_cp(t, DRA_CP_REBOOT);
	assert_false(dra_claim_completed(dra_checkpoint_claim(t->cp, "ffff-1")));
	assert_int_equal(dra_prepare_cleanup(&t->p, NULL, NULL), 1);
	/* kubelet prepares the claim again for the restarted pod: the spec is written again */
	assert_int_equal(prep(t, claim("ffff-1", "r", NULL, "gpu", GPU0, NULL), &again, &err), 0);
	assert_true(spec_exists(t, "ffff-1"));
	assert_true(json_equal(ans, again));
	json_decref(ans);
	json_decref(again);
}

/* A claim whose allocation changed under the same uid (unprepared by nobody): the old one is undone. */
static void test_stale_allocation(void **state)
{
	struct t *t = *state;
	json_t *ans = NULL;
	struct gerr err = {0};

	assert_int_equal(prep(t, claim("abab-1", "s", NULL, "gpu", MIG0, NULL), &ans, &err), 0);
	json_decref(ans);
	assert_int_equal(prep(t, claim("abab-1", "s", NULL, "gpu", MIG1, NULL), &ans, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ans, 0), "deviceName")), MIG1);
	json_decref(ans);
	/* MIG0 is free again for another claim */
	assert_int_equal(prep(t, claim("abab-2", "s2", NULL, "gpu", MIG0, NULL), &ans, &err), 0);
	json_decref(ans);
}

/* ---- MPS with NVIDIA's real control daemon ---- */

static bool has_string(const json_t *arr, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach (arr, i, v)
		if (json_is_string(v) && streq(json_string_value(v), s))
			return true;
	return false;
}

static bool has_mount(const json_t *mounts, const char *host, const char *ctr)
{
	size_t i;
	json_t *m;

	json_array_foreach (mounts, i, m)
		if (streq(json_string_value(json_object_get(m, "hostPath")) ?: "", host) &&
		    streq(json_string_value(json_object_get(m, "containerPath")) ?: "", ctr))
			return true;
	return false;
}

/* The claim's MPS daemon (control binary bin, pipes under mpsroot/0) answers with the claim's limits. */
static void assert_mps_limits(const char *bin, const char *mpsroot)
{
	struct gerr err = {0};
	char out[256];

	assert_int_equal(mps_control(bin, mpsroot, "0", "get_default_active_thread_percentage", out, sizeof(out), &err),
			 0);
	assert_non_null(strstr(out, "25"));
	assert_int_equal(
	    mps_control(bin, mpsroot, "0", "get_default_device_pinned_mem_limit 0", out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "2G"));
}

static void test_mps(void **state)
{
	struct t *t = *state;
	const char *gpu = t->devs.v[0].gpu->uuid, *rd = getenv("GPULET_REALDRIVER");
	json_t *ans = NULL, *spec, *edits, *cfg;
	struct gerr err = {0};
	char buf[4096], want[512], mpsroot[600], out[128], shm[700];
	struct stat st, parent;

	assert_non_null(rd);
	assert_int_equal(shf("cp %s/root-plain/usr/bin/nvidia-cuda-mps-control %s/usr/bin/", rd, t->root), 0);
	cfg = json_pack("[{s:s, s:{s:s, s:{s:s, s:s, s:{s:s, s:{s:i, s:s}}}}}]", "source", "FromClaim", "opaque",
			"driver", "gpu.nvidia.com", "parameters", "apiVersion", DRA_CONFIG_API_VERSION, "kind",
			"GpuConfig", "sharing", "strategy", "MPS", "mpsConfig", "defaultActiveThreadPercentage", 25,
			"defaultPinnedDeviceMemoryLimit", "2Gi");
	if (prep(t, claim("m1", "mps", cfg, "gpu", GPU0, NULL), &ans, &err) < 0)
		fail_msg("%s", err.msg);
	/* the whole GPU in EXCLUSIVE_PROCESS; the daemon runs with the claim's limits */
	snprintf(want, sizeof(want), "-i %s -c EXCLUSIVE_PROCESS\n", gpu);
	assert_string_equal(smi_calls(t, buf, sizeof(buf)), want);
	snprintf(mpsroot, sizeof(mpsroot), "%s" PLUGIN_DIR "/mps", t->root);
	snprintf(buf, sizeof(buf), "%s/usr/bin/nvidia-cuda-mps-control", t->root);
	assert_mps_limits(buf, mpsroot);
	/* a tmpfs of its own for /dev/shm */
	snprintf(shm, sizeof(shm), "%s/0/shm", mpsroot);
	assert_int_equal(stat(shm, &st), 0);
	assert_int_equal(stat(mpsroot, &parent), 0);
	assert_true(st.st_dev != parent.st_dev);
	/* ... which is the daemon's /dev/shm, in a mount namespace of its own (control.log names its pid) */
	{
		_cleanup_free_ char *clog = NULL;
		char proc[64];
		struct stat ds, host;
		const char *at;

		snprintf(buf, sizeof(buf), "%s/0/log/control.log", mpsroot);
		assert_non_null(clog = slurp(buf));
		assert_non_null(at = strstr(clog, "Control "));
		snprintf(proc, sizeof(proc), "/proc/%d/root/dev/shm", atoi(at + 8));
		assert_int_equal(stat(proc, &ds), 0);
		assert_int_equal(stat("/dev/shm", &host), 0);
		assert_true(ds.st_dev == st.st_dev && ds.st_ino == st.st_ino);
		assert_true(host.st_dev != st.st_dev);
	}
	/* the claim's device: the pipe dir and /dev/shm mounted, CUDA_MPS_PIPE_DIRECTORY (NVIDIA's edits) */
	spec = read_spec(t, "m1");
	edits = json_object_get(json_array_get(json_object_get(spec, "devices"), 0), "containerEdits");
	assert_true(has_string(json_object_get(edits, "env"), "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"));
	assert_true(has_mount(json_object_get(edits, "mounts"), PLUGIN_DIR "/mps/0/shm", "/dev/shm"));
	assert_true(has_mount(json_object_get(edits, "mounts"), PLUGIN_DIR "/mps/0/pipe", "/tmp/nvidia-mps"));
	json_decref(spec);
	/* a running daemon is left alone; a dead one (the plugin's container restarted) is started again
	 * with the claim's limits, answering on the pipe dir the pod was given */
	snprintf(buf, sizeof(buf), "%s/usr/bin/nvidia-cuda-mps-control", t->root);
	assert_int_equal(dra_prepare_revive(&t->p, NULL, NULL), 0);
	assert_int_equal(mps_control(buf, mpsroot, "0", "quit", out, sizeof(out), &err), 0);
	for (int i = 0; i < 50 && mps_control(buf, mpsroot, "0", MPS_QUERY, out, sizeof(out), NULL) == 0; i++)
		usleep(100 * 1000);
	assert_int_not_equal(mps_control(buf, mpsroot, "0", MPS_QUERY, out, sizeof(out), NULL), 0);
	assert_int_equal(dra_prepare_revive(&t->p, NULL, NULL), 1);
	assert_mps_limits(buf, mpsroot);
	/* unprepare: the daemon quits, DEFAULT again, the tmpfs and the dirs gone */
	assert_int_equal(shf("rm -f %s/smi.calls", t->dir), 0);
	assert_int_equal(dra_unprepare(&t->p, "m1", &err), 0);
	snprintf(want, sizeof(want), "-i %s -c DEFAULT\n", gpu);
	assert_string_equal(smi_calls(t, buf, sizeof(buf)), want);
	snprintf(buf, sizeof(buf), "%s/0", mpsroot);
	assert_int_equal(access(buf, F_OK), -1);
	json_decref(ans);
}

/* ---- the real wire: the daemon here, kubelet in Python ---- */

static int source_get(void *data, const char *ns, const char *name, json_t **ret, struct gerr *err)
{
	char key[256];
	json_t *c;

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if (!(c = json_object_get(data, key)))
		return gerr_set(err, ENOENT, "resourceclaims \"%s\" not found", name);
	*ret = json_incref(c);
	return 0;
}

static int publish(void *data, const json_t *slices, int64_t *ret_generation, struct gerr *err)
{
	(void)err;
	*ret_generation = 1;
	return json_array_extend(data, (json_t *)slices) < 0 ? -ENOMEM : (int)json_array_size(slices);
}

/* dra_standin.py VERB SOCK VERSION CLAIMS -> its JSON answer */
static json_t *standin(const char *verb, const char *sock, const char *version, const char *claims)
{
	char cmd[4096], out[16384];
	size_t n;
	json_error_t je;
	json_t *j;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/integration/dra_standin.py %s %s %s '%s'",
		 getenv("GPULET_SRC"), verb, sock, version ? version : "", claims ? claims : "");
	assert_non_null(p = popen(cmd, "r"));
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	assert_int_equal(pclose(p), 0);
	if (!(j = json_loads(out, 0, &je)))
		fail_msg("%s: %s", cmd, out);
	return j;
}

static void test_wire(void **state)
{
	struct t *t = *state;
	json_t *claims = json_object(), *published = json_array(), *info, *r, *one, *spec;
	struct dra_claim_source src = {.get = source_get, .data = claims};
	struct dra_slice_publisher pub = {.publish = publish, .fd = -1, .data = published};
	sigset_t stop;
	struct dra_daemon *d = NULL;
	char reg[600], sock[600];

	json_object_set_new(claims, "team/good", claim("9d9d-1", "good", NULL, "gpu", GPU0, NULL));
	json_object_set_new(claims, "team/bad", claim("9d9d-2", "bad", ts_config("Sometimes"), "gpu", MIG0, NULL));
	assert_int_equal(shf("mkdir -p %s/var/lib/kubelet/plugins_registry", t->root), 0);
	dra_checkpoint_free(t->cp); /* the daemon opens its own */
	t->cp = NULL;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	assert_int_equal(dra_daemon_start(&(struct dra_daemon_options){.driver = "gpu.nvidia.com",
								       .node_name = "node-a",
								       .registry_dir = DRA_REGISTRY_DEFAULT,
								       .plugins_dir = DRA_PLUGINS_DEFAULT,
								       .cdi_root = CDI_DIR,
								       .hook_path = "/usr/bin/gpulet-cdi-hook",
								       .host = t->hp_lib,
								       .gates = {true, true},
								       .claims = &src,
								       .publisher = &pub},
					  &stop, &d),
			 0);
	/* the pool went to the publisher: this node's 8 devices (gpu-0 and seven MIG devices) */
	assert_int_equal(json_array_size(published), 1);
	spec = json_object_get(json_array_get(published, 0), "spec");
	assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), "node-a");
	assert_int_equal(json_array_size(json_object_get(spec, "devices")), 8);
	json_decref(published);
	snprintf(reg, sizeof(reg), "%s" DRA_REGISTRY_DEFAULT "/gpu.nvidia.com-reg.sock", t->root);
	snprintf(sock, sizeof(sock), "%s" PLUGIN_DIR "/dra.sock", t->root);
	info = standin("info", reg, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(info, "type")), "DRAPlugin");
	assert_string_equal(json_string_value(json_object_get(info, "endpoint")), PLUGIN_DIR "/dra.sock");
	json_decref(info);

	/* three claims in one call: each answered on its own */
	r = standin("prepare", sock, "v1",
		    "[{\"namespace\": \"team\", \"name\": \"good\", \"uid\": \"9d9d-1\"}, "
		    "{\"namespace\": \"team\", \"name\": \"bad\", \"uid\": \"9d9d-2\"}, "
		    "{\"namespace\": \"team\", \"name\": \"absent\", \"uid\": \"9d9d-3\"}]");
	assert_int_equal(json_object_size(r), 3);
	one = json_object_get(r, "9d9d-1");
	assert_string_equal(json_string_value(json_object_get(one, "error")), "");
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(json_object_get(one, "devices"), 0), "device_name")),
	    GPU0);
	assert_string_equal(
	    json_string_value(json_array_get(
		json_object_get(json_array_get(json_object_get(one, "devices"), 0), "cdi_device_ids"), 0)),
	    "k8s.gpu.nvidia.com/claim=9d9d-1-gpu-0");
	assert_string_equal(
	    json_string_value(json_array_get(
		json_object_get(json_array_get(json_object_get(one, "devices"), 0), "request_names"), 0)),
	    "gpu");
	/* a GpuConfig named for a MIG device, a claim the API does not have: their errors, no devices */
	one = json_object_get(r, "9d9d-2");
	assert_non_null(strstr(json_string_value(json_object_get(one, "error")), "ResourceClaim team/bad:"));
	assert_int_equal(json_array_size(json_object_get(one, "devices")), 0);
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "9d9d-3"), "error")),
			       "resourceclaims \"absent\" not found"));
	json_decref(r);
	assert_true(spec_exists(t, "9d9d-1"));
	/* kubelet 1.32/1.33 speak v1beta1: the same answer for a prepared claim */
	r = standin("prepare", sock, "v1beta1", "[{\"namespace\": \"team\", \"name\": \"good\", \"uid\": \"9d9d-1\"}]");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "9d9d-1"), "error")), "");
	json_decref(r);
	r = standin("unprepare", sock, "v1beta1",
		    "[{\"namespace\": \"team\", \"name\": \"good\", \"uid\": \"9d9d-1\"}, "
		    "{\"namespace\": \"team\", \"name\": \"absent\", \"uid\": \"9d9d-3\"}]");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "9d9d-1"), "error")), "");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "9d9d-3"), "error")), "");
	json_decref(r);
	assert_false(spec_exists(t, "9d9d-1"));
	dra_daemon_stop(d);
	/* the sockets are gone with it */
	assert_int_equal(access(sock, F_OK), -1);
	assert_int_equal(access(reg, F_OK), -1);
	json_decref(claims);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_prepare_unprepare, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_keeps_prepared, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_claim_per_device, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_claims, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeslicing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_checkpoint_writes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeslicing_fails_cleanly, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_half_prepared_undone_at_start, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reboot, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stale_allocation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wire, setup, teardown),
	};

	/* as in the daemon (util/loop.h): a control binary that exits before reading its command (the MPS
	 * daemon just quit) is an EPIPE to mps_run, not the death of this process */
	signal(SIGPIPE, SIG_IGN);

	/* a private mount namespace: the MPS test's tmpfs and binds end with this process */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("unshare/mount (this test needs root)");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
