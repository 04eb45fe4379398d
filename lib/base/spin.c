/* SPDX-License-Identifier: MIT */
/*
 * Polling windows: RPCRDMA_SPIN_US, the window of the clients and the
 * libtirpc listeners made afterwards, for programs that cannot call
 * clnt_control() or SVC_CONTROL() (an rpcgen program as it is), read at
 * each creation so that a program may change it in between; and the
 * adaptive window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "spin.h"
#include "util.h"

unsigned int rpcrdma_spin_default(unsigned int unset)
{
	const char *v = getenv("RPCRDMA_SPIN_US");
	unsigned long us;
	char *end;

	if (!v || !*v)
		return unset;
	errno = 0;
	us = strtoul(v, &end, 10);
	if (errno || *end || us > RPCRDMA_SPIN_MAX_US || v[0] == '-') {
		rpcrdma_warn("RPCRDMA_SPIN_US=%s is not a number of microseconds up to %u: "
			     "not polling before sleeping", v, RPCRDMA_SPIN_MAX_US);
		return 0;
	}
	return (unsigned int)us;
}

/* Polling only pays where the thread that replies can run meanwhile. */
static bool rpcrdma_spin_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return true;
	return CPU_COUNT(&set) > 1;
}

void rpcrdma_spin_set(struct rpcrdma_spin *s, unsigned int us)
{
	s->us = us;
	/* Start by polling, as for replies that take half the longest window. */
	s->est = RPCRDMA_SPIN_AUTO_MAX * 8;
	s->closed = 0;
	s->backoff = 0;
	s->skip = 0;
	if (us == RPCRDMA_SPIN_AUTO && !rpcrdma_spin_cpus())
		s->est = UINT32_MAX;
}

void rpcrdma_spin_learn(struct rpcrdma_spin *s, int64_t waited_us)
{
	uint32_t sample;

	/* est stays at UINT32_MAX with one CPU: it never polls. */
	if (s->est == UINT32_MAX)
		return;
	sample = waited_us < 0 ? 0 : waited_us > (1 << 20) ? 1 << 20 : (uint32_t)waited_us;
	/* est += (16 * sample - est) / 8, in unsigned arithmetic. */
	s->est = s->est - s->est / 8 + 2 * sample;
}

void rpcrdma_spin_paid(struct rpcrdma_spin *s, bool paid)
{
	if (!rpcrdma_spin_auto(s))
		return;
	if (paid) {
		s->backoff /= 2;
		return;
	}
	s->backoff = !s->backoff ? 1 :
		     s->backoff >= RPCRDMA_SPIN_BACKOFF_MAX / 2 ? RPCRDMA_SPIN_BACKOFF_MAX :
		     2 * s->backoff;
	s->skip = s->backoff;
}
