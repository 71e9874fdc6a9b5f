/* SPDX-License-Identifier: Apache-2.0 */
/* The daemons' signal set (sig.h). */
#include <pthread.h>
#include <time.h>

#include "util/sig.h"

void sig_stop_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
}

void sig_daemon_set(sigset_t *set)
{
	sig_stop_set(set);
	sigaddset(set, SIGQUIT);
	sigaddset(set, SIGHUP);
}

int sig_block(const sigset_t *set, sigset_t *old)
{
	return pthread_sigmask(SIG_BLOCK, set, old);
}

void sig_restore(const sigset_t *set, const sigset_t *old)
{
	const struct timespec now = {0};

	while (sigtimedwait(set, NULL, &now) > 0)
		;
	(void)pthread_sigmask(SIG_SETMASK, old, NULL);
}
