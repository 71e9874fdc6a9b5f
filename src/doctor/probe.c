/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet probe: the field guide's in-container check (§3.3: "ls /dev/nvidia*, ldconfig -p | grep
 * nvidia", then does CUDA start) as a chain: device nodes → driver libraries → cuInit → CUDA
 * version. Each failure is explained in the guide's words, and a later failure that an earlier one
 * explains is not reported again.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "util/fileio.h"

#define WHY_NO_GPU                                                                                                \
	"the container did not get a GPU: the pod has no runtimeClassName (or its RuntimeClass handler is not a " \
	"containerd runtime), CDI is off or its spec was not injected, or nvidia.com/gpu is not in "              \
	"resources.limits"

/* open() errors that mean "no kernel driver behind this node" rather than "not allowed". */
static bool no_driver_errno(int e)
{
	return e == ENXIO || e == ENODEV;
}

static bool is_gpu_node(const char *n)
{
	return !strncmp(n, "nvidia", 6) && n[6] >= '0' && n[6] <= '9';
}

static int is_probed_node(const struct dirent *de)
{
	return is_gpu_node(de->d_name) || streq(de->d_name, "nvidiactl") || streq(de->d_name, "nvidia-uvm");
}

/* The order the evidence names the nodes in: the GPUs by number (nvidia2 before nvidia10), then the others. */
static int node_order(const struct dirent **a, const struct dirent **b)
{
	bool ga = is_gpu_node((*a)->d_name), gb = is_gpu_node((*b)->d_name);

	if (ga != gb)
		return ga ? -1 : 1;
	return ga ? strverscmp((*a)->d_name, (*b)->d_name) : strcmp((*a)->d_name, (*b)->d_name);
}

static void free_nodes(struct dirent **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

static int check_nodes(struct doctor_ctx *c)
{
	_cleanup_free_ char *dev = doctor_path(c, "/dev");
	const char *vis = c->o->visible_devices;
	struct doctor_finding *missing = NULL, *perm = NULL, *nodrv = NULL;
	struct dirent **list = NULL;
	size_t n_gpus = 0;
	int n;

	if (!dev)
		return -ENOMEM;
	n = scandir(dev, &list, is_probed_node, node_order);
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		_cleanup_free_ char *p = NULL;
		int fd;

		n_gpus += is_gpu_node(name);
		if (asprintf(&p, "%s/%s", dev, name) < 0) {
			free_nodes(list, n);
			return -ENOMEM;
		}
		fd = open(p, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (no_driver_errno(errno)) {
			if (!nodrv)
				nodrv = doctor_report(
				    c, "probe.driver-not-loaded", DOCTOR_FAIL, LINK_DRIVER,
				    "on the node: lsmod | grep nvidia, dmesg | grep -i -e NVRM -e Xid, gpulet doctor; "
				    "load "
				    "the driver (modprobe nvidia) or reboot after a driver upgrade",
				    "the GPU device nodes are in this container but no NVIDIA kernel driver answers "
				    "behind "
				    "them: the driver is not loaded on the node, or the GPU fell off the bus");
			doctor_evidence(nodrv, "open /dev/%s: %s", name, strerror(errno));
			continue;
		}
		if (errno != EACCES && errno != EPERM)
			continue;
		if (!perm)
			perm = doctor_report(c, "probe.devnode-permission", DOCTOR_FAIL, LINK_DEVNODE,
					     "run as root, add the device group to securityContext.supplementalGroups, "
					     "or make the node's /dev/nvidia* 0666 (NVreg_DeviceFileMode=0666)",
					     "the GPU device nodes are here but this user cannot open them: a non-root "
					     "container and /dev/nvidia* 0660 root:root (\"No devices were found\")");
		doctor_evidence(perm, "open /dev/%s as uid %u: %s", name, (unsigned)geteuid(), strerror(errno));
	}
	free_nodes(list, n);
	if (!n_gpus) {
		missing = doctor_report(c, "probe.no-device-nodes", DOCTOR_FAIL, LINK_DEVNODE,
					"kubectl get pod -o yaml | grep runtimeClassName; check resources.limits has "
					"nvidia.com/gpu; on the node run gpulet doctor",
					"no /dev/nvidia<N> in this container: %s", WHY_NO_GPU);
		doctor_evidence(missing, "ls /dev/nvidia*: no GPU device node under %s", dev);
		if (vis)
			doctor_evidence(missing, "NVIDIA_VISIBLE_DEVICES=%s%s", vis,
					streq(vis, "void") || streq(vis, "none") || !*vis ? " (asks for no GPU)" : "");
	}
	return 0;
}

static void *open_lib(const char *name, char *err, size_t size)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		snprintf(err, size, "%s", dlerror());
	return h;
}

