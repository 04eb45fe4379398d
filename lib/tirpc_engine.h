/* SPDX-License-Identifier: MIT */
/*
 * What the libtirpc adapters use of the engine beyond the public API: waits
 * that learn which descriptors are ready, so that the engine reads only
 * those (enum rpcrdma_ready, ep.h), where a caller's own event loop would
 * make it read every channel on every pass.
 */
#ifndef TIRPC_ENGINE_H
#define TIRPC_ENGINE_H

#include <rpcrdma/clnt.h>
#include <rpcrdma/svc.h>

/* Add @fd (the adapter's wake-up eventfd) to the client's wait set. 0 or -errno. */
int xprt_rdma_watch(struct rpcrdma_clnt *clnt, int fd);
/*
 * Sleep on the client's wait set for up to @timeout_ms (-1: no limit).
 * Returns the &enum rpcrdma_ready tags found ready (RPCRDMA_READY_USER for
 * a watched fd; 0 on timeout or a signal), or -errno.
 */
int xprt_rdma_sleep(struct rpcrdma_clnt *clnt, int timeout_ms);
/*
 * The adapter's poll() said the connection's descriptor is ready: learn
 * which of its channels are, without sleeping, before polling it.
 */
void svc_rdma_conn_collect(struct rpcrdma_svc_conn *conn);

#endif /* TIRPC_ENGINE_H */
