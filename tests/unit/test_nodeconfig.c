/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-node configs (src/nodeconfig/): upstream config-manager's choice (cmd/config-manager/main.go
 * updateConfigName, getConfigFileNameMap; docs/reference/config-manager.md §2) over a directory laid
 * out as kubelet lays out a ConfigMap volume; the symlink it writes; the process it signals, on a
 * fake /proc and on a real child; and the kept command line's config file chosen for every parse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nodeconfig/nodeconfig.h"
#include "util/loop.h"
#include "util/optspec.h"

static char dir[64];

static char *in(const char *fmt, ...)
{
	static char p[4][PATH_MAX];
	static int k;
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, rel);
	return p[k];
}

static void write_in(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gpulet-nodeconfig.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* ---- FALLBACK_STRATEGIES -------------------------------------------------------------------- */

static void test_fallbacks(void **state)
{
	struct nodeconfig_fallbacks fb;
	struct gerr err = {0};

	(void)state;
	assert_int_equal(nodeconfig_fallbacks_parse("", &fb, &err), 0);
	assert_int_equal(fb.n, 0);
	assert_int_equal(nodeconfig_fallbacks_parse(NULL, &fb, &err), 0);
	assert_int_equal(fb.n, 0);
	assert_int_equal(nodeconfig_fallbacks_parse("  ", &fb, &err), 0);
	assert_int_equal(fb.n, 0);
	/* the chart's join "," of ["named", "single"], and spaces as urfave/cli trims them */
	assert_int_equal(nodeconfig_fallbacks_parse("named,single", &fb, &err), 0);
	assert_int_equal(fb.n, 2);
	assert_int_equal(fb.v[0], NODECONFIG_FALLBACK_NAMED);
	assert_int_equal(fb.v[1], NODECONFIG_FALLBACK_SINGLE);
	assert_int_equal(nodeconfig_fallbacks_parse(" empty , named ", &fb, &err), 0);
	assert_int_equal(fb.n, 2);
	assert_int_equal(fb.v[0], NODECONFIG_FALLBACK_EMPTY);
	assert_int_equal(nodeconfig_fallbacks_parse("named,,single", &fb, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "empty"));
	assert_int_equal(nodeconfig_fallbacks_parse("named,Single", &fb, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"Single\""));
	assert_int_equal(
	    nodeconfig_fallbacks_parse("named,single,empty,named,single,empty,named,single,empty", &fb, &err), -EINVAL);
}

/* ---- the configs of a ConfigMap volume ------------------------------------------------------- */

/* kubelet's layout: ..<timestamp>/<key> files, ..data -> ..<timestamp>, <key> -> ..data/<key> */
static void configmap(const char *sub, const char *const *keys)
{
	char target[PATH_MAX];

	assert_int_equal(mkdir(in("%s", sub), 0755), 0);
	assert_int_equal(mkdir(in("%s/..2026_01_01_00_00_00.1", sub), 0755), 0);
	assert_int_equal(symlink("..2026_01_01_00_00_00.1", in("%s/..data", sub)), 0);
	for (size_t i = 0; keys[i]; i++) {
		write_in(in("%s/..2026_01_01_00_00_00.1/%s", sub, keys[i]), "version: v1\n");
		snprintf(target, sizeof(target), "..data/%s", keys[i]);
		assert_int_equal(symlink(target, in("%s/%s", sub, keys[i])), 0);
	}
}

static void test_list(void **state)
{
	struct nodeconfig_names n = {0};
	struct gerr err = {0};

	(void)state;
	configmap("cm", (const char *const[]){"ts2", "default", NULL});
	/* not configs: a dir, a link to a dir, a dangling link, a "..x" file */
	assert_int_equal(mkdir(in("cm/sub"), 0755), 0);
	assert_int_equal(symlink("sub", in("cm/sublink")), 0);
	assert_int_equal(symlink("nowhere", in("cm/gone")), 0);
	write_in(in("cm/..hidden"), "x");
	/* a config: a plain file too */
	write_in(in("cm/plain"), "version: v1\n");
	assert_int_equal(nodeconfig_list(in("cm"), &n, &err), 0);
	assert_int_equal(n.n, 3);
	assert_string_equal(n.v[0], "default");
	assert_string_equal(n.v[1], "plain");
	assert_string_equal(n.v[2], "ts2");
	nodeconfig_names_clear(&n);
	assert_int_equal(nodeconfig_list(in("nope"), &n, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nope"));
	/* more configs than it holds: refused whole, nothing half-listed */
	assert_int_equal(mkdir(in("many"), 0755), 0);
	for (int i = 0; i <= NODECONFIG_MAX_NAMES; i++) {
		char name[32];

		snprintf(name, sizeof(name), "many/c%d", i);
		write_in(in(name), "version: v1\n");
	}
	assert_int_equal(nodeconfig_list(in("many"), &n, &err), -E2BIG);
	assert_int_equal(n.n, 0);
	assert_non_null(strstr(err.msg, "more than 256 configs"));
}

static struct nodeconfig_names names(const char *const *v)
{
	struct nodeconfig_names n = {0};

	for (; *v; v++)
		n.v[n.n++] = strdup(*v);
	return n;
}

static void test_choose(void **state)
{
	struct nodeconfig_names two = names((const char *const[]){"default", "ts2", NULL});
	struct nodeconfig_names one = names((const char *const[]){"only", NULL});
	struct nodeconfig_names none = {0};
	struct nodeconfig_fallbacks named_single = {2, {NODECONFIG_FALLBACK_NAMED, NODECONFIG_FALLBACK_SINGLE}};
	struct nodeconfig_fallbacks single_empty = {2, {NODECONFIG_FALLBACK_SINGLE, NODECONFIG_FALLBACK_EMPTY}};
	struct nodeconfig_fallbacks nofb = {0};
	enum nodeconfig_why why;
	struct gerr err = {0};
	const char *name;

	(void)state;
	/* the label wins */
	assert_int_equal(nodeconfig_choose(&two, "ts2", "default", &named_single, &name, &why, &err), 0);
	assert_string_equal(name, "ts2");
	assert_int_equal(why, NODECONFIG_BY_LABEL);
	/* a label naming nothing is an error, whatever the default and fallbacks */
	assert_int_equal(nodeconfig_choose(&two, "ts4", "default", &single_empty, &name, &why, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "\"ts4\""));
	assert_non_null(strstr(err.msg, "default, ts2"));
	/* no label ("" is none): the default; a missing default is an error, no fallback tried */
	assert_int_equal(nodeconfig_choose(&two, "", "ts2", &named_single, &name, &why, &err), 0);
	assert_string_equal(name, "ts2");
	assert_int_equal(why, NODECONFIG_BY_DEFAULT);
	assert_int_equal(nodeconfig_choose(&two, NULL, "gone", &single_empty, &name, &why, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "\"gone\""));
	/* fallbacks in order */
	assert_int_equal(nodeconfig_choose(&two, NULL, "", &named_single, &name, &why, &err), 0);
	assert_string_equal(name, "default");
	assert_int_equal(why, NODECONFIG_BY_NAMED);
	assert_int_equal(nodeconfig_choose(&one, NULL, NULL, &named_single, &name, &why, &err), 0);
	assert_string_equal(name, "only");
	assert_int_equal(why, NODECONFIG_BY_SINGLE);
	assert_int_equal(nodeconfig_choose(&two, NULL, NULL, &single_empty, &name, &why, &err), 0);
	assert_string_equal(name, "");
	assert_int_equal(why, NODECONFIG_BY_EMPTY);
	assert_int_equal(nodeconfig_choose(&one, NULL, NULL, &nofb, &name, &why, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "all fallbacks failed"));
	/* no config at all is an error even for the empty strategy (upstream checks that first) */
	assert_int_equal(nodeconfig_choose(&none, NULL, NULL, &single_empty, &name, &why, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no configuration files"));
	nodeconfig_names_clear(&two);
	nodeconfig_names_clear(&one);
}

/* ---- the symlink ----------------------------------------------------------------------------- */

static void assert_link(const char *path, const char *target)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, target);
}

static void test_link(void **state)
{
	char a[PATH_MAX], b[PATH_MAX];
	struct gerr err = {0};

	(void)state;
	configmap("avail", (const char *const[]){"a", "b", NULL});
	assert_int_equal(mkdir(in("config"), 0755), 0);
	snprintf(a, sizeof(a), "%s", in("avail/a"));
	snprintf(b, sizeof(b), "%s", in("avail/b"));
	assert_int_equal(nodeconfig_link(in("config/config.yaml"), a, &err), 1);
	assert_link(in("config/config.yaml"), a);
	/* resolves to the same file: left alone (no signal) */
	assert_int_equal(nodeconfig_link(in("config/config.yaml"), a, &err), 0);
	assert_int_equal(nodeconfig_link(in("config/config.yaml"), b, &err), 1);
	assert_link(in("config/config.yaml"), b);
	assert_int_equal(nodeconfig_link(in("config/config.yaml"), "/dev/null", &err), 1);
	assert_int_equal(nodeconfig_link(in("config/config.yaml"), "/dev/null", &err), 0);
	/* a dangling link in the way (upstream's os.Stat says absent, then Symlink fails): replaced */
	assert_int_equal(symlink("nowhere", in("config/dangling")), 0);
	assert_int_equal(nodeconfig_link(in("config/dangling"), a, &err), 1);
	assert_link(in("config/dangling"), a);
	/* no temp links left behind */
	assert_int_equal(access(in("config/config.yaml.gpulet-%d", (int)getpid()), F_OK), -1);
	assert_int_equal(nodeconfig_link(in("nodir/config.yaml"), a, &err), -ENOENT);
}

/* ---- the process to signal ------------------------------------------------------------------- */

/* proc/<pid>/{cmdline,comm,exe} of a fake process */
static void fake_proc(int pid, const char *cmdline, size_t cmdline_len, const char *comm, const char *exe)
{
	FILE *f;

	assert_int_equal(mkdir(in("proc/%d", pid), 0755), 0);
	f = fopen(in("proc/%d/cmdline", pid), "w");
	assert_non_null(f);
	fwrite(cmdline, 1, cmdline_len, f);
	fclose(f);
	if (comm)
		write_in(in("proc/%d/comm", pid), comm);
	if (exe)
		assert_int_equal(symlink(exe, in("proc/%d/exe", pid)), 0);
}
#define FAKE(pid, cmdline, comm, exe) fake_proc((pid), (cmdline), sizeof(cmdline), (comm), (exe))

static void test_find_process(void **state)
{
	struct gerr err = {0};
	pid_t pid;

	(void)state;
	assert_int_equal(mkdir(in("proc"), 0755), 0);
	assert_int_equal(mkdir(in("proc/self"), 0755), 0);
	/* pid 1 and ourselves are never chosen, even when they match */
	FAKE(1, "nvidia-device-plugin", "nvidia-device-p\n", "/usr/bin/gpulet");
	FAKE(5, "nvidia-device-plugin", "nvidia-device-p\n", "/usr/bin/gpulet");
	/* a command line that says the name but a kernel view that does not: not ours to signal */
	FAKE(7, "nvidia-device-plugin", "sleep\n", "/bin/sleep");
	/* no command line: a kernel thread or a zombie */
	fake_proc(8, "", 0, "nvidia-device-p\n", NULL);
	/* the path gpulet's image runs it by, comm cut at 15 characters, exe the link's target */
	FAKE(9, "/usr/bin/nvidia-device-plugin\0--flag", "nvidia-device-p\n", "/usr/bin/gpulet");
	FAKE(12, "nvidia-device-plugin", "nvidia-device-p\n", "/usr/bin/gpulet");
	/* the MPS sidecar's PROCESS_TO_SIGNAL is a path, the container's command the bare name */
	FAKE(20, "mps-control-daemon", "mps-control-dae\n", "/usr/bin/gpulet");
	/* comm renamed by the program itself: its executable's name confirms it */
	FAKE(30, "gpu-feature-discovery", "gfd-main\n", "/usr/bin/gpu-feature-discovery");
	/* a longer name sharing comm's 15 characters is not it */
	FAKE(40, "nvidia-device-pluginX", "nvidia-device-p\n", "/usr/bin/gpulet");

	assert_int_equal(nodeconfig_find_process(in("proc"), "nvidia-device-plugin", 5, &pid, &err), 0);
	assert_int_equal(pid, 9);
	assert_int_equal(nodeconfig_find_process(in("proc"), "/usr/bin/mps-control-daemon", 5, &pid, &err), 0);
	assert_int_equal(pid, 20);
	assert_int_equal(nodeconfig_find_process(in("proc"), "gpu-feature-discovery", 5, &pid, &err), 0);
	assert_int_equal(pid, 30);
	assert_int_equal(nodeconfig_find_process(in("proc"), "nvidia-device-pluginX", 5, &pid, &err), 0);
	assert_int_equal(pid, 40);
	assert_int_equal(nodeconfig_find_process(in("proc"), "sleep", 5, &pid, &err), -ESRCH);
	assert_int_equal(nodeconfig_find_process(in("proc"), "", 5, &pid, &err), -EINVAL);
	assert_int_equal(nodeconfig_find_process(in("nope"), "x", 5, &pid, &err), -ENOENT);
}

/* A real process run through a link with a unique name: found in /proc and signalled. */
static void test_signal(void **state)
{
	char name[32], link[PATH_MAX];
	struct gerr err = {0};
	pid_t child, got;
	int status;

	(void)state;
	snprintf(name, sizeof(name), "gpulet-cmt-%d", (int)getpid());
	snprintf(link, sizeof(link), "%s", in("%s", name));
	assert_int_equal(symlink("/bin/sleep", link), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execl(link, name, "30", (char *)NULL);
		_exit(127);
	}
	/* until the child runs as the link (comm is set by execve) */
	for (int i = 0; i < 500 && nodeconfig_find_process("/proc", name, getpid(), &got, &err) < 0; i++)
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	assert_int_equal(nodeconfig_signal("/proc", name, SIGTERM, &got, &err), 0);
	assert_int_equal(got, child);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	assert_int_equal(nodeconfig_signal("/proc", name, SIGTERM, &got, &err), -ESRCH);
}

/* ---- the kept command line's config file, chosen for each parse -------------------------------- */

struct opts {
	const char *file;
	char seen[PATH_MAX];
	int loads;
};

static int load_file(void *opts, const char *path, struct gerr *err)
{
	struct opts *o = opts;

	(void)err;
	snprintf(o->seen, sizeof(o->seen), "%s", path);
	o->loads++;
	return 0;
}

static const struct optspec rows[] = {
    {.name = "config-file",
     .kind = OPT_ARGV,
     .arg = "FILE",
     .env = {"GPULET_TEST_NODECONFIG_FILE"},
     .off = offsetof(struct opts, file),
     .help = "file"},
    {0},
};
static const struct optspec_cli cli = {.rows = rows, .file_opt = "config-file", .load_file = load_file};

static int chooser(void *data, char **ret, struct gerr *err)
{
	const char *answer = data;

	if (!answer)
		return gerr_set(err, ENOENT, "the label names nothing");
	*ret = strdup(answer);
	return 0;
}

static void test_reparse_file(void **state)
{
	char *argv[] = {"verb", "--", NULL};
	struct loop_argv *a = NULL;
	struct gerr err = {0};
	struct opts o = {0};

	(void)state;
	assert_int_equal(loop_argv_new(1, argv, NULL, &a), 0);
	/* without a chooser: the command line alone (no file) */
	assert_int_equal(loop_reparse(&cli, a, &o, &err), 0);
	assert_int_equal(o.loads, 0);
	/* the chooser's file, over the env var */
	setenv("GPULET_TEST_NODECONFIG_FILE", "/from/env", 1);
	loop_argv_set_file(a, chooser, "/configs/ts2");
	memset(&o, 0, sizeof(o));
	assert_int_equal(loop_reparse(&cli, a, &o, &err), 0);
	assert_int_equal(o.loads, 1);
	assert_string_equal(o.seen, "/configs/ts2");
	/* "": no file at all (the empty config) */
	loop_argv_set_file(a, chooser, "");
	memset(&o, 0, sizeof(o));
	assert_int_equal(loop_reparse(&cli, a, &o, &err), 0);
	assert_int_equal(o.loads, 0);
	/* the chooser's failure is the parse's */
	loop_argv_set_file(a, chooser, NULL);
	assert_int_equal(loop_reparse(&cli, a, &o, &err), -ENOENT);
	assert_string_equal(err.msg, "the label names nothing");
	unsetenv("GPULET_TEST_NODECONFIG_FILE");
	loop_argv_free(a);
	/* a "--" kept in the command line does not make the chosen file an operand */
	assert_int_equal(loop_argv_new(2, argv, NULL, &a), 0);
	loop_argv_set_file(a, chooser, "/configs/a");
	memset(&o, 0, sizeof(o));
	assert_int_equal(loop_reparse(&cli, a, &o, &err), 0);
	assert_string_equal(o.seen, "/configs/a");
	loop_argv_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fallbacks),
	    cmocka_unit_test_setup_teardown(test_list, setup, teardown),
	    cmocka_unit_test(test_choose),
	    cmocka_unit_test_setup_teardown(test_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_find_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signal, setup, teardown),
	    cmocka_unit_test(test_reparse_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
