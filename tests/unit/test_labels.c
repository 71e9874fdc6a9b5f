/* SPDX-License-Identifier: Apache-2.0 */
/* GFD-compatible labels from hand-made nodes (golden files per fixture live in tests/golden/labels). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "labels/labels.h"

static struct node_mig migs[4];
static struct node_gpu gpus[2];
static struct node nd;

static void mig(struct node_mig *m, const char *profile, unsigned gi_slices, uint64_t mb, const char *uuid)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->profile, sizeof(m->profile), "%s", profile);
	snprintf(m->uuid, sizeof(m->uuid), "%s", uuid);
	m->gi_slices = m->ci_slices = gi_slices;
	m->memory_mb = mb;
	m->multiprocessors = 14 * gi_slices; /* A100 `nvidia-smi mig -lgip`: 14 SMs, 1 copy engine per slice */
	m->engines_copy = gi_slices;
	m->engines_decoder = gi_slices > 1 ? gi_slices - 1 : 0;
}

/* Two A100-40GB; GPU 1 has MIG on with 1g.5gb ×3 + 3g.20gb ×1 unless uniform. */
static void a100_node(bool mig_on, bool uniform)
{
	memset(&nd, 0, sizeof(nd));
	memset(gpus, 0, sizeof(gpus));
	snprintf(nd.driver_version, sizeof(nd.driver_version), "550.54.15");
	nd.cuda_driver_version = 12040;
	for (unsigned i = 0; i < 2; i++) {
		gpus[i].index = i;
		snprintf(gpus[i].name, sizeof(gpus[i].name), "NVIDIA A100-SXM4-40GB");
		gpus[i].memory_total = 40960ull * 1048576;
		gpus[i].cc_major = 8;
		gpus[i].cc_minor = 0;
		gpus[i].mig_capable = true;
	}
	mig(&migs[0], "1g.5gb", 1, 4864, "MIG-0");
	mig(&migs[1], "1g.5gb", 1, 4864, "MIG-1");
	mig(&migs[2], "1g.5gb", 1, 4864, "MIG-2");
	if (uniform)
		mig(&migs[3], "1g.5gb", 1, 4864, "MIG-3");
	else
		mig(&migs[3], "3g.20gb", 3, 19968, "MIG-3");
	gpus[1].mig_enabled = mig_on;
	gpus[1].migs = mig_on ? migs : NULL;
	gpus[1].n_migs = mig_on ? 4 : 0;
	nd.gpus = gpus;
	nd.n_gpus = 2;
}

static struct labels_host host;

static struct label_set *build(const struct labels_options *o)
{
	struct label_set *s = NULL;
	struct gerr err = {0};
	assert_int_equal(labels_build(&nd, o, &host, &s, &err), 0);
	return s;
}

/* A time-slicing or MPS config with one resource, as the shared v1 file's walker gives it. */
static struct labels_options shared(enum sharing_strategy st, const char *name, unsigned replicas, bool rename)
{
	struct labels_options o = {.sharing = {.strategy = st, .n_rules = 1, .rename_by_default = rename}};

	snprintf(o.sharing.rules[0].name, sizeof(o.sharing.rules[0].name), "%s", name);
	o.sharing.rules[0].replicas = replicas;
	return o;
}

#define L(key) labels_get(s, "nvidia.com/" key)

