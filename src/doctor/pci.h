/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVIDIA GPUs on the node's PCI bus as sysfs shows them (<root>/sys/bus/pci/devices: vendor 0x10de,
 * class 0x03xxxx — VGA 0x0300, 3D 0x0302; NVSwitches are bridges, 0x0680, and not counted), with the
 * driver each is bound to. What the driver and NVML have is compared against this list.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct doctor_ctx;

struct pci_gpu {
	char bdf[16];      /* "0000:07:00.0", the sysfs name */
	unsigned device;   /* PCI device id (0x20b0) */
	char driver[32];   /* the driver link's name ("nvidia", "vfio-pci", "nouveau"), "" unbound */
	char override[32]; /* driver_override, "" none */
	bool bar1_unset;   /* resource line 1 is all zero: BAR1 was never assigned */
	bool in_proc;      /* /proc/driver/nvidia/gpus/<bdf> exists: the nvidia driver probed it */
};

/* Up to max GPUs into gpus; returns how many there are (may be more than max). */
size_t doctor_pci_gpus(const struct doctor_ctx *c, struct pci_gpu *gpus, size_t max);
/* NVIDIA display devices on the PCI bus, 0 when sysfs lists none (a VM with paravirtual GPUs, WSL2, a
 * saved root without sys/). */
size_t doctor_pci_gpu_count(const struct doctor_ctx *c);
/* GPUs before Turing have no GSP (device ids below 0x1e00 on NVIDIA's numbering: Volta GV100 0x1dbx,
 * Pascal 0x15xx-0x1dxx; Turing TU10x starts at 0x1e02). */
bool pci_gpu_before_turing(unsigned device);
