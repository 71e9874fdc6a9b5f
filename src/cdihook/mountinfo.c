/* SPDX-License-Identifier: Apache-2.0 */
/* mountinfo lines (mountinfo.h); fuzzed by tests/fuzz/fuzz_mountinfo.c. */
#include <errno.h>
#include <string.h>

#include "cdihook/mountinfo.h"
#include "util/macro.h"

/* mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash), in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++)
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else
			*out++ = *s;
	*out = '\0';
}

int mountinfo_next(char **cursor, char **ret_point, char **ret_type)
{
	char *line = *cursor, *save = NULL, *field, *point = NULL, *end;

	line += strspn(line, "\n");
	if (!*line)
		return 0;
	end = strchr(line, '\n');
	*cursor = end ? end + 1 : line + strlen(line);
	if (end)
		*end = '\0';
	field = strtok_r(line, " ", &save);
	for (int i = 0; field; i++, field = strtok_r(NULL, " ", &save)) {
		if (i == 4)
			point = field;
		if (i > 5 && streq(field, "-")) {
			char *type = strtok_r(NULL, " ", &save);

			if (!point || !type)
				return -EINVAL;
			unescape(point);
			*ret_point = point;
			*ret_type = type;
			return 1;
		}
	}
	return -EINVAL;
}