static void test_plain_gpus(void **state)
{
	a100_node(false, false);
	struct labels_options o = {.timestamp = true, .now = 1724632719};
	char machine[] = "  DGX  A100 (x)\n";
	host = (struct labels_host){.machine = machine, .gpu_mode = "compute"};
	_cleanup_(label_set_freep) struct label_set *s = build(&o);
	host = (struct labels_host){0};
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB");
	assert_string_equal(L("gpu.count"), "2");
	assert_string_equal(L("gpu.memory"), "40960");
	assert_string_equal(L("gpu.family"), "ampere");
	assert_string_equal(L("gpu.compute.major"), "8");
	assert_string_equal(L("gpu.compute.minor"), "0");
	assert_string_equal(L("gpu.replicas"), "1");
	assert_string_equal(L("gpu.sharing-strategy"), "none");
	assert_string_equal(L("gpu.machine"), "DGX-A100-x");
	assert_string_equal(L("cuda.driver-version.full"), "550.54.15");
	assert_string_equal(L("cuda.driver-version.major"), "550");
	assert_string_equal(L("cuda.driver-version.minor"), "54");
	assert_string_equal(L("cuda.driver-version.revision"), "15");
	assert_string_equal(L("cuda.driver.rev"), "15");
	assert_string_equal(L("cuda.runtime-version.full"), "12.4");
	assert_string_equal(L("cuda.runtime-version.major"), "12");
	assert_string_equal(L("cuda.runtime-version.minor"), "4");
	assert_string_equal(L("mig.capable"), "true");
	assert_string_equal(L("mps.capable"), "false");
	assert_string_equal(L("gpu.mode"), "compute");
	assert_null(L("gpu.clique"));
	assert_null(L("vgpu.present")); /* the PCI scan was not done */
	assert_string_equal(L("gfd.timestamp"), "1724632719");
	assert_null(L("mig.strategy")); /* only when not none */
	assert_null(labels_get(s, "gpu-type"));
	for (size_t i = 1; i < s->n; i++) /* sorted, unique keys */
		assert_true(strcmp(s->v[i - 1].key, s->v[i].key) < 0);
}

