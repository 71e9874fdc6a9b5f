/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter: a registry of metrics (one table row each, dcgm-exporter names), one sampler
 * thread per physical GPU that polls NVML into that GPU's slot, an NVML event thread for XIDs
 * (the one event watcher, nvml/watch.h, which keeps waiting after a failed wait),
 * and a renderer that turns the slots into Prometheus text 0.0.4. Scrapes only copy the slots
 * under their locks: they never call NVML, so a hung NVML call on one GPU only makes that GPU's
 * values older (gpulet_sample_age_seconds) and never blocks a scrape or hides the other GPUs.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/prom.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/watch.h"
#include "kube/podres.h"
#include "dra/devices.h"
#include "nvml/xid.h"
#include "exporter/collectors.h"
#include "exporter/conditions.h"
#include "exporter/podmeta.h"

/* Metric ids, in the order of exp_metrics[] (registry.c): dcgm-exporter's CSV order. */
enum exp_metric_id {
	EXP_SM_CLOCK,
	EXP_MEM_CLOCK,
	EXP_MEMORY_TEMP,
	EXP_GPU_TEMP,
	EXP_POWER_USAGE,
	EXP_TOTAL_ENERGY,
	EXP_PCIE_REPLAY,
	EXP_GPU_UTIL,
	EXP_MEM_COPY_UTIL,
	EXP_ENC_UTIL,
	EXP_DEC_UTIL,
	EXP_FB_FREE,
	EXP_FB_USED,
	EXP_FB_RESERVED,
	EXP_FB_TOTAL,
	EXP_ECC_SBE_VOL,
	EXP_ECC_DBE_VOL,
	EXP_ECC_SBE_AGG,
	EXP_ECC_DBE_AGG,
	EXP_RETIRED_SBE,
	EXP_RETIRED_DBE,
	EXP_RETIRED_PENDING,
	EXP_NVLINK_BANDWIDTH_TOTAL,
	EXP_UNCORRECTABLE_REMAPPED_ROWS,
	EXP_CORRECTABLE_REMAPPED_ROWS,
	EXP_ROW_REMAP_FAILURE,
	EXP_PROF_GR_ENGINE_ACTIVE,
	EXP_PROF_SM_ACTIVE,
	EXP_PROF_SM_OCCUPANCY,
	EXP_PROF_PIPE_TENSOR_ACTIVE,
	EXP_PROF_DRAM_ACTIVE,
	EXP_PROF_PIPE_FP64_ACTIVE,
	EXP_PROF_PIPE_FP32_ACTIVE,
	EXP_PROF_PIPE_FP16_ACTIVE,
	EXP_PROF_PCIE_TX_BYTES,
	EXP_PROF_PCIE_RX_BYTES,
	EXP_PROF_NVLINK_TX_BYTES,
	EXP_PROF_NVLINK_RX_BYTES,
	/* issue 24: clock events, violations, NVLink errors (not in the built-in set) */
	EXP_CLOCKS_EVENT_REASONS,
	EXP_PSTATE,
	EXP_ENFORCED_POWER_LIMIT,
	EXP_POWER_VIOLATION,
	EXP_THERMAL_VIOLATION,
	EXP_SYNC_BOOST_VIOLATION,
	EXP_BOARD_LIMIT_VIOLATION,
	EXP_LOW_UTIL_VIOLATION,
	EXP_RELIABILITY_VIOLATION,
	EXP_NVLINK_CRC_FLIT_ERRORS,
	EXP_NVLINK_CRC_DATA_ERRORS,
	EXP_NVLINK_REPLAY_ERRORS,
	EXP_NVLINK_RECOVERY_ERRORS,
	EXP_FB_USED_PERCENT,
	/* DCGM_FI_DEV_NVLINK_BANDWIDTH_L0..L17: one row per link (NVML scopeId = link) */
	EXP_NVLINK_BANDWIDTH_L0,
	EXP_NVLINK_BANDWIDTH_LAST = EXP_NVLINK_BANDWIDTH_L0 + 17,
	EXP_METRIC_COUNT
};
#define EXP_NVLINK_LINKS (EXP_NVLINK_BANDWIDTH_LAST - EXP_NVLINK_BANDWIDTH_L0 + 1)

/*
 * A set of exp_metrics rows, sized from the table: a row added to exp_metric_id gets its bit
 * without anything else to change (no fixed limit on the number of rows).
 */
