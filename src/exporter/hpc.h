/* SPDX-License-Identifier: Apache-2.0 */
/* The HPC job mapping directory (hpc.c): which job ids run on which GPU or MIG instance. */
#pragma once

#include <stddef.h>

#define EXP_HPC_FILE_MAX  (64 * 1024) /* bytes read of one file */
#define EXP_HPC_FILES_MAX 4096        /* files of the directory taken */
#define EXP_HPC_JOBS_MAX  256         /* jobs of one GPU */
#define EXP_HPC_JOB_MAX   256         /* characters of one job id */

struct exp_hpc_entry {
	char key[32]; /* the file's name: "<gpu index>" or "<gpu index>.<GPU instance id>" */
	char **jobs;  /* in the file's order, each once */
	size_t n;
};

struct exp_hpc {
	struct exp_hpc_entry *v;
	size_t n;
};

/*
 * One file's text into ret's jobs (appended): a job per line; empty lines, lines with control
 * characters or quotes, and a job seen before are left out. Outside input, fuzzed (fuzz_hpcjobs).
 * 0 or -ENOMEM.
 */
int exp_hpc_parse(const char *text, size_t len, struct exp_hpc_entry *ret);
/* The directory dir under root. -errno when it cannot be opened (-ENOENT: not there). */
int exp_hpc_read(const char *root, const char *dir, struct exp_hpc *ret);
void exp_hpc_free(struct exp_hpc *h);
/* The jobs of GPU index gpu (gi < 0) or of its GPU instance gi, or NULL. */
const struct exp_hpc_entry *exp_hpc_find(const struct exp_hpc *h, unsigned gpu, int gi);
