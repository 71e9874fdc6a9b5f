/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's root dir (--root-dir) as this node's live configuration says, all below --root: the
 * running kubelet (or the k3s / rke2 / k0s / microk8s process that embeds or starts it), systemd's
 * kubelet.service with its drop-ins and environment files, kubeadm-flags.env, and the
 * distributions' own config files (docs/reference/kubelet-root-dir.md). The live process wins over
 * files; an explicit --root-dir in a file over a distribution default; then the directory that
 * has kubelet's Registration socket; then /var/lib/kubelet.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "doctor/doctor.h"

#define KROOT_MAX_ANSWERS  16
#define KROOT_MAX_PROBLEMS 8

struct kroot_answer {
	char dir[256];
	char source[512]; /* where it came from, for the evidence */
	bool live;        /* from a running process */
	bool explicit;    /* the source sets --root-dir (not a distribution default) */
};

struct kubelet_root {
	struct kroot_answer chosen;
	char dp_dir[300];  /* the device-plugins dir kubelet serves (kubelet.sock, plugin sockets, checkpoint) */
	char dp_note[300]; /* why that one, when the root dir is not the default */
	struct kroot_answer answers[KROOT_MAX_ANSWERS]; /* every source that said something, by precedence */
	size_t n_answers;
	char problems[KROOT_MAX_PROBLEMS][512]; /* sources that exist but could not be read or parsed */
	size_t n_problems;
};

/* Root dirs kubelets use by default; the plugin check also looks for plugin sockets in each. */
struct kroot_known {
	const char *dir;
	const char *source;
};
extern const struct kroot_known kroot_known[];
extern const size_t kroot_n_known;

/* Find it once (c->kroot). -ENOMEM only: unreadable sources are problems, not errors. */
int doctor_need_kubelet_root(struct doctor_ctx *c);
/* The root dir in use ("/var/lib/kubelet" when nothing says otherwise). */
const char *doctor_kubelet_dir(struct doctor_ctx *c);
/*
 * The device-plugins dir kubelet serves: released kubelets use the fixed /var/lib/kubelet/device-plugins
 * whatever --root-dir says (docs/reference/kubelet-root-dir.md "Which paths follow --root-dir");
 * <root-dir>/device-plugins when kubelet's Registration socket is there instead. The pod-resources
 * socket and pods/ always follow the root dir.
 */
const char *doctor_device_plugin_dir(struct doctor_ctx *c);
/* Evidence: where the root dir came from, and what other sources said. */
void doctor_kubelet_root_evidence(struct doctor_ctx *c, struct doctor_finding *f);
/* The warn findings kubelet.root-dir-conflict and kubelet.config-unreadable, when they apply. */
void doctor_kubelet_root_findings(struct doctor_ctx *c);
/*
 * Any trace of kubelet on this machine (process, unit, config, binary, root dir; what in what).
 * None: not a Kubernetes node, and the kubelet, plugin and allocation links do not apply.
 */
bool doctor_kubelet_trace(struct doctor_ctx *c, char *what, size_t size);
#define KUBELET_ABSENT "no kubelet on this machine (not a Kubernetes node)"
void kubelet_root_free(struct kubelet_root *k);
