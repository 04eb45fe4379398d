/* SPDX-License-Identifier: MIT */
/*
 * What the libtirpc adapters use of the engine beyond the public API: waits
 * that learn which descriptors are ready, so that the engine reads only
 * those (enum rpcrdma_ready, ep.h), where a caller's own event loop would
 * make it read every channel on every pass; and, for upper-layer bindings,
 * payloads sent from a registration the adapter owns (its buffer pool) or
 * always copied, with the pool's registrations made on the server's PDs
 * and released before them.
 */
#ifndef TIRPC_ENGINE_H
#define TIRPC_ENGINE_H

#include <stdbool.h>

#include <rpcrdma/clnt.h>
#include <rpcrdma/svc.h>

#include "list.h"
#include "mem.h"

/* Add @fd (the adapter's wake-up eventfd) to the client's wait set. 0 or -errno. */
int xprt_rdma_watch(struct rpcrdma_clnt *clnt, int fd);
/*
 * Sleep on the client's wait set for up to @timeout_ms (-1: no limit).
 * Returns the &enum rpcrdma_ready tags found ready (RPCRDMA_READY_USER for
 * a watched fd; 0 on timeout or a signal), or -errno.
 */
int xprt_rdma_sleep(struct rpcrdma_clnt *clnt, int timeout_ms);
/*
 * Before the adapter polls a connection: if its poll() found the armed
 * connection's descriptor ready (@woke), learn which of its channels are,
 * without sleeping; otherwise (calls were left, or it yielded) take it
 * that none is.
 */
void svc_rdma_conn_collect(struct rpcrdma_svc_conn *conn, bool woke);

/*
 * rpcrdma_svc_reply_payload() whose bytes are sent from @mem, a registration
 * the caller owns (NULL: looked up as usual), or always copied (@copy).
 */
int svc_rdma_reply_payload_src(struct rpcrdma_svc_call *call, uint32_t pos, const void *buf,
			       size_t len, void (*release)(void *arg), void *arg,
			       const struct rpcrdma_mem *mem, bool copy);
/*
 * rpcrdma_svc_reply_err_chunk() for a reply that does not fit the room the
 * client offered for it, counted in the server's reply_overflows.
 */
int svc_rdma_reply_overflow(struct rpcrdma_svc_call *call);
/*
 * rpcrdma_svc_mem_register() onto the caller's own @list: the engine never
 * looks there, the caller names the registration (above) and releases it.
 */
int svc_rdma_mem_register_on(struct rpcrdma_svc *svc, struct list_node *list, void *addr,
			     size_t len, struct rpcrdma_mem **out);
/*
 * Run @fn(@arg) when @svc is freed, every connection gone, just before its
 * registrations and PDs are released.
 */
void svc_rdma_set_on_free(struct rpcrdma_svc *svc, void (*fn)(void *arg), void *arg);
/*
 * How long each poller's waits (rpcrdma_svc_poller_wait()) poll before they
 * sleep: RPCRDMA_SVCSET_SPIN_US on a listener of rpcrdma_svc_run().
 */
void svc_rdma_set_spin(struct rpcrdma_svc *svc, unsigned int us);

#endif /* TIRPC_ENGINE_H */
