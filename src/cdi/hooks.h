/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OCI hooks a generated CDI spec carries, as nvidia-ctk writes them (docs/reference/cdi-hook.md
 * §4): hooks running `gpulet cdi-hook ACTION` (or nvidia-cdi-hook / nvidia-ctk hook, by the binary's
 * name) that make the injected driver libraries findable in any image layout (createContainer), and a
 * full GPU's apply-cuda-memory-limits (createRuntime).
 */
#pragma once

#include <jansson.h>

#include "util/enumtab.h"
#include "util/err.h"

/* Hook names, as bits (the names are nvidia-cdi-hook's actions; internal/discover/hooks.go v1.20.2). */
enum cdi_hook {
	CDI_HOOK_CREATE_SYMLINKS = 1 << 0,
	CDI_HOOK_CUDA_COMPAT = 1 << 1,
	CDI_HOOK_LDCACHE = 1 << 2,
	CDI_HOOK_DEVNODES = 1 << 3,
	CDI_HOOK_APP_PROFILE = 1 << 4,   /* update-application-profile, spec level */
	CDI_HOOK_MEMORY_LIMITS = 1 << 5, /* apply-cuda-memory-limits, per full GPU, createRuntime */
	CDI_HOOK_CHMOD = 1 << 6,         /* chmod of /dev/dri per full GPU; off unless enabled (as upstream) */
	CDI_HOOK_ALL = (1 << 7) - 1,
};
/* Hooks left out unless enabled by name (upstream's defaultDisabledHooks). */
#define CDI_HOOK_DEFAULT_OFF CDI_HOOK_CHMOD

/* The static hook executable's name, installed next to gpulet (docs/reference/cdi-hook.md §4). */
#define CDI_STATIC_HOOK "gpulet-cdi-hook"

struct cdi_hook_options {
	const char *path;          /* host path of the hook binary; NULL or "" = CDI_STATIC_HOOK next to
				      this gpulet when it is there, else this gpulet (/proc/self/exe) */
	const char *ldconfig_path; /* --ldconfig-path for update-ldcache; NULL = the hook's default */
	unsigned disabled;         /* enum cdi_hook bits left out */
	unsigned enabled;          /* bits put in although disabled (also CDI_HOOK_DEFAULT_OFF ones): --enable-hook */
};

/*
 * The hooks' names (nvidia-cdi-hook's actions) and "all" (the last row), for --cdi-disable-hooks: an
 * option row of kind OPT_FLAGS over this table (util/optspec.h) takes "all" or names separated by
 * commas; --enable-hook takes the rows before "all" (upstream refuses to enable all).
 */
extern const struct enum_name cdi_hook_names[8];
#define CDI_HOOK_N_NAMES_NOT_ALL 7

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

/* The enum cdi_hook bits o leaves out: --cdi-disable-hooks ("all": every one) and the default-off ones, less the
 * enabled. */
unsigned cdi_hooks_off(const struct cdi_hook_options *o);

/*
 * What a device's own hooks are made from (docs/reference/cdi.md §7.3): links ("TARGET::LINK", the
 * GPU's /dev/dri/by-path links) for create-symlinks, dirs for chmod (/dev/dri when the GPU has DRM
 * nodes), gpus (UUIDs of full GPUs) for one apply-cuda-memory-limits each, with driver_root (the host
 * path) as its --driver-root. Any may be NULL or empty.
 */
struct cdi_device_hooks {
	const json_t *links, *dirs, *gpus;
	const char *driver_root;
};
/* *ret: a new hooks array in nvidia-ctk's order, empty when nothing is left after the disabled hooks. */
int cdi_device_hooks(const struct cdi_device_hooks *d, const struct cdi_hook_options *o, json_t **ret,
		     struct gerr *err);
