/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NodePrepareResources and NodeUnprepareResources for one claim: the state machine over the
 * checkpoint (docs/reference/dra.md §7). Prepare is idempotent: a claim already prepared with the
 * same devices answers the same CDI ids (and its spec is written again when it is missing: after a
 * reboot, a wiped /var/run/cdi, a driver or toolkit change); one half-prepared is undone and prepared
 * again. Unprepare undoes what the checkpoint says was done; an unknown claim is already unprepared.
 */
#pragma once

#include <jansson.h>

#include "dra/checkpoint.h"
#include "dra/claim.h"
#include "dra/claimspec.h"
#include "dra/devices.h"
#include "dra/sharing.h"
#include "util/err.h"

struct dra_prep {
	const char *driver, *pool;
	const struct dra_devices *devices; /* what this node publishes now (its node snapshot inside) */
	const struct dra_gates *gates;
	struct dra_checkpoint *cp;
	struct dra_cdi_options cdi;
	struct dra_share_env share;
};

/*
 * Prepare claim (the ResourceClaim object) for ref. *ret: a JSON array of the devices to answer,
 * [{"requests": [...], "poolName", "deviceName", "cdiDeviceIDs": [...]}]. -errno with err saying why
 * this claim cannot be prepared (nothing of it is left half-done when the undo works).
 */
int dra_prepare(struct dra_prep *p, const json_t *claim, const struct dra_claim_ref *ref, json_t **ret,
		struct gerr *err);
int dra_unprepare(struct dra_prep *p, const char *uid, struct gerr *err);

/*
 * At start: every claim left PrepareStarted (a crash half-way, or any claim after a reboot) is undone
 * and forgotten; kubelet prepares it again when a pod needs it. said() hears each one (r < 0: it could
 * not be undone and is kept). Returns the number undone.
 */
size_t dra_prepare_cleanup(struct dra_prep *p, void (*said)(void *data, const char *uid, int r, const char *msg),
			   void *data);

/*
 * The MPS control daemons of prepared claims that died (a restart of the plugin's container, an OOM
 * kill) started again with their limits: their pods keep the pipe dir they were given. said() hears
 * each one started (r > 0) or that could not be (r < 0). Returns the number started.
 */
size_t dra_prepare_revive(struct dra_prep *p, void (*said)(void *data, const char *uid, int r, const char *msg),
			  void *data);

/* A claim uid as kubelet sends it: what may name a file (letters, digits, '-', 1 to 64). */
bool dra_uid_valid(const char *uid);
