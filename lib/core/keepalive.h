/* SPDX-License-Identifier: MIT */
/*
 * Keepalive and idle timeout, shared by client and server.
 *
 * RDMA has no keepalive of its own: a peer that vanished without a word
 * (a crashed node sends no disconnect on RoCE), or whose DISCONNECTED
 * event was lost, leaves an idle connection open for ever. After
 * keepalive_ms without hearing from the peer, its owner probes it with a
 * zero-length RDMA Write, which needs no rkey and touches no memory of the
 * peer. Its acknowledgement is the answer: an error completion (retry
 * exceeded, flush) closes the connection through the normal drain, and so
 * does a probe still unanswered after another keepalive_ms. A server may
 * also close a connection that sent no call for idle_ms.
 *
 * Time comes from a timerfd in the owner's epoll set, so an owner asleep on
 * its descriptor wakes for it and the hot path reads no clock: a look (a
 * tick, or a server's search for an idle connection to close at
 * max_connections) compares the count of messages received with the count
 * it saw last.
 */
#ifndef RPCRDMA_KEEPALIVE_H
#define RPCRDMA_KEEPALIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include <infiniband/verbs.h>

#include "cq.h"

struct rpcrdma_ep;

/**
 * struct rpcrdma_keepalive - one connection's liveness
 * @cqe: the probe's completion
 * @recvd: the count of received messages at the last look
 * @call_ms: when a look last saw activity, or the connection began (0:
 *	not yet looked at)
 * @heard_ms: when the peer was last heard: a message or a probe's ack
 * @probe_ms: when the outstanding probe was posted, or 0
 * @acked: the outstanding probe completed successfully
 */
struct rpcrdma_keepalive {
	struct rpcrdma_cqe cqe;
	uint64_t recvd;
	int64_t call_ms;
	int64_t heard_ms;
	int64_t probe_ms;
	bool acked;
};

enum rpcrdma_ka_verdict {
	RPCRDMA_KA_ALIVE,	/* nothing to do */
	RPCRDMA_KA_IDLE,	/* no message for idle_ms: close */
	RPCRDMA_KA_SILENT,	/* a probe unanswered for keepalive_ms: close */
};

/* The shortest bound accepted: the timer ticks at most every 10 ms. */
#define RPCRDMA_KA_MIN_MS 10

/* Both bounds in milliseconds; 0 is off. */
struct rpcrdma_ka_conf {
	int keepalive_ms;
	int idle_ms;
};

/* The timer's period for @conf: a fraction of the shorter bound. */
int rpcrdma_ka_period_ms(const struct rpcrdma_ka_conf *conf);

/* A periodic timerfd added to @epfd with @ev; returns it, or -errno. */
int rpcrdma_ka_timer_open(int epfd, struct epoll_event *ev, int period_ms);
/* Read the timer: true if it expired since the last read. */
bool rpcrdma_ka_timer_expired(int fd);

/* A connection begins at @now: heard from, and quiet so far (no message yet). */
void rpcrdma_ka_start(struct rpcrdma_keepalive *ka, int64_t now);

/*
 * A look at a connection whose owner has received @recvd messages in all:
 * a message since the last look, or @busy (calls the application holds),
 * is activity, noted at @now. Returns true when there was none: the peer
 * has been quiet since ka->call_ms.
 */
bool rpcrdma_ka_quiet(struct rpcrdma_keepalive *ka, uint64_t recvd, bool busy, int64_t now);

/*
 * The verdict on a connected @ep after a look: posts a probe when due
 * (@done is its completion handler, which calls rpcrdma_ka_probe_done()).
 */
enum rpcrdma_ka_verdict rpcrdma_ka_check(struct rpcrdma_ep *ep, const struct rpcrdma_ka_conf *conf,
					 int64_t now, void (*done)(struct ibv_cq *, struct ibv_wc *));

/* One tick: a look, then the verdict. */
enum rpcrdma_ka_verdict rpcrdma_ka_tick(struct rpcrdma_ep *ep, const struct rpcrdma_ka_conf *conf,
					uint64_t recvd, bool busy, int64_t now,
					void (*done)(struct ibv_cq *, struct ibv_wc *));

/* The probe's completion: the owner's handler calls this with its endpoint. */
void rpcrdma_ka_probe_done(struct rpcrdma_ep *ep, const struct ibv_wc *wc);

#endif
