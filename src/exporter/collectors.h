/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm-exporter's collectors file (-f / --collectors / DCGM_EXPORTER_COLLECTORS): CSV records of
 * "DCGM field, Prometheus type, help", '#' comment lines and blank lines, read as dcgm-exporter
 * reads it (Go encoding/csv with Comment '#', each field trimmed of spaces, exactly 3 fields per
 * record; docs/reference/dcgm-exporter.md section 1). Outside input: bounded and fuzzed
 * (tests/fuzz/fuzz_collectors.c).
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

#define EXP_COLLECTORS_MAX_BYTES   (1u << 20) /* a real file is ~5 KiB */
#define EXP_COLLECTORS_MAX_RECORDS 1024       /* DCGM has fewer than 1000 fields */
#define EXP_COLLECTORS_MAX_NAME    127
#define EXP_COLLECTORS_MAX_HELP    1023

/* What a record's field name is to gpulet. */
enum exp_counter_kind {
	EXP_COUNTER_METRIC,      /* a row of exp_metrics[] (index in .metric) */
	EXP_COUNTER_XID,         /* DCGM_FI_DEV_XID_ERRORS: from NVML XID events */
	EXP_COUNTER_XID_COUNT,   /* DCGM_EXP_XID_ERRORS_COUNT: XIDs per code in the last -x window */
	EXP_COUNTER_CLOCK_COUNT, /* DCGM_EXP_CLOCK_EVENTS_COUNT: clock event samples per reason in a window */
	EXP_COUNTER_DRIVER,      /* DCGM_FI_DRIVER_VERSION: a label on every series */
	EXP_COUNTER_P2P_STATUS,  /* DCGM_EXP_P2P_STATUS: NVLink P2P status to every other GPU */
	EXP_COUNTER_GPU_HEALTH,  /* DCGM_EXP_GPU_HEALTH_STATUS: DCGM's health watches' verdicts (health_status.c) */
	EXP_COUNTER_UNAVAILABLE, /* a DCGM field gpulet does not sample */
};

struct exp_counter {
	enum exp_counter_kind kind;
	int metric; /* EXP_COUNTER_METRIC: the exp_metric_id */
	char *name, *type, *help;
	unsigned line; /* where it was read, for messages */
};

struct exp_collectors {
	char *file; /* the name used in messages */
	struct exp_counter *v;
	size_t n;
};

/*
 * Parse a collectors file's text. file names it in messages ("FILE:LINE: what; what to do").
 * An unknown field name, a Prometheus type dcgm-exporter does not know, a record without
 * exactly 3 fields or a stray quote is an error; ret is written only on success.
 */
int exp_collectors_parse(const char *text, size_t len, const char *file, struct exp_collectors *ret, struct gerr *err);
/* Read path (at most EXP_COLLECTORS_MAX_BYTES) and parse it. */
int exp_collectors_load(const char *path, struct exp_collectors *ret, struct gerr *err);
void exp_collectors_free(struct exp_collectors *c);

/* Whether name is a field DCGM or dcgm-exporter defines (dcgm_names.c). */
int exp_dcgm_field_known(const char *name);
extern const char exp_dcgm_field_names[];
