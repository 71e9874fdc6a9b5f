/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parsers of kubelet's command line (src/kube/kubeletcfg.h) against the rules in
 * docs/reference/kubelet-root-dir.md: pflag's last-wins, systemd's Environment= / EnvironmentFile= /
 * ExecStart= expansion, env-file quoting, k3s' config.yaml merge ("+" appends), microk8s' args file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kubeletcfg.h"

static void test_cmdline(void **state)
{
	static const char cl[] = "/usr/bin/kubelet\0--root-dir=/a\0--v\0002\0--root-dir\0/b\0--root-dir";
	struct kargv a = {0};

	(void)state;
	assert_int_equal(kargv_from_nul(cl, sizeof(cl) - 1, &a), 0);
	assert_int_equal(a.n, 7);
	/* later wins; a trailing flag without value is ignored */
	assert_string_equal(kargv_flag(&a, "root-dir"), "/b");
	assert_null(kargv_flag(&a, "root"));
	kargv_done(&a);
}

static void test_split(void **state)
{
	struct kargv a = {0};
	struct gerr err = {0};

	(void)state;
	assert_int_equal(kargv_split(&a, " a 'b c'  \"d \\\"e\\\"\" f\\ g # not\n# x\nh", true, &err), 0);
	assert_int_equal(a.n, 5);
	assert_string_equal(a.v[1], "b c");
	assert_string_equal(a.v[2], "d \"e\"");
	assert_string_equal(a.v[3], "f g");
	assert_string_equal(a.v[4], "h");
	kargv_done(&a);
	assert_int_equal(kargv_split(&a, "x 'open", false, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unterminated"));
	kargv_done(&a);
}

static void test_env_file(void **state)
{
	struct kargv env = {0};
	struct gerr err = {0};

	(void)state;
	assert_int_equal(
	    kenv_parse(&env, "f", "# c\n; c\n\nexport A=1\nB=\"x \\\"y\\\"\" \nC='--root-dir=/d e'\nA=2\n", &err), 0);
	assert_string_equal(kenv_get(&env, "A"), "2");
	assert_string_equal(kenv_get(&env, "B"), "x \"y\"");
	assert_string_equal(kenv_get(&env, "C"), "--root-dir=/d e");
	assert_null(kenv_get(&env, "D"));
	kargv_done(&env);
	assert_int_equal(kenv_parse(&env, "f", "A=1\nnot an assignment\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "f:2:"));
	kargv_done(&env);
}

/* kubeadm's drop-in with an admin's override: EnvironmentFile= beats Environment=, $VAR splits */
static void test_unit(void **state)
{
	struct kunit u = {0};
	struct kargv argv = {0};
	struct gerr err = {0};

	(void)state;
	assert_int_equal(kunit_feed(&u, "kubelet.service", "[Service]\nExecStart=/usr/bin/kubelet\n", &err), 0);
	assert_int_equal(kunit_feed(&u, "10-kubeadm.conf",
				    "[Unit]\nExecStart=/not/this\n[Service]\n"
				    "Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\" X=1\n"
				    "Environment=\"KUBELET_EXTRA_ARGS=--root-dir=/env\"\n"
				    "EnvironmentFile=-/etc/default/kubelet\n"
				    "ExecStart=\nExecStart=-/usr/bin/kubelet $KUBELET_CONFIG_ARGS \\\n"
				    "  $KUBELET_EXTRA_ARGS --x=${X}y $UNSET\n",
				    &err),
			 0);
	assert_int_equal(u.env.n, 3);
	assert_int_equal(u.env_files.n, 1);
	assert_string_equal(u.env_files.v[0], "-/etc/default/kubelet");
	/* the env file is read after Environment=, so its assignment wins */
	assert_int_equal(kenv_parse(&u.env, "default", "KUBELET_EXTRA_ARGS=\"--v=2 --root-dir=/file\"\n", &err), 0);
	assert_int_equal(kunit_exec_argv(u.exec_start, &u.env, &argv, &err), 0);
	assert_int_equal(argv.n, 5);
	assert_string_equal(argv.v[0], "/usr/bin/kubelet");
	assert_string_equal(argv.v[1], "--config=/var/lib/kubelet/config.yaml");
	assert_string_equal(argv.v[4], "--x=1y");
	assert_string_equal(kargv_flag(&argv, "root-dir"), "/file");
	kargv_done(&argv);
	/* an empty ExecStart= resets */
	assert_int_equal(kunit_feed(&u, "99.conf", "[Service]\nExecStart=\n", &err), 0);
	assert_null(u.exec_start);
	kunit_done(&u);
}

static void test_expand(void **state)
{
	static const char *const vars[] = {"SNAP_COMMON=/var/snap/microk8s/common",
					   "SNAP_DATA=/var/snap/microk8s/current"};
	const struct kargv v = {(char **)vars, 2};
	struct kargv a = {0};
	struct gerr err = {0};
	char *x = NULL;

	(void)state;
	assert_int_equal(kexpand("--root-dir=${SNAP_COMMON}/var/lib/kubelet\n# --root-dir=/no\n--c=$SNAP_DATA/c $OTHER "
				 "${",
				 &v, &x),
			 0);
	assert_int_equal(kargv_split(&a, x, true, &err), 0);
	assert_string_equal(kargv_flag(&a, "root-dir"), "/var/snap/microk8s/common/var/lib/kubelet");
	assert_string_equal(kargv_flag(&a, "c"), "/var/snap/microk8s/current/c");
	assert_string_equal(a.v[2], "$OTHER"); /* unknown names stay as written */
	kargv_done(&a);
	free(x);
}

static void test_k3s(void **state)
{
	static const char base[] =
	    "write-kubeconfig-mode: \"0644\"\nkubelet-arg:\n  - max-pods=200\n  - root-dir=/old\n";
	static const char plus[] = "kubelet-arg+: --root-dir=/new\n";
	static const char reset[] = "kubelet-arg: [max-pods=10]\n";
	struct kargv l = {0};
	struct gerr err = {0};

	(void)state;
	assert_int_equal(k3s_config_kubelet_args(&l, "config.yaml", base, strlen(base), &err), 0);
	assert_string_equal(k3s_kubelet_arg(&l, "root-dir"), "/old");
	assert_int_equal(k3s_config_kubelet_args(&l, "50.yaml", plus, strlen(plus), &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(k3s_kubelet_arg(&l, "root-dir"), "/new");
	assert_int_equal(k3s_config_kubelet_args(&l, "90.yaml", reset, strlen(reset), &err), 0);
	assert_int_equal(l.n, 1);
	assert_null(k3s_kubelet_arg(&l, "root-dir"));
	assert_int_equal(k3s_config_kubelet_args(&l, "bad.yaml", "- a list\n", 9, &err), -EINVAL);
	assert_int_equal(k3s_config_kubelet_args(&l, "bad.yaml", "kubelet-arg: {a: b}\n", 20, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bad.yaml"));
	assert_int_equal(k3s_config_kubelet_args(&l, "bad.yaml", "kubelet-arg: [\n", 15, &err), -EINVAL);
	kargv_done(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cmdline), cmocka_unit_test(test_split),  cmocka_unit_test(test_env_file),
	    cmocka_unit_test(test_unit),    cmocka_unit_test(test_expand), cmocka_unit_test(test_k3s),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
