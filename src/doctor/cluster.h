/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the cluster says about this node, from --pods / --node / --events (kubectl JSON): which pods
 * run here, which of them are NVIDIA's components, the device plugin's config, and who injects the
 * GPU (docs/reference/cluster-events.md).
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "doctor/doctor.h"
#include "kube/allocresp.h"

/* NVIDIA components by pod name prefix / app label (docs/reference/cluster-events.md §3). */
enum nv_component {
	NV_NONE,
	NV_DEVICE_PLUGIN,
	NV_MPS_DAEMON,
	NV_GFD,
	NV_NFD,
	NV_DRIVER,
	NV_VALIDATOR,
	NV_TOOLKIT,
	NV_OPERATOR,
	NV_OTHER, /* dcgm-exporter, mig-manager, node-status-exporter, ...: NVIDIA's, needs no check */
};

const char *cluster_pod_name(const json_t *pod);
const char *cluster_pod_ns(const json_t *pod);
/* The first Pod of --pods whose string <obj>.<field> is value (metadata.uid, spec.nodeName), or NULL. */
const json_t *cluster_pod_where(const struct doctor_ctx *c, const char *obj, const char *field, const char *value);
/* Find this node's name once: --node's metadata.name, else ROOT/etc/hostname when some pod in --pods
 * has that spec.nodeName (kubelet names the node after the host name unless --hostname-override). */
void cluster_find_node(struct doctor_ctx *c);
/* This node's name, NULL unknown (then every pod in --pods counts as this node's). */
const char *cluster_node_name(const struct doctor_ctx *c);
/* A Pod of --pods that runs (or is bound) on this node; every Pod when --node is not given. */
bool cluster_pod_here(const struct doctor_ctx *c, const json_t *pod);
bool cluster_is_pod(const json_t *obj);
enum nv_component cluster_component(const json_t *pod);
/* A pod of gpulet's own chart (label app.kubernetes.io/name=gpulet). */
bool cluster_is_gpulet(const json_t *pod);

/*
 * The device plugin's DaemonSet on this node, for fix texts: from its pod in --pods (namespace,
 * ownerReferences, labels; gpulet's chart or NVIDIA's), else NVIDIA's static manifest's names.
 */
struct plugin_ds {
	bool known;         /* read from a plugin pod in --pods */
	bool gpulet;        /* gpulet's chart runs it */
	char ns[64];        /* kube-system */
	char name[128];     /* nvidia-device-plugin-daemonset */
	char selector[320]; /* name=nvidia-device-plugin-ds */
	char pod[256];
};
void cluster_plugin_ds(const struct doctor_ctx *c, struct plugin_ds *ret);
/* Ready, and no container waiting / restarting: why not in buf ("CrashLoopBackOff, last OOMKilled"). */
bool cluster_pod_healthy(const json_t *pod, char *why, size_t size);
/* The object of this kind and name in --pods (ConfigMap, RuntimeClass), NULL when absent. */
const json_t *cluster_object(const struct doctor_ctx *c, const char *kind, const char *ns, const char *name);
/* Node label value, NULL when absent or no --node. */
const char *cluster_node_label(const struct doctor_ctx *c, const char *key);
/* A container's env value (literal value only), NULL when unset. */
const char *cluster_env(const json_t *ctr, const char *name);

/* The device plugin's settings as its pod and ConfigMap say (NVIDIA k8s-device-plugin flags). */
struct plugin_cfg {
	bool found;             /* a device plugin pod on this node */
	char strategy[96];      /* deviceListStrategy, "" unknown (default envvar) */
	char strategy_src[256]; /* where it was read */
	char config_src[256];   /* the plugin config read: "ConfigMap NS/NAME key K", "" none */
	char sharing[16];       /* "mps", "timeSlicing", "" */
	bool fail_gt_one;       /* sharing.*.failRequestsGreaterThanOne (MPS: true by default) */
	long long replicas;     /* largest sharing replicas, 0 none */
	char pod[256];          /* namespace/name of the plugin pod */
	bool config_unread;     /* it mounts a ConfigMap that --pods does not hold */
	char mig_strategy[16];  /* --mig-strategy / MIG_STRATEGY / flags.migStrategy, "" unset (default none) */
	char mig_src[256];      /* where it was read */
	char mps_root[256];     /* --mps-root / MPS_ROOT of the plugin pod, "" unset */
	bool gke;               /* GKE's own plugin: it mounts the driver and hands device nodes over itself */
};
void cluster_plugin_cfg(struct doctor_ctx *c, struct plugin_cfg *ret);

