/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet probe: run inside a container — is the GPU really usable here? */
#include <getopt.h>
#include <stdio.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "doctor/doctor.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: gpulet probe [OPTIONS]\n"
		   "Inside a container: are the GPU device nodes here and openable, does the dynamic linker\n"
		   "find the driver libraries, does cuInit succeed, is the driver's CUDA new enough for\n"
		   "CUDA_VERSION? Each failure is explained with its likely cause on the node.\n\n"
		   "  --json                 {\"findings\":[{id,severity,component,summary,evidence,fix}]}\n"
		   "  --root DIR             look for dev/ under DIR (default /)\n"
		   "  --cuda-library PATH    libcuda to load (default libcuda.so.1 through the dynamic linker)\n"
		   "  --nvml-library PATH    libnvidia-ml to load (default libnvidia-ml.so.1)\n\n"
		   "Exit status: 0 the GPU is usable, 1 it is not, 2 usage.\n"
		   "Example: kubectl exec -it POD -- gpulet probe\n");
}

int cmd_probe(int argc, char **argv)
{
	enum { O_JSON = 256, O_ROOT, O_CUDA, O_NVML };
	static const struct option opts[] = {
	    {"json", no_argument, NULL, O_JSON},
	    {"root", required_argument, NULL, O_ROOT},
	    {"cuda-library", required_argument, NULL, O_CUDA},
	    {"nvml-library", required_argument, NULL, O_NVML},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct doctor_options o = {.root = "/"};
	struct doctor_ctx c = {0};
	bool json = false;
	int opt, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case O_JSON:
			json = true;
			break;
		case O_ROOT:
			o.root = optarg;
			break;
		case O_CUDA:
			o.cuda_library = optarg;
			break;
		case O_NVML:
			o.nvml_library = optarg;
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
		fprintf(stderr, "gpulet probe: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (doctor_run_table(&c, &o, probe_checks, probe_n_checks) < 0) {
		fprintf(stderr, "gpulet probe: out of memory\n");
		doctor_ctx_done(&c);
		return 1;
	}
	for (size_t k = 0; k < c.n_findings; k++)
		if (c.findings[k].severity == DOCTOR_FAIL)
			rc = 1;
	if (json) {
		json_t *doc = doctor_to_json(&c, NULL, 0);

		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(doc);
	} else {
		printf("gpulet probe: %s\n\n", rc ? "the GPU is NOT usable in this container" : "the GPU is usable");
		doctor_print(&c, NULL, 0);
	}
	doctor_ctx_done(&c);
	return rc;
}
