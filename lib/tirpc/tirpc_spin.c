/* SPDX-License-Identifier: MIT */
/*
 * The libtirpc adapters' polling windows: RPCRDMA_SPIN_US, the window of
 * the CLIENTs and listeners made afterwards for programs that cannot call
 * clnt_control() or SVC_CONTROL() (an rpcgen program as it is), read at
 * each creation so that a program may change it in between; and the
 * CLIENT's adaptive window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "tirpc_spin.h"
#include "util.h"

u_int tirpc_spin_default(u_int unset)
{
	const char *v = getenv("RPCRDMA_SPIN_US");
	unsigned long us;
	char *end;

	if (!v || !*v)
		return unset;
	errno = 0;
	us = strtoul(v, &end, 10);
	if (errno || *end || us > TIRPC_SPIN_MAX || v[0] == '-') {
		rpcrdma_warn("tirpc: RPCRDMA_SPIN_US=%s is not a number of microseconds up to %u: "
			     "not polling before sleeping", v, TIRPC_SPIN_MAX);
		return 0;
	}
	return (u_int)us;
}

/* Polling only pays where the thread that replies can run meanwhile. */
static bool tirpc_spin_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return true;
	return CPU_COUNT(&set) > 1;
}

void tirpc_spin_set(struct tirpc_spin *s, u_int us)
{
	s->us = us;
	/* Start by polling, as for replies that take half the longest window. */
	s->est = TIRPC_SPIN_AUTO_MAX * 8;
	s->closed = 0;
	s->backoff = 0;
	s->skip = 0;
	if (us == RPCRDMA_SPIN_AUTO && !tirpc_spin_cpus())
		s->est = UINT32_MAX;
}

void tirpc_spin_learn(struct tirpc_spin *s, int64_t waited_us)
{
	uint32_t sample;

	/* est stays at UINT32_MAX with one CPU: it never polls. */
	if (s->est == UINT32_MAX)
		return;
	sample = waited_us < 0 ? 0 : waited_us > (1 << 20) ? 1 << 20 : (uint32_t)waited_us;
	/* est += (16 * sample - est) / 8, in unsigned arithmetic. */
	s->est = s->est - s->est / 8 + 2 * sample;
}

void tirpc_spin_paid(struct tirpc_spin *s, bool paid)
{
	if (!tirpc_spin_auto(s))
		return;
	if (paid) {
		s->backoff /= 2;
		return;
	}
	s->backoff = !s->backoff ? 1 :
		     s->backoff >= TIRPC_SPIN_BACKOFF_MAX / 2 ? TIRPC_SPIN_BACKOFF_MAX :
		     2 * s->backoff;
	s->skip = s->backoff;
}
