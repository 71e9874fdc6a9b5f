/* SPDX-License-Identifier: Apache-2.0 */
/* A bounds-checked ld.so.cache reader. See ldcache.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/ldcache.h"
#include "util/fileio.h"

/*
 * Layouts from glibc sysdeps/generic/dl-cache.h (and checked against `ldconfig -p -C FILE`):
 *   old: "ld.so-1.7.0" (11 bytes, padded to 12), u32 nlibs, then nlibs x {i32 flags, u32 key,
 *        u32 value}; offsets relative to the end of that table.
 *   new: "glibc-ld.so.cache" "1.1", u32 nlibs, u32 len_strings, u8 flags (2 = little endian,
 *        3 = big endian, 0 = unknown), 3 pad, u32 extension_offset, 3 x u32 unused (48 bytes),
 *        then nlibs x {i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap} (24 bytes);
 *        offsets relative to the start of the new header.
 *   compat: old table, then the new header aligned to 8; all offsets relative to the new header.
 */
#define OLD_MAGIC        "ld.so-1.7.0"
#define OLD_HEADER       16
#define OLD_ENTRY        12
#define NEW_MAGIC        "glibc-ld.so.cache1.1"
#define NEW_HEADER       48
#define NEW_ENTRY        24
#define LDCACHE_MAX_SIZE (64u << 20)

static uint32_t get_u32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A string at base+off inside [0, len): must be NUL-terminated before len. */
static const char *cache_string(const char *data, size_t len, size_t base, uint32_t off)
{
	size_t start = base + off;

	if (base > len || off > len - base)
		return NULL;
	if (!memchr(data + start, 0, len - start))
		return NULL;
	return data + start;
}

static int parse_table(const char *data, size_t len, size_t table, size_t entry_size, uint32_t n, size_t strings_base,
		       struct ldcache_entry **ret, struct gerr *err)
{
	_cleanup_free_ struct ldcache_entry *e = NULL;

	if (table > len || (len - table) / entry_size < n)
		return gerr_set(err, EBADMSG,
				"ld.so.cache: %u entries do not fit in %zu bytes; the cache is "
				"truncated, run ldconfig",
				n, len);
	e = calloc(n ? n : 1, sizeof(*e));
	if (!e)
		return gerr_set(err, ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const char *p = data + table + (size_t)i * entry_size;

		e[i].flags = (int32_t)get_u32(p);
		e[i].key = cache_string(data, len, strings_base, get_u32(p + 4));
		e[i].value = cache_string(data, len, strings_base, get_u32(p + 8));
		if (!e[i].key || !e[i].value)
			return gerr_set(err, EBADMSG, "ld.so.cache: entry %u points outside the file; run ldconfig", i);
	}
	*ret = TAKE_PTR(e);
	return 0;
}

static int parse_new(const char *data, size_t len, size_t at, struct ldcache *c, struct gerr *err)
{
	const unsigned char le = 2, be = 3;
	const uint16_t probe = 1;
	unsigned char order, host = *(const unsigned char *)&probe ? le : be;

	if (at > len || len - at < NEW_HEADER)
		return gerr_set(err, EBADMSG, "ld.so.cache: new-format header truncated");
	order = (unsigned char)data[at + 28];
	if (order != 0 && order != host)
		return gerr_set(err, EBADMSG,
				"ld.so.cache: written for the other byte order; run ldconfig on "
				"this host");
	c->new_format = true;
	c->n_entries = get_u32(data + at + 20);
	return parse_table(data, len, at + NEW_HEADER, NEW_ENTRY, (uint32_t)c->n_entries, at, &c->entries, err);
}

int ldcache_parse(char *data, size_t len, struct ldcache **ret, struct gerr *err)
{
	_cleanup_free_ struct ldcache *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return gerr_set(err, ENOMEM, "out of memory");
	if (len >= NEW_HEADER && memcmp(data, NEW_MAGIC, strlen(NEW_MAGIC)) == 0) {
		r = parse_new(data, len, 0, c, err);
	} else if (len >= OLD_HEADER && memcmp(data, OLD_MAGIC, strlen(OLD_MAGIC)) == 0) {
		uint32_t n = get_u32(data + 12);
		size_t end = OLD_HEADER + (size_t)n * OLD_ENTRY, at = (end + 7) & ~(size_t)7;

		if (n > len / OLD_ENTRY || end > len)
			return gerr_set(err, EBADMSG,
					"ld.so.cache: %u entries do not fit in %zu bytes; run "
					"ldconfig",
					n, len);
		if (at <= len && len - at >= NEW_HEADER && memcmp(data + at, NEW_MAGIC, strlen(NEW_MAGIC)) == 0) {
			r = parse_new(data, len, at, c, err);
		} else {
			c->n_entries = n;
			r = parse_table(data, len, OLD_HEADER, OLD_ENTRY, n, end, &c->entries, err);
		}
	} else {
		return gerr_set(err, EBADMSG, "not an ld.so.cache (unknown magic); regenerate it with ldconfig");
	}
	if (r < 0)
		return r;
	c->data = data;
	c->size = len;
	*ret = TAKE_PTR(c);
	return 0;
}

/* On success the cache keeps the file's bytes. */
static int parse_data(const char *path, char **data, size_t len, void *ret, struct gerr *err)
{
	int r = ldcache_parse(*data, len, ret, err);

	if (r < 0)
		return gerr_prefix(err, "%s: ", path);
	*data = NULL;
	return 0;
}

int ldcache_read(const char *path, struct ldcache **ret, struct gerr *err)
{
	return read_and_parse(path, LDCACHE_MAX_SIZE, parse_data, ret, err);
}

void ldcache_free(struct ldcache *c)
{
	if (!c)
		return;
	free(c->data);
	free(c->entries);
	free(c);
}

int32_t ldcache_host_arch(void)
{
#if defined(__aarch64__)
	return LDCACHE_FLAG_AARCH64_LIB64;
#else
	return LDCACHE_FLAG_X8664_LIB64;
#endif
}
