/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the node's runtime does for GPU pods, whichever it is: containerd (plain, k3s's, RKE2's, k0s's,
 * MicroK8s's) or CRI-O (docs/reference/container-runtimes.md). The inject, runtime and scheduling
 * checks ask these two questions here, so the answer follows one rule.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "parse/toml.h"

static void crio_facts(const struct runtime_found *rt, struct rt_facts *f)
{
	/* CRI-O has no CDI switch: it always resolves CDI names from cdi_spec_dirs; its default
	 * runtime on Linux is crun unless default_runtime says otherwise */
	f->cdi = true;
	snprintf(f->default_handler, sizeof(f->default_handler), "%s",
		 toml_string(toml_path(rt->crio, "crio", "runtime", NULL), "default_runtime", "crun"));
	snprintf(f->cdi_where, sizeof(f->cdi_where), "CRI-O always reads CDI specs (no switch), found by %s",
		 rt->source);
}

static void containerd_facts(const struct doctor_ctx *c, struct rt_facts *f)
{
	struct ctrd_facts cf;

	doctor_containerd_facts(c, &cf);
	f->cdi = cf.enable_cdi;
	snprintf(f->default_handler, sizeof(f->default_handler), "%s", cf.default_runtime);
	snprintf(f->cdi_where, sizeof(f->cdi_where), "%s: plugins.\"%s\".enable_cdi is %s (files: %s)", rt_name(c->rt),
		 cf.plugin_id,
		 cf.enable_cdi_explicit ? (cf.enable_cdi ? "true" : "false")
		 : cf.enable_cdi        ? "unset, on by default in containerd 2.x"
					: "unset, off before containerd 2.0",
		 c->ctrd_files && c->ctrd_files[0] ? c->ctrd_files[0] : c->rt->config);
}

/* Docker: CDI only with "features": {"cdi": true} (Docker 25+); the default runtime from daemon.json. */
static void docker_facts(const struct runtime_found *rt, struct rt_facts *f)
{
	f->cdi = json_is_true(json_object_get(json_object_get(rt->docker, "features"), "cdi"));
	snprintf(f->default_handler, sizeof(f->default_handler), "%s", docker_default_runtime(rt));
	snprintf(f->cdi_where, sizeof(f->cdi_where), "%s: \"features\": {\"cdi\"} is %s (found by %s)", rt->config,
		 f->cdi ? "true" : "not true", rt->source);
}

int rt_facts_get(struct doctor_ctx *c, struct rt_facts *f)
{
	int r = doctor_need_runtime(c);

	memset(f, 0, sizeof(*f));
	if (r < 0)
		return r;
	if (c->rt->kind == RT_DOCKER) {
		if (c->rt->docker_error[0])
			return 0;
		docker_facts(c->rt, f);
		return 1;
	}
	if (c->rt->kind == RT_CRIO) {
		if (!c->rt->crio || c->rt->crio_error[0])
			return 0;
		crio_facts(c->rt, f);
		return 1;
	}
	if (!rt_is_containerd(c->rt))
		return 0;
	r = doctor_need_containerd(c);
	if (r == -ENOMEM)
		return r;
	if (r <= 0)
		return 0;
	containerd_facts(c, f);
	return 1;
}

enum rt_handler_state rt_handler(const struct doctor_ctx *c, const char *handler)
{
	const struct toml *t;
	const char *bin;

	if (c->rt && c->rt->kind == RT_DOCKER) {
		/* cri-dockerd's own handler name is "docker": the default runtime */
		bin = docker_runtime_path(c->rt, streq(handler, "docker") ? docker_default_runtime(c->rt) : handler);
		return !bin ? RTH_MISSING : strstr(bin, "nvidia") ? RTH_NVIDIA : RTH_PLAIN;
	}
	if (c->rt && c->rt->kind == RT_CRIO) {
		t = toml_path(c->rt->crio, "crio", "runtime", "runtimes", handler, NULL);
		/* no runtime_path: CRI-O runs the handler's name from its PATH */
		bin = toml_string(t, "runtime_path", handler);
	} else {
		struct ctrd_facts cf;

		doctor_containerd_facts(c, &cf);
		t = toml_path(cf.containerd, "runtimes", handler, NULL);
		bin = toml_string(toml_get(t, "options"), "BinaryName", "");
	}
	if (!t)
		return RTH_MISSING;
	/* nvidia-container-runtime, its .cdi and .legacy forms: the NVIDIA hook runs */
	return strstr(bin, "nvidia") ? RTH_NVIDIA : RTH_PLAIN;
}

void rt_config_invalid(struct doctor_ctx *c, const char *fix, const char *error)
{
	struct doctor_finding *f = doctor_report(c, "runtime.config-invalid", DOCTOR_FAIL, LINK_RUNTIME, fix,
						 "%s's config does not parse: it refuses to start with it, so no "
						 "container starts on this node",
						 rt_name(c->rt));

	doctor_evidence(f, "%s", error);
}
