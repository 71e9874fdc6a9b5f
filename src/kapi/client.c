/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client: one request through libcurl with the token bucket, the bearer token (re-read every
 * period and on a 401), client-go's retries, bounded answers. The verbs on top of it: kapi/verbs.c.
 * docs/reference/kube-api.md §3-§6.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kapi/internal.h"
#include "util/macro.h"

#define DEFAULT_TIMEOUT_S      60
#define DEFAULT_MAX_RESPONSE   (64u << 20)
#define DEFAULT_TOKEN_PERIOD_S 60 /* client-go transport/token_source.go NewCachedFileTokenSource */
#define MAX_RETRIES            10 /* client-go rest/request.go: maxRetries for Retry-After */
#define MAX_RETRY_AFTER_S      60
#define CONNECT_TIMEOUT_S      30

int64_t kapi_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void count(uint64_t *counter, uint64_t n)
{
	__atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

/* -- open and close -------------------------------------------------------------------------- */

int kapi_open(const struct kapi_options *o, struct kapi **ret, struct gerr *err)
{
	static const struct kapi_options none = {0};
	_cleanup_(kapi_closep) struct kapi *k = NULL;
	struct kapi_config *cfg = NULL;
	const struct kapi_curl *curl;
	int r;

	if (!o)
		o = &none;
	r = kapi_config_load(o->kubeconfig, o->context, o->sa_dir, o->env, &cfg, err);
	if (r < 0)
		return r;
	k = calloc(1, sizeof(*k));
	if (!k) {
		kapi_config_free(cfg);
		return -ENOMEM;
	}
	k->cfg = cfg;
	pthread_mutex_init(&k->lock, NULL);
	r = kapi_curl_load(&curl, err);
	if (r < 0)
		return r;
	k->curl = curl;
	k->timeout_s = o->timeout_s ? o->timeout_s : DEFAULT_TIMEOUT_S;
	k->max_response = o->max_response ? o->max_response : DEFAULT_MAX_RESPONSE;
	k->token_period_ns = (int64_t)(o->token_period_s ? o->token_period_s : DEFAULT_TOKEN_PERIOD_S) * 1000000000;
	if (o->user_agent)
		k->user_agent = strdup(o->user_agent);
	else if (asprintf(&k->user_agent, "gpulet/%s", GPULET_VERSION) < 0)
		k->user_agent = NULL;
	k->field_manager = strdup(o->field_manager ? o->field_manager : "gpulet");
	if (!k->user_agent || !k->field_manager)
		return -ENOMEM;
	if (cfg->token && !(k->token = strdup(cfg->token)))
		return -ENOMEM;
	k->token_read_ns = kapi_now_ns();
	kapi_bucket_init(&k->bucket, o->qps, o->burst, k->token_read_ns);
	*ret = TAKE_PTR(k);
	return 0;
}

void kapi_close(struct kapi *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n_pool; i++)
		k->curl->easy_cleanup(k->pool[i]);
	if (k->token)
		explicit_bzero(k->token, strlen(k->token));
	free(k->token);
	free(k->user_agent);
	free(k->field_manager);
	kapi_config_free(k->cfg);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

const char *kapi_server(const struct kapi *k)
{
	return k->cfg->server;
}

const char *kapi_namespace(const struct kapi *k)
{
	return k->cfg->ns;
}

const char *kapi_warning(const struct kapi *k)
{
	return k->cfg->warning[0] ? k->cfg->warning : NULL;
}

void kapi_stats(const struct kapi *k, struct kapi_stats *ret)
{
	const uint64_t *src = (const uint64_t *)&k->stats;
	uint64_t *dst = (uint64_t *)ret;

	for (size_t i = 0; i < sizeof(*ret) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* -- waiting --------------------------------------------------------------------------------- */

int kapi_cancel_init(struct kapi *k, struct kapi_cancel *c)
{
	*c = (struct kapi_cancel){.multi = k->curl->multi_init()};
	return c->multi ? 0 : -ENOMEM;
}

void kapi_cancel_stop(struct kapi *k, struct kapi_cancel *c)
{
	__atomic_store_n(&c->stop, true, __ATOMIC_RELEASE);
	k->curl->multi_wakeup(c->multi);
}

void kapi_cancel_done(struct kapi *k, struct kapi_cancel *c)
{
	if (c->multi)
		k->curl->multi_cleanup(c->multi);
	c->multi = NULL;
}

static bool stopped(const struct kapi_cancel *c)
{
	return c && __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
}

int kapi_nap(struct kapi *k, struct kapi_cancel *cancel, int64_t ns)
{
	int64_t end = kapi_now_ns() + ns;

	if (!cancel) {
		struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		return 0;
	}
	/* a multi handle with no transfer waits until the timeout or curl_multi_wakeup() */
	for (int64_t left = ns; left > 0 && !stopped(cancel); left = end - kapi_now_ns())
		k->curl->multi_poll(cancel->multi, NULL, 0, (int)MIN((left + 999999) / 1000000, 60000), NULL);
	return stopped(cancel) ? -ECANCELED : 0;
}

/* The token bucket: wait for this request's slot. */
static int throttle(struct kapi *k, struct kapi_cancel *cancel)
{
	int64_t wait;

	pthread_mutex_lock(&k->lock);
	wait = kapi_bucket_take(&k->bucket, kapi_now_ns());
	pthread_mutex_unlock(&k->lock);
	if (wait <= 0)
		return 0;
	count(&k->stats.throttled, 1);
	return kapi_nap(k, cancel, wait);
}

/*
 * The token to send (a copy, NULL when we have none): re-read from the token file once it is older
 * than the period, or at once with force (after a 401). A file that cannot be read keeps the token we
 * have, as client-go's cachingTokenSource does.
 */
static int token_get(struct kapi *k, bool force, char **ret, struct gerr *err)
{
	const char *file = k->cfg->token_file;
	int64_t now = kapi_now_ns();
	char *t = NULL;
	int r = 0;

	pthread_mutex_lock(&k->lock);
	if (file && (force || !k->token || now - k->token_read_ns >= k->token_period_ns)) {
		count(&k->stats.token_reads, 1);
		r = kapi_read_token(file, &t, k->token ? NULL : err);
		if (r == 0) {
			if (k->token)
				explicit_bzero(k->token, strlen(k->token));
			free(k->token);
			k->token = t;
			k->token_read_ns = now;
		} else if (k->token)
			r = 0;
	}
	if (r == 0 && k->token && !(*ret = strdup(k->token)))
		r = -ENOMEM;
	else if (r == 0 && !k->token)
		*ret = NULL;
	pthread_mutex_unlock(&k->lock);
	return r;
}

/* -- one HTTP exchange ----------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
	struct kapi_call *c = userdata;
	size_t len = size * n;

	c->bytes_in += len;
	count(&c->stats->bytes_in, len); /* as it arrives: a watch's bytes count while it runs */
	if (!c->http)
		c->curl->easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->http);
	if (c->sink && c->http >= 200 && c->http < 300) {
		int r = c->sink(data, len, c->sink_data);

		if (r < 0) {
			c->sink_error = r;
			return 0;
		}
		return len;
	}
	if (len > c->resp_max - c->resp_len) {
		c->too_big = true;
		return 0;
	}
	if (c->resp_len + len + 1 > c->resp_cap) {
		char *p = grow_bytes_max(c->resp, &c->resp_cap, c->resp_len + len + 1, 4096, c->resp_max + 1);

		if (!p)
			return 0;
		c->resp = p;
	}
	memcpy(c->resp + c->resp_len, data, len);
	c->resp_len += len;
	c->resp[c->resp_len] = '\0';
	return len;
}

/* setopt, the first refusal kept (an option this libcurl cannot honour fails the request, never ignored) */
struct setter {
	const struct kapi_curl *curl;
	CURL *h;
	CURLcode rc;
	const char *failed;
};
#define SET(s, option, value)                                                    \
	do {                                                                     \
		if ((s)->rc == CURLE_OK) {                                       \
			(s)->rc = (s)->curl->easy_setopt((s)->h, option, value); \
			if ((s)->rc != CURLE_OK)                                 \
				(s)->failed = #option;                           \
		}                                                                \
	} while (0)

static void set_tls(struct setter *s, const struct kapi_config *cfg)
{
	struct curl_blob blob;

	SET(s, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	SET(s, CURLOPT_SSL_VERIFYPEER, cfg->insecure ? 0L : 1L);
	SET(s, CURLOPT_SSL_VERIFYHOST, cfg->insecure ? 0L : 2L);
	if (s->curl->version_num >= 0x075700) /* CURLOPT_CA_CACHE_TIMEOUT: a rotated ca.crt is read again */
		SET(s, CURLOPT_CA_CACHE_TIMEOUT, 0L);
	/* the cluster's CA and only it: no system bundle, no system CA dir beside it */
	if (cfg->ca_file) {
		SET(s, CURLOPT_CAINFO, cfg->ca_file);
		SET(s, CURLOPT_CAPATH, (char *)NULL);
	} else if (cfg->ca_data) {
		blob = (struct curl_blob){.data = cfg->ca_data, .len = cfg->ca_len, .flags = CURL_BLOB_COPY};
		SET(s, CURLOPT_CAINFO, (char *)NULL);
		SET(s, CURLOPT_CAPATH, (char *)NULL);
		SET(s, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (cfg->cert_file) {
		SET(s, CURLOPT_SSLCERTTYPE, "PEM");
		SET(s, CURLOPT_SSLCERT, cfg->cert_file);
		SET(s, CURLOPT_SSLKEYTYPE, "PEM");
		SET(s, CURLOPT_SSLKEY, cfg->key_file);
	} else if (cfg->cert_data) {
		SET(s, CURLOPT_SSLCERTTYPE, "PEM");
		blob = (struct curl_blob){.data = cfg->cert_data, .len = cfg->cert_len, .flags = CURL_BLOB_COPY};
		SET(s, CURLOPT_SSLCERT_BLOB, &blob);
		SET(s, CURLOPT_SSLKEYTYPE, "PEM");
		blob = (struct curl_blob){.data = cfg->key_data, .len = cfg->key_len, .flags = CURL_BLOB_COPY};
		SET(s, CURLOPT_SSLKEY_BLOB, &blob);
	}
}

static int setup(struct kapi *k, struct kapi_call *c, CURL *h, const char *token, struct curl_slist **headers,
		 struct gerr *err)
{
	struct setter s = {.curl = k->curl, .h = h};
	const char *lines[4] = {"Accept: application/json", "Expect:", NULL, NULL};
	char ctype[128];
	_cleanup_free_ char *auth = NULL;

	if (c->content_type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", c->content_type);
		lines[2] = ctype;
	}
	if (token && asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
		auth = NULL;
		return -ENOMEM;
	}
	lines[3] = auth;
	for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
		struct curl_slist *l = lines[i] ? k->curl->slist_append(*headers, lines[i]) : *headers;

		if (!l)
			return -ENOMEM;
		*headers = l;
	}
	if (auth)
		explicit_bzero(auth, strlen(auth));
	c->curl = k->curl;
	c->easy = h;
	SET(&s, CURLOPT_URL, c->url);
	SET(&s, CURLOPT_PROTOCOLS_STR, "https");
	SET(&s, CURLOPT_NOSIGNAL, 1L);
	SET(&s, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(&s, CURLOPT_USERAGENT, k->user_agent);
	SET(&s, CURLOPT_HTTPHEADER, *headers);
	SET(&s, CURLOPT_ERRORBUFFER, c->errbuf);
	SET(&s, CURLOPT_WRITEFUNCTION, on_body);
	SET(&s, CURLOPT_WRITEDATA, c);
	SET(&s, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
	SET(&s, CURLOPT_TIMEOUT, c->timeout_s ? c->timeout_s : (long)k->timeout_s);
	/* a watch may be idle for a minute between bookmarks: keepalive finds a peer that vanished */
	SET(&s, CURLOPT_TCP_KEEPALIVE, 1L);
	SET(&s, CURLOPT_TCP_KEEPIDLE, 30L);
	SET(&s, CURLOPT_TCP_KEEPINTVL, 15L);
	set_tls(&s, k->cfg);
	if (streq(c->method, "GET"))
		SET(&s, CURLOPT_HTTPGET, 1L);
	else {
		if (!streq(c->method, "POST"))
			SET(&s, CURLOPT_CUSTOMREQUEST, c->method);
		if (c->body) {
			SET(&s, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
			SET(&s, CURLOPT_POSTFIELDS, c->body);
		}
	}
	if (s.rc != CURLE_OK)
		return gerr_set(err, EPROTONOSUPPORT, "libcurl refused %s: %s", s.failed, k->curl->easy_strerror(s.rc));
	return 0;
}

static CURLcode perform(struct kapi *k, CURL *h, struct kapi_cancel *cancel)
{
	const struct kapi_curl *cu = k->curl;
	CURLcode rc = CURLE_OK;
	int running = 1, left;
	CURLMsg *m;

	if (!cancel)
		return cu->easy_perform(h);
	if (cu->multi_add_handle(cancel->multi, h) != CURLM_OK)
		return CURLE_OUT_OF_MEMORY;
	for (;;) {
		if (stopped(cancel)) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (cu->multi_perform(cancel->multi, &running) != CURLM_OK) {
			rc = CURLE_OUT_OF_MEMORY;
			break;
		}
		if ((m = cu->multi_info_read(cancel->multi, &left)) && m->msg == CURLMSG_DONE) {
			rc = m->data.result;
			break;
		}
		/* curl's own timeouts shorten the wait; kapi_cancel_stop() ends it at once */
		cu->multi_poll(cancel->multi, NULL, 0, 60000, NULL);
	}
	cu->multi_remove_handle(cancel->multi, h);
	return rc;
}

/* libcurl's failures as errno */
static const struct {
	CURLcode rc;
	int err;
} curl_errnos[] = {
    {CURLE_COULDNT_RESOLVE_HOST, EHOSTUNREACH},
    {CURLE_COULDNT_CONNECT, ECONNREFUSED},
    {CURLE_OPERATION_TIMEDOUT, ETIMEDOUT},
    {CURLE_SSL_CONNECT_ERROR, EPROTO},
    {CURLE_PEER_FAILED_VERIFICATION, EPROTO},
    {CURLE_SSL_CACERT_BADFILE, EINVAL},
    {CURLE_SSL_CERTPROBLEM, EINVAL},
    {CURLE_SEND_ERROR, ECONNRESET},
    {CURLE_RECV_ERROR, ECONNRESET},
    {CURLE_GOT_NOTHING, ECONNRESET},
    {CURLE_PARTIAL_FILE, ECONNRESET},
    {CURLE_ABORTED_BY_CALLBACK, ECANCELED},
    {CURLE_OUT_OF_MEMORY, ENOMEM},
    {CURLE_UNSUPPORTED_PROTOCOL, EPROTONOSUPPORT},
};

static int transport_errno(CURLcode rc)
{
	for (size_t i = 0; i < ELEMENTSOF(curl_errnos); i++)
		if (curl_errnos[i].rc == rc)
			return curl_errnos[i].err;
	return EIO;
}

static const char *ca_words(const struct kapi_config *cfg)
{
	if (cfg->ca_file)
		return cfg->ca_file;
	return cfg->ca_data ? "certificate-authority-data" : "the system's CAs";
}

static int transport_error(struct kapi *k, const struct kapi_call *c, CURLcode rc, struct gerr *err)
{
	const char *why = c->errbuf[0] ? c->errbuf : k->curl->easy_strerror(rc);
	int e = transport_errno(rc);
	char obj[512];

	kapi_what_name(&c->what, obj, sizeof(obj));
	if (e == EPROTO || rc == CURLE_SSL_CACERT_BADFILE)
		return gerr_set(err, e, "cannot %s %s: TLS with the API server at %s failed: %s (trusted CA: %s)",
				c->what.verb, obj, k->cfg->server, why, ca_words(k->cfg));
	if (rc == CURLE_SSL_CERTPROBLEM)
		return gerr_set(err, e, "cannot %s %s: the client certificate of %s is not usable: %s", c->what.verb,
				obj, k->cfg->origin, why);
	return gerr_set(err, e, "cannot %s %s: no answer from the API server at %s: %s", c->what.verb, obj,
			k->cfg->server, why);
}

static CURL *handle_get(struct kapi *k, struct kapi_cancel *cancel)
{
	CURL *h = NULL;

	if (!cancel) { /* an idle handle keeps its connection open: reuse it */
		pthread_mutex_lock(&k->lock);
		if (k->n_pool)
			h = k->pool[--k->n_pool];
		pthread_mutex_unlock(&k->lock);
	}
	return h ? h : k->curl->easy_init();
}

static void handle_put(struct kapi *k, CURL *h, struct kapi_cancel *cancel)
{
	if (!cancel) {
		k->curl->easy_reset(h);
		pthread_mutex_lock(&k->lock);
		if (k->n_pool < KAPI_POOL_MAX) {
			k->pool[k->n_pool++] = h;
			h = NULL;
		}
		pthread_mutex_unlock(&k->lock);
	}
	if (h) /* an informer's connection stays in its multi handle's cache */
		k->curl->easy_cleanup(h);
}

/* after the exchange: the headers both ways and the request body (the response body counted in on_body) */
static void account(struct kapi *k, struct kapi_call *c, CURL *h)
{
	long req = 0, hdr = 0;

	k->curl->easy_getinfo(h, CURLINFO_REQUEST_SIZE, &req);
	k->curl->easy_getinfo(h, CURLINFO_HEADER_SIZE, &hdr);
	count(&k->stats.bytes_out, (uint64_t)MAX(req, 0) + c->body_len);
	count(&k->stats.bytes_in, (uint64_t)MAX(hdr, 0));
}

static void token_free(char **t)
{
	if (*t)
		explicit_bzero(*t, strlen(*t));
	free(*t);
	*t = NULL;
}

/* A GET that lost its connection is sent again, as client-go does (rest/request.go isErrRetryableFunc). */
static bool resend_get(const struct kapi_call *c, CURLcode rc)
{
	return streq(c->method, "GET") && !c->sink && transport_errno(rc) == ECONNRESET;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && streq(a, b));
}

int kapi_call_run(struct kapi *k, struct kapi_call *c, struct kapi_cancel *cancel, struct gerr *err)
{
	bool reread = false;
	unsigned retries = 0;
	int r;

	for (;;) {
		struct curl_slist *headers = NULL;
		char *token = NULL, *fresh = NULL;
		curl_off_t retry_after = 0;
		CURLcode rc;
		CURL *h;

		r = throttle(k, cancel);
		if (r < 0)
			return gerr_set(err, ECANCELED, "stopped");
		r = token_get(k, false, &token, err);
		if (r < 0)
			return r;
		h = handle_get(k, cancel);
		if (!h) {
			token_free(&token);
			return -ENOMEM;
		}
		c->http = 0;
		c->resp_len = 0;
		c->bytes_in = 0;
		c->too_big = false;
		c->sink_error = 0;
		c->errbuf[0] = '\0';
		c->resp_max = c->sink ? 65536 : k->max_response;
		c->stats = &k->stats;
		r = setup(k, c, h, token, &headers, err);
		if (r >= 0)
			count(&k->stats.requests, 1);
		rc = r < 0 ? CURLE_FAILED_INIT : perform(k, h, cancel);
		if (r >= 0) {
			account(k, c, h);
			k->curl->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->http);
			k->curl->easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after);
		}
		handle_put(k, h, cancel);
		k->curl->slist_free_all(headers);
		if (r < 0) {
			token_free(&token);
			return r;
		}
		if (rc != CURLE_OK) {
			token_free(&token);
			if (stopped(cancel))
				return gerr_set(err, ECANCELED, "stopped");
			if (c->sink_error)
				return c->sink_error;
			if (c->too_big)
				return gerr_set(err, EMSGSIZE, "cannot %s %s: the answer is larger than %zu bytes",
						c->what.verb, c->what.res->resource, c->resp_max);
			if (resend_get(c, rc) && retries < MAX_RETRIES) {
				retries++;
				count(&k->stats.retries, 1);
				if (kapi_nap(k, cancel, 1000000000) < 0)
					return gerr_set(err, ECANCELED, "stopped");
				continue;
			}
			return transport_error(k, c, rc, err);
		}
		/* a 401: the token may have been rotated since we read it; read it now and try once more */
		if (c->http == 401 && !reread && k->cfg->token_file) {
			reread = true;
			r = token_get(k, true, &fresh, NULL);
			if (r == 0 && !same(fresh, token)) {
				token_free(&fresh);
				token_free(&token);
				count(&k->stats.retries, 1);
				continue;
			}
			token_free(&fresh);
		}
		token_free(&token);
		if ((c->http == 429 || c->http >= 500) && retry_after > 0 && retries < MAX_RETRIES) {
			retries++;
			count(&k->stats.retries, 1);
			if (kapi_nap(k, cancel, (int64_t)MIN(retry_after, MAX_RETRY_AFTER_S) * 1000000000) < 0)
				return gerr_set(err, ECANCELED, "stopped");
			continue;
		}
		if (c->http >= 200 && c->http < 300)
			return 0;
		return kapi_http_error(&c->what, c->http, c->resp, c->resp_len, err);
	}
}

void kapi_call_done(struct kapi_call *c)
{
	free(c->url);
	free(c->resp);
	c->url = c->resp = NULL;
}
