/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_health.c's thread and the process that talks to the API server for it (node_health_send.c).
 * The plugin itself never opens a client: libcurl, the TLS libraries it pulls in and OpenSSL's state
 * would stay mapped for the plugin's whole life (~8 MiB of RSS) to send a few requests when a GPU
 * turns unhealthy. Each round is a child, `gpulet` (/proc/self/exe) under a hidden verb, that takes
 * one request on stdin, sends, answers on stdout and exits; it logs nothing (the thread does). The
 * messages are fixed-size records between two copies of one executable, checked by magic and size.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "plugin/node_health.h"
#include "util/err.h"

#define NODE_HEALTH_MAX_EVENTS 64                   /* events waiting for the API server; older ones give way */
#define NODE_HEALTH_VERB       "plugin-node-health" /* hidden: src/main.c */
#define NODE_HEALTH_MAGIC      0x6e686c31u          /* "nhl1" */
#define NODE_HEALTH_CONDITION  "GPUHealthy"
#define NODE_HEALTH_TIMEOUT_S  10 /* one request of the child */

struct node_health_event {
	bool warning;
	char reason[32];
	char message[512];
	time_t at;
};

/* What the API server holds, as far as the plugin knows: carried from one round to the next. */
struct node_health_known {
	bool node_read;           /* the Node was read once */
	char uid[64];             /* the Node's, for the events */
	bool have_status, status; /* the condition's status on the Node (read once, then ours) */
	char transition[32];      /* its lastTransitionTime */
};

struct node_health_request {
	uint32_t magic, size;
	char node[256];
	char kubeconfig[PATH_MAX];
	char service_host[256], service_port[16], pod_namespace[256]; /* struct kapi_env; "": unset */
	struct node_health_known known;
	bool apply; /* the condition changed since the last round that applied it */
	struct node_health_verdict verdict;
	size_t n_events;
	struct node_health_event events[NODE_HEALTH_MAX_EVENTS];
};

struct node_health_reply {
	uint32_t magic, size;
	int r;         /* the round's result: < 0 retried (refused() ones are not) */
	bool disabled; /* no client can be made: asking again will not help */
	bool applied;
	bool transition; /* the condition's status changed on the Node */
	size_t n_done;   /* events sent or refused for good, from the front */
	struct node_health_known known;
	char warning[256]; /* the client's warning about its config, once */
	int failed_r;      /* the first failure (0: none), for the log */
	char what[64];
	char error[GERR_MAX];
};

/* One round in a child, exe (NODE_HEALTH_VERB): req to it, *ret from it. A child that does not answer
 * within timeout_s is killed; one that dies or answers garbage is an error (-errno, err says it). */
int node_health_round(const char *exe, const struct node_health_request *req, struct node_health_reply *ret,
		      int timeout_s, struct gerr *err);

/* Refused for good (RBAC, an object the API finds invalid): an event is dropped, not retried forever. */
bool node_health_refused(int r);

/* The child's side: one request from in, its reply to out. */
int node_health_serve(int in, int out, struct gerr *err);
