/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl is loaded the first time a client is opened, never at start-up: the verbs that do not talk
 * to the API server (and the plugin while it does not) map none of libcurl, OpenSSL's TLS, nghttp2,
 * krb5, ldap... (docs/HACKING.md §7). The soname is the one the build found (GPULET_CURL_SONAME).
 *
 * Why the OpenSSL flavour (Debian's libcurl4, not libcurl3-gnutls): a kubeconfig carries its CA,
 * client certificate and key inline (*-data); libcurl takes them from memory (CURLOPT_CAINFO_BLOB,
 * SSLCERT_BLOB, SSLKEY_BLOB) only with OpenSSL among Debian's flavours, and writing a private key to a
 * temporary file is what we must not do. OpenSSL is also what libgrpc in the plugin already maps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "kapi/internal.h"

#ifndef GPULET_CURL_SONAME
#define GPULET_CURL_SONAME "libcurl.so.4"
#endif

/* CURLOPT_PROTOCOLS_STR (7.85.0) and CURLOPT_CAINFO_BLOB (7.77.0); Debian 12 has 7.88.1 */
#define CURL_MIN_VERSION 0x075500

static struct kapi_curl curl_api;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char curl_error[512] = "not loaded"; /* empty once loaded */

static void load(void)
{
	void *dl = dlopen(GPULET_CURL_SONAME, RTLD_LAZY | RTLD_LOCAL);
	const curl_version_info_data *v;

	if (!dl) {
		snprintf(curl_error, sizeof(curl_error),
			 "cannot load %s (%s): install libcurl4 (Debian's OpenSSL flavour of libcurl) to talk to the "
			 "Kubernetes API server",
			 GPULET_CURL_SONAME, dlerror());
		return;
	}
#define KAPI_CURL_RESOLVE(m, sym)                                                                           \
	*(void **)&curl_api.m = dlsym(dl, #sym);                                                            \
	if (!curl_api.m) {                                                                                  \
		snprintf(curl_error, sizeof(curl_error), "%s has no %s: not a libcurl this gpulet can use", \
			 GPULET_CURL_SONAME, #sym);                                                         \
		return;                                                                                     \
	}
	KAPI_CURL_FUNCTIONS(KAPI_CURL_RESOLVE)
#undef KAPI_CURL_RESOLVE
	v = curl_api.version_info(CURLVERSION_NOW);
	if (!v || v->version_num < CURL_MIN_VERSION || !(v->features & CURL_VERSION_SSL) || !v->ssl_version ||
	    !strstr(v->ssl_version, "OpenSSL")) {
		snprintf(
		    curl_error, sizeof(curl_error),
		    "%s is libcurl %s with %s: gpulet needs libcurl >= 7.85 built with OpenSSL (Debian's libcurl4)",
		    GPULET_CURL_SONAME, v && v->version ? v->version : "?",
		    v && v->ssl_version ? v->ssl_version : "no TLS");
		return;
	}
	if (curl_api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(curl_error, sizeof(curl_error), "curl_global_init failed");
		return;
	}
	curl_api.version_num = v->version_num;
	curl_error[0] = '\0';
}

int kapi_curl_load(const struct kapi_curl **ret, struct gerr *err)
{
	pthread_once(&curl_once, load);
	if (curl_error[0])
		return gerr_set(err, ENOPKG, "%s", curl_error);
	*ret = &curl_api;
	return 0;
}