static void test_mixed(void **state)
{
	a100_node(true, false);
	struct labels_options o = {.mig_strategy = MIG_STRATEGY_MIXED};
	_cleanup_(label_set_freep) struct label_set *s = build(&o);
	assert_string_equal(L("mig.strategy"), "mixed");
	assert_string_equal(L("mig-1g.5gb.count"), "3");
	assert_string_equal(L("mig-1g.5gb.memory"), "4864");
	assert_string_equal(L("mig-1g.5gb.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
	assert_string_equal(L("mig-1g.5gb.slices.gi"), "1");
	assert_string_equal(L("mig-1g.5gb.replicas"), "1");
	assert_string_equal(L("mig-3g.20gb.count"), "1");
	assert_string_equal(L("mig-3g.20gb.slices.ci"), "3");
	assert_string_equal(L("mig-3g.20gb.multiprocessors"), "42");
	assert_string_equal(L("mig-3g.20gb.engines.copy"), "3");
	assert_string_equal(L("mig-3g.20gb.engines.decoder"), "2");
	assert_string_equal(L("mig-3g.20gb.engines.encoder"), "0");
	assert_string_equal(L("mig-3g.20gb.engines.jpeg"), "0");
	assert_string_equal(L("mig-3g.20gb.engines.ofa"), "0");
	assert_string_equal(L("mig-1g.5gb.sharing-strategy"), "none");
	/* GFD counts every GPU of the model, the MIG-enabled one too (issue 15: dgx-a100 mixed = 8) */
	assert_string_equal(L("gpu.count"), "2");
	assert_string_equal(L("gpu.replicas"), "1");
	assert_string_equal(L("gpu.machine"), "unknown"); /* no DMI file */
	assert_string_equal(L("gpu.mode"), "unknown");    /* no PCI class read */
	assert_null(L("gfd.timestamp"));
}

static void test_single_valid_and_invalid(void **state)
{
	a100_node(true, true);
	gpus[0].mig_enabled = true; /* single needs every GPU in MIG mode */
	gpus[0].migs = &migs[3];
	gpus[0].n_migs = 1;
	gpus[1].n_migs = 3;
	struct labels_options o = {.mig_strategy = MIG_STRATEGY_SINGLE};
	struct label_set *s = build(&o);
	assert_string_equal(L("mig.strategy"), "single");
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
	assert_string_equal(L("gpu.count"), "4");
	assert_string_equal(L("gpu.memory"), "4864");
	assert_string_equal(L("gpu.slices.gi"), "1");
	label_set_free(s);

	a100_node(true, false); /* two profiles, and GPU 0 not in MIG mode */
	snprintf(gpus[0].name, sizeof(gpus[0].name), "Tesla T4");
	gpus[0].mig_capable = false;
	gpus[0].cc_major = 7;
	gpus[0].cc_minor = 5;
	s = build(&o);
	/* the model of the first MIG-enabled GPU, not of GPU 0 */
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
	assert_string_equal(L("gpu.count"), "0");
	assert_string_equal(L("gpu.replicas"), "0");
	assert_string_equal(L("gpu.memory"), "0");
	assert_string_equal(L("gpu.sharing-strategy"), ""); /* "" here, "none" everywhere else (GFD) */
	assert_string_equal(L("gpu.family"), "turing");     /* from the whole-GPU labels underneath */
	label_set_free(s);

	a100_node(true, true); /* every GPU in MIG mode, one of them empty */
	gpus[0].mig_enabled = true;
	s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
	label_set_free(s);

	a100_node(false, false); /* single with no MIG at all: plain GPU labels */
	s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB");
	assert_string_equal(L("gpu.count"), "2");
	label_set_free(s);
}

static void test_sharing(void **state)
{
	a100_node(false, false);
	struct labels_options o = shared(SHARING_TIME_SLICING, "nvidia.com/gpu", 4, false);
	struct label_set *s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB-SHARED");
	assert_string_equal(L("gpu.replicas"), "4");
	assert_string_equal(L("gpu.sharing-strategy"), "time-slicing");
	label_set_free(s);
	/* renameByDefault: the resource is nvidia.com/gpu.shared, the labels stay nvidia.com/gpu.* (GFD) */
	o.sharing.rename_by_default = true;
	s = build(&o);
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB");
	assert_string_equal(L("gpu.replicas"), "4");
	assert_string_equal(L("gpu.sharing-strategy"), "time-slicing");
	assert_null(L("gpu.shared.product"));
	label_set_free(s);
	o = shared(SHARING_MPS, "nvidia.com/gpu", 4, false);
	s = build(&o);
	assert_string_equal(L("mps.capable"), "true");
	assert_string_equal(L("gpu.sharing-strategy"), "mps");
	label_set_free(s);

	/* replicas only for the resources the config names */
	a100_node(true, false);
	struct labels_options m = shared(SHARING_TIME_SLICING, "nvidia.com/mig-1g.5gb", 2, false);
	m.mig_strategy = MIG_STRATEGY_MIXED;
	s = build(&m);
	assert_string_equal(L("mig-1g.5gb.replicas"), "2");
	assert_string_equal(L("mig-1g.5gb.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
	assert_string_equal(L("mig-1g.5gb.sharing-strategy"), "time-slicing");
	assert_string_equal(L("mig-3g.20gb.replicas"), "1");
	assert_string_equal(L("mig-3g.20gb.sharing-strategy"), "none");
	assert_string_equal(L("gpu.replicas"), "1");
	assert_string_equal(L("gpu.product"), "NVIDIA-A100-SXM4-40GB");
	label_set_free(s);

	/* MPS with a MIG-enabled GPU: GFD refuses to label at all */
	m = shared(SHARING_MPS, "nvidia.com/gpu", 2, false);
	struct gerr err = {0};
	s = NULL;
	assert_int_equal(labels_build(&nd, &m, NULL, &s, &err), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err.msg, "MIG"));
}

static void test_profile_names_and_clique(void **state)
{
	a100_node(true, true);
	snprintf(migs[0].profile, sizeof(migs[0].profile), "1g.10gb+me");
	struct labels_options o = {.mig_strategy = MIG_STRATEGY_MIXED};
	struct label_set *s = build(&o);
	assert_string_equal(L("mig-1g.10gb.me.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.10gb.me");
	assert_null(labels_get(s, "nvidia.com/mig-1g.10gb+me.count"));
	assert_null(L("gpu.clique"));
	label_set_free(s);

	static const unsigned char cu[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
					     0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	for (unsigned i = 0; i < 2; i++) {
		gpus[i].fabric_known = true;
		gpus[i].fabric_state = NVML_GPU_FABRIC_STATE_COMPLETED;
		gpus[i].fabric_status = NVML_SUCCESS;
		gpus[i].fabric_clique = 32766;
		memcpy(gpus[i].fabric_cluster_uuid, cu, 16);
	}
	s = build(&o);
	assert_string_equal(L("gpu.clique"), "12345678-9abc-def0-0123-456789abcdef.32766");
	label_set_free(s);
	gpus[1].fabric_state = NVML_GPU_FABRIC_STATE_IN_PROGRESS; /* not attached: the other one decides */
	s = build(&o);
	assert_string_equal(L("gpu.clique"), "12345678-9abc-def0-0123-456789abcdef.32766");
	label_set_free(s);
	gpus[1].fabric_state = NVML_GPU_FABRIC_STATE_COMPLETED;
	gpus[1].fabric_clique = 1; /* two cliques: no label */
	s = build(&o);
	assert_null(L("gpu.clique"));
	label_set_free(s);
}

/* A config space with a vendor capability at 0x60 behind a power-management one at 0x40. */
static void pci_config(uint8_t cfg[256], const char *version, const char *branch)
{
	memset(cfg, 0, 256);
	cfg[0x06] = 0x10;
	cfg[0x34] = 0x40;
	cfg[0x40] = 0x01;
	cfg[0x41] = 0x60;
	uint8_t *c = cfg + 0x60;
	c[0] = 0x09;
	c[2] = 5 + 2 + 20;
	c[3] = 'V';
	c[4] = 'F';
	c[5] = 0;
	c[6] = 22;
	memcpy(c + 7, version, strlen(version));
	memcpy(c + 17, branch, strlen(branch));
}

static void test_vgpu(void **state)
{
	uint8_t cfg[256];
	char v[16], b[16];
	struct gerr err = {0};

	pci_config(cfg, "535.54.03", "r535_00");
	assert_int_equal(labels_vgpu_parse(cfg, sizeof(cfg), v, sizeof(v), b, sizeof(b), &err), 1);
	assert_string_equal(v, "535.54.03");
	assert_string_equal(b, "r535_00");
	assert_int_equal(labels_vgpu_parse(cfg, 64, v, sizeof(v), b, sizeof(b), &err), -EINVAL); /* unprivileged read */
	assert_non_null(strstr(err.msg, "privilege"));
	cfg[0x63] = 'X'; /* not the vGPU signature: a passthrough GPU */
	assert_int_equal(labels_vgpu_parse(cfg, sizeof(cfg), v, sizeof(v), b, sizeof(b), &err), 0);
	pci_config(cfg, "535.54.03", "r535_00");
	cfg[0x65] = 7; /* a record that is not the driver's, of length 0: malformed */
	cfg[0x66] = 0;
	assert_int_equal(labels_vgpu_parse(cfg, sizeof(cfg), v, sizeof(v), b, sizeof(b), &err), -EINVAL);
	cfg[0x41] = 0x40; /* a capability list that loops */
	cfg[0x40] = 0x01;
	assert_int_equal(labels_vgpu_parse(cfg, sizeof(cfg), v, sizeof(v), b, sizeof(b), &err), 0);
	cfg[0x41] = 0xfd; /* a vendor capability in the last three bytes: its signature lies past the space */
	cfg[0xfd] = 0x09;
	cfg[0xff] = 0x20;
	assert_int_equal(labels_vgpu_parse(cfg, sizeof(cfg), v, sizeof(v), b, sizeof(b), &err), 0);

	a100_node(false, false);
	struct labels_options o = {0};
	host = (struct labels_host){.vgpu_known = true,
				    .n_vgpu = 1,
				    .vgpu_host_driver_version = "535.54.03",
				    .vgpu_host_driver_branch = "r535_00"};
	struct label_set *s = build(&o);
	assert_string_equal(L("vgpu.present"), "true");
	assert_string_equal(L("vgpu.host-driver-version"), "535.54.03");
	assert_string_equal(L("vgpu.host-driver-branch"), "r535_00");
	label_set_free(s);
	host = (struct labels_host){.vgpu_known = true};
	s = build(&o);
	assert_string_equal(L("vgpu.present"), "false");
	assert_null(L("vgpu.host-driver-version"));
	label_set_free(s);
	host = (struct labels_host){0};
}

/* ---- labels_read_host on a fake root ---- */

static char root[64];

static void put(const char *rel, const void *data, size_t len)
{
	char path[256], *slash;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void pci_dev(const char *dev, const char *vendor, const char *class, const uint8_t *cfg, size_t cfg_len)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/vendor", dev);
	put(rel, vendor, strlen(vendor));
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/class", dev);
	put(rel, class, strlen(class));
	if (cfg) {
		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/config", dev);
		put(rel, cfg, cfg_len);
	}
}

static void test_read_host(void **state)
{
	struct labels_host h;
	uint8_t plain[256], vgpu[256];
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/gpulet-labels-unit.XXXXXX");
	assert_non_null(mkdtemp(root));
	a100_node(false, false);
	snprintf(gpus[0].pci_bus_id, sizeof(gpus[0].pci_bus_id), "00000000:07:00.0");
	snprintf(gpus[1].pci_bus_id, sizeof(gpus[1].pci_bus_id), "00000000:0F:00.0");

	labels_read_host(root, &nd, "/sys/class/dmi/id/product_name", &h); /* nothing there */
	assert_null(h.machine);
	assert_string_equal(h.gpu_mode, "unknown");
	assert_false(h.vgpu_known); /* no sys/bus/pci/devices: GFD's scan fails */
	labels_host_clear(&h);

	put("sys/class/dmi/id/product_name", "DGX H100\n", 9);
	pci_config(plain, "", "");
	plain[0x63] = 'X'; /* a vendor capability, not vGPU's */
	pci_dev("0000:07:00.0", "0x10de\n", "0x030200\n", plain, sizeof(plain));
	pci_dev("0000:0f:00.0", "0x10de\n", "0x030200\n", plain, sizeof(plain));
	pci_dev("0000:00:1f.0", "0x8086\n", "0x060100\n", NULL, 0); /* not NVIDIA: no config needed */
	labels_read_host(root, &nd, "/sys/class/dmi/id/product_name", &h);
	assert_string_equal(h.machine, "DGX H100\n");
	assert_string_equal(h.gpu_mode, "compute");
	assert_true(h.vgpu_known);
	assert_int_equal(h.n_vgpu, 0);
	labels_host_clear(&h);

	pci_dev("0000:0f:00.0", "0x10de\n", "0x030000\n", plain, sizeof(plain)); /* two classes */
	labels_read_host(root, &nd, NULL, &h);
	assert_null(h.machine);
	assert_string_equal(h.gpu_mode, "unknown");
	labels_host_clear(&h);

	pci_dev("0000:07:00.0", "0x10de\n", "0x030000\n", plain, sizeof(plain));
	pci_config(vgpu, "550.54.16", "r550_40");
	pci_dev("0000:0f:00.0", "0x10de\n", "0x030000\n", vgpu, sizeof(vgpu));
	labels_read_host(root, &nd, NULL, &h);
	assert_string_equal(h.gpu_mode, "graphics");
	assert_true(h.vgpu_known);
	assert_int_equal(h.n_vgpu, 1);
	assert_string_equal(h.vgpu_host_driver_version, "550.54.16");
	assert_string_equal(h.vgpu_host_driver_branch, "r550_40");
	labels_host_clear(&h);

	/* an unprivileged read (64 bytes): NVML's virtualization mode decides (issue 35 item 7) */
	pci_dev("0000:07:00.0", "0x10de\n", "0x030000\n", plain, 64);
	pci_dev("0000:0f:00.0", "0x10de\n", "0x030000\n", plain, 64);
	gpus[0].virt_mode = gpus[1].virt_mode = -1; /* NVML does not say: undecidable, the scan fails as GFD's */
	labels_read_host(root, &nd, NULL, &h);
	assert_false(h.vgpu_known);
	assert_int_equal(h.n_vgpu, 0);
	assert_non_null(strstr(h.vgpu_note, "0000:07:00.0"));
	labels_host_clear(&h);
	gpus[0].virt_mode = gpus[1].virt_mode = NVML_GPU_VIRTUALIZATION_MODE_NONE; /* bare metal */
	labels_read_host(root, &nd, NULL, &h);
	assert_true(h.vgpu_known);
	assert_int_equal(h.n_vgpu, 0);
	assert_string_equal(h.vgpu_note, "");
	labels_host_clear(&h);
	gpus[1].virt_mode = NVML_GPU_VIRTUALIZATION_MODE_VGPU; /* a vGPU guest: present, host driver unknown */
	labels_read_host(root, &nd, NULL, &h);
	assert_true(h.vgpu_known);
	assert_int_equal(h.n_vgpu, 1);
	assert_true(h.vgpu_host_unknown);
	assert_non_null(strstr(h.vgpu_note, "CAP_SYS_ADMIN"));
	labels_host_clear(&h);
	pci_dev("0000:07:00.1", "0x10de\n", "0x040300\n", plain, 64); /* its HDMI audio: never a vGPU */
	labels_read_host(root, &nd, NULL, &h);
	assert_true(h.vgpu_known);
	assert_int_equal(h.n_vgpu, 1);
	labels_host_clear(&h);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_custom_labels(void **state)
{
	a100_node(true, false);
	struct labels_options o = {.gpu_type = "auto", .gpu_mig = true};
	struct label_set *s = build(&o);
	assert_string_equal(labels_get(s, "gpu-type"), "a100");
	assert_string_equal(labels_get(s, "gpu-mig"), "enabled");
	label_set_free(s);
	snprintf(gpus[0].name, sizeof(gpus[0].name), "Tesla T4");
	a100_node(false, false);
	snprintf(gpus[0].name, sizeof(gpus[0].name), "Tesla T4");
	s = build(&o);
	assert_string_equal(labels_get(s, "gpu-type"), "t4");
	assert_string_equal(labels_get(s, "gpu-mig"), "disabled");
	label_set_free(s);
	o.gpu_type = "my type!";
	s = build(&o);
	assert_string_equal(labels_get(s, "gpu-type"), "my-type");
	label_set_free(s);
}

static void test_family_table(void **state)
{
	assert_string_equal(labels_gpu_family(7, 0), "volta");
	assert_string_equal(labels_gpu_family(7, 5), "turing");
	assert_string_equal(labels_gpu_family(8, 6), "ampere");
	assert_string_equal(labels_gpu_family(8, 9), "ada-lovelace");
	assert_string_equal(labels_gpu_family(9, 0), "hopper");
	assert_string_equal(labels_gpu_family(10, 0), "blackwell");
	assert_string_equal(labels_gpu_family(12, 0), "blackwell");
	assert_string_equal(labels_gpu_family(-1, -1), "undefined");
}

static void test_no_gpu_and_format(void **state)
{
	a100_node(false, false);
	snprintf(nd.driver_version, sizeof(nd.driver_version), "535.104.05");
	struct labels_options o = {.timestamp = true, .now = 1};
	struct label_set *s = build(&o);
	assert_string_equal(L("cuda.driver-version.revision"), "05");
	_cleanup_free_ char *text = NULL;
	assert_int_equal(labels_format(s, &text), 0);
	assert_non_null(strstr(text, "nvidia.com/cuda.driver-version.full=535.104.05\n"));
	/* issue 23 §8: key=value lines only, as GFD; NFD before v0.14 takes a '#' line for a label */
	assert_true(strncmp(text, "nvidia.com/", 11) == 0);
	assert_null(strstr(text, "\n#"));
	label_set_free(s);

	/* GFD: no GPU, no device labels at all (not even the driver's): only the timestamp and vGPU */
	nd.n_gpus = 0;
	host = (struct labels_host){.vgpu_known = true};
	s = build(&o);
	assert_int_equal(s->n, 2);
	assert_string_equal(L("gfd.timestamp"), "1");
	assert_string_equal(L("vgpu.present"), "false");
	label_set_free(s);
	host = (struct labels_host){0};
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_gpus),
	    cmocka_unit_test(test_mixed),
	    cmocka_unit_test(test_single_valid_and_invalid),
	    cmocka_unit_test(test_sharing),
	    cmocka_unit_test(test_profile_names_and_clique),
	    cmocka_unit_test(test_vgpu),
	    cmocka_unit_test(test_read_host),
	    cmocka_unit_test(test_custom_labels),
	    cmocka_unit_test(test_family_table),
	    cmocka_unit_test(test_no_gpu_and_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