#define EXP_MASK_WORDS ((EXP_METRIC_COUNT + 63) / 64)
struct exp_mask {
	uint64_t w[EXP_MASK_WORDS];
};
static inline bool exp_mask_has(const struct exp_mask *m, size_t i)
{
	return (m->w[i / 64] >> (i % 64)) & 1u;
}
static inline void exp_mask_set(struct exp_mask *m, size_t i)
{
	m->w[i / 64] |= 1ull << (i % 64);
}
static inline void exp_mask_or(struct exp_mask *m, const struct exp_mask *x)
{
	for (size_t k = 0; k < EXP_MASK_WORDS; k++)
		m->w[k] |= x->w[k];
}
/* m & a & ~b has any row (b NULL: m & a) */
static inline bool exp_mask_any(const struct exp_mask *m, const struct exp_mask *a, const struct exp_mask *b)
{
	uint64_t any = 0;
	for (size_t k = 0; k < EXP_MASK_WORDS; k++)
		any |= m->w[k] & (a ? a->w[k] : ~0ull) & (b ? ~b->w[k] : ~0ull);
	return any != 0;
}

#define EXP_SCOPE_GPU     1u /* sampled on the GPU's handle */
#define EXP_SCOPE_MIG     2u /* sampled on each MIG instance (its own value) */
#define EXP_SCOPE_INHERIT 4u /* a MIG instance's series shows its GPU's value, as dcgm-exporter */
#define EXP_SCOPE_RATE    8u /* get() gives a counter; the value is its growth per second / 1000 */

/* One row of the registry: a metric and the NVML call (or GPM metric) that samples it. */
struct exp_metric_def {
	const char *name;
	const char *type; /* "gauge" | "counter": dcgm-exporter's default-counters.csv */
	const char *help;
	unsigned scope;                                                                     /* EXP_SCOPE_* */
	nvmlReturn_t (*get)(const struct nvml *nv, nvmlDevice_t dev, int arg, double *ret); /* NULL: GPM only */
	int arg;
	unsigned gpm;     /* NVML_GPM_METRIC_* preferred where the GPU has GPM, 0: none */
	double gpm_scale; /* GPM value -> field unit (percent -> ratio, MiB/s -> B/s) */
	bool builtin;     /* in the set served without a collectors file */
	bool fp;          /* a DCGM double; every other field is DCGM's int64, served truncated (whole MiB) */
};
extern const struct exp_metric_def exp_metrics[EXP_METRIC_COUNT];
/* The row index of a DCGM field name or of a legacy alias of it (served under that name), or -1. */
int exp_metric_by_name(const char *name);

/* Values of one device (GPU or MIG instance) at one sample; valid bit i = exp_metrics[i] present. */
struct exp_values {
	double v[EXP_METRIC_COUNT];
	struct exp_mask valid;
};

/* A GPU or MIG instance as the metrics name it; immutable after exporter_init. */
struct exp_device {
	char labels[1536];                       /* gpu="0",UUID="GPU-…",…: escaped, without braces or pod labels */
	char attr_uuid[NODE_UUID_MAX];           /* the UUID kubelet reports for it (GPU or MIG UUID) */
	char attr_name[48];                      /* GKE's id for it: nvidia<index>, nvidia<index>/gi<GI id> */
	char attr_dra_name[DRA_DEVICE_NAME_MAX]; /* the name gpulet's DRA driver publishes it under, "" none */
	char attr_dra[384]; /* with --kubernetes-enable-dra its podres_dra_key() (exporter_configure), "" none */
	unsigned gpu;       /* index into exporter.gpus */
	int mig;            /* -1 for a whole GPU, else the NVML MIG device index */
	unsigned gi;        /* GPU instance id of a MIG instance (GPM samples it) */
	bool shown;         /* its DCGM series are rendered (--devices, --mig-parent-metrics) */
};

#define EXP_XID_CODES    32
#define EXP_XID_RECENT   256 /* XIDs remembered for DCGM_EXP_XID_ERRORS_COUNT's window (a storm keeps the newest) */
#define EXP_CLOCK_RECENT 256 /* clock event reason samples remembered for DCGM_EXP_CLOCK_EVENTS_COUNT */
#define EXP_P2P_PEERS    64  /* GPUs DCGM_EXP_P2P_STATUS reports peers of (DCGM's own limit is 32) */
#define EXP_P2P_NONE     0xff

/* dcgm-exporter's err_msg for an XID code ("Unknown Error" past its table): xid_text.c */
const char *exp_xid_text(unsigned code);

