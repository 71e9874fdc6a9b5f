/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "alloc.h"

int alloc_pair_score(const struct node *n, unsigned a, unsigned b)
{
	return 0;
}

int alloc_preferred(const struct node *n, const struct resource *r, enum replica_policy policy,
		    const char *const *available, size_t n_available, const char *const *must_include,
		    size_t n_must_include, size_t size, const char ***ret, struct gerr *err)
{
	return gerr_set(err, ENOSYS, "preferred allocation not implemented yet");
}
