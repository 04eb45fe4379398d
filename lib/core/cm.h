/* SPDX-License-Identifier: MIT */
/* rdma_cm helpers shared by client and server, and RFC 8797 negotiation. */
#ifndef RPCRDMA_CM_H
#define RPCRDMA_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>

#include <rpcrdma/proto.h>

/* A new event channel whose fd is non-blocking. Returns 0 or -errno. */
int rpcrdma_cm_channel_create(struct rdma_event_channel **out);

/* The next event without blocking: 0, -EAGAIN when none, or -errno. */
int rpcrdma_cm_next_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev);

/* The next event, waiting until @deadline_ms (monotonic): 0, -ETIMEDOUT or -errno. */
int rpcrdma_cm_wait_event(struct rdma_event_channel *ch, int64_t deadline_ms,
			  struct rdma_cm_event **ev);

/* Inline sizes either side may ask for (RFC 8797 speaks in whole KiB). */
#define RPCRDMA_DEF_INLINE 4096
#define RPCRDMA_MIN_INLINE 1024
#define RPCRDMA_MAX_INLINE 65536

/* Our RFC 8797 private data: both sizes @inline_size, @flags. */
void rpcrdma_cm_private_build(unsigned char buf[RPCRDMA_CM_PRIVATE_LEN], uint32_t inline_size,
			      uint32_t flags);

/**
 * struct rpcrdma_inline - the result of RFC 8797 negotiation
 * @send_max: largest message we may send inline (the peer's receive size,
 *	capped by ours)
 * @recv_max: largest message the peer may send us (our receive buffers,
 *	capped by the peer's send size)
 * @remote_inv: the peer accepts Send With Invalidate
 */
struct rpcrdma_inline {
	uint32_t send_max;
	uint32_t recv_max;
	bool remote_inv;
};

/*
 * Negotiate from the peer's private data (@pd of @len bytes, possibly NULL or
 * padded) and our own @inline_size. Absent or foreign data means 1024 bytes
 * both ways and no remote invalidation.
 */
void rpcrdma_cm_negotiate(const void *pd, size_t len, uint32_t inline_size,
			  struct rpcrdma_inline *out);

/* An errno for a failed connection event (REJECTED, UNREACHABLE, ...). */
int rpcrdma_cm_event_errno(const struct rdma_cm_event *ev);

#endif /* RPCRDMA_CM_H */
