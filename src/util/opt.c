/* SPDX-License-Identifier: Apache-2.0 */
#include "util/enumtab.h"
#include "util/opt.h"

/* Go's strconv.ParseBool spellings, exactly (case matters: "tRUE" is not one). */
static const struct enum_name go_bools[] = {
    {true, "1"},  {true, "t"},  {true, "T"},  {true, "TRUE"},   {true, "true"},   {true, "True"},
    {false, "0"}, {false, "f"}, {false, "F"}, {false, "FALSE"}, {false, "false"}, {false, "False"},
};

int opt_parse_bool(const char *s, bool *ret)
{
	int v;

	if (enum_from_name(go_bools, s, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}
