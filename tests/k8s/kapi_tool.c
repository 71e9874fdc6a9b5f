/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test driver of the Kubernetes API client (src/kapi) for tests/k8s/test_k8s_kapi.py and
 * bench/bench_kapi.py: each command is one call of the client's interface, its answer printed as JSON
 * on stdout, its error (the client's words) on stderr with exit status 1. Not part of gpulet.
 *
 *   kapi_tool [OPTIONS] config | maps
 *   kapi_tool [OPTIONS] get RES NS NAME | list RES NS [--label L] [--field F] [--limit N]
 *   kapi_tool [OPTIONS] create RES NS FILE | update RES NS NAME SUB FILE | delete RES NS NAME [--uid U]
 *   kapi_tool [OPTIONS] patch RES NS NAME SUB TYPE FILE      TYPE: merge strategic json apply apply-force
 *   kapi_tool [OPTIONS] whoami
 *   kapi_tool [OPTIONS] watch RES NS [--label L] [--field F] [--watch-timeout S]
 * RES: nodes pods events configmaps podtemplates secrets resourceclaims resourceslices nodefeatures
 * (or GROUP/VERSION/PLURAL, namespaced when NS is not "-"); NS and SUB: "-" for none; FILE: YAML or
 * JSON, "-" for stdin. OPTIONS: --kubeconfig F --sa-dir D --qps Q --burst N --token-period S.
 *
 * watch runs an informer and prints one JSON line per change {"key","deleted","rv","obj"} and per
 * status change {"status":{...}}; it reads commands on stdin, one per line: "status", "stats",
 * "keys", "whoami"; it ends at end of input.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kapi/kapi.h"
#include "parse/yaml.h"
#include "util/fileio.h"

static const struct kapi_resource podtemplates = {"", "v1", "podtemplates", "PodTemplate", true};
static const struct kapi_resource secrets = {"", "v1", "secrets", "Secret", true};
static const struct {
	const char *name;
	const struct kapi_resource *res;
} known[] = {
    {"nodes", &kapi_nodes},
    {"pods", &kapi_pods},
    {"events", &kapi_events},
    {"configmaps", &kapi_configmaps},
    {"podtemplates", &podtemplates},
    {"secrets", &secrets},
    {"resourceclaims", &kapi_resourceclaims},
    {"resourceslices", &kapi_resourceslices},
    {"nodefeatures", &kapi_nodefeatures},
};
static struct kapi_resource generic;
static char generic_buf[256];

static const struct kapi_resource *resource(const char *spec, const char *ns)
{
	char *a, *b;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(spec, known[i].name))
			return known[i].res;
	snprintf(generic_buf, sizeof(generic_buf), "%s", spec);
	a = strchr(generic_buf, '/');
	b = a ? strchr(a + 1, '/') : NULL;
	if (!a) {
		fprintf(stderr, "kapi_tool: unknown resource %s\n", spec);
		exit(2);
	}
	*a = '\0';
	generic = (struct kapi_resource){.namespaced = ns != NULL, .kind = ""};
	if (b) {
		*b = '\0';
		generic.group = generic_buf, generic.version = a + 1, generic.resource = b + 1;
	} else
		generic.group = "", generic.version = generic_buf, generic.resource = a + 1;
	return &generic;
}

static const char *opt_dash(const char *s)
{
	return strcmp(s, "-") ? s : NULL;
}

static void print_json(const json_t *v)
{
	json_dumpf(v, stdout, JSON_COMPACT | JSON_SORT_KEYS);
	putchar('\n');
	fflush(stdout);
}

static void print_stats(const struct kapi *k, FILE *out)
{
	struct kapi_stats s;

	kapi_stats(k, &s);
	fprintf(out,
		"{\"stats\":{\"requests\":%llu,\"bytes_out\":%llu,\"bytes_in\":%llu,\"throttled\":%llu,"
		"\"retries\":%llu,\"token_reads\":%llu}}\n",
		(unsigned long long)s.requests, (unsigned long long)s.bytes_out, (unsigned long long)s.bytes_in,
		(unsigned long long)s.throttled, (unsigned long long)s.retries, (unsigned long long)s.token_reads);
	fflush(out);
}

