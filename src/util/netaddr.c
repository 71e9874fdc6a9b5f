/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"
#include "util/netaddr.h"

/* Split "[v6]:port", "host:port", ":port" or "port" into host (may stay "") and the port text. */
static int split_host_port(const char *flag, const char *addr, char *host, size_t size, const char **port,
			   struct gerr *err)
{
	const char *colon;

	host[0] = '\0';
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':' || (size_t)(end - addr - 1) >= size)
			return gerr_set(err, EINVAL, "%s '%s': expected [IPv6]:PORT", flag, addr);
		memcpy(host, addr + 1, (size_t)(end - addr - 1));
		host[end - addr - 1] = '\0';
		*port = end + 2;
		return 0;
	}
	colon = strrchr(addr, ':');
	if (!colon) {
		*port = addr;
		return 0;
	}
	if ((size_t)(colon - addr) >= size)
		return gerr_set(err, EINVAL, "%s '%s': host too long", flag, addr);
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	*port = colon + 1;
	return 0;
}

int net_parse_address(const char *flag, const char *addr, struct sockaddr_storage *ss, socklen_t *len, bool *v6,
		      struct gerr *err)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[128], *end;
	const char *port_s = NULL;
	long port;
	int r;

	memset(ss, 0, sizeof(*ss));
	r = split_host_port(flag, addr, host, sizeof(host), &port_s, err);
	if (r < 0)
		return r;
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (!*port_s || *end || errno || port < 0 || port > 65535)
		return gerr_set(err, EINVAL, "%s '%s': port must be 0-65535 (e.g. :9400)", flag, addr);
	if (!host[0] || streq(host, "0.0.0.0") || inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		if (!host[0])
			in4->sin_addr.s_addr = htonl(INADDR_ANY);
		*len = sizeof(*in4);
		*v6 = false;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		*v6 = true;
		return 0;
	}
	return gerr_set(err, EINVAL, "%s '%s': '%s' is not an IP address (use :PORT for all)", flag, addr, host);
}
