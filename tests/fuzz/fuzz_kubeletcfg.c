/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the parsers of kubelet's command line as nodes keep it (src/kube/kubeletcfg.h):
 * /proc cmdline, env files, systemd units with variable expansion, k3s/rke2 config.yaml,
 * microk8s args files. Each parser gets the whole input; what one parses feeds the next.
 */
#include "fuzz.h"
#include "kube/kubeletcfg.h"

static void flags(const struct kargv *a)
{
	(void)kargv_flag(a, "root-dir");
	(void)kargv_flag(a, "kubelet-root-dir");
	(void)k3s_kubelet_arg(a, "root-dir");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kargv nul = {0}, words = {0}, env = {0}, argv = {0}, k3s = {0};
	struct kunit u = {0};
	struct gerr err = {0};
	char *text = fuzz_cstr(data, size), *x = NULL;

	if (!text)
		return 0;
	if (kargv_from_nul((const char *)data, size, &nul) >= 0)
		flags(&nul);
	if (kargv_split(&words, text, size & 1, &err) >= 0)
		flags(&words);
	(void)kenv_parse(&env, "fuzz.env", text, &err);
	(void)kenv_get(&env, "KUBELET_KUBEADM_ARGS");
	if (kunit_feed(&u, "fuzz.service", text, &err) >= 0 && u.exec_start &&
	    kunit_exec_argv(u.exec_start, env.n ? &env : &u.env, &argv, &err) >= 0)
		flags(&argv);
	if (kexpand(text, &env, &x) >= 0)
		free(x);
	if (k3s_config_kubelet_args(&k3s, "fuzz.yaml", (const char *)data, size, &err) >= 0)
		flags(&k3s);
	kargv_done(&nul);
	kargv_done(&words);
	kargv_done(&env);
	kargv_done(&argv);
	kargv_done(&k3s);
	kunit_done(&u);
	free(text);
	return 0;
}
