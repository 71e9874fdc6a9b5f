/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet probe: run inside a container — is the GPU really usable here? */
#include <stdio.h>

#include <jansson.h>

#include "cmd/options.h"
#include "doctor/doctor.h"

struct probe_cli {
	struct cmd_common c;
	const char *cuda_library, *visible_devices, *cuda_version;
};

static const struct optspec probe_opts[] = {
    CMD_OPT_JSON("print JSON: {\"findings\":[{id,severity,component,summary,evidence,fix}]}"),
    CMD_OPT_ROOT,
    CMD_ROW("cuda-library", 0, OPT_ARGV, "PATH", "libcuda to load (default libcuda.so.1 through the dynamic linker)",
	    .off = offsetof(struct probe_cli, cuda_library)),
    /* no env: inside a container the library is the one the dynamic linker finds */
    CMD_ROW("nvml-library", 0, OPT_ARGV, "PATH",
	    "libnvidia-ml to load (default libnvidia-ml.so.1 through the dynamic linker)",
	    .off = offsetof(struct cmd_common, nvml.library)),
    /* what the image and the runtime set in this container */
    CMD_ROW("visible-devices", 0, OPT_ARGV, "LIST", "the GPUs the runtime was asked for (\"\", void or none: none)",
	    .env = {"NVIDIA_VISIBLE_DEVICES"}, .env_only = true, .env_empty_is_value = true,
	    .off = offsetof(struct probe_cli, visible_devices)),
    CMD_ROW("cuda-version", 0, OPT_ARGV, "VERSION", "the CUDA this image has (nvidia/cuda images set it)",
	    .env = {"CUDA_VERSION"}, .env_only = true, .env_empty_is_value = true,
	    .off = offsetof(struct probe_cli, cuda_version)),
    {0},
};

static const struct cmd_verb probe_verb = CMD_VERB(
    "probe", "[OPTIONS]", probe_opts, "kubectl exec -it POD -- gpulet probe",
    .footer = "Exit status: 0 the GPU is usable, 1 it is not, 2 usage.",
    .about = "Inside a container: are the GPU device nodes here and openable, does the dynamic linker find the\n"
	     "driver libraries, does cuInit succeed, is the driver's CUDA new enough for CUDA_VERSION? Each\n"
	     "failure is explained with its likely cause on the node.");

int cmd_probe(int argc, char **argv)
{
	struct probe_cli cli = {0};
	_cleanup_(host_paths_freep) struct host_paths *hp = NULL;
	int rc = cmd_parse(&probe_verb, argc, argv, &cli);

	if (rc != CMD_CONTINUE)
		return rc;
	if (cmd_host_paths(&cli.c.nvml, &hp) < 0)
		return 1;
	struct doctor_ctx c = {0};
	struct doctor_options o = {.host = hp,
				   .cuda_library = cli.cuda_library,
				   .visible_devices = cli.visible_devices,
				   .cuda_version = cli.cuda_version};

	rc = 0;
	if (doctor_run_table(&c, &o, probe_checks, probe_n_checks) < 0) {
		fprintf(stderr, "gpulet probe: out of memory\n");
		doctor_ctx_done(&c);
		return 1;
	}
	for (size_t k = 0; k < c.n_findings; k++)
		if (c.findings[k].severity == DOCTOR_FAIL)
			rc = 1;
	if (cli.c.json) {
		json_t *doc = doctor_to_json(&c, NULL, 0);

		cmd_print_json("probe", doc);
		json_decref(doc);
	} else {
		printf("gpulet probe: %s\n\n", rc ? "the GPU is NOT usable in this container" : "the GPU is usable");
		doctor_print(stdout, &c, NULL, 0);
	}
	doctor_ctx_done(&c);
	return rc;
}
