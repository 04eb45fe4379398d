/* SPDX-License-Identifier: MIT */
/* Upper-layer bindings as the libtirpc adapters look them up (tirpc_ulb.c). */
#ifndef RPCRDMA_TIRPC_ULB_H
#define RPCRDMA_TIRPC_ULB_H

#include <stdbool.h>
#include <stdint.h>

#include <rpcrdma/tirpc.h>

/* What the binding says of one call: all zero when no binding covers it. */
struct tirpc_ulb_call {
	const struct rpcrdma_ulb_proc *proc;	/* NULL: no binding, or not listed */
	uint32_t ddp_min;
	bool bound;				/* a binding covers the program version */
};

/* Look the call up; lock-free, for every call. */
void tirpc_ulb_lookup(uint32_t prog, uint32_t vers, uint32_t proc, struct tirpc_ulb_call *out);

#endif /* RPCRDMA_TIRPC_ULB_H */
