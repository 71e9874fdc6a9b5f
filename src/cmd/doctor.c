/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet doctor: walk the chain on this node and name the earliest broken link, its evidence and fix. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "doctor/doctor.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: gpulet doctor [OPTIONS]\n"
	    "Walk driver -> device nodes -> NVML/health -> toolkit/runtime -> CDI -> kubelet/plugin ->\n"
	    "allocations -> versions and report the earliest broken link with evidence and the fix.\n\n"
	    "  --root DIR             host root (default /; e.g. /host in a container)\n"
	    "  --json                 {\"findings\":[{id,severity,component,summary,evidence,fix}],\"skipped\":[...]}\n"
	    "  --only ID[,ID...]      report only these finding ids (\"cdi.\" or \"cdi\" selects a component)\n"
	    "  --kernel-log FILE      kernel log to scan for XIDs (default ROOT/var/log/kern.log, or /dev/kmsg)\n"
	    "  --pods FILE            kubectl get pods -A -o json output (pod facts, no API server needed)\n"
	    "  --node FILE            kubectl get node NAME -o json output (capacity, allocatable)\n"
	    "  --nvml-library PATH    libnvidia-ml.so.1 to load (env GPULET_NVML_LIBRARY)\n"
	    "  --driver-root DIR      where the driver is installed, below ROOT (default /)\n"
	    "  --cuda-version X.Y     check that the driver runs images built with this CUDA\n"
	    "  --runtime-class NAME   RuntimeClass handler GPU pods use (default nvidia)\n"
	    "  --containerd-config P  containerd config path on the host (default /etc/containerd/config.toml)\n"
	    "  --live                 ROOT is the running node (e.g. /host mounted in a pod): connect to its\n"
	    "                         kubelet and plugin sockets (always on for ROOT /)\n"
	    "  --list                 list the checks, their inputs and finding ids\n\n"
	    "Exit status: 0 no failure, 1 a check failed, 2 usage.\n"
	    "Example: gpulet doctor --root /host --pods pods.json --cuda-version 12.4 --json\n");
}

static void list_checks(void)
{
	for (size_t k = 0; k < doctor_n_checks; k++)
		printf("%-11s %-9s inputs: %s\n            ids: %s\n", doctor_checks[k].name,
		       doctor_link_name(doctor_checks[k].link), doctor_checks[k].inputs, doctor_checks[k].ids);
}

/* --only a,b --only c → argv-like list (pointers into the option strings, which we split in place) */
static int add_only(char *arg, char **only, size_t *n, size_t max)
{
	for (char *tok = strtok(arg, ", "); tok; tok = strtok(NULL, ", ")) {
		if (*n == max)
			return -1;
		only[(*n)++] = tok;
	}
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	enum {
		O_ROOT = 256,
		O_JSON,
		O_ONLY,
		O_KLOG,
		O_PODS,
		O_NODE,
		O_NVML,
		O_DROOT,
		O_CUDA,
		O_RC,
		O_CTRD,
		O_LIST,
		O_RUSER,
		O_LIVE
	};
	static const struct option opts[] = {
	    {"root", required_argument, NULL, O_ROOT},
	    {"json", no_argument, NULL, O_JSON},
	    {"only", required_argument, NULL, O_ONLY},
	    {"kernel-log", required_argument, NULL, O_KLOG},
	    {"pods", required_argument, NULL, O_PODS},
	    {"node", required_argument, NULL, O_NODE},
	    {"nvml-library", required_argument, NULL, O_NVML},
	    {"driver-root", required_argument, NULL, O_DROOT},
	    {"cuda-version", required_argument, NULL, O_CUDA},
	    {"runtime-class", required_argument, NULL, O_RC},
	    {"containerd-config", required_argument, NULL, O_CTRD},
	    {"list", no_argument, NULL, O_LIST},
	    {"runtime-user", required_argument, NULL, O_RUSER},
	    {"live", no_argument, NULL, O_LIVE},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct doctor_options o = {.root = "/", .nvml_library = cmd_env_or("GPULET_NVML_LIBRARY", NULL)};
	struct doctor_ctx c = {0};
	struct gerr err = {0};
	char *only[64];
	size_t n_only = 0;
	bool json = false;
	int opt, r, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case O_ROOT:
			o.root = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case O_ONLY:
			if (add_only(optarg, only, &n_only, ELEMENTSOF(only)) < 0) {
				fprintf(stderr, "gpulet doctor: too many --only ids (at most %zu)\n", ELEMENTSOF(only));
				return EXIT_USAGE;
			}
			break;
		case O_KLOG:
			o.kernel_log = optarg;
			break;
		case O_PODS:
			o.pods_file = optarg;
			break;
		case O_NODE:
			o.node_file = optarg;
			break;
		case O_NVML:
			o.nvml_library = optarg;
			break;
		case O_DROOT:
			o.driver_root = optarg;
			break;
		case O_CUDA:
			o.cuda_version = optarg;
			break;
		case O_RC:
			o.runtime_class = optarg;
			break;
		case O_CTRD:
			o.containerd_config = optarg;
			break;
		case O_LIVE:
			o.live = true;
			break;
		case O_RUSER:
			if (sscanf(optarg, "%u:%u", &o.runtime_uid, &o.runtime_gid) < 1) {
				fprintf(stderr, "gpulet doctor: --runtime-user wants UID[:GID], got '%s'\n", optarg);
				return EXIT_USAGE;
			}
			if (!strchr(optarg, ':'))
				o.runtime_gid = o.runtime_uid;
			break;
		case O_LIST:
			list_checks();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	/* trailing ids after --only are accepted too: gpulet doctor --only cdi.spec-missing runtime. */
	for (; optind < argc; optind++) {
		if (!n_only) {
			fprintf(stderr, "gpulet doctor: unexpected argument '%s'\n", argv[optind]);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (add_only(argv[optind], only, &n_only, ELEMENTSOF(only)) < 0)
			return EXIT_USAGE;
	}
	for (size_t k = 0; k < n_only; k++)
		if (!doctor_only_valid(only[k])) {
			fprintf(stderr,
				"gpulet doctor: --only %s: no finding id or component of that name; give one of the "
				"components or ids below (gpulet doctor --list shows them with their inputs):\n",
				only[k]);
			for (size_t j = 0; j < doctor_n_checks; j++)
				fprintf(stderr, "  %-11s %s\n", doctor_checks[j].name, doctor_checks[j].ids);
			return EXIT_USAGE;
		}
	r = doctor_check_options(&o, &err);
	if (r < 0) {
		fprintf(stderr, "gpulet doctor: %s\n", err.msg[0] ? err.msg : strerror(-r));
		return r == -ENOMEM ? 1 : EXIT_USAGE;
	}
	r = doctor_run(&c, &o);
	if (r < 0) {
		fprintf(stderr, "gpulet doctor: out of memory\n");
		doctor_ctx_done(&c);
		return 1;
	}
	for (size_t k = 0; k < c.n_findings; k++)
		if (c.findings[k].severity == DOCTOR_FAIL && doctor_finding_shown(&c, &c.findings[k], only, n_only))
			rc = 1;
	if (json) {
		json_t *doc = doctor_to_json(&c, only, n_only);

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
			rc = 1;
		putchar('\n');
		json_decref(doc);
	} else {
		printf("gpulet doctor: node root %s\n\n", o.root);
		doctor_print(&c, only, n_only);
	}
	doctor_ctx_done(&c);
	return rc;
}
