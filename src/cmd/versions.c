/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet versions: the ledger of driver, CUDA, toolkit, plugin, operator, containerd, kubelet. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "doctor/doctor.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gpulet versions [OPTIONS]\n"
		"The version ledger (driver, CUDA driver API, toolkit, plugin, operator, containerd, kubelet)\n"
		"with compatibility verdicts from tables that name their sources.\n\n"
		"  --json                {\"components\":[{name,version,source,verdicts:[{severity,text,source}]}]}\n"
		"  --root DIR            host root (default /)\n"
		"  --nvml-library PATH   libnvidia-ml.so.1 (env GPULET_NVML_LIBRARY)\n"
		"  --pods FILE           kubectl get pods -A -o json: plugin and operator image tags\n"
		"  --node FILE           kubectl get node NAME -o json: kubelet and containerd versions\n\n"
		"Exit status: 0 no incompatibility, 1 a verdict failed, 2 usage.\n"
		"Example: gpulet versions --root /host --node node.json --json\n");
}

int cmd_versions(int argc, char **argv)
{
	enum { O_JSON = 256, O_ROOT, O_NVML, O_PODS, O_NODE };
	static const struct option opts[] = {
	    {"json", no_argument, NULL, O_JSON},
	    {"root", required_argument, NULL, O_ROOT},
	    {"nvml-library", required_argument, NULL, O_NVML},
	    {"pods", required_argument, NULL, O_PODS},
	    {"node", required_argument, NULL, O_NODE},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct doctor_options o = {.root = "/", .nvml_library = cmd_env_or("GPULET_NVML_LIBRARY", NULL)};
	struct doctor_ctx c = {0};
	json_t *list, *comp, *v;
	bool json = false;
	size_t i, k;
	int opt, r, rc = 0;
	struct gerr err = {0};

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case O_JSON:
			json = true;
			break;
		case O_ROOT:
			o.root = optarg;
			break;
		case O_NVML:
			o.nvml_library = optarg;
			break;
		case O_PODS:
			o.pods_file = optarg;
			break;
		case O_NODE:
			o.node_file = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpulet versions: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	r = doctor_check_options(&o, &err);
	if (r < 0) {
		fprintf(stderr, "gpulet versions: %s\n", err.msg[0] ? err.msg : strerror(-r));
		return r == -ENOMEM ? 1 : EXIT_USAGE;
	}
	if (doctor_load_inputs(&c, &o) < 0 || !(list = versions_ledger(&c))) {
		fprintf(stderr, "gpulet versions: out of memory\n");
		doctor_ctx_done(&c);
		return 1;
	}
	json_array_foreach (list, i, comp) {
		json_array_foreach (json_object_get(comp, "verdicts"), k, v) {
			if (streq(json_string_value(json_object_get(v, "severity")), "fail"))
				rc = 1;
		}
	}
	if (json) {
		json_t *doc = json_pack("{s:O}", "components", list);

		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(doc);
	} else {
		printf("%-11s %-14s %s\n", "COMPONENT", "VERSION", "SOURCE");
		json_array_foreach (list, i, comp) {
			const char *ver = json_string_value(json_object_get(comp, "version"));

			printf("%-11s %-14s %s\n", json_string_value(json_object_get(comp, "name")), ver ? ver : "-",
			       json_string_value(json_object_get(comp, "source")));
			json_array_foreach (json_object_get(comp, "verdicts"), k, v)
				printf("            %-4s %s  [%s]\n", json_string_value(json_object_get(v, "severity")),
				       json_string_value(json_object_get(v, "text")),
				       json_string_value(json_object_get(v, "source")));
		}
	}
	json_decref(list);
	doctor_ctx_done(&c);
	return rc;
}