/* Everything a sampler or the event thread writes about one physical GPU; guarded by lock. */
struct exp_gpu_state {
	double sampled_at;    /* CLOCK_MONOTONIC seconds of the last complete sample, 0 never */
	uint64_t nvml_errors; /* failed NVML calls (NOT_SUPPORTED excluded) */
	unsigned last_xid;    /* DCGM_FI_DEV_XID_ERRORS */
	size_t n_xids;
	struct {
		unsigned code;
		uint64_t count;
	} xids[EXP_XID_CODES];
	struct {
		unsigned code;
		double at;        /* CLOCK_MONOTONIC seconds */
	} recent[EXP_XID_RECENT]; /* a ring: the newest EXP_XID_RECENT XIDs */
	size_t n_recent;          /* XIDs recorded in all (the ring holds the last EXP_XID_RECENT) */
	struct {
		uint64_t reasons; /* nvmlDeviceGetCurrentClocksThrottleReasons' bitmask */
		double at;
	} clock_events[EXP_CLOCK_RECENT]; /* a ring of the samples that had a reason set */
	size_t n_clock_events;
	uint8_t p2p[EXP_P2P_PEERS]; /* nvmlGpuP2PStatus_t over NVLink to GPU slot k, EXP_P2P_NONE: no answer */
	unsigned rounds;            /* sampling rounds finished (values or not), counted to 2 */
	bool lost;                  /* NVML answered GPU_IS_LOST */
	bool xid_unhealthy;         /* a critical XID was seen (plugin policy) */
	bool dbe;                   /* a double-bit ECC event was seen */
	struct exp_health health;   /* NVML's current state (conditions.h), read by every sample */
};

/*
 * DCGM_EXP_GPU_HEALTH_STATUS (health_status.c): dcgm-exporter's health watches in its order, and one
 * verdict each (DCGM's result 0 PASS, 10 WARN, 20 FAIL, and the failure reason's name).
 */
enum exp_health_watch {
	EXP_HW_PCIE,
	EXP_HW_NVLINK,
	EXP_HW_PMU,
	EXP_HW_MCU,
	EXP_HW_MEM,
	EXP_HW_SM,
	EXP_HW_INFOROM,
	EXP_HW_THERMAL,
	EXP_HW_POWER,
	EXP_HW_DRIVER,
	EXP_HW_ALL,
	EXP_HEALTH_WATCHES
};
extern const char *const exp_health_watch_names[EXP_HEALTH_WATCHES];
struct exp_health_verdict {
	unsigned result;
	const char *code;
};
/* The verdicts of one GPU's state (arch: NVML_DEVICE_ARCH_*, for DCGM's Volta-only XID 93). */
void exp_health_verdicts(const struct exp_gpu_state *st, unsigned arch, struct exp_health_verdict *ret);

/*
 * The compute processes of one device (GPU or MIG instance) at one sample, for FB_USED and GPU_UTIL per
 * pod under --kubernetes-virtual-gpus (procs.c): NVML's running processes and their SM utilization,
 * each mapped to its pod's UID through its cgroup (/proc/<pid>/cgroup under --root).
 */
struct exp_proc {
	uint32_t pid;
	uint64_t mem_bytes; /* usedGpuMemory */
	unsigned sm_util;   /* nvmlDeviceGetProcessUtilization's smUtil, 0 without a sample */
	char uid[40];       /* the pod's UID, "" when the process is in no pod */
};
struct exp_procs {
	struct exp_proc *v;
	size_t n;
};
void exp_procs_free(struct exp_procs *p);

/* An EXP_SCOPE_RATE row's last counter value and its time (CLOCK_MONOTONIC s). */
struct exp_rate {
	double counter, at;
	bool have;
};

/* The two GPM samples of one device (metrics come from consecutive samples). */
struct exp_gpm {
	nvmlGpmSample_t s[2];
	int cur;
	bool have_prev;
};

struct exp_gpu {
	pthread_mutex_t lock;
	struct exp_gpu_state st;
	struct exp_mask seen; /* fields any of its devices gave a value for (under lock) */
	/* sampler-thread only */
	int gpm_support;                             /* 0 not asked yet, 1 yes, -1 no */
	struct exp_gpm *gpm;                         /* n_devs entries once gpm_support is 1 */
	struct exp_rate rate_prev[EXP_METRIC_COUNT]; /* EXP_SCOPE_RATE rows */
	struct exp_values *next;  /* n_devs entries: the round being sampled, then swapped with vals */
	struct exp_values *vals;  /* n_devs entries: the GPU, then its MIG instances */
	size_t first_dev, n_devs; /* range in exporter.devs */
	struct exp_procs *procs;  /* n_devs entries (under lock), with exporter.per_process only */
	unsigned arch;            /* NVML_DEVICE_ARCH_* (0 unknown) */
	char uuid[NODE_UUID_MAX];
	unsigned nvml_index;
	pthread_t thread;
	bool thread_running;
	struct exporter *e;
};

