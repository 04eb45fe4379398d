/* SPDX-License-Identifier: MIT */
/*
 * RPCRDMA_SPIN_US: the polling window of the CLIENTs and listeners made
 * afterwards, for programs that cannot call clnt_control() or
 * SVC_CONTROL() (an rpcgen program as it is). Read at each creation, so
 * that a program may change it in between.
 */
#include <errno.h>
#include <stdlib.h>

#include "tirpc_spin.h"
#include "util.h"

u_int tirpc_spin_default(void)
{
	const char *v = getenv("RPCRDMA_SPIN_US");
	unsigned long us;
	char *end;

	if (!v || !*v)
		return 0;
	errno = 0;
	us = strtoul(v, &end, 10);
	if (errno || *end || us > TIRPC_SPIN_MAX || v[0] == '-') {
		rpcrdma_warn("tirpc: RPCRDMA_SPIN_US=%s is not a number of microseconds up to %u: "
			     "not polling before sleeping", v, TIRPC_SPIN_MAX);
		return 0;
	}
	return (u_int)us;
}
