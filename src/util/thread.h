/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the background threads that sleep between rounds and wake when told to stop. */
#pragma once

#include <pthread.h>
#include <time.h>

/*
 * pthread_cond_init() on CLOCK_MONOTONIC: a timed wait on it is neither cut short nor stretched
 * when the wall clock jumps. Deadlines for it come from deadline_after_ms(CLOCK_MONOTONIC, ...).
 */
void cond_init_monotonic(pthread_cond_t *c);

/* The time on `clock` ms milliseconds from now, as pthread_cond_timedwait() and friends take it. */
struct timespec deadline_after_ms(clockid_t clock, int ms);