/* Who injects the GPU on this node (doctor/inject.c). */
struct inject_facts {
	enum allocresp_mode mode; /* ALLOCRESP_NONE: unknown */
	bool also_env;            /* CDI names and NVIDIA_VISIBLE_DEVICES both ("envvar,cdi-cri") */
	char cdi_name[160];       /* a CDI name handed out ("k8s.device-plugin.nvidia.com/gpu=GPU-…"), "" unknown */
	char source[320];         /* the evidence: checkpoint entry, pod env, ConfigMap, CDI spec file */
};
void doctor_inject_facts(struct doctor_ctx *c, struct inject_facts *ret);
/* CDI device names alone (no NVIDIA_VISIBLE_DEVICES beside them): the runtime's CDI must inject. */
bool inject_cdi_only(const struct inject_facts *f);
/* NVIDIA_VISIBLE_DEVICES is handed out (alone or beside CDI names): the nvidia runtime's hook can inject. */
bool inject_has_env(const struct inject_facts *f);
/* CDI device names are handed out (alone or beside NVIDIA_VISIBLE_DEVICES): a runtime with CDI on must resolve them. */
bool inject_cdi_names(const struct inject_facts *f);
/* The runtime handler a RuntimeClass names: its object in --pods, else the class's own name. */
const char *cluster_class_handler(const struct doctor_ctx *c, const char *cls);
/* Pods on this node (any, GPU or not, not terminating) whose RuntimeClass names this handler; each is
 * evidence on f when given. */
size_t cluster_handler_users(const struct doctor_ctx *c, const char *handler, struct doctor_finding *f);

/*
 * The GPU Operator runs in the cluster but NFD never labelled this node (no pci-10de label, no
 * nvidia.com/gpu.present): the operator deploys none of its operands here, its toolkit included, so the
 * runtime was never configured for GPUs — that is NFD's doing, not the runtime's (labels.discovery-missing).
 */
bool cluster_operator_unlabelled(const struct doctor_ctx *c);
/* GKE's own GPU stack: the driver under /home/kubernetes/bin/nvidia and GKE's device plugin, which mounts
 * the driver and hands the device nodes over itself (no NVIDIA runtime, no CDI needed). */
bool cluster_gke(struct doctor_ctx *c);

/*
 * The cluster's side from the API server (doctor/cluster_live.c), for what --pods, --node and --events do
 * not give: this node, the pods bound to it with the GPU Operator's pod, the events of the pods here that do
 * not run well. Called by doctor_run() after doctor_load_inputs(): o->api when the daemon follows them, else a client
 * for this walk (c->api, closed with the walk); no API server configured (no kubeconfig, not in a pod): nothing. A
 * failure is the finding input.api-failed, and the checks go on without those facts. -ENOMEM only.
 */
int doctor_api_load(struct doctor_ctx *c);
/* The client (o->kubeconfig, else $KUBECONFIG, else the pod's account; -ENOENT: none) and, with follow,
 * informers on this node, the pods bound to it and the Operator's pod (the doctor's server). */
int doctor_api_open(const struct doctor_options *o, bool follow, struct doctor_api **ret, struct gerr *err);
void doctor_api_close(struct doctor_api *a);
DEFINE_CLEANUP_FUNC(struct doctor_api, doctor_api_close)
/* The informers' eventfds, i < doctor_api_n_fds() (-1: none); after one was readable,
 * doctor_api_changed() drains them: true when the node or a GPU pod changed (worth a walk). */
size_t doctor_api_n_fds(void);
int doctor_api_fd(const struct doctor_api *a, size_t i);
bool doctor_api_changed(struct doctor_api *a);

int doctor_check_inject(struct doctor_ctx *c);
int doctor_check_plugin_pods(struct doctor_ctx *c);
int doctor_check_cluster(struct doctor_ctx *c);
/* A pod's CUDA out-of-memory on a time-sliced GPU, naming its co-tenants (doctor/check_shared.c), called
 * by doctor_check_cluster. */
void doctor_shared_gpu_oom(struct doctor_ctx *c);
/* --events: reasons mapped onto the chain (doctor/check_events.c), called by doctor_check_cluster. */
void doctor_cluster_events(struct doctor_ctx *c);