static json_t *load_object(const char *file)
{
	struct gerr err = {0};
	char *text = NULL;
	size_t len = 0;
	json_t *v = NULL;
	int r = streq(file, "-") ? read_fd(0, "stdin", 1 << 24, &text, &len, &err)
				 : read_file(file, 1 << 24, &text, &len, &err);

	if (r >= 0)
		r = yaml_to_json(text, len, file, 0, &v, NULL, &err);
	free(text);
	if (r < 0) {
		fprintf(stderr, "kapi_tool: %s\n", err.msg);
		exit(2);
	}
	return v;
}

/* /proc/self/maps names libcurl; VmRSS in KiB */
static int curl_mapped(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, "/libcurl") != NULL;
	if (f)
		fclose(f);
	return found;
}

static long rss_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			v = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static int whoami(struct kapi *k)
{
	json_t *req = json_pack("{s:s, s:s}", "apiVersion", "authentication.k8s.io/v1", "kind", "SelfSubjectReview");
	json_t *ans = NULL;
	struct gerr err = {0};
	int r = kapi_create(k, &kapi_selfsubjectreviews, NULL, req, &ans, &err);

	json_decref(req);
	if (r < 0) {
		printf("{\"whoami_error\":%d,\"message\":", -r);
		json_t *m = json_string(err.msg);
		json_dumpf(m, stdout, JSON_ENCODE_ANY);
		json_decref(m);
		printf("}\n");
		fflush(stdout);
		return r;
	}
	printf("{\"whoami\":\"%s\"}\n", json_string_value(json_object_get(
					    json_object_get(json_object_get(ans, "status"), "userInfo"), "username")));
	fflush(stdout);
	json_decref(ans);
	return 0;
}

static void print_status(struct kapi_informer *inf)
{
	struct kapi_informer_status s;
	json_t *o;

	kapi_informer_status(inf, &s);
	o = json_pack("{s:{s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:s}}", "status", "synced", s.synced,
		      "resourceVersion", s.resource_version, "lists", (json_int_t)s.lists, "expired",
		      (json_int_t)s.expired, "watches", (json_int_t)s.watches, "events", (json_int_t)s.events,
		      "bookmarks", (json_int_t)s.bookmarks, "failures", (json_int_t)s.failures, "error", s.error,
		      "message", s.message);
	print_json(o);
	json_decref(o);
}

static int watch(struct kapi *k, const struct kapi_informer_options *o)
{
	struct kapi_informer *inf = NULL;
	struct gerr err = {0};
	char line[256];
	size_t used = 0;

	if (kapi_informer_start(k, o, &inf, &err) < 0) {
		fprintf(stderr, "kapi_tool: %s\n", err.msg);
		return 1;
	}
	for (;;) {
		struct pollfd p[2] = {{.fd = kapi_informer_fd(inf), .events = POLLIN}, {.fd = 0, .events = POLLIN}};
		char *key;
		json_t *obj;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			while (kapi_informer_next(inf, &key, &obj) == 1) {
				json_t *line_obj =
				    json_pack("{s:s, s:b, s:O?}", "key", key, "deleted", obj == NULL, "obj", obj);

				print_json(line_obj);
				json_decref(line_obj);
				json_decref(obj);
				free(key);
			}
			print_status(inf);
		}
		if (p[1].revents) {
			ssize_t n = read(0, line + used, sizeof(line) - 1 - used);
			char *nl;

			if (n <= 0)
				break;
			used += (size_t)n;
			line[used] = '\0';
			while ((nl = strchr(line, '\n'))) {
				*nl = '\0';
				if (!strcmp(line, "status"))
					print_status(inf);
				else if (!strcmp(line, "stats"))
					print_stats(k, stdout);
				else if (!strcmp(line, "whoami"))
					whoami(k);
				else if (!strcmp(line, "keys")) {
					json_t *all = kapi_informer_list(inf), *keys = json_array(), *v;
					size_t i;

					json_array_foreach (all, i, v)
						json_array_append(
						    keys, json_object_get(json_object_get(v, "metadata"), "name"));
					json_t *out = json_pack("{s:o}", "keys", keys);
					print_json(out);
					json_decref(out);
					json_decref(all);
				} else if (!strncmp(line, "get ", 4)) {
					/* the cache by key: the object, or null once it is gone */
					json_t *cached = kapi_informer_get(inf, line + 4);
					json_t *out = json_pack("{s:s, s:o?}", "get", line + 4, "obj", cached);

					print_json(out);
					json_decref(out);
				}
				used -= (size_t)(nl + 1 - line);
				memmove(line, nl + 1, used + 1);
			}
			if (used == sizeof(line) - 1)
				used = 0;
		}
	}
	kapi_informer_stop(inf);
	return 0;
}

