/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet lint: check GPU Pod/Deployment/Job/DaemonSet YAML for the field guide's mistakes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cmd/options.h"
#include "doctor/doctor.h"
#include "util/fileio.h"
#include "kube/k8sobj.h"

struct lint_cli {
	struct cmd_common c;
	struct lint_options lo;
};

static const struct optspec lint_opts[] = {
    CMD_OPT_JSON("print JSON: {\"findings\":[{id,severity,component,summary,evidence,fix}]}"),
    CMD_ROW("runtime-class", 0, OPT_ARGV, "NAME", "GPU pods must set this runtimeClassName",
	    .off = offsetof(struct lint_cli, lo.runtime_class)),
    CMD_ROW("driver-version", 0, OPT_ARGV, "V", "the nodes' driver (e.g. 535.161.08): flag images needing newer CUDA",
	    .off = offsetof(struct lint_cli, lo.driver_version)),
    CMD_OPT_NODE,
    /* not CMD_OPT_ROOT (its own help text): without --root lint reads no node facts at all */
    CMD_ROW("root", 0, OPT_CALL, "DIR",
	    "read node facts from a node root: driver version, whether containerd needs a RuntimeClass (CDI off, "
	    "default runc), /dev/nvidia* modes",
	    .call = cmd_set_root),
    {0},
};

static const struct cmd_verb lint_verb = CMD_VERB(
    "lint", "[OPTIONS] FILE...|-", lint_opts,
    "helm template . | gpulet lint --driver-version 535.161.08 --runtime-class nvidia -",
    .about = "Check GPU workloads (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, List;\n"
	     "YAML or JSON, several documents per file) for the mistakes that leave a GPU pod Pending or\n"
	     "without a GPU. --node checks tolerations against the node's taints.",
    .footer = "Exit status: 0 no failure, 1 a rule failed or a file did not parse, 2 usage.", .operands = true);

/* Node facts from --root, reusing doctor's readers: driver version, runtime class need, device modes. */
static void facts_from_root(const struct host_paths *hp, struct lint_options *lo, char *driver, size_t size,
			    struct doctor_ctx *dc, struct doctor_options *dopt)
{
	_cleanup_free_ char *ctl = root_path(hp->root, "/dev/nvidiactl");
	struct ctrd_facts f;
	struct stat st;

	dopt->host = hp;
	dc->o = dopt;
	if (!lo->driver_version && doctor_check_driver(dc) >= 0 && dc->driver_loaded) {
		snprintf(driver, size, "%s", dc->driver_version);
		lo->driver_version = driver;
	}
	if (!lo->runtime_class && doctor_need_containerd(dc) > 0) {
		doctor_containerd_facts(dc, &f);
		/* runc by default and no CDI: only the nvidia RuntimeClass gets a GPU into the container */
		if (!f.enable_cdi && !streq(f.default_runtime, "nvidia"))
			lo->runtime_class = "nvidia";
	}
	if (ctl && stat(ctl, &st) == 0 && (st.st_mode & 0006) != 0006)
		lo->node_dev_nonworld = true;
}

int cmd_lint(int argc, char **argv)
{
	struct lint_cli cli = {0};
	struct lint_options *lo = &cli.lo;
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	struct doctor_options dopt = {0};
	struct doctor_ctx c = {0}, dc = {0};
	const char *node_file;
	json_t *node = NULL;
	char driver[64];
	int r, rc = cmd_parse(&lint_verb, argc, argv, &cli);

	if (rc != CMD_CONTINUE)
		return rc;
	rc = 0;
	node_file = cli.c.node_file;
	if (optind >= argc) {
		cmd_usage_error(&lint_verb, "no FILE given (use - for stdin)");
		cmd_help(&lint_verb, stderr);
		return EXIT_USAGE;
	}
	if (node_file) {
		json_error_t je;

		node = json_load_file(node_file, 0, &je);
		if (!node) {
			fprintf(stderr, "gpulet lint: %s:%d:%d: %s\n", node_file, je.line, je.column, je.text);
			return EXIT_USAGE;
		}
		lo->node = node;
	}
	if (cli.c.nvml.root) {
		if (cmd_host_paths(&cli.c.nvml, &hp) < 0)
			return 1;
		facts_from_root(hp, lo, driver, sizeof(driver), &dc, &dopt);
	}
	c.o = &dopt;
	c.skipped = json_array();
	for (int k = optind; k < argc; k++) {
		struct gerr err = {0};
		json_t *objs = NULL;

		r = k8sobj_load(argv[k], &objs, &err);
		if (r < 0) {
			/* a file that cannot be read is not a YAML mistake: the fix is the path */
			bool unreadable = r != -EINVAL && r != -ENOMEM;
			const char *id = unreadable ? "lint.file-unreadable" : "lint.parse-error";
			struct doctor_finding *f = doctor_find(&c, id);

			if (!f && unreadable)
				f = doctor_report(
				    &c, id, DOCTOR_FAIL, LINK_LINT,
				    "check the path (ls -l FILE) and that it is a readable file; give - to "
				    "read the manifest from stdin",
				    "a file cannot be read");
			else if (!f)
				f = doctor_report(
				    &c, id, DOCTOR_FAIL, LINK_LINT,
				    "fix the YAML/JSON at the position shown (kubectl apply --dry-run=client -f FILE)",
				    "a file does not parse");
			doctor_evidence(f, "%s", err.msg[0] ? err.msg : strerror(-r));
			continue;
		}
		lint_objects(&c, streq(argv[k], "-") ? "<stdin>" : argv[k], objs, lo);
		json_decref(objs);
	}
	for (size_t k = 0; k < c.n_findings; k++)
		if (c.findings[k].severity == DOCTOR_FAIL)
			rc = 1;
	if (cli.c.json) {
		json_t *doc = doctor_to_json(&c, NULL, 0);

		json_object_del(doc, "skipped");
		cmd_print_json("lint", doc);
		json_decref(doc);
	} else if (c.n_findings) {
		doctor_print(stdout, &c, NULL, 0);
	} else {
		printf("gpulet lint: no problems found\n");
	}
	json_decref(node);
	dc.skipped = NULL;
	doctor_ctx_done(&dc);
	doctor_ctx_done(&c);
	return rc;
}
