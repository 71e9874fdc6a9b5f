/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

struct doctor_ctx;

/*
 * CDI specs that mount libcuda.so.1 where an image's dynamic loader will not look, with no hook to
 * update the container's ld.so.cache and no LD_LIBRARY_PATH edit (finding cdi.libs-not-loadable).
 */
int doctor_check_cdi_loader(struct doctor_ctx *c, const char *const *dirs, size_t n_dirs);
