/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's checkpoint: <plugin dir>/gpulet-checkpoint.json, one record per claim it prepared
 * or began to prepare, and the boot it was written in (docs/reference/dra.md §7). It is what makes
 * NodePrepareResources idempotent across plugin restarts and what Unprepare undoes.
 *
 *	{"kind": "gpulet-dra-checkpoint", "version": 1, "nodeBootID": "<boot_id>",
 *	 "claims": {"<uid>": {"state": "PrepareStarted"|"PrepareCompleted", "namespace", "name",
 *	                      "devices": [...], "groups": [...], "cdiSpecFile": "..."}}}
 *
 * Written atomically (temp file, fsync, rename) on every change. A claim record is JSON the prepare
 * code builds; this file only keeps it.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "util/err.h"

#define DRA_CHECKPOINT_FILE "gpulet-checkpoint.json"
#define DRA_STATE_STARTED   "PrepareStarted"
#define DRA_STATE_COMPLETED "PrepareCompleted"

struct dra_checkpoint;

/* What dra_checkpoint_open() found. */
enum dra_cp_found {
	DRA_CP_NEW,     /* no file: empty */
	DRA_CP_SAME,    /* this boot's */
	DRA_CP_REBOOT,  /* another boot's: every claim demoted to PrepareStarted (rebooted: true) */
	DRA_CP_CORRUPT, /* unreadable: moved aside to <path>.corrupt (err says why), empty */
};

/*
 * Load path (the file may be absent) for boot_id ("" when unknown: never counts as a reboot). A file
 * that does not parse or has the wrong shape is moved aside and the checkpoint starts empty (a daemon
 * does not stay down for it); *ret_found says which case it was. -errno only when nothing can be
 * done (out of memory, the file cannot even be moved).
 */
int dra_checkpoint_open(const char *path, const char *boot_id, struct dra_checkpoint **ret,
			enum dra_cp_found *ret_found, struct gerr *err);
void dra_checkpoint_free(struct dra_checkpoint *cp);
DEFINE_CLEANUP_FUNC(struct dra_checkpoint, dra_checkpoint_free)

/* Write it now (atomically). */
int dra_checkpoint_save(struct dra_checkpoint *cp, struct gerr *err);
/* How many writes were tried since it was opened (each one an fsync'd file and rename). */
unsigned long dra_checkpoint_saves(const struct dra_checkpoint *cp);

/* The record of uid (borrowed; NULL when none), every record (an object uid -> record, borrowed). */
json_t *dra_checkpoint_claim(const struct dra_checkpoint *cp, const char *uid);
json_t *dra_checkpoint_claims(const struct dra_checkpoint *cp);
/* Set (rec is stolen) or delete uid's record, then save; -errno with err when the save fails. */
int dra_checkpoint_put(struct dra_checkpoint *cp, const char *uid, json_t *rec, struct gerr *err);
int dra_checkpoint_del(struct dra_checkpoint *cp, const char *uid, struct gerr *err);

/* The record's state is DRA_STATE_COMPLETED. */
bool dra_claim_completed(const json_t *rec);

/* The kernel's boot id (/proc/sys/kernel/random/boot_id under root): 0, or -errno. */
int dra_boot_id(const char *root, char *buf, size_t size);
