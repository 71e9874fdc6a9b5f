/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hook run from the dynamically linked gpulet with the loader's variables in its environment
 * (docs/reference/cdi-hook.md §7.1): runc 1.1 hands a hook entry without "env" the container's
 * environment, so an image's LD_PRELOAD, LD_LIBRARY_PATH or LD_AUDIT reach the dynamic loader of a
 * process that is root on the host. The loader acts on them before any code of gpulet runs (audit
 * modules at load time, IFUNC resolvers while relocating, then constructors), so nothing in main()
 * can undo it; what gpulet can do is to run no hook action in such an environment, fail the
 * container's start and say why. The static gpulet-cdi-hook runs no loader: there the variables
 * mean nothing and are left alone.
 */
#include <errno.h>
#include <string.h>
#include <sys/auxv.h>

#include "cdihook/cdihook.h"
#include "util/macro.h"

extern char **environ;

/*
 * Besides every LD_* (the loader's own): what glibc drops for a secure-execution program
 * (sysdeps/generic/unsecvars.h) and GLIBC_TUNABLES, which the loader reads at start-up.
 */
static const char *const loader_vars[] = {
    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES",   "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
    "NIS_PATH",   "NLSPATH",     "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR",      "TZDIR",
};

static bool is_loader_var(const char *entry, size_t len)
{
	if (len > 3 && strncmp(entry, "LD_", 3) == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(loader_vars); i++)
		if (strlen(loader_vars[i]) == len && strncmp(entry, loader_vars[i], len) == 0)
			return true;
	return false;
}

bool cdihook_is_static(void)
{
	/* AT_BASE is where the kernel loaded the program's interpreter: 0 for a static executable */
	return getauxval(AT_BASE) == 0;
}

int cdihook_check_loader_env(struct gerr *err)
{
	if (cdihook_is_static())
		return 0;
	for (char **e = environ; e && *e; e++) {
		size_t len = strcspn(*e, "=");

		if (is_loader_var(*e, len))
			return gerr_set(err, EPERM,
					"%.*s is set in the hook's environment (a hook entry without 'env' gets the "
					"container's), and this dynamically linked gpulet's loader acted on it before "
					"this check; refusing to run a hook action. Give the hook an env (as "
					"'gpulet cdi generate' writes) and name the static gpulet-cdi-hook",
					(int)len, *e);
	}
	return 0;
}
