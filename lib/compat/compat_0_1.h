/* SPDX-License-Identifier: MIT */
/*
 * What the layers above use of 0.1's compatibility (compat_0_1.c, which
 * holds 0.1's struct layouts and entry points): the libtirpc adapter still
 * answers the control code that 0.1's RPCRDMA_CLGET_STATS had.
 */
#ifndef RPCRDMA_COMPAT_0_1_H
#define RPCRDMA_COMPAT_0_1_H

#include "compiler.h"

struct rpcrdma_clnt;
struct rpcrdma_stats_0_1;

/* The control code that 0.1's RPCRDMA_CLGET_STATS had, with its layout. */
#define RPCRDMA_CLGET_STATS_0_1 0x52440004u

/* rpcrdma_clnt_stats() as 0.1 had it: @out is 0.1's 18 counters, without struct_size. */
RPCRDMA_EXPORT int rpcrdma_clnt_stats_0_1(const struct rpcrdma_clnt *clnt,
					  struct rpcrdma_stats_0_1 *out);

#endif /* RPCRDMA_COMPAT_0_1_H */
