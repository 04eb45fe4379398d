/* SPDX-License-Identifier: MIT */
/*
 * A raw client (rawpeer.h) facing a libtirpc service of this process
 * (rpcrdma_svc_create()), which the test's own thread drives, round by
 * round, as svc_run() would: the helpers below drive it while they wait.
 */
#ifndef E2E_RAWTIRPC_H
#define E2E_RAWTIRPC_H

#include <rpc/rpc.h>

#include <rpcrdma/proto.h>

#include "rawpeer.h"

/* One round of the process's libtirpc services, bounded by @ms. */
void rawtirpc_round(int ms);

/*
 * Connect @rp to the listener @lx, sending RFC 8797 private data @pd and
 * letting the server run @responder_resources RDMA Reads of our memory at
 * once; the service runs meanwhile (5 s bound). Returns 0 or -errno.
 */
int rawtirpc_connect(struct rawpeer *rp, SVCXPRT *lx, const struct rpcrdma_cm_private *pd,
		     uint8_t responder_resources);

/*
 * Wait up to @timeout_ms for the service's answer into @rc, running it
 * meanwhile. Returns what rawpeer_recv_call() returned (-ETIMEDOUT when
 * nothing came).
 */
int rawtirpc_recv(struct rawpeer *rp, struct rawpeer_call *rc, int timeout_ms);

#endif /* E2E_RAWTIRPC_H */