struct exporter {
	struct exp_device *devs;
	size_t n_devs;
	struct exp_gpu *gpus;
	size_t n_gpus;
	struct xid_policy xid_policy; /* which XIDs make a GPU unhealthy (default: the plugin's) */
	char hostname_labels[512];    /* host_labels + driver_labels (when the driver label is served) */
	char host_labels[300];        /* ,Hostname="…" or "" */
	char driver_labels[200];      /* ,DCGM_FI_DRIVER_VERSION="…" */
	double started_at;            /* CLOCK_MONOTONIC seconds */
	/* sampling */
	struct nvml *nv;
	int interval_ms;
	atomic_bool stop;
	atomic_bool layout_changed; /* a MIG instance is not where exporter_init saw it */
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	struct nvml_watch *watch; /* XID and ECC events; NULL without an event API */
	pthread_t event_thread;   /* registers the GPUs, then runs the watcher */
	bool event_running;
	/* what is served (exporter_configure) */
	struct exp_mask enabled;            /* exp_metrics rows served */
	const char *name[EXP_METRIC_COUNT]; /* the collectors file's name (an alias), else the row's */
	const char *type[EXP_METRIC_COUNT]; /* the collectors file's type and help, else the row's */
	const char *help[EXP_METRIC_COUNT];
	bool xid_enabled, driver_label; /* DCGM_FI_DEV_XID_ERRORS, DCGM_FI_DRIVER_VERSION label */
	bool xid_count_enabled;         /* DCGM_EXP_XID_ERRORS_COUNT (a collectors file lists it) */
	uint32_t label_fields;          /* static label fields listed with type label (static_labels.c) */
	const char *xid_count_type, *xid_count_help;
	unsigned xid_window_ms;     /* dcgm-exporter -x: its window (default 5 minutes) */
	bool clock_count_enabled;   /* DCGM_EXP_CLOCK_EVENTS_COUNT (a collectors file lists it) */
	bool p2p_enabled;           /* DCGM_EXP_P2P_STATUS (a collectors file lists it) */
	bool health_status_enabled; /* DCGM_EXP_GPU_HEALTH_STATUS (a collectors file lists it) */
	const char *health_status_type, *health_status_help;
	const char *p2p_type, *p2p_help;
	const char *clock_count_type, *clock_count_help;
	unsigned clock_window_ms; /* --clock-events-count-window-size (default 5 minutes) */
	const char *xid_type, *xid_help;
	const char **unavailable_names; /* collectors fields gpulet does not sample */
	size_t n_unavailable_names;
	double stale_s;              /* values older than this are not served (a hung GPU) */
	atomic_uint first_samples;   /* GPUs that finished two sampling rounds */
	atomic_bool probed;          /* every GPU sampled once: unsupported is final */
	atomic_bool judged;          /* note_first_round ran (once, on time or late) */
	struct exp_mask unsupported; /* enabled fields no device gave (set once, with probed) */
	/* attribution */
	struct podres_cache *podres; /* NULL: no pod labels */
	bool virtual_gpus;           /* one series per pod sharing a device, with label vgpu */
	bool old_namespace;          /* dcgm-exporter -o: 1.x label names (exp_config) */
	bool gpu_id_device_name;     /* GPUs attributed by nvidiaN, not UUID (exp_config) */
	struct exp_podmeta *podmeta; /* the pods' UIDs and labels; NULL: none (podmeta.h) */
	bool pod_uid, pod_labels;    /* label pod_uid, the pods' own labels (dcgm-exporter's flags) */
	bool per_process;            /* FB_USED and GPU_UTIL per pod from its processes (virtual GPUs) */
	const char *root;            /* --root: /proc/<pid>/cgroup and the HPC job mapping dir are under it */
	const char *hpc_dir;         /* --hpc-job-mapping-dir, NULL: none (hpc.c) */
	atomic_uint_fast64_t scrapes;
};

/* The device list and label strings from a loaded node. hostname NULL: no Hostname label. */
int exporter_init(struct exporter *e, const struct node *n, const char *hostname, struct gerr *err);
void exporter_free(struct exporter *e);

/* Which series a GPU with MIG instances has: dcgm-exporter's -d f (default), g, i. */
enum exp_devices { EXP_DEVICES_FLEX, EXP_DEVICES_GPUS, EXP_DEVICES_INSTANCES };

