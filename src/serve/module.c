/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The body of a serving module (module.h), compiled once per module with SERVE_THIS set to its
 * enum: the ABI string the loader checks, and a table that makes the linker keep the module's
 * entry points (the functions of SERVE_EXPORTS that belong to it) out of the static library.
 */
#include "cmd/cmd.h"
#include "doctor/daemon.h"
#include "exporter/exporter.h"
#include "kube/allocresp.h"
#include "kube/podres.h"
#include "serve/module.h"

__attribute__((visibility("default"))) const char gpulet_module_abi[] = SERVE_ABI;

#define KEEP(mod, fn) (mod) == SERVE_THIS ? (void (*)(void))(fn) : NULL,
__attribute__((used)) static void (*const keep[])(void) = {SERVE_EXPORTS(KEEP)};
