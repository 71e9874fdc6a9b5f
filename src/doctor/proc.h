/* SPDX-License-Identifier: Apache-2.0 */
/* A process running on the node, found by its program name under <root>/proc (doctor/proc.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct doctor_ctx;

/*
 * The first process whose argv[0] (its base name) is one of names; pid gets its id and cmd its command
 * line (arguments joined by spaces, cut to size). false when none runs or <root>/proc lists no process.
 */
bool doctor_find_process(const struct doctor_ctx *c, const char *const *names, size_t n_names, char *pid,
			 size_t pid_size, char *cmd, size_t cmd_size);
