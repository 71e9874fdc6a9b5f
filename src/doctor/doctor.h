/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet doctor: the field guide's troubleshooting chain as a table of checks.
 *
 * A check is a table row {name, link, inputs, finding ids, requires, run}. Links are walked in
 * chain order (driver → device nodes → NVML/health → toolkit/runtime → CDI → kubelet/plugin →
 * allocations → versions). A check whose prerequisite link already failed is not run: its
 * symptom is attributed to the earlier failure (it appears under "skipped" with the finding that
 * explains it) instead of being reported as one more failure.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "util/err.h"
#include "util/hostpaths.h"

enum doctor_severity { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL };

/* Chain links, in the order the field guide walks them (docs/reference/field-guide.md §3–4,
 * docs/reference/monitoring-doctor.md B12). */
enum doctor_link {
	LINK_DRIVER,
	LINK_DEVNODE,
	LINK_NVML,
	LINK_GPU,
	LINK_TOOLKIT,
	LINK_RUNTIME,
	LINK_CDI,
	LINK_KUBELET,
	LINK_PLUGIN,
	LINK_MIG,
	LINK_ALLOC,
	LINK_VERSIONS,
	LINK_LINT, /* findings of gpulet lint (a workload spec, not a node link) */
	_LINK_MAX,
};
#define L(x)                (1u << (x))

#define DOCTOR_MAX_EVIDENCE 16

struct doctor_finding {
	char id[64];
	enum doctor_severity severity;
	enum doctor_link link;
	char summary[512];
	char *evidence[DOCTOR_MAX_EVIDENCE];
	size_t n_evidence;
	char fix[1024];
	/* the fix as a shell command, when it is one (doctor_fix_run): for the node itself, and for where the
	 * doctor ran with the node's files under --root (NULL: none, or the same as run) */
	char *run;
	char *run_here;
};

struct doctor_api;
struct kapi_env;

struct doctor_options {
	/* --root, --driver-root and --nvml-library as the verb resolved them (util/hostpaths.h); NULL: this host
	 * ("/"), NVML searched where the system has it */
	const struct host_paths *host;
	const char *kernel_log;            /* --kernel-log FILE; NULL: <root>/var/log/kern.log, or /dev/kmsg live */
	const char *pods_file;             /* --pods FILE: kubectl get pods -o json (a List or one Pod) */
	const char *node_file;             /* --node FILE: kubectl get node NAME -o json */
	const char *events_file;           /* --events FILE: kubectl get events -A -o json */
	const char *cuda_version;          /* --cuda-version 12.4 (probe: CUDA_VERSION): the CUDA an image needs */
	const char *runtime_class;         /* RuntimeClass handler pods use, "nvidia" by default */
	const char *containerd_config;     /* path of config.toml on the host */
	unsigned runtime_uid, runtime_gid; /* user containerd runs as (rootless containerd: not 0) */
	bool live;                         /* root is the running node: its sockets answer (implied by "/") */
	bool verbose; /* the text report lists the ids of the checks not done, not only their count */
	/* the cluster's side from the API server (doctor/cluster_live.c) where no file gives it */
	const char *kubeconfig;      /* --kubeconfig or $KUBECONFIG; NULL: in a pod its service account */
	const struct kapi_env *kenv; /* in a pod: where the API server is (borrowed) */
	const char *node_name;       /* --node-name / NODE_NAME: this node in the API; NULL: the node's host name */
	struct doctor_api *api;      /* the server's client following them; NULL: a request per walk */
	const char *cuda_library;    /* probe: libcuda to dlopen, "libcuda.so.1" by default */
	const char *visible_devices; /* probe: NVIDIA_VISIBLE_DEVICES as the runtime set it, or NULL */
};

struct toml;
struct nvml;
struct node;
struct checkpoint;
struct kubelet_root;
struct runtime_found;

/* What the checks read, loaded once and shared. Lazily filled by the doctor_need_* helpers. */
struct doctor_ctx {
	const struct doctor_options *o;
	/* findings so far */
	struct doctor_finding *findings;
	size_t n_findings, cap_findings;
	/* checks not run: a link they need already failed ("explained_by"), or the check could not run
	 * here and said why ("reason", doctor_skip) */
	json_t *skipped;
	char skip_reason[256];     /* set by doctor_skip() while a check runs; "" otherwise */
	unsigned failed_links;     /* bit per enum doctor_link with a fail */
	int blocked_by[_LINK_MAX]; /* 1 + index of the finding that made a link's check skip; 0 none */

