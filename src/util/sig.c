/* SPDX-License-Identifier: Apache-2.0 */
/* The daemons' signal set (sig.h). */
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
