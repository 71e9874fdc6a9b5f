/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Link 11: versions. An image built for a newer CUDA than the driver supports fails with
 * "CUDA driver version is insufficient for CUDA runtime version" (docs/reference/field-guide.md §6.4). The CUDA version
 * comes from --cuda-version and from the GPU pods in --pods (CUDA_VERSION env, nvidia/cuda:<ver> tag).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "nvml/node.h"

int doctor_container_cuda(const json_t *ctr, int *ret, char *src, size_t size)
{
	static const char *const envs[] = {"CUDA_VERSION", "NVIDIA_REQUIRE_CUDA"}; /* set by NVIDIA's images */
	const char *image = json_string_value(json_object_get(ctr, "image"));
	const char *tag;
	size_t i;
	json_t *e;

	json_array_foreach (json_object_get(ctr, "env"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *value = json_string_value(json_object_get(e, "value"));

		for (size_t k = 0; name && value && k < ELEMENTSOF(envs); k++)
			if (streq(name, envs[k]) && cuda_version_parse(value, ret) >= 0) {
				snprintf(src, size, "env %s=%s", name, value);
				return 0;
			}
	}
	/* nvidia/cuda:12.4.0-base-ubuntu22.04, nvcr.io/nvidia/cuda:12.2.2-runtime-... */
	if (image && (tag = strstr(image, "cuda:")) && cuda_version_parse(tag + 5, ret) >= 0) {
		snprintf(src, size, "image %s", image);
		return 0;
	}
	return -ENOENT;
}

static void check_one(struct doctor_ctx *c, int cuda, const char *src, struct doctor_finding **f)
{
	char why[512];
	int driver_cuda = c->nvml_state > 0 ? c->node->cuda_driver_version : 0;
	enum cuda_verdict v = cuda_check(cuda, driver_cuda, c->driver_version, why, sizeof(why));

	if (v != CUDA_DRIVER_TOO_OLD && v != CUDA_MINOR_COMPAT)
		return;
	/*
	 * Below the toolkit's own driver is a fail even inside minor-version compatibility: NVIDIA's
	 * images carry NVIDIA_REQUIRE_CUDA=cuda>=X.Y, which the runtime hook enforces, and newer PTX
	 * cannot be JIT-compiled by the older driver (docs/reference/cuda-driver-table.md,
	 * docs/reference/field-guide.md §6.4).
	 */
	if (!*f)
		*f = doctor_report(
		    c, "cuda.driver-too-old", DOCTOR_FAIL, LINK_VERSIONS,
		    "use an image built for the node's CUDA (nvidia/cuda:<ver> with ver <= the driver's), or "
		    "upgrade the driver (after the toolkit and plugin); check with nvidia-smi",
		    "the image needs a newer driver: \"CUDA driver version is insufficient for CUDA runtime "
		    "version\" (not a missing driver)");
	doctor_evidence(*f, "%s: %s", src, why);
}

int doctor_check_cuda(struct doctor_ctx *c)
{
	struct doctor_finding *f = NULL;
	size_t i;
	json_t *pod;
	int cuda;

	if (c->o->cuda_version) {
		if (cuda_version_parse(c->o->cuda_version, &cuda) < 0) {
			doctor_report(c, "input.cuda-version-invalid", DOCTOR_WARN, LINK_VERSIONS,
				      "give --cuda-version as MAJOR.MINOR, e.g. 12.4",
				      "--cuda-version %s is not a CUDA version", c->o->cuda_version);
			return 0;
		}
		check_one(c, cuda, "--cuda-version", &f);
	}
	doctor_need_nvml(c); /* for the CUDA version NVML reports, when it loads */
	json_array_foreach (c->pods, i, pod) {
		size_t k;
		json_t *ctr;

		if (!doctor_pod_requests_gpu(pod))
			continue;
		json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), k, ctr) {
			char src[512], what[700];

			if (doctor_container_cuda(ctr, &cuda, src, sizeof(src)) < 0)
				continue;
			snprintf(what, sizeof(what), "pod %s container %s %s",
				 json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")) ?: "?",
				 json_string_value(json_object_get(ctr, "name")) ?: "?", src);
			check_one(c, cuda, what, &f);
		}
	}
	return 0;
}
