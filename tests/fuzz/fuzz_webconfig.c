/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the exporter's --web-config-file (src/web/webconfig.h) and the Basic
 * Authorization header reader every request of a server with basic_auth_users goes through: a
 * first line "#VALUE" (a YAML comment) is also read as an Authorization header value.
 */
#include "web/webconfig.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gerr err = {0};
	struct web_config *c = NULL;
	char *text = fuzz_cstr(data, size);

	if (!text)
		return 0;
	if (webconfig_parse(text, size, "dir/fuzz.yml", &c, &err) >= 0) {
		for (size_t i = 0; i < c->n_users; i++)
			if (webconfig_check_bcrypt(c->users[i].hash, NULL) < 0)
				abort(); /* the parser let through a hash the checker refuses */
		webconfig_free(c);
	}
	char *nl = strchr(text, '\n');
	if (nl)
		*nl = '\0';
	char *user, *pass;
	size_t plen;
	if (text[0] == '#' && web_basic_credentials(text + 1, &user, &pass, &plen) == 0) {
		if (strlen(pass) != plen || pass <= user)
			abort();
		free(user);
	}
	free(text);
	return 0;
}
