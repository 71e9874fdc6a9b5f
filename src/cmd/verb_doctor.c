/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet doctor: walk the chain on this node and name the earliest broken link, its evidence and fix. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd/options.h"
#include "doctor/doctor.h"
#include "doctor/daemon.h"
#include "doctor/html.h"
#include "kapi/rows.h"
#include "util/enumtab.h"
#include "util/log.h"
#include "util/opt.h"

enum doctor_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_HTML };
static const struct enum_name format_names[] = {{FORMAT_TEXT, "text"}, {FORMAT_JSON, "json"}, {FORMAT_HTML, "html"}};

struct doctor_cli {
	struct cmd_common c;
	struct doctor_options o;
	struct doctor_serve_options serve;
	char *only[64]; /* pointers into argv, which --only splits in place */
	size_t n_only;
	char hostname[256];            /* serve.node_name when --node-name is not given: lives as long as serve does */
	int64_t interval_ns, delay_ns; /* --interval, --recheck-delay: serve's seconds */
	int format;                    /* --format; --json is --format json */
	struct kapi_env kenv;          /* kubelet's in-pod environment, for the live cluster */
};

static int list_checks(void *opts, const char *value, struct gerr *err)
{
	for (size_t k = 0; k < doctor_n_checks; k++)
		printf("%-11s %-9s inputs: %s\n            ids: %s\n", doctor_checks[k].name,
		       doctor_link_name(doctor_checks[k].link), doctor_checks[k].inputs, doctor_checks[k].ids);
	return OPTSPEC_DONE;
}

/* --only a,b --only c → one list of ids (the option strings are split in place) */
static int add_only(void *opts, const char *value, struct gerr *err)
{
	struct doctor_cli *cli = opts;

	for (char *tok = strtok((char *)value, ", "); tok; tok = strtok(NULL, ", ")) {
		if (cli->n_only == ELEMENTSOF(cli->only))
			return gerr_set(err, E2BIG, "too many --only ids (at most %zu)", ELEMENTSOF(cli->only));
		cli->only[cli->n_only++] = tok;
	}
	return 0;
}

static int set_runtime_user(void *opts, const char *value, struct gerr *err)
{
	struct doctor_cli *cli = opts;

	return cmd_parse_user(value, &cli->o.runtime_uid, &cli->o.runtime_gid);
}

