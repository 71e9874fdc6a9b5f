/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OCI hooks a generated CDI spec carries, as nvidia-ctk writes them (docs/reference/cdi-hook.md
 * §4): createContainer hooks running `gpulet cdi-hook ACTION` (or nvidia-cdi-hook / nvidia-ctk hook,
 * by the binary's name) that make the injected driver libraries findable in any image layout.
 */
#pragma once

#include <jansson.h>

#include "util/enumtab.h"
#include "util/err.h"

/* Hook names, as bits (the names are nvidia-cdi-hook's actions). */
enum cdi_hook {
	CDI_HOOK_CREATE_SYMLINKS = 1 << 0,
	CDI_HOOK_CUDA_COMPAT = 1 << 1,
	CDI_HOOK_LDCACHE = 1 << 2,
	CDI_HOOK_DEVNODES = 1 << 3,
	CDI_HOOK_ALL = (1 << 4) - 1,
};

/* The static hook executable's name, installed next to gpulet (docs/reference/cdi-hook.md §4). */
#define CDI_STATIC_HOOK "gpulet-cdi-hook"

struct cdi_hook_options {
	const char *path;          /* host path of the hook binary; NULL or "" = CDI_STATIC_HOOK next to
				      this gpulet when it is there, else this gpulet (/proc/self/exe) */
	const char *ldconfig_path; /* --ldconfig-path for update-ldcache; NULL = the hook's default */
	unsigned disabled;         /* enum cdi_hook bits left out */
};

/*
 * The hooks' names (nvidia-cdi-hook's actions) and "all", for --cdi-disable-hooks: an option row
 * of kind OPT_FLAGS over this table (util/optspec.h) takes "all" or names separated by commas.
 */
extern const struct enum_name cdi_hook_names[5];

/*
 * Append the hooks to the spec-level containerEdits edits (they read its "mounts"): create-symlinks
 * for libcuda.so (and the other links nvidia-ctk adds) that are not mounted, enable-cuda-compat with
 * the driver version, update-ldcache with every dir holding a mounted library,
 * disable-device-node-modification. o NULL = every hook, this gpulet as the binary.
 */
int cdi_add_hooks(json_t *edits, const char *driver_version, const struct cdi_hook_options *o, struct gerr *err);

/*
 * The hooks run the dynamically linked gpulet itself (no path given, and no static
 * CDI_STATIC_HOOK beside this gpulet): *ret is a warning that says so, what it means and what to
 * do (malloc'd); else NULL. -ENOMEM, or -errno from /proc/self/exe.
 */
int cdi_hooks_fallback_warning(const struct cdi_hook_options *o, char **ret);

/*
 * A device's own hooks: create-symlinks for links ("TARGET::LINK"), e.g. the GPU's
 * /dev/dri/by-path links (docs/reference/cdi.md §7.3). *ret: a new hooks array, empty when links
 * is empty or create-symlinks is disabled.
 */
int cdi_device_link_hooks(const json_t *links, const struct cdi_hook_options *o, json_t **ret, struct gerr *err);
