/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What NVIDIA's GPU Operator hands the device plugin when it starts it (docs/reference/operator.md §3):
 * its device-plugin container runs `/bin/sh -c /bin/entrypoint.sh`, a script from the Operator's
 * ConfigMap that waits for the validator's driver-ready file, exports its variables, turns on
 * GDRCOPY_ENABLED / GDS_ENABLED / MOFED_ENABLED for kernel modules that are loaded, and execs
 * nvidia-device-plugin. gpulet's image has no shell: `gpulet entrypoint`, run as /bin/sh, does those
 * steps itself. These functions read the three inputs (the script, the driver-ready file,
 * /proc/modules); they compute and never print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define OPERATOR_SCRIPT       "/bin/entrypoint.sh"                   /* where the ConfigMap is mounted */
#define OPERATOR_DRIVER_READY "/run/nvidia/validations/driver-ready" /* the validator's status file */
#define OPERATOR_SCRIPT_MAX   (64 * 1024)
#define OPERATOR_READY_MAX    (16 * 1024)

/* The kernel modules the Operator's script looks for, each with the variables it turns on. */
struct operator_module {
	const char *name;    /* as /proc/modules and lsmod name it */
	const char *vars[2]; /* set to "true" when the module is loaded and the variable is unset */
};
extern const struct operator_module operator_modules[];
extern const size_t operator_n_modules;

/* What a script the Operator wrote asks for, once operator_script_check() accepted it. */
struct operator_script {
	bool checks_modules; /* it has the module loop (Operator v26.3.3 and later) */
	unsigned modules;    /* bit i: operator_modules[i] is in its module list */
};

/*
 * Accept text (file names it in messages) only when every statement is one of the Operator's own
 * entrypoint statements (versions v24.6 to v26.7: wait for the driver-ready file, export it, look for
 * the modules, exec nvidia-device-plugin last): gpulet then does what it says. Anything else (another
 * command, a redirect, a substitution, a statement after the exec) is -EINVAL with err naming the line.
 */
int operator_script_check(const char *text, size_t len, const char *file, struct operator_script *ret,
			  struct gerr *err);

/* The variables of a driver-ready file: IS_HOST_DRIVER, NVIDIA_DRIVER_ROOT, DRIVER_ROOT_CTR_PATH,
 * NVIDIA_DEV_ROOT, DEV_ROOT_CTR_PATH; each value owned, NULL when the file does not set it. */
#define OPERATOR_READY_VARS 5
struct operator_ready {
	char *value[OPERATOR_READY_VARS];
};
extern const char *const operator_ready_names[OPERATOR_READY_VARS];
void operator_ready_clear(struct operator_ready *r);

/*
 * Parse the validator's driver-ready file: NAME=VALUE lines (blank lines allowed), each NAME one of
 * operator_ready_names[], each VALUE plain text a shell reads as one word (no quotes, blanks, '$' or
 * other shell characters). Anything else is -EINVAL with err naming file:line. *ret is written only
 * on success.
 */
int operator_ready_parse(const char *text, size_t len, const char *file, struct operator_ready *ret, struct gerr *err);

/* Which of the wanted modules (bits of operator_modules[]) /proc/modules lists, as `lsmod | grep -q "^name "`. */
unsigned operator_modules_loaded(const char *proc_modules, unsigned wanted);