#define DOCTOR_F(field) offsetof(struct doctor_cli, o.field)
static const struct optspec doctor_opts[] = {
    CMD_OPT_ROOT,
    CMD_OPT_JSON("print JSON: {\"findings\":[{id,severity,component,summary,evidence,fix}],\"skipped\":[...]}"),
    CMD_ROW("format", 0, OPT_ENUM, "FORMAT",
	    "text (default), json (as --json) or html: one self-contained page drawing the chain, each link "
	    "green, amber or red, with the root cause and its fix",
	    .off = offsetof(struct doctor_cli, format), .def = "text", OPTSPEC_NAMES(format_names)),
    CMD_ROW("only", 0, OPT_CALL, "ID[,ID...]",
	    "report only these finding ids (\"cdi.\" or \"cdi\" selects a component); more ids may follow the options",
	    .call = add_only),
    CMD_ROW("kernel-log", 0, OPT_ARGV, "FILE",
	    "kernel log to scan for XIDs (default ROOT/var/log/kern.log, or /dev/kmsg)", .off = DOCTOR_F(kernel_log)),
    CMD_OPT_PODS,
    CMD_OPT_NODE,
    CMD_ROW("events", 0, OPT_ARGV, "FILE",
	    "kubectl get events -A -o json: FailedScheduling, UnexpectedAdmissionError, FailedCreatePodSandBox of "
	    "GPU pods mapped onto the chain",
	    .off = DOCTOR_F(events_file)),
    CMD_OPT_NVML_LIBRARY,
    CMD_OPT_DRIVER_ROOT,
    CMD_ROW("cuda-version", 0, OPT_ARGV, "X.Y", "check that the driver runs images built with this CUDA",
	    .off = DOCTOR_F(cuda_version)),
    CMD_ROW("runtime-class", 0, OPT_ARGV, "NAME", "RuntimeClass handler GPU pods use (default nvidia)",
	    .off = DOCTOR_F(runtime_class)),
    CMD_ROW("containerd-config", 0, OPT_ARGV, "PATH",
	    "containerd config path on the host (default: what the running containerd, k3s or RKE2 reads, "
	    "from /proc, else the well-known files)",
	    .off = DOCTOR_F(containerd_config)),
    CMD_ROW("runtime-user", 0, OPT_CALL, "UID[:GID]",
	    "the user the container runtime runs as (rootless containerd or CRI-O; device node modes and CDI "
	    "files are judged for it; default 0)",
	    .call = set_runtime_user, .want = "UID or UID:GID"),
    CMD_ROW("live", 0, OPT_SET, NULL,
	    "ROOT is the running node (e.g. /host mounted in a pod): connect to its kubelet and plugin sockets "
	    "(always on for ROOT /)",
	    .off = DOCTOR_F(live)),
    CMD_ROW("list", 0, OPT_CALL, NULL, "list the checks, their inputs and finding ids", .call = list_checks),
    CMD_ROW("serve-metrics", 0, OPT_ARGV, "ADDR",
	    "stay running: re-check every --interval and after a node change, serve the findings as Prometheus "
	    "metrics on ADDR (:9402) with /healthz",
	    .off = offsetof(struct doctor_cli, serve.address)),
    CMD_ROW("interval", 0, OPT_DURATION, "D",
	    "with --serve-metrics: re-check this often: a Go duration (5m, 1h30m) or seconds, whole seconds",
	    .off = offsetof(struct doctor_cli, interval_ns), .def = "300", .min = 1000, .max = 86400 * 1000,
	    .bare_ms = 1000),
    CMD_ROW("recheck-delay", 0, OPT_DURATION, "D",
	    "with --serve-metrics: after a change to device nodes, CDI, containerd or device-plugin dirs, wait "
	    "this long (and at least this long since the last check): a Go duration or seconds, whole seconds",
	    .off = offsetof(struct doctor_cli, delay_ns), .def = "5", .min = 0, .max = 3600 * 1000, .bare_ms = 1000),
    CMD_ROW("node-name", 0, OPT_ARGV, "NAME",
	    "this node in the API server (default: ROOT/etc/hostname) and the node label of --serve-metrics' metrics "
	    "(default: host name)",
	    .env = {"NODE_NAME"}, .off = offsetof(struct doctor_cli, serve.node_name)),
    CMD_ROW("kubeconfig", 0, OPT_ARGV, "FILE",
	    "read this node, its pods and their events from the API server where --node, --pods, --events are not "
	    "given (default: in a pod, its service account; neither: only the files)",
	    .env = {"KUBECONFIG"}, .off = DOCTOR_F(kubeconfig)),
    KAPI_ENV_ROWS(offsetof(struct doctor_cli, kenv)),
    CMD_ROW("web-config-file", 0, OPT_ARGV, "FILE",
	    "with --serve-metrics: TLS and basic auth from an exporter-toolkit web config file, as gpulet "
	    "exporter's --web-config-file",
	    .off = offsetof(struct doctor_cli, serve.web_config_file)),
    CMD_OPT_LOG_LEVEL,
    {0},
};

static const struct cmd_verb doctor_verb =
    CMD_VERB("doctor", "[OPTIONS] [ID...]", doctor_opts,
	     "gpulet doctor --root /host --pods pods.json --cuda-version 12.4 --json",
	     .about = "Walk driver -> device nodes -> NVML/health -> toolkit/runtime -> CDI -> kubelet/plugin ->\n"
		      "allocations -> versions and report the earliest broken link with evidence and the fix.",
	     .footer = "Exit status: 0 no failure, 1 a check failed, 2 usage.", .operands = true);

/* Trailing ids after --only (gpulet doctor --only cdi.spec-missing runtime), then every id checked. */
static int check_only(struct doctor_cli *cli, int argc, char **argv)
{
	struct gerr err = {0};

	for (; optind < argc; optind++) {
		if (!cli->n_only) {
			cmd_usage_error(&doctor_verb, "unexpected argument '%s'", argv[optind]);
			cmd_help(&doctor_verb, stderr);
			return EXIT_USAGE;
		}
		if (add_only(cli, argv[optind], &err) < 0)
			return cmd_usage_error(&doctor_verb, "%s", err.msg);
	}
	for (size_t k = 0; k < cli->n_only; k++)
		if (!doctor_only_valid(cli->only[k])) {
			cmd_usage_error(&doctor_verb,
					"--only %s: no finding id or component of that name; give one of the "
					"components or ids below (gpulet doctor --list shows them with their inputs):",
					cli->only[k]);
			for (size_t j = 0; j < doctor_n_checks; j++)
				fprintf(stderr, "  %-11s %s\n", doctor_checks[j].name, doctor_checks[j].ids);
			return EXIT_USAGE;
		}
	return CMD_CONTINUE;
}