struct exp_config {
	const struct exp_collectors *collectors; /* NULL: the built-in set; must outlive the exporter */
	enum exp_devices devices;
	bool mig_parent;         /* keep a MIG GPU's own series next to its instances' */
	bool old_namespace;      /* dcgm-exporter -o: labels uuid, pod_name, pod_namespace, container_name */
	unsigned xid_window_ms;  /* dcgm-exporter -x: DCGM_EXP_XID_ERRORS_COUNT's window; 0: 300000 */
	bool gpu_id_device_name; /* --kubernetes-gpu-id-type device-name: kubelet names GPUs nvidiaN */
	bool dra;                /* --kubernetes-enable-dra: GPUs of DRA claims (PodResources' dynamic resources) too */
	const char *dra_pool;    /* the DRA driver's pool: this node's name */
	unsigned clock_window_ms; /* DCGM_EXP_CLOCK_EVENTS_COUNT's window; 0: 300000 */
};
/*
 * Choose the served fields and devices (after exporter_init, before exporter_start). Without it
 * the built-in set and dcgm-exporter's default device choice are served.
 */
void exporter_configure(struct exporter *e, const struct exp_config *cfg);

/* Static label fields (static_labels.c): the index of a field served as a label, or -1. */
int exp_label_field_index(const char *name);
/*
 * Append the enabled label fields' values (NVML, once) to each GPU's device labels. Returns how many
 * labels were left out because they did not fit (each named in a debug line).
 */
size_t exp_static_labels_fill(struct exporter *e);

/* Start one sampler per GPU and the XID event thread. nv must outlive exporter_stop(). */
int exporter_start(struct exporter *e, struct nvml *nv, int interval_ms, struct gerr *err);
/*
 * Ask every thread to stop; wait at most timeout_ms for each. A thread stuck in NVML is left
 * running: the count of those is returned, and then e must not be freed (the process exits).
 */
int exporter_stop(struct exporter *e, int timeout_ms);

/* Sample GPU slot g once (what each sampler thread does per interval); exposed for tests/bench. */
void exporter_sample_gpu(struct exporter *e, size_t g);

/* Record an XID on GPU slot g (event thread, kernel log); health follows the plugin's policy. */
void exporter_record_xid(struct exporter *e, size_t g, unsigned xid);

/* A growable text buffer reused across scrapes. */
struct strbuf {
	char *s;
	size_t len, cap;
	bool oom;
};
void strbuf_reset(struct strbuf *b);
void strbuf_free(struct strbuf *b);
void strbuf_printf(struct strbuf *b, const char *fmt, ...) _printf_(2, 3);

/*
 * Render the Prometheus text exposition of e (may be NULL: exporter still starting) into b.
 * map: pod attribution (NULL: none). now: CLOCK_MONOTONIC seconds. Returns -ENOMEM or 0.
 */
int exporter_render(struct exporter *e, const struct podres_map *map, double now, struct strbuf *b);

double exp_now_monotonic(void);

/*
 * HTTP side (http.c): /metrics and /healthz with libmicrohttpd, one epoll thread, keep-alive.
 * Readiness is one flag, the published exporter: /healthz, /health and gpulet_exporter_ready all
 * answer from one load of it per request.
 */
struct exp_http;
struct exp_http_options {
	const char *address;         /* ":9400", "127.0.0.1:9400", "[::1]:9400", port 0 = any free */
	unsigned max_connections;    /* 0: 1024; never more than RLIMIT_NOFILE leaves (http.c) */
	const char *web_config_file; /* exporter-toolkit web config (TLS, basic auth), NULL or "": none */
	bool exporter_metrics;       /* --enable-exporter-metrics: process_* and promhttp_* (selfmetrics.c) */
	bool require_gpus;           /* --health-require-gpus: /health 503 while NVML shows no GPU */
};
int exp_http_start(const struct exp_http_options *o, struct exp_http **ret, struct gerr *err);

/* --enable-exporter-metrics (selfmetrics.c): /metrics answers so far, by status, and the process_* family. */
struct exp_self_stats {
	atomic_uint_fast64_t ok, failed, unavailable;
};
void exp_self_render(struct strbuf *b, const struct exp_self_stats *s);
/* Publish the exporter once it is ready (NULL before: /metrics serves the gpulet_* basics). */
void exp_http_set_exporter(struct exp_http *h, struct exporter *e);
/* Why the exporter is not ready yet (NVML's error and what to do): /healthz answers it with 503. */
void exp_http_set_not_ready(struct exp_http *h, const char *why);
unsigned exp_http_port(const struct exp_http *h);
void exp_http_stop(struct exp_http *h);
