/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU health on the Node object (--node-health; docs/reference/device-plugin.md §4.2): the condition
 * GPUHealthy (True while every GPU is healthy; False with the worst fault's class as its reason, e.g.
 * XID79, ECCUncorrectable, GPULost, and every unhealthy GPU's index and UUID in its message), written
 * by server-side apply on nodes/NAME/status under our own field manager so kubelet's conditions stay
 * theirs, and an Event on the Node for each GPU that turns unhealthy or healthy again (rate-limited).
 *
 * The plugin's main thread only hands facts over (never blocks on the API server): a thread of this
 * unit sends when it has something to say, each round in a short-lived child that opens the client
 * (the plugin itself never loads libcurl: node_health_int.h), reads the Node once for its uid and the
 * condition's transition time, applies the latest state; the thread retries with backoff while the
 * API server does not answer; a newer state replaces an unsent one. A unit of the plugin daemon, started and stopped by
 * daemon_health.c; it logs (a daemon's thread: docs/HACKING.md §1).
 */
#pragma once

#include <stdbool.h>

#include "nvml/node.h"
#include "plugin/health.h"
#include "util/err.h"

struct node_health_options {
	const char *node_name;      /* the Node reported on */
	const char *kubeconfig;     /* NULL or "": the pod's service account (the row reads $KUBECONFIG) */
	const struct kapi_env *env; /* in a pod: where the API server is (copied) */
};

/* One transition of a GPU or MIG instance the health watcher reported (plugin/health.h). */
struct node_health_fault {
	const char *uuid; /* the physical GPU */
	int index;        /* its index in the node, -1 unknown */
	int gi, ci;       /* MIG instance, -1: the whole GPU */
	enum health_kind kind;
	unsigned xid;       /* with HEALTH_XID */
	bool healthy;       /* the new state */
	const char *reason; /* the watcher's words */
};

struct node_health_reporter;

/* Start the thread (nothing is sent before node_health_gpus()). The strings are copied. */
int node_health_start(const struct node_health_options *o, struct node_health_reporter **ret, struct gerr *err);
/* Joins the thread: a round in flight ends first (its child is killed past its timeout). NULL is fine. */
void node_health_stop(struct node_health_reporter *nh);
DEFINE_CLEANUP_FUNC(struct node_health_reporter, node_health_stop)

/* The node's GPUs now (after every build): the condition counts them, faults of GPUs gone are dropped. */
void node_health_gpus(struct node_health_reporter *nh, const struct node *n);
/* A transition the watcher reported (main thread); an Event when it changes what we knew of that GPU. */
void node_health_note(struct node_health_reporter *nh, const struct node_health_fault *f);

/* What the Node should say now, for tests: the condition's status, reason and message (bounded). */
struct node_health_verdict {
	bool healthy;
	char reason[64];
	char message[1024];
};
void node_health_verdict(struct node_health_reporter *nh, struct node_health_verdict *ret);
