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

static int check_nodes(struct doctor_ctx *c)
{
	_cleanup_free_ char *dev = doctor_path(c, "/dev");
	const char *vis = getenv("NVIDIA_VISIBLE_DEVICES");
	struct doctor_finding *missing = NULL, *perm = NULL;
	size_t n_gpus = 0;
	DIR *d;
	struct dirent *de;

	if (!dev)
		return -ENOMEM;
	d = opendir(dev);
	while (d && (de = readdir(d))) {
		const char *n = de->d_name;
		bool gpu = !strncmp(n, "nvidia", 6) && n[6] >= '0' && n[6] <= '9';
		bool ctl = streq(n, "nvidiactl") || streq(n, "nvidia-uvm");
		_cleanup_free_ char *p = NULL;
		int fd;

		if (!gpu && !ctl)
			continue;
		n_gpus += gpu;
		if (asprintf(&p, "%s/%s", dev, n) < 0)
			return -ENOMEM;
		fd = open(p, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0) {
			close(fd);
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
		doctor_evidence(perm, "open /dev/%s as uid %u: %s", n, (unsigned)geteuid(), strerror(errno));
	}
	if (d)
		closedir(d);
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
	const char *nvml = c->o->nvml_library ? c->o->nvml_library : "libnvidia-ml.so.1";
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

/* CUresult values (CUDA Driver API reference, enum cudaError_enum) and what they mean here. */
static const struct {
	int code;
	const char *name;
	const char *meaning;
} cu_results[] = {
    {3, "CUDA_ERROR_NOT_INITIALIZED", "the driver could not be initialised"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "CUDA driver version is insufficient for CUDA runtime version: the driver is older than the image needs"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected: " WHY_NO_GPU},
    {101, "CUDA_ERROR_INVALID_DEVICE",
     "the visible devices are invalid (NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM",
     "an OS call failed: usually /dev/nvidia-uvm missing or not openable in the container"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "the container's libcuda and the node's kernel module are different versions (stale compat libraries or a "
     "driver upgrade without reboot)"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "forward-compatibility libraries in the image do not support this GPU: use an image for the node's CUDA"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error: check the node's kernel log for XIDs (gpulet doctor)"},
};

static int check_cuinit(struct doctor_ctx *c)
{
	const char *cuda = c->o->cuda_library ? c->o->cuda_library : "libcuda.so.1";
	char err[512];
	void *h = open_lib(cuda, err, sizeof(err));
	int (*cu_init)(unsigned);
	int (*cu_version)(int *);
	int r, v = 0;
	struct doctor_finding *f;

	if (!h)
		return 0; /* reported by the libraries step */
	*(void **)&cu_init = dlsym(h, "cuInit");
	*(void **)&cu_version = dlsym(h, "cuDriverGetVersion");
	if (!cu_init || !cu_version) {
		f = doctor_report(c, "probe.libcuda-broken", DOCTOR_FAIL, LINK_NVML,
				  "the injected libcuda is not a CUDA driver library: check the CDI spec's mounts",
				  "libcuda.so.1 lacks cuInit/cuDriverGetVersion");
		doctor_evidence(f, "dlsym in %s: %s", cuda, dlerror());
		dlclose(h);
		return 0;
	}
	r = cu_init(0);
	if (cu_version(&v) == 0 && v > 0)
		c->node_cuda = v;
	if (r != 0) {
		const char *name = "CUresult", *meaning = "cuInit failed";

		for (size_t k = 0; k < ELEMENTSOF(cu_results); k++)
			if (cu_results[k].code == r) {
				name = cu_results[k].name;
				meaning = cu_results[k].meaning;
			}
		f = doctor_report(c, "probe.cuinit-failed", DOCTOR_FAIL, LINK_NVML,
				  r == 35 ? "use an image built for the node's CUDA, or upgrade the node's driver"
					  : "run gpulet doctor on the node to find the broken link",
				  "cuInit(0) failed with %s (%d): %s", name, r, meaning);
		doctor_evidence(f, "cuInit(0) = %d in %s", r, cuda);
	}
	dlclose(h);
	return 0;
}

static int check_cuda_version(struct doctor_ctx *c)
{
	const char *want = getenv("CUDA_VERSION"); /* set by nvidia/cuda images */
	char why[512], have[16];
	int cuda;
	struct doctor_finding *f;

	if (!want || cuda_version_parse(want, &cuda) < 0 || !c->node_cuda)
		return 0;
	cuda_version_format(c->node_cuda, have, sizeof(have));
	switch (cuda_check(cuda, c->node_cuda, NULL, why, sizeof(why))) {
	case CUDA_OK:
		doctor_report(c, "probe.cuda-version.ok", DOCTOR_OK, LINK_VERSIONS, NULL,
			      "the driver supports CUDA %s, the image has CUDA_VERSION=%s", have, want);
		return 0;
	case CUDA_UNKNOWN:
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
    {"devnodes", LINK_DEVNODE, 0, "/dev/nvidia*, opened read-write", "probe.no-device-nodes probe.devnode-permission",
     check_nodes},
    {"libraries", LINK_TOOLKIT, 0, "dlopen libcuda.so.1, libnvidia-ml.so.1", "probe.libcuda-missing probe.nvml-missing",
     check_libraries},
    {"cuinit", LINK_NVML, L(LINK_DEVNODE) | L(LINK_TOOLKIT), "cuInit(0), cuDriverGetVersion",
     "probe.cuinit-failed probe.libcuda-broken", check_cuinit},
    {"cuda", LINK_VERSIONS, L(LINK_TOOLKIT), "CUDA_VERSION vs the driver's CUDA", "probe.cuda-driver-too-old",
     check_cuda_version},
};
const size_t probe_n_checks = ELEMENTSOF(probe_checks);