static int check_libraries(struct doctor_ctx *c)
{
	const char *cuda = c->o->cuda_library ? c->o->cuda_library : "libcuda.so.1";
	const char *nvml = c->o->host && c->o->host->nvml_library ? c->o->host->nvml_library : "libnvidia-ml.so.1";
	char err[512];
	void *h;
	struct doctor_finding *f;

	h = open_lib(cuda, err, sizeof(err));
	if (!h) {
		f = doctor_report(
		    c, "probe.libcuda-missing", DOCTOR_FAIL, LINK_TOOLKIT,
		    "on the node: gpulet versions (toolkit vs driver), gpulet doctor --only toolkit,cdi; "
		    "regenerate the CDI spec after a driver upgrade",
		    "libcuda.so.1 is not resolvable by the dynamic linker: the driver libraries were not "
		    "injected (toolkit older than the driver's library layout, or a CDI spec without them)");
		doctor_evidence(f, "dlopen(%s): %s", cuda, err);
		return 0;
	}
	dlclose(h);
	h = open_lib(nvml, err, sizeof(err));
	if (!h) {
		f = doctor_report(c, "probe.nvml-missing", DOCTOR_WARN, LINK_TOOLKIT,
				  "add the utility capability: NVIDIA_DRIVER_CAPABILITIES=compute,utility",
				  "libnvidia-ml.so.1 is missing: CUDA may work but nvidia-smi cannot");
		doctor_evidence(f, "dlopen(%s): %s", nvml, err);
		return 0;
	}
	dlclose(h);
	return 0;
}

/*
 * CUresult values (CUDA Driver API reference, enum cudaError_enum), what they mean once the device nodes
 * are known to be here and openable (cuinit runs only then), and which link of the chain is at fault.
 */
static const struct {
	int code;
	const char *name;
	enum doctor_link link;
	const char *meaning;
} cu_results[] = {
    {3, "CUDA_ERROR_NOT_INITIALIZED", LINK_DRIVER, "the driver could not be initialised"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", LINK_VERSIONS,
     "CUDA driver version is insufficient for CUDA runtime version: the driver is older than the image needs"},
    {100, "CUDA_ERROR_NO_DEVICE", LINK_DRIVER,
     "no CUDA-capable device is detected although the device nodes open: CUDA_VISIBLE_DEVICES hides them, or "
     "the node's kernel driver does not see the GPU"},
    {101, "CUDA_ERROR_INVALID_DEVICE", LINK_DEVNODE,
     "the visible devices are invalid (NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", LINK_DEVNODE,
     "an OS call failed: usually /dev/nvidia-uvm missing or not openable in the container"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", LINK_DRIVER,
     "the container's libcuda and the node's kernel module are different versions (stale compat libraries or a "
     "driver upgrade without reboot)"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", LINK_TOOLKIT,
     "forward-compatibility libraries in the image do not support this GPU: use an image for the node's CUDA"},
    {999, "CUDA_ERROR_UNKNOWN", LINK_DRIVER, "unknown error: check the node's kernel log for XIDs (gpulet doctor)"},
};

struct cuda_api {
	int (*init)(unsigned);
	int (*driver_version)(int *);
};

/* dlopen libcuda and resolve what probe calls; 0 with *ret_h, or -ENOENT (not loadable) / -ENOSYS (not libcuda). */
static int cuda_open(const char *path, void **ret_h, struct cuda_api *api, char *err, size_t size)
{
	void *h = open_lib(path, err, size);

	if (!h)
		return -ENOENT;
	*(void **)&api->init = dlsym(h, "cuInit");
	*(void **)&api->driver_version = dlsym(h, "cuDriverGetVersion");
	if (!api->init || !api->driver_version) {
		snprintf(err, size, "%s", dlerror());
		dlclose(h);
		return -ENOSYS;
	}
	*ret_h = h;
	return 0;
}

static const char *cuda_path(const struct doctor_ctx *c)
{
	return c->o->cuda_library ? c->o->cuda_library : "libcuda.so.1";
}

