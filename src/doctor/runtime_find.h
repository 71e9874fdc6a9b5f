/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which container runtime runs on the node and which config it really reads
 * (docs/reference/container-runtimes.md): the live process under --root's /proc first (containerd -c,
 * k3s's and RKE2's embedded containerd, crio --config/--config-dir), then each distribution's
 * well-known files, then an installed runtime without a config. What was read is named in evidence;
 * a runtime that was not found is never described.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct doctor_ctx;
struct toml;

enum rt_kind { RT_NONE, RT_CONTAINERD, RT_K3S, RT_RKE2, RT_K0S, RT_MICROK8S, RT_CRIO, RT_DOCKER };

#define RT_MAX_FILES 16

struct runtime_found {
	enum rt_kind kind;
	char config[PATH_MAX];  /* containerd's config.toml or CRI-O's crio.conf (may not exist) */
	char dropins[PATH_MAX]; /* CRI-O: the drop-in dir it reads */
	char source[600];       /* how it was found: "/proc/812/cmdline: containerd -c ..." */
	char templ[PATH_MAX];   /* k3s/RKE2: the template config.toml is rendered from (may not exist yet) */
	bool templ_exists;
	char looked[700]; /* RT_NONE: what was looked for */
	/* CRI-O's merged config and the files read, in merge order */
	struct toml *crio;
	char *crio_files[RT_MAX_FILES];
	unsigned n_crio_files;
	char crio_error[300];
	/* Docker under cri-dockerd: /etc/docker/daemon.json, NULL when absent or invalid (docker_error says) */
	struct json_t *docker;
	char docker_error[300];
};

/*
 * One process's /proc/PID/cmdline (text[len] must be NUL, as read_file leaves it): containerd (plain,
 * k3s's, RKE2's, k0s's, MicroK8s's) or crio fills rt's kind, config and source; false otherwise.
 */
bool rt_from_cmdline(struct runtime_found *rt, const char *pid, char *text, size_t len);

/* Find the runtime once (c->rt). -ENOMEM only. */
int doctor_need_runtime(struct doctor_ctx *c);
void runtime_found_free(struct runtime_found *rt);

bool rt_is_containerd(const struct runtime_found *rt);
/* "containerd", "k3s's containerd", "RKE2's containerd", "CRI-O" */
const char *rt_name(const struct runtime_found *rt);
/* The file a fix edits: the k3s/RKE2 template (k3s rewrites config.toml at each start), else the config. */
const char *rt_edit_target(const struct runtime_found *rt);
/* "systemctl restart containerd", "systemctl restart k3s (k3s-agent on agents)", ... */
const char *rt_restart(const struct runtime_found *rt);

/* Docker with cri-dockerd (doctor/check_docker.c): daemon.json loaded; the runtime link's Docker checks. */
int docker_load(const struct doctor_ctx *c, struct runtime_found *rt);
int doctor_check_docker(struct doctor_ctx *c);
/* daemon.json's default-runtime ("runc" when unset) and whether a runtime of that name exists. */
const char *docker_default_runtime(const struct runtime_found *rt);
/* The runtimes.<name>.path of daemon.json (runc: "runc"); NULL when Docker has no such runtime. */
const char *docker_runtime_path(const struct runtime_found *rt, const char *name);

/* CRI-O (doctor/crio.c): load c->rt's crio.conf + drop-ins; the runtime link's CRI-O checks. */
int crio_load(const struct doctor_ctx *c, struct runtime_found *rt);
int doctor_check_crio(struct doctor_ctx *c);
/* CRI-O's cdi_spec_dirs (default /etc/cdi, /var/run/cdi); pointers borrowed from rt. */
size_t crio_cdi_dirs(const struct runtime_found *rt, const char **dirs, size_t max);
/* A runtime's cdi_spec_dirs (a TOML array of strings), or CDI's defaults when it has none. */
size_t cdi_spec_dirs_of(const struct toml *list, const char **dirs, size_t max);

/* GPU pods of --pods with this runtimeClassName (name NULL: with none); each is evidence on f when given. */
struct doctor_finding;
size_t doctor_pods_with_class(const struct doctor_ctx *c, const char *name, struct doctor_finding *f);

/*
 * The runtime's answers GPU injection depends on, the same for containerd (any distribution) and
 * CRI-O (doctor/rt_facts.c): is CDI on, which handler do pods without a RuntimeClass get, does a
 * handler exist and is its binary NVIDIA's.
 */
struct rt_facts {
	bool cdi;                  /* CDI names are resolved (containerd enable_cdi, always for CRI-O) */
	char default_handler[128]; /* containerd default_runtime_name, CRI-O default_runtime */
	char cdi_where[600];       /* evidence: where the CDI setting comes from */
};
/* 1 filled; 0 no runtime config was read (none found, missing, invalid: runtime.* says which); -ENOMEM. */
int rt_facts_get(struct doctor_ctx *c, struct rt_facts *f);
enum rt_handler_state { RTH_MISSING, RTH_PLAIN, RTH_NVIDIA };
/* After rt_facts_get returned 1: the handler is missing, a plain one, or runs NVIDIA's binary. */
enum rt_handler_state rt_handler(const struct doctor_ctx *c, const char *handler);

/* runtime.config-invalid for the runtime found: error says where (file:line:col), fix how to check it. */
void rt_config_invalid(struct doctor_ctx *c, const char *fix, const char *error);

/* --runtime-user (a rootless runtime): may uid:gid do perm (4 r, 2 w, 1 x) on a file with this stat? */
bool doctor_user_may(const struct stat *st, unsigned uid, unsigned gid, unsigned perm);