	/* driver */
	bool driver_loaded;
	char driver_version[64];    /* "550.54.15" from /proc/driver/nvidia/version, "" unknown */
	bool wsl;                   /* WSL2: the Windows host's driver through /dev/dxg, no /dev/nvidia* */
	char driver_root_found[64]; /* where NVML was found when not under / (doctor_need_nvml), "" / */
	/* NVML */
	int nvml_state; /* 0 not tried, 1 open, <0 -errno */
	char nvml_error[GERR_MAX];
	struct nvml *nv;
	struct node *node;
	/* containerd */
	int ctrd_state; /* 0 not tried, 1 loaded, -ENOENT missing, other <0 invalid */
	char ctrd_error[GERR_MAX];
	struct toml *ctrd;
	char **ctrd_files;
	int ctrd_version;
	struct runtime_found *rt; /* which runtime runs, which config it reads (doctor/runtime_find.h) */
	/* kubelet's root dir and where it came from (doctor/kubelet_root.h) */
	struct kubelet_root *kroot;
	/* kubelet checkpoint */
	int ckpt_state;
	char ckpt_error[GERR_MAX];
	struct checkpoint *ckpt;
	int node_cuda; /* probe: what cuDriverGetVersion said, 0 unknown */
	/* cluster facts from --pods / --node */
	json_t *pods; /* array of Pod objects, NULL when not given */
	json_t *node_obj;
	json_t *events;         /* --events, loaded by the cluster check (doctor/cluster.h) */
	struct doctor_api *api; /* this walk's own API client (doctor_api_load), NULL: none or o->api */
	/* this node's name in --pods: --node's, else ROOT/etc/hostname when pods run there (doctor/cluster.h) */
	char node_name[256];
	bool node_name_done;
	/* the kernel log, read once (doctor/klog.h) */
	int klog_state; /* 0 not read, 1 read, <0 -errno */
	char *klog;
	char klog_src[512];
};

/* Add a finding; evidence lines are added with doctor_evidence() on the returned pointer. */
struct doctor_finding *doctor_report(struct doctor_ctx *c, const char *id, enum doctor_severity sev,
				     enum doctor_link link, const char *fix, const char *fmt, ...) _printf_(6, 7);
/* The finding with this id: the one already reported (its evidence grows), else a new one as doctor_report. */
struct doctor_finding *doctor_report_once(struct doctor_ctx *c, const char *id, enum doctor_severity sev,
					  enum doctor_link link, const char *fix, const char *fmt, ...) _printf_(6, 7);
void doctor_evidence(struct doctor_finding *f, const char *fmt, ...) _printf_(2, 3);

/*
 * The fix as a command (doctor/fixcmd.c): one word per argument, each quoted for the shell when it needs
 * it. A FIX_PATH is a path on the node: as is in run, below --root in run_here; FIX_ROOT stands for the
 * options that point a gpulet command at the node (--root, --nvml-library, --driver-root, only in
 * run_here where the doctor had them); FIX_OP is a shell operator (&&) left unquoted.
 */
enum doctor_fix_kind { FIX_END, FIX_WORD, FIX_PATH, FIX_ROOT, FIX_OP };
struct doctor_fix_arg {
	enum doctor_fix_kind kind;
	const char *s;
};
#define FIX_W(s)              \
	{                     \
		FIX_WORD, (s) \
	}
#define FIX_P(s)              \
	{                     \
		FIX_PATH, (s) \
	}
#define FIX_AND              \
	{                    \
		FIX_OP, "&&" \
	}
#define FIX_ROOTOPTS           \
	{                      \
		FIX_ROOT, NULL \
	}
#define FIX_DONE              \
	{                     \
		FIX_END, NULL \
	}
/* Set f's run / run_here from args (terminated by FIX_END); -ENOMEM only. */
int doctor_fix_run(const struct doctor_ctx *c, struct doctor_finding *f, const struct doctor_fix_arg *args);
/* path as the node sees it: a path below --root loses the root prefix (evidence quotes node paths) */
const char *doctor_node_path(const struct doctor_ctx *c, const char *path);
/* --root is another directory than / (the doctor looks at a node mounted or copied elsewhere) */
bool doctor_root_elsewhere(const struct doctor_ctx *c);

/* The read prefix: o->host's root, "/" without one. */
const char *doctor_root(const struct doctor_options *o);
/* The driver root the user gave (--driver-root, NVIDIA_DRIVER_ROOT), NULL when none or "/". */
const char *doctor_driver_root(const struct doctor_options *o);
/* The NVML library the user gave (--nvml-library, GPULET_NVML_LIBRARY), NULL when none. */
const char *doctor_nvml_library(const struct doctor_options *o);
/* Path below --root; aborts the check with -ENOMEM on allocation failure. */
char *doctor_path(const struct doctor_ctx *c, const char *path);

/* Lazily loaded facts. Each returns >= 0 when the fact is available. */
int doctor_need_nvml(struct doctor_ctx *c);
int doctor_need_containerd(struct doctor_ctx *c);
int doctor_need_checkpoint(struct doctor_ctx *c);