static const struct {
	const char *name;
	enum kapi_patch type;
} patches[] = {
    {"merge", KAPI_MERGE_PATCH}, {"strategic", KAPI_STRATEGIC_PATCH}, {"json", KAPI_JSON_PATCH},
    {"apply", KAPI_APPLY},       {"apply-force", KAPI_APPLY_FORCE},
};

static void usage(void)
{
	fprintf(stderr, "usage: kapi_tool [--kubeconfig F] [--sa-dir D] [--qps Q] [--burst N] [--token-period S] "
			"COMMAND ... (see tests/k8s/kapi_tool.c)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"kubeconfig", required_argument, NULL, 'k'},
	    {"sa-dir", required_argument, NULL, 's'},
	    {"qps", required_argument, NULL, 'q'},
	    {"burst", required_argument, NULL, 'b'},
	    {"token-period", required_argument, NULL, 't'},
	    {"label", required_argument, NULL, 'l'},
	    {"field", required_argument, NULL, 'f'},
	    {"limit", required_argument, NULL, 'n'},
	    {"uid", required_argument, NULL, 'u'},
	    {"watch-timeout", required_argument, NULL, 'w'},
	    {NULL, 0, NULL, 0},
	};
	struct kapi_options ko = {0};
	struct kapi_list_options lo = {0};
	struct kapi_delete_options del = {0};
	unsigned watch_timeout = 0;
	struct kapi *k = NULL;
	struct gerr err = {0};
	json_t *ans = NULL;
	const char *cmd;
	int c, r = 0;

	/* what a verb's rows read (--kubeconfig's $KUBECONFIG, KAPI_ENV_ROWS()): the library reads no env */
	const struct kapi_env kenv = {.service_host = getenv("KUBERNETES_SERVICE_HOST"),
				      .service_port = getenv("KUBERNETES_SERVICE_PORT"),
				      .pod_namespace = getenv("POD_NAMESPACE")};

	ko.env = &kenv;
	ko.kubeconfig = getenv("KUBECONFIG");
	signal(SIGPIPE, SIG_IGN);
	/* options anywhere (GNU getopt permutes them to the front), then COMMAND and its arguments */
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			ko.kubeconfig = optarg;
			break;
		case 's':
			ko.sa_dir = optarg;
			break;
		case 'q':
			ko.qps = strtod(optarg, NULL);
			break;
		case 'b':
			ko.burst = atoi(optarg);
			break;
		case 't':
			ko.token_period_s = (unsigned)atoi(optarg);
			break;
		case 'l':
			lo.label_selector = optarg;
			break;
		case 'f':
			lo.field_selector = optarg;
			break;
		case 'n':
			lo.limit = (unsigned)atoi(optarg);
			break;
		case 'u':
			del.uid = optarg;
			break;
		case 'w':
			watch_timeout = (unsigned)atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	cmd = argv[optind];
	char **pos = argv + optind + 1;
	int npos = argc - optind - 1;

	if (!strcmp(cmd, "maps")) { /* lean start-up: libcurl is mapped by kapi_open(), not before */
		int before = curl_mapped();
		long rss_before = rss_kib();

		r = kapi_open(&ko, &k, &err);
		printf("{\"before\":%s,\"after\":%s,\"rss_before_kib\":%ld,\"rss_after_kib\":%ld,\"open\":%d}\n",
		       before ? "true" : "false", curl_mapped() ? "true" : "false", rss_before, rss_kib(), r);
		kapi_close(k);
		return 0;
	}
	if (kapi_open(&ko, &k, &err) < 0) {
		fprintf(stderr, "kapi_tool: %s\n", err.msg);
		return 1;
	}
	if (kapi_warning(k))
		fprintf(stderr, "kapi_tool: warning: %s\n", kapi_warning(k));
	if (!strcmp(cmd, "config")) {
		printf("{\"server\":\"%s\",\"namespace\":\"%s\"}\n", kapi_server(k), kapi_namespace(k));
	} else if (!strcmp(cmd, "whoami")) {
		r = whoami(k) < 0;
	} else if (!strcmp(cmd, "get") && npos == 3) {
		const char *ns = opt_dash(pos[1]);
		r = kapi_get(k, resource(pos[0], ns), ns, pos[2], &ans, &err);
	} else if (!strcmp(cmd, "list") && npos == 2) {
		const char *ns = opt_dash(pos[1]);
		r = kapi_list(k, resource(pos[0], ns), ns, &lo, &ans, &err);
	} else if (!strcmp(cmd, "create") && npos == 3) {
		const char *ns = opt_dash(pos[1]);
		json_t *obj = load_object(pos[2]);
		r = kapi_create(k, resource(pos[0], ns), ns, obj, &ans, &err);
		json_decref(obj);
	} else if (!strcmp(cmd, "update") && npos == 5) {
		const char *ns = opt_dash(pos[1]);
		json_t *obj = load_object(pos[4]);
		r = kapi_update(k, resource(pos[0], ns), ns, pos[2], opt_dash(pos[3]), obj, &ans, &err);
		json_decref(obj);
	} else if (!strcmp(cmd, "patch") && npos == 6) {
		const char *ns = opt_dash(pos[1]);
		json_t *obj = load_object(pos[5]);
		size_t i;
		for (i = 0; i < sizeof(patches) / sizeof(patches[0]) && strcmp(patches[i].name, pos[4]); i++)
			;
		if (i == sizeof(patches) / sizeof(patches[0]))
			usage();
		r = kapi_patch(k, resource(pos[0], ns), ns, pos[2], opt_dash(pos[3]), patches[i].type, obj, &ans, &err);
		json_decref(obj);
	} else if (!strcmp(cmd, "delete") && npos == 3) {
		const char *ns = opt_dash(pos[1]);
		r = kapi_delete(k, resource(pos[0], ns), ns, pos[2], &del, &err);
	} else if (!strcmp(cmd, "watch") && npos == 2) {
		const char *ns = opt_dash(pos[1]);
		struct kapi_informer_options io = {.resource = resource(pos[0], ns),
						   .ns = ns,
						   .label_selector = lo.label_selector,
						   .field_selector = lo.field_selector,
						   .min_watch_timeout_s = watch_timeout};
		r = watch(k, &io);
	} else
		usage();
	if (r < 0) {
		fprintf(stderr, "kapi_tool: %s\n", err.msg);
		printf("{\"errno\":%d}\n", -r);
	} else if (ans)
		print_json(ans);
	json_decref(ans);
	print_stats(k, stderr);
	kapi_close(k);
	return r != 0;
}
