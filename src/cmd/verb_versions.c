/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet versions: the ledger of driver, CUDA, toolkit, plugin, operator, containerd, kubelet. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cmd/options.h"
#include "doctor/doctor.h"

static const struct optspec versions_opts[] = {
    CMD_OPT_JSON("print JSON: {\"components\":[{name,version,source,verdicts:[{severity,text,source}]}]}"),
    CMD_OPT_ROOT,
    CMD_OPT_NVML_LIBRARY,
    CMD_OPT_DRIVER_ROOT,
    CMD_OPT_PODS,
    CMD_OPT_NODE,
    {0},
};

static const struct cmd_verb versions_verb =
    CMD_VERB("versions", "[OPTIONS]", versions_opts, "gpulet versions --root /host --node node.json --json",
	     .about = "The version ledger (driver, CUDA driver API, toolkit, plugin, operator, containerd, kubelet)\n"
		      "with compatibility verdicts from tables that name their sources. --pods gives the plugin and\n"
		      "operator image tags, --node the kubelet and containerd versions.",
	     .footer = "Exit status: 0 no incompatibility, 1 a verdict failed, 2 usage.");

int cmd_versions(int argc, char **argv)
{
	struct cmd_common cli = {0};
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	struct doctor_ctx c = {0};
	json_t *list, *comp, *v;
	size_t i, k;
	int r, rc = cmd_parse(&versions_verb, argc, argv, &cli);

	if (rc != CMD_CONTINUE)
		return rc;
	if (cmd_host_paths(&cli.nvml, &hp) < 0)
		return 1;
	struct doctor_options o = {.host = hp, .pods_file = cli.pods_file, .node_file = cli.node_file};
	struct gerr err = {0};

	rc = 0;
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
	if (cli.json) {
		json_t *doc = json_pack("{s:O}", "components", list);

		cmd_print_json("versions", doc);
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
