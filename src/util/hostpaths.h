/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one host-path rule. A verb names up to five places: --root (the prefix every host path is read
 * under: a fake node tree in tests, /host in a pod), --driver-root and --dev-root (where the driver
 * and its device nodes are, as the host names them: what CDI specs and Allocate answers carry), the
 * plugin's --container-driver-root (where the driver root is mounted in the plugin's container) and
 * --nvml-library. host_paths_new() resolves them once per verb (and once per reloaded config) into
 * struct host_paths, and every consumer takes that struct: NVML loading, driver discovery, CDI
 * generation, the plugin, the MPS daemon, labels, the doctor and the exporter. Nobody else joins
 * these roots, and no library reads their env vars (the verbs' option rows do).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"
#include "util/macro.h"

/* What the verb's options say; each NULL or "" when not given. */
struct host_paths_options {
	const char *root;            /* NULL or "": "/" */
	const char *driver_root;     /* NULL or "": "/" */
	const char *dev_root;        /* NULL or "": the driver root */
	const char *ctr_driver_root; /* NULL or "": not mounted elsewhere */
	const char *nvml_library;    /* NULL or "": searched under nvml_dir */
};

/* Resolved; every string is owned (host_paths_free()) and none is NULL unless said. */
struct host_paths {
	char *root;        /* the read prefix, "/" when none: any host path p is read at root_path(root, p) */
	char *driver_root; /* the driver root as the host names it, "/" when none: host paths written out start here */
	char *dev_root;    /* the same for the device nodes: the dev root when given, else driver_root */
	char *driver_dir;  /* where this process reads the driver root: <root><driver_root> */
	char *dev_dir;     /* where this process reads the dev root: <root><dev_root> */
	char *mount_dir;   /* <root><container driver root>, NULL when none is given */
	/*
	 * Where NVML is looked for: inside the plugin's container the host's driver root is mounted at
	 * the container driver root (docs/reference/device-plugin.md §1), so mount_dir when the driver
	 * root is not "/" and mount_dir is a directory; else driver_dir.
	 */
	char *nvml_dir;
	char *nvml_library; /* the library to load, NULL: search nvml_dir */
};

/* Resolve o (never NULL) into *ret. 0, or -ENOMEM with err saying so. */
int host_paths_new(const struct host_paths_options *o, struct host_paths **ret, struct gerr *err);
void host_paths_free(struct host_paths *p);
DEFINE_CLEANUP_FUNC(struct host_paths, host_paths_free)

/* Whether a and b load the same NVML (same library, same place searched); NULL is no NVML. */
bool host_paths_same_nvml(const struct host_paths *a, const struct host_paths *b);

/* base + path as the host sees it; base NULL, "" or "/" means none (path as given). NULL on ENOMEM. */
char *host_join(const char *base, const char *path);

/*
 * The one list of directories host tools live in, in search order (nvidia-ctk's binary search,
 * docs/reference/cdi.md §7.5; /usr/local/bin last, for hand-installed copies). No $PATH lookup.
 */
extern const char *const host_bin_dirs[];
extern const size_t host_n_bin_dirs;

/*
 * The executable `name` (a plain name: one with '/' is never found) in host_bin_dirs under
 * under (host_join rules) under root (root_path rules), as a path to open; NULL when none.
 */
char *host_find_bin(const char *root, const char *under, const char *name);