/* containerd facts from the merged config (v2 and v3 key layouts). */
struct ctrd_facts {
	const struct toml *cri;        /* table with enable_cdi / cdi_spec_dirs */
	const struct toml *containerd; /* table with default_runtime_name / runtimes */
	const char *plugin_id;         /* "io.containerd.grpc.v1.cri" or "io.containerd.cri.v1.runtime" */
	const char *default_runtime;   /* "runc" when unset */
	int enable_cdi;                /* effective value (version defaults applied) */
	bool enable_cdi_explicit;
};
void doctor_containerd_facts(const struct doctor_ctx *c, struct ctrd_facts *ret);
/* The CDI spec dirs containerd reads (its cdi_spec_dirs or the default pair). NULL-terminated, static/borrowed. */
size_t doctor_cdi_dirs(const struct doctor_ctx *c, const char **dirs, size_t max);

/* First finding with this id, NULL when none yet. */
struct doctor_finding *doctor_find(struct doctor_ctx *c, const char *id);

/* Entries of dir below root that keep accepts (NULL: all), dot entries skipped; names[k] gets each, at most max. */
size_t doctor_dir_names(const struct doctor_ctx *c, const char *dir, bool (*keep)(const char *name), char names[][256],
			size_t max);

/* Regular *.json / *.yaml files in a CDI dir below root (what a runtime reads); names[k] gets each. */
size_t doctor_cdi_dir_files(const struct doctor_ctx *c, const char *dir, char names[][256], size_t max);

/* Version of a dpkg package under root (/var/lib/dpkg/status), epoch and Debian revision dropped. */
bool doctor_dpkg_version(const struct doctor_ctx *c, const char *pkg, char *buf, size_t size);

/*
 * Run host tool `name` (looked up in host_bin_dirs below root, util/fileio.h; never a shell or
 * $PATH) with argv; its stdout (at most size-1 bytes, NUL-terminated) goes to buf, stderr to /dev/null.
 * Killed after timeout_ms. Returns bytes read, -ENOENT not installed, -ETIMEDOUT, -EIO non-zero exit.
 */
int doctor_run_tool(const char *root, const char *name, char *const argv[], char *buf, size_t size, int timeout_ms);
/* First "X.Y[.Z]" version (after start, a blank or a 'v') in text; false when none. */
bool doctor_scan_version(const char *text, char *buf, size_t size);

/* nvidia-container-toolkit version under root (dpkg status, or nvidia-ctk --version on the host). */
int doctor_toolkit_version(const struct doctor_ctx *c, char *buf, size_t size, char *src, size_t src_size);

/* CUDA version a container needs (env CUDA_VERSION / NVIDIA_REQUIRE_CUDA, image nvidia/cuda:<ver>). */
int doctor_container_cuda(const json_t *ctr, int *ret, char *src, size_t size);

/* Kubernetes helpers over --pods */
bool doctor_pod_requests_gpu(const json_t *pod);
bool doctor_pod_is_terminating(const json_t *pod);

/* The link checks (one file per link in src/doctor/). */
int doctor_check_driver(struct doctor_ctx *c);
int doctor_check_devnodes(struct doctor_ctx *c);
int doctor_check_nvml(struct doctor_ctx *c);
int doctor_check_kernel_log(struct doctor_ctx *c);
int doctor_check_gpu_health(struct doctor_ctx *c);
int doctor_check_toolkit(struct doctor_ctx *c);
int doctor_check_runtime(struct doctor_ctx *c);
int doctor_check_cdi(struct doctor_ctx *c);
int doctor_check_kubelet(struct doctor_ctx *c);
int doctor_check_plugin(struct doctor_ctx *c);
int doctor_check_mig(struct doctor_ctx *c);
int doctor_check_alloc(struct doctor_ctx *c);
int doctor_check_cuda(struct doctor_ctx *c);
int doctor_check_pci(struct doctor_ctx *c);
/* Why the driver is not loaded (check_kmod.c): the finding of the first reason found, NULL none. */
struct doctor_finding *doctor_driver_why_not_loaded(struct doctor_ctx *c);
int doctor_check_fabric(struct doctor_ctx *c);
int doctor_check_gpu_state(struct doctor_ctx *c);
int doctor_check_devchar(struct doctor_ctx *c);
int doctor_check_toolkit_config(struct doctor_ctx *c);
int doctor_check_duplicate_plugins(struct doctor_ctx *c);
int doctor_check_dra(struct doctor_ctx *c);
/* gpu.nvidia.com's DRA driver has its registration socket in kubelet's plugins_registry (check_dra.c). */
bool doctor_dra_registered(struct doctor_ctx *c);
/* A GPU that fell off the bus: the one fix (check_gpu.c), for the kernel log, NVML and PCI findings. */
extern const char doctor_fix_fallen[];

