/* SPDX-License-Identifier: MIT */
/* The libtirpc adapters' polling windows (RPCRDMA_CLSET_SPIN_US, RPCRDMA_SVCSET_SPIN_US). */
#ifndef RPCRDMA_TIRPC_SPIN_H
#define RPCRDMA_TIRPC_SPIN_H

#include <rpc/types.h>

/* The longest window, in microseconds: one second. */
#define TIRPC_SPIN_MAX 1000000u

/* RPCRDMA_SPIN_US from the environment, checked: the window of new CLIENTs and listeners. */
u_int tirpc_spin_default(void);

#endif /* RPCRDMA_TIRPC_SPIN_H */
