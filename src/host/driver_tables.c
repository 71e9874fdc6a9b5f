/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the driver installs, as tables: its libraries and control nodes, and the names of the kinds of
 * its files. Their discovery on a node (and the library dirs, which size its arrays): host/driver.c.
 */
#include "host/driver.h"
#include "util/enumtab.h"
#include "util/macro.h"

/*
 * Driver libraries by name without version. Source: libnvidia-container src/nvc_info.c
 * (utility_libs, compute_libs, video_libs, graphics_libs*, ngx_libs) as listed in
 * docs/reference/cdi.md §7.4; nvidia-ctk additionally mounts every lib*.so.<driver version>, which
 * driver_discover() also does.
 */
const struct driver_lib driver_libs[] = {
    {"libnvidia-ml.so", "utility", DRIVER_LIB_REQUIRED, "NVML: nvidia-smi and every NVML client in the container"},
    {"libnvidia-cfg.so", "utility", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-nscq.so", "utility", DRIVER_LIB_OPTIONAL, NULL},
    {"libcuda.so", "compute", DRIVER_LIB_REQUIRED, "the CUDA driver API: no CUDA program starts"},
    {"libcudadebugger.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-opencl.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-gpucomp.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    /* Every driver package set ships these two next to libcuda (docs/reference/real-driver.md). */
    {"libnvidia-ptxjitcompiler.so", "compute", DRIVER_LIB_EXPECTED,
     "PTX JIT: CUDA programs built for another GPU architecture fail to load their kernels"},
    {"libnvidia-fatbinaryloader.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-allocator.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-compiler.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-pkcs11.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-pkcs11-openssl3.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-nvvm.so", "compute", DRIVER_LIB_EXPECTED, "NVVM: runtime compilation (NVRTC, Numba, CuPy) fails"},
    {"libnvidia-nvvm70.so", "compute", DRIVER_LIB_OPTIONAL, NULL}, /* nvidia-ctk's legacy NVVM (cdi.md §7.4) */
    {"libnvidia-tileiras.so", "compute", DRIVER_LIB_OPTIONAL, NULL},
    {"libvdpau_nvidia.so", "video", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-encode.so", "video", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-opticalflow.so", "video", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvcuvid.so", "video", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-eglcore.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-glcore.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-tls.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-glsi.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-fbc.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-ifr.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-rtcore.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvoptix.so", "graphics", DRIVER_LIB_OPTIONAL, NULL},
    {"libGLX_nvidia.so", "graphics-glvnd", DRIVER_LIB_OPTIONAL, NULL},
    {"libEGL_nvidia.so", "graphics-glvnd", DRIVER_LIB_OPTIONAL, NULL},
    {"libGLESv2_nvidia.so", "graphics-glvnd", DRIVER_LIB_OPTIONAL, NULL},
    {"libGLESv1_CM_nvidia.so", "graphics-glvnd", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-glvkspirv.so", "graphics-glvnd", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-cbl.so", "graphics-glvnd", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-ngx.so", "ngx", DRIVER_LIB_OPTIONAL, NULL},
    {"libnvidia-sandboxutils.so", "utility", DRIVER_LIB_OPTIONAL,
     NULL}, /* newer drivers; nvidia-ctk uses it (cdi.md §7.4) */
};
const size_t driver_n_libs = ELEMENTSOF(driver_libs);

const struct driver_control_node driver_control_nodes[] = {
    {"/dev/nvidiactl", "load the nvidia kernel module (nvidia-smi or nvidia-modprobe creates the node)"},
    {"/dev/nvidia-uvm", "load nvidia-uvm and create its node (nvidia-modprobe -u -c0)"},
    {"/dev/nvidia-uvm-tools", NULL},
    {"/dev/nvidia-modeset", NULL},
};
const size_t driver_n_control_nodes = ELEMENTSOF(driver_control_nodes);

static const struct enum_name kind_names[] = {
    {DRIVER_DEVICE_NODE, "device-node"}, {DRIVER_LIBRARY, "library"}, {DRIVER_FIRMWARE, "firmware"},
    {DRIVER_IPC_SOCKET, "ipc"},          {DRIVER_BINARY, "binary"},   {DRIVER_CONFIG, "config"},
};

const char *driver_kind_name(enum driver_file_kind k)
{
	return enum_to_name(kind_names, k, "unknown");
}
