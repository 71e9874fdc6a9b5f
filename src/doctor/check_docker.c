/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Docker as kubelet's runtime through cri-dockerd (docs/reference/doctor-classes.md §8):
 * /etc/docker/daemon.json says which runtimes dockerd has ("runtimes": {"nvidia": {"path":
 * "nvidia-container-runtime"}}) and which one containers get ("default-runtime"). cri-dockerd maps a
 * RuntimeClass handler to a Docker runtime only since Mirantis/cri-dockerd PR 350 (2024); before, every
 * pod ran on the default runtime, so NVIDIA's guidance for Docker nodes is default-runtime nvidia.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "util/fileio.h"

int docker_load(const struct doctor_ctx *c, struct runtime_found *rt)
{
	_cleanup_free_ char *p = doctor_path(c, rt->config);
	json_error_t je;

	if (!p)
		return -ENOMEM;
	if (access(p, F_OK) != 0)
		return 0; /* dockerd on built-in defaults: runc only */
	rt->docker = json_load_file(p, 0, &je);
	if (!rt->docker || !json_is_object(rt->docker)) {
		snprintf(rt->docker_error, sizeof(rt->docker_error), "%s:%d:%d: %s", rt->config, je.line, je.column,
			 rt->docker ? "not a JSON object" : je.text);
		json_decref(rt->docker);
		rt->docker = NULL;
	}
	return 0;
}

const char *docker_default_runtime(const struct runtime_found *rt)
{
	return json_string_value(json_object_get(rt->docker, "default-runtime")) ?: "runc";
}

const char *docker_runtime_path(const struct runtime_found *rt, const char *name)
{
	const json_t *r = json_object_get(json_object_get(rt->docker, "runtimes"), name);

	/* dockerd's built-in runtime names (runc, and containerd's shim name for it) */
	if (!r && (streq(name, "runc") || streq(name, "io.containerd.runc.v2")))
		return "runc";
	return r ? json_string_value(json_object_get(r, "path")) ?: "" : NULL;
}

/* dockerd runs a runtime path that has no '/' from its PATH (here: the host's tool dirs). */
static bool runtime_present(const struct doctor_ctx *c, const char *path)
{
	_cleanup_free_ char *p = NULL;

	if (strchr(path, '/'))
		p = doctor_path(c, path);
	else
		p = host_find_bin(doctor_root(c->o), "/", path);
	return p && access(p, X_OK) == 0;
}

static void files_evidence(const struct doctor_ctx *c, struct doctor_finding *f)
{
	doctor_evidence(f, "%s found by %s; read %s", rt_name(c->rt), c->rt->source, c->rt->config);
}

static void bad_runtime(struct doctor_ctx *c, const char *name, const char *path, bool is_default)
{
	struct doctor_finding *f;
	char fix[700];

	snprintf(fix, sizeof(fix),
		 "install nvidia-container-toolkit and configure Docker with it: nvidia-ctk runtime configure "
		 "--runtime=docker%s, then %s",
		 is_default ? " --set-as-default" : "", rt_restart(c->rt));
	if (path)
		f = doctor_report(
		    c, "runtime.binary-missing", DOCTOR_FAIL, LINK_RUNTIME, fix,
		    "Docker's \"%s\" runtime %s is not an executable on the node: containers given it fail "
		    "to start",
		    name, path);
	else
		f = doctor_report(
		    c, "runtime.default-missing", DOCTOR_FAIL, LINK_RUNTIME, fix,
		    "daemon.json makes \"%s\" Docker's default runtime but defines no runtime of that name: "
		    "dockerd does not start, and no container runs on this node",
		    name);
	doctor_evidence(f, "%s: %s\"%s\"%s%s", c->rt->config, is_default ? "\"default-runtime\": " : "runtimes.", name,
			path ? ", path " : "", path ? path : "");
	files_evidence(c, f);
}

/* GPU pods without a RuntimeClass get Docker's default runtime: it must run NVIDIA's hook when the plugin
 * hands out NVIDIA_VISIBLE_DEVICES. */
static void default_runtime(struct doctor_ctx *c)
{
	const char *def = docker_default_runtime(c->rt), *path = docker_runtime_path(c->rt, def);
	struct inject_facts inj;
	struct doctor_finding *f;
	char fix[700];
	size_t n;

	doctor_inject_facts(c, &inj);
	if ((path && strstr(path, "nvidia")) || (inj.mode != ALLOCRESP_NONE && !inject_has_env(&inj)))
		return;
	n = doctor_pods_with_class(c, NULL, NULL);
	if (c->pods && !n)
		return; /* every GPU pod names a RuntimeClass */
	snprintf(fix, sizeof(fix),
		 "make nvidia Docker's default runtime: nvidia-ctk runtime configure --runtime=docker --set-as-default "
		 "(\"default-runtime\": \"nvidia\" in %s), then %s",
		 c->rt->config, rt_restart(c->rt));
	f = doctor_report(
	    c, "runtime.default-is-runc", n || inject_has_env(&inj) ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME, fix,
	    "Docker's default runtime is \"%s\": GPU pods (cri-dockerd runs them on it) start without the "
	    "NVIDIA hook and see no GPU (\"No devices were found\")",
	    def);
	doctor_evidence(f, "%s: \"default-runtime\" is %s", c->rt->config,
			json_object_get(c->rt->docker, "default-runtime") ? def : "unset (runc)");
	if (inj.mode != ALLOCRESP_NONE)
		doctor_evidence(f, "%s", inj.source);
	doctor_pods_with_class(c, NULL, f);
}

int doctor_check_docker(struct doctor_ctx *c)
{
	const char *def, *path;
	const char *key;
	json_t *v;

	if (c->rt->docker_error[0]) {
		rt_config_invalid(
		    c,
		    "fix the JSON at the line:col shown (dockerd --validate --config-file FILE checks it), "
		    "then systemctl restart docker",
		    c->rt->docker_error);
		return 0;
	}
	def = docker_default_runtime(c->rt);
	path = docker_runtime_path(c->rt, def);
	if (!path) {
		bad_runtime(c, def, NULL, true);
		return 0;
	}
	json_object_foreach (json_object_get(c->rt->docker, "runtimes"), key, v) {
		const char *rp = json_string_value(json_object_get(v, "path"));

		if (rp && *rp && !runtime_present(c, rp) && (strstr(rp, "nvidia") || streq(key, def)))
			bad_runtime(c, key, rp, streq(key, def));
	}
	if (!doctor_find(c, "runtime.binary-missing"))
		default_runtime(c);
	return 0;
}