static int check_cuinit(struct doctor_ctx *c)
{
	const char *cuda = cuda_path(c), *name = "CUresult", *meaning = "cuInit failed";
	enum doctor_link link = LINK_DRIVER;
	struct cuda_api api;
	char err[512];
	void *h;
	int r, v = 0;
	struct doctor_finding *f;

	r = cuda_open(cuda, &h, &api, err, sizeof(err));
	if (r == -ENOENT) {
		doctor_skip(c, "%s did not load", cuda);
		return 0;
	}
	if (r < 0) {
		f = doctor_report(c, "probe.libcuda-broken", DOCTOR_FAIL, LINK_TOOLKIT,
				  "the injected libcuda is not a CUDA driver library: check the CDI spec's mounts",
				  "libcuda.so.1 lacks cuInit/cuDriverGetVersion");
		doctor_evidence(f, "dlsym in %s: %s", cuda, err);
		return 0;
	}
	r = api.init(0);
	if (api.driver_version(&v) == 0 && v > 0)
		c->node_cuda = v;
	dlclose(h);
	if (r == 0)
		return 0;
	for (size_t k = 0; k < ELEMENTSOF(cu_results); k++)
		if (cu_results[k].code == r) {
			name = cu_results[k].name;
			meaning = cu_results[k].meaning;
			link = cu_results[k].link;
		}
	f = doctor_report(c, "probe.cuinit-failed", DOCTOR_FAIL, link,
			  r == 35 ? "use an image built for the node's CUDA, or upgrade the node's driver"
				  : "run gpulet doctor on the node to find the broken link",
			  "cuInit(0) failed with %s (%d): %s", name, r, meaning);
	doctor_evidence(f, "cuInit(0) = %d in %s", r, cuda);
	return 0;
}

/* The driver's CUDA version: cuDriverGetVersion answers without a device, so ask it if cuinit did not run. */
static int driver_cuda(struct doctor_ctx *c)
{
	struct cuda_api api;
	char err[512];
	void *h;
	int v = 0;

	if (c->node_cuda || cuda_open(cuda_path(c), &h, &api, err, sizeof(err)) < 0)
		return c->node_cuda;
	if (api.driver_version(&v) == 0 && v > 0)
		c->node_cuda = v;
	dlclose(h);
	return c->node_cuda;
}

static int check_cuda_version(struct doctor_ctx *c)
{
	const char *want = c->o->cuda_version; /* CUDA_VERSION, set by nvidia/cuda images */
	char why[512], have[16];
	int cuda;
	struct doctor_finding *f;

	if (!want) {
		doctor_skip(c, "CUDA_VERSION is not set in this container (nvidia/cuda images set it): no CUDA to "
			       "compare with the driver's");
		return 0;
	}
	if (cuda_version_parse(want, &cuda) < 0) {
		doctor_skip(c, "CUDA_VERSION=%s is not a CUDA version", want);
		return 0;
	}
	if (!driver_cuda(c)) {
		doctor_skip(c, "cuDriverGetVersion in %s gave no version", cuda_path(c));
		return 0;
	}
	cuda_version_format(c->node_cuda, have, sizeof(have));
	switch (cuda_check(cuda, c->node_cuda, NULL, why, sizeof(why))) {
	case CUDA_OK:
		doctor_report(c, "probe.cuda-version.ok", DOCTOR_OK, LINK_VERSIONS, NULL,
			      "the driver supports CUDA %s, the image has CUDA_VERSION=%s", have, want);
		return 0;
	case CUDA_UNKNOWN:
		doctor_skip(c, "CUDA %s or the driver's CUDA %s is not in gpulet's CUDA/driver table", want, have);
		return 0;
	default:
		f = doctor_report(c, "probe.cuda-driver-too-old", DOCTOR_FAIL, LINK_VERSIONS,
				  "use an image built for CUDA <= the driver's (nvidia-smi shows it), or upgrade the "
				  "node's driver",
				  "the image's CUDA %s is newer than the driver's CUDA %s: \"CUDA driver version is "
				  "insufficient for CUDA runtime version\" (the driver is installed, just too old)",
				  want, have);
		doctor_evidence(f, "CUDA_VERSION=%s, cuDriverGetVersion=%d", want, c->node_cuda);
		doctor_evidence(f, "%s", why);
		return 0;
	}
}

const struct doctor_check probe_checks[] = {
    {"devnodes", LINK_DEVNODE, 0, "/dev/nvidia*, opened read-write",
     "probe.no-device-nodes probe.devnode-permission probe.driver-not-loaded", check_nodes},
    {"libraries", LINK_TOOLKIT, 0, "dlopen libcuda.so.1, libnvidia-ml.so.1", "probe.libcuda-missing probe.nvml-missing",
     check_libraries},
    {"cuinit", LINK_DRIVER, L(LINK_DRIVER) | L(LINK_DEVNODE) | L(LINK_TOOLKIT), "cuInit(0), cuDriverGetVersion",
     "probe.cuinit-failed probe.libcuda-broken", check_cuinit},
    {"cuda", LINK_VERSIONS, L(LINK_TOOLKIT), "CUDA_VERSION vs the driver's CUDA", "probe.cuda-driver-too-old",
     check_cuda_version},
};
const size_t probe_n_checks = ELEMENTSOF(probe_checks);
