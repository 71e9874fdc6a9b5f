/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ld.so.cache, the dynamic loader's index of SONAME -> path that `ldconfig` writes. Driver
 * discovery (host/driver.h) reads the driver root's cache to find the libraries where the loader
 * would; this reader trusts nothing in the file (it comes from the node or a test).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Entry flags (glibc elf/ldconfig.h / sysdeps ldconfig.h). */
#define LDCACHE_FLAG_TYPE_MASK     0x00ff
#define LDCACHE_FLAG_ELF_LIBC6     0x0003
#define LDCACHE_FLAG_ARCH_MASK     0xff00
#define LDCACHE_FLAG_X8664_LIB64   0x0300
#define LDCACHE_FLAG_AARCH64_LIB64 0x0a00

struct ldcache_entry {
	int32_t flags;
	const char *key;   /* the SONAME, e.g. "libcuda.so.1" */
	const char *value; /* the path ldconfig found it at, e.g. "/usr/lib/x86_64-linux-gnu/libcuda.so.1" */
};

struct ldcache {
	char *data; /* the file; entries point into it */
	size_t size;
	struct ldcache_entry *entries;
	size_t n_entries;
	bool new_format; /* entries came from the "glibc-ld.so.cache1.1" table */
};

/*
 * Parse an ld.so.cache image (as `ldconfig -r ROOT` writes it): the new "glibc-ld.so.cache" 1.1
 * format, the old "ld.so-1.7.0" format, or the old one followed by the new one (the new table
 * wins). Every offset and count is checked against len; strings must be NUL-terminated inside
 * the string table. Takes ownership of data on success.
 */
int ldcache_parse(char *data, size_t len, struct ldcache **ret, struct gerr *err);
int ldcache_read(const char *path, struct ldcache **ret, struct gerr *err);
void ldcache_free(struct ldcache *c);
DEFINE_CLEANUP_FUNC(struct ldcache, ldcache_free)

/* The arch flags of libraries this build would load (x86_64 → LDCACHE_FLAG_X8664_LIB64). */
int32_t ldcache_host_arch(void);
