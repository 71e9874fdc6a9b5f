/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The option rows of a verb that talks to the API server: kubelet's in-pod environment, env only
 * (client-go's rest.InClusterConfig reads the same; docs/reference/kube-api.md §1). The option
 * engine points a struct kapi_env at offset base of the verb's options at them (borrowed: the
 * environment outlives the options); kapi_open() gets it.
 */
#pragma once

#include <stddef.h>

#include "kapi/kapi.h"
#include "util/optspec.h"

#define KAPI_ENV_ROW_(name_, env_, field_, base_, help_)                                        \
	{                                                                                       \
		.name = (name_), .kind = OPT_ARGV, .arg = "V", .env = {env_}, .env_only = true, \
		.off = (base_) + offsetof(struct kapi_env, field_), .help = (help_)             \
	}
#define KAPI_ENV_ROWS(base_)                                                                         \
	KAPI_ENV_ROW_("kubernetes-service-host", "KUBERNETES_SERVICE_HOST", service_host, base_,     \
		      "the API server's address in a pod (kubelet sets it)"),                        \
	    KAPI_ENV_ROW_("kubernetes-service-port", "KUBERNETES_SERVICE_PORT", service_port, base_, \
			  "the API server's port in a pod (kubelet sets it)"),                       \
	    KAPI_ENV_ROW_("pod-namespace", "POD_NAMESPACE", pod_namespace, base_,                    \
			  "the namespace of this pod, over the service account's namespace file")