/* gpulet doctor --serve-metrics: the node daemon of the doctor DaemonSet (doctor/daemon.h). */
static int serve(struct doctor_cli *cli)
{
	struct gerr err = {0};
	sigset_t stop;

	if (cli->c.json || cli->n_only || cli->format != FORMAT_TEXT)
		return cmd_usage_error(&doctor_verb,
				       "--serve-metrics reports every finding as metrics and as a page at /; drop %s",
				       cli->n_only   ? "--only"
				       : cli->c.json ? "--json"
						     : "--format");
	if (cli->interval_ns % OPT_NSEC_PER_SEC || cli->delay_ns % OPT_NSEC_PER_SEC)
		return cmd_usage_error(&doctor_verb, "--interval and --recheck-delay are whole seconds (5m, 90s, 300)");
	cli->serve.interval_s = (unsigned)(cli->interval_ns / OPT_NSEC_PER_SEC);
	cli->serve.delay_s = (unsigned)(cli->delay_ns / OPT_NSEC_PER_SEC);
	if (!cli->serve.node_name) {
		gethostname(cli->hostname, sizeof(cli->hostname) - 1);
		cli->serve.node_name = cli->hostname;
	}
	cmd_block_stop_signals(&stop);
	if (doctor_serve(&cli->o, &cli->serve, &err) < 0) {
		fprintf(stderr, "gpulet doctor: %s\n", err.msg);
		return 1;
	}
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_cli cli = {0};
	struct doctor_options *o = &cli.o;
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	struct doctor_ctx c = {0};
	struct gerr err = {0};
	int r, rc = cmd_parse(&doctor_verb, argc, argv, &cli);

	if (rc == CMD_CONTINUE)
		rc = check_only(&cli, argc, argv);
	if (rc != CMD_CONTINUE)
		return rc;
	if (cmd_host_paths(&cli.c.nvml, &hp) < 0)
		return 1;
	o->host = hp;
	o->pods_file = cli.c.pods_file;
	o->node_file = cli.c.node_file;
	o->node_name = cli.serve.node_name;
	o->kenv = &cli.kenv;
	r = doctor_check_options(o, &err);
	if (r < 0) {
		fprintf(stderr, "gpulet doctor: %s\n", err.msg[0] ? err.msg : strerror(-r));
		return r == -ENOMEM ? 1 : EXIT_USAGE;
	}
	if (cli.c.json && cli.format == FORMAT_HTML)
		return cmd_usage_error(&doctor_verb, "--json and --format html: give one format");
	if (cli.c.json)
		cli.format = FORMAT_JSON;
	if (cli.serve.address)
		return serve(&cli);
	if (cli.serve.web_config_file)
		return cmd_usage_error(&doctor_verb,
				       "--web-config-file secures --serve-metrics; give --serve-metrics ADDR");
	r = doctor_run(&c, o);
	if (r < 0) {
		fprintf(stderr, "gpulet doctor: out of memory\n");
		doctor_ctx_done(&c);
		return 1;
	}
	rc = 0;
	for (size_t k = 0; k < c.n_findings; k++)
		if (c.findings[k].severity == DOCTOR_FAIL &&
		    doctor_finding_shown(&c, &c.findings[k], cli.only, cli.n_only))
			rc = 1;
	if (cli.format == FORMAT_JSON) {
		json_t *doc = doctor_to_json(&c, cli.only, cli.n_only);

		if (!cmd_print_json("doctor", doc))
			rc = 1;
		json_decref(doc);
	} else if (cli.format == FORMAT_HTML) {
		char host[256] = "";

		gethostname(host, sizeof(host) - 1);
		doctor_render_html(&c, &(struct doctor_html_page){.node = streq(hp->root, "/") ? host : hp->root},
				   cli.only, cli.n_only, stdout);
	} else {
		printf("gpulet doctor: node root %s\n\n", hp->root);
		doctor_print(stdout, &c, cli.only, cli.n_only);
	}
	doctor_ctx_done(&c);
	return rc;
}