struct doctor_check {
	const char *name; /* "driver", also the id of its ok finding ("driver.ok") */
	enum doctor_link link;
	unsigned requires;  /* L(link) bits that must not have failed */
	const char *inputs; /* what it reads, for --list */
	const char *ids;    /* finding ids it may report, space separated */
	int (*run)(struct doctor_ctx *c);
};
extern const struct doctor_check doctor_checks[];
extern const size_t doctor_n_checks;

const char *doctor_link_name(enum doctor_link l);
const char *doctor_severity_name(enum doctor_severity s);

/*
 * gpulet lint: check workload objects (k8sobj_load output) for the GPU mistakes of the field guide.
 * Findings go into c (component "lint"); c->o supplies --root facts when set.
 */
struct lint_options {
	const char *runtime_class;  /* GPU pods must set this runtimeClassName ("" = not required) */
	const char *driver_version; /* node driver: images needing a newer CUDA are flagged */
	const json_t *node;         /* kubectl get node -o json: its taints */
	bool node_dev_nonworld;     /* node's /dev/nvidia* are not world rw (from --root) */
};
int lint_objects(struct doctor_ctx *c, const char *file, const json_t *objs, const struct lint_options *lo);
/* A pod spec container asking for an nvidia.com/ resource in its limits or requests. */
bool doctor_container_wants_gpu(const json_t *ctr);

/*
 * Usage check of what the user named: --root must be a directory; --kernel-log, --pods, --node
 * and --containerd-config (below root) must be readable files. -EINVAL with "what, where, what to do".
 */
int doctor_check_options(const struct doctor_options *o, struct gerr *err);

/* Set c up with o and load --pods / --node (a bad file is a warn finding). -ENOMEM only. */
int doctor_load_inputs(struct doctor_ctx *c, const struct doctor_options *o);

/* The version ledger: [{name, version, source, verdicts:[{severity, text, source}]}]. */
json_t *versions_ledger(struct doctor_ctx *c);
/* kubelet's version as the ledger reads it (--node nodeInfo, dpkg, live `kubelet --version`) and
 * where from; false: unknown. */
bool doctor_kubelet_version(const struct doctor_ctx *c, char *v, size_t vsize, char *src, size_t ssize);

/* Run every check in chain order. Returns -ENOMEM only; findings are in c. */
int doctor_run(struct doctor_ctx *c, const struct doctor_options *o);
/* Same over another table (gpulet probe's in-container chain). */
int doctor_run_table(struct doctor_ctx *c, const struct doctor_options *o, const struct doctor_check *checks, size_t n);
/* gpulet probe's chain: device nodes → driver libraries → cuInit → CUDA version. */
extern const struct doctor_check probe_checks[];
extern const size_t probe_n_checks;
void doctor_ctx_done(struct doctor_ctx *c);

/*
 * The running check could not check anything here (an input is absent): it is listed under "skipped"
 * with this reason instead of getting an ok finding, so nothing is called ok that was not checked.
 */
void doctor_skip(struct doctor_ctx *c, const char *fmt, ...) _printf_(2, 3);

/* {"findings":[...], "skipped":[...]}; only ids in only[] (prefix match, "cdi." or exact) when given. */
json_t *doctor_to_json(const struct doctor_ctx *c, char *const *only, size_t n_only);
/*
 * The checks not run that carry key ("explained_by": the finding that explains them, or "reason": why not
 * here), in order: fn gets the k-th one's check name, finding ids and that value. Returns how many.
 */
typedef void (*doctor_skipped_fn)(void *userdata, size_t k, const char *check, const char *ids, const char *value);
size_t doctor_skipped_each(const struct doctor_ctx *c, const char *key, doctor_skipped_fn fn, void *userdata);
/* The root cause: the first failure in chain order among the findings shown (doctor_finding_shown); NULL when
 * none fails. */
const struct doctor_finding *doctor_root_cause(const struct doctor_ctx *c, char *const *only, size_t n_only);
/* Readable report on out (cmd/ passes stdout), grouped by link in chain order; names the first failure as root cause.
 */
void doctor_print(FILE *out, const struct doctor_ctx *c, char *const *only, size_t n_only);
bool doctor_id_selected(const char *id, char *const *only, size_t n_only);
/* Shown under --only: selected, or the finding that made a selected check skip (the root cause). */
bool doctor_finding_shown(const struct doctor_ctx *c, const struct doctor_finding *f, char *const *only, size_t n_only);
/* An --only argument that names some id or component of the doctor's checks. */
bool doctor_only_valid(const char *sel);
