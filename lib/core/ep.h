/* SPDX-License-Identifier: MIT */
/*
 * The endpoint and completion engine shared by client and server: one
 * connection's QP, CQ and completion channel, the dispatch of work
 * completions to handlers, send-queue accounting and the drain that makes
 * teardown safe.
 *
 * Threading: an endpoint belongs to the thread that polls its CQ. Handlers
 * run only inside rpcrdma_cq_poll() on that thread, so an endpoint is never
 * freed while a handler could run as long as its owner frees it only
 * outside poll and only after the drain (rpcrdma_ep_drained()) has seen
 * every work request it posted complete or flush.
 */
#ifndef RPCRDMA_EP_H
#define RPCRDMA_EP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rpcrdma/base.h>

#include "compiler.h"
#include "cq.h"
#include "keepalive.h"
#include "list.h"
#include "util.h"

enum rpcrdma_ep_state {
	RPCRDMA_EP_NEW = 0,	/* resources created, not connected */
	RPCRDMA_EP_CONNECTED,	/* ESTABLISHED */
	RPCRDMA_EP_CLOSING,	/* QP moved to ERR; waiting for the drain markers */
	RPCRDMA_EP_DRAINED,	/* every WR completed or flushed: safe to tear down */
};

/**
 * struct rpcrdma_ep - one connection's verbs resources
 * @id: its rdma_cm id (owned by the transport, not the endpoint)
 * @channel: completion channel; its fd is non-blocking
 * @cq: one CQ for sends and receives; cq_context is the transport
 * @qp: the RC QP, created through @id
 * @state: an &enum rpcrdma_ep_state
 * @close_pending: a handler asked for a close; the owner acts on it after
 *	the current batch (deferred close, set once)
 * @armed: the CQ is armed: the next completion raises a channel event
 * @cq_events: channel events taken and not yet acknowledged
 * @sq_avail: send-queue slots free for data WRs (one more is reserved for
 *	the drain marker); after rpcrdma_ep_create(), the send-queue depth,
 *	which may be less than asked when the device offers less
 * @sq_unsig: slots held by unsignaled WRs that no signaled WR covers yet
 * @sq_unsig_max: @sq_unsig stays below this (rpcrdma_sq_reserve_unsignaled())
 * @rq_depth: receives that may be posted at once (likewise fitted)
 * @recv_posted: receives posted and not yet completed
 * @sq_waiters: FIFO of &struct rpcrdma_sq_waiter waiting for @sq_avail
 * @drain_recv_cqe: the receive-queue drain marker
 * @drain_send_cqe: the send-queue drain marker
 * @stats: the owner's counters
 * @async_pace: polls that found nothing, to pace the async-event check
 * @cm_pace: polls without a wait's word, to pace the CM channel's reads
 * @async_error: a fatal async event concerns this endpoint; set by whichever
 *	thread read the event (lib/core/async.c), acted on by the owner
 * @srq: the QP receives from this shared receive queue (the owner posts
 *	to it); the endpoint then has no receive queue and no drain marker on it
 * @own_cq: @cq and @channel are the endpoint's; otherwise the CQ is shared
 *	and its owner polls it
 * @sq_drained: with @srq: the send-queue marker completed
 * @last_wqe: with @srq: IBV_EVENT_QP_LAST_WQE_REACHED was read (async.c):
 *	the QP takes no more receives from the SRQ
 * @ready: what the owner's last wait found ready (&enum rpcrdma_ready), so
 *	that the next poll and arm read only those descriptors
 * @async_arms: arms that skipped the async events, to pace that read
 * @ka: keepalive and idle state (keepalive.c), zeroed with the endpoint
 */
struct rpcrdma_ep {
	struct rdma_cm_id *id;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int state;
	bool close_pending;
	bool armed;
	unsigned int cq_events;
	uint32_t max_inline;			/* bytes a Send may carry inline (the QP's) */
	uint32_t sq_avail;
	uint32_t sq_unsig;
	uint32_t sq_unsig_max;
	uint32_t rq_depth;
	uint32_t recv_posted;
	struct list_node sq_waiters;
	struct rpcrdma_cqe drain_recv_cqe;
	struct rpcrdma_cqe drain_send_cqe;
	struct rpcrdma_stats *stats;
	struct rpcrdma_pace async_pace;
	struct rpcrdma_pace cm_pace;
	atomic_bool async_error;
	struct ibv_srq *srq;
	bool own_cq;
	bool sq_drained;
	atomic_bool last_wqe;
	unsigned int ready;
	unsigned int async_arms;
	struct rpcrdma_keepalive ka;
};

/*
 * The descriptors an owner's epoll set watches, tagged in epoll_event.data.u32.
 * Reading a channel that holds nothing is a system call on every provider,
 * so a wait that learns what is ready (rpcrdma_ep_collect()) lets the next
 * poll and arm skip the rest. Without that knowledge (a caller's own event
 * loop, or a second pass after the wait's word was used) a poll reads the
 * CM channel and an arm reads everything.
 */
enum rpcrdma_ready {
	RPCRDMA_READY_KNOWN = 1 << 0,	/* the bits below are all a wait found */
	RPCRDMA_READY_COMP = 1 << 1,	/* the completion channel */
	RPCRDMA_READY_ASYNC = 1 << 2,	/* the device's async fd */
	RPCRDMA_READY_CM = 1 << 3,	/* the rdma_cm event channel */
	RPCRDMA_READY_USER = 1 << 4,	/* a descriptor of the adapter's */
	RPCRDMA_READY_TIMER = 1 << 5,	/* the keepalive timer (keepalive.h) */
};

/*
 * epoll_wait() on @epfd, whose members carry &enum rpcrdma_ready tags, for
 * up to @timeout_ms; what it finds ready is noted in @ep->ready. Returns
 * the tags found (0 on timeout) or -errno.
 */
int rpcrdma_ep_collect(struct rpcrdma_ep *ep, int epfd, int timeout_ms);

/*
 * A close is asked for and not yet begun: an arm that finds one (the CM
 * channel it read said the peer left) has work to do and must not sleep.
 */
static inline bool rpcrdma_ep_close_due(const struct rpcrdma_ep *ep)
{
	return ep->close_pending && ep->state != RPCRDMA_EP_CLOSING &&
	       ep->state != RPCRDMA_EP_DRAINED;
}

/*
 * A busy poller reads the CM channel at most this often (rpcrdma_pace_due()):
 * what it brings is a disconnect, which can wait a millisecond.
 */
#define RPCRDMA_CM_GAP_US 1000

/*
 * Should this poll read the CM channel? (clears the readiness it used)
 * @tick: this poll is an RPCRDMA_PACE_POLLS-th, by the owner's count.
 */
static inline bool rpcrdma_ep_cm_due_tick(struct rpcrdma_ep *ep, bool tick)
{
	if (ep->ready & RPCRDMA_READY_CM) {
		ep->ready &= ~RPCRDMA_READY_CM;
		return true;
	}
	if (ep->ready & RPCRDMA_READY_KNOWN)
		return false;
	/*
	 * Without a wait's word: a busy poller, which polls far more often than
	 * a peer leaves, reads the channel (a system call) seldom. An arm
	 * before a sleep still reads it at once.
	 */
	return tick && rpcrdma_pace_clock(&ep->cm_pace, RPCRDMA_CM_GAP_US);
}

/* The same, counting the polls in the endpoint. */
static inline bool rpcrdma_ep_cm_due(struct rpcrdma_ep *ep)
{
	if (ep->ready & (RPCRDMA_READY_CM | RPCRDMA_READY_KNOWN))
		return rpcrdma_ep_cm_due_tick(ep, false);
	return rpcrdma_ep_cm_due_tick(ep, rpcrdma_pace_tick(&ep->cm_pace, RPCRDMA_PACE_POLLS));
}
/* And an arm, before a sleep: unless a wait said it holds nothing. */
bool rpcrdma_ep_cm_due_arm(struct rpcrdma_ep *ep);

/**
 * struct rpcrdma_ep_attr - what rpcrdma_ep_create() builds
 * @pd: protection domain (on @id's device)
 * @context: the transport, stored as cq->cq_context for the handlers
 * @send_wrs: data WRs the send queue must hold at once
 * @recv_wrs: receives that may be posted at once
 * @send_sges: SGEs per send WR
 * @cq: a CQ shared with other endpoints, or NULL for one of its own
 * @srq: a shared receive queue, or NULL for a receive queue of its own
 */
struct rpcrdma_ep_attr {
	struct ibv_pd *pd;
	void *context;
	uint32_t send_wrs;
	uint32_t recv_wrs;
	uint32_t send_sges;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
};

/*
 * Create the completion channel, CQ and QP of @ep on @id. On failure
 * everything created is destroyed. Returns 0 or -errno.
 */
int rpcrdma_ep_create(struct rpcrdma_ep *ep, struct rdma_cm_id *id,
		      const struct rpcrdma_ep_attr *attr, struct rpcrdma_stats *stats);

/*
 * Ask for a deferred close from a completion handler or any other place
 * inside a poll: only a flag, acted on by the owner with
 * rpcrdma_ep_begin_close() once the batch is done.
 */
static inline void rpcrdma_ep_close_deferred(struct rpcrdma_ep *ep)
{
	ep->close_pending = true;
}

/*
 * Account an error completion in the counters and ask for a close. Every
 * handler calls this for a status other than IBV_WC_SUCCESS.
 */
void rpcrdma_ep_wc_error(struct rpcrdma_ep *ep, const struct ibv_wc *wc, const char *what);

/*
 * A Receive completed: one fewer posted. Returns whether it carries a
 * message; an error (a flush included) is accounted as above, and the
 * caller gives its buffer back to the free list.
 */
static inline bool rpcrdma_ep_recv_done(struct rpcrdma_ep *ep, const struct ibv_wc *wc,
					const char *what)
{
	ep->recv_posted--;
	if (likely(wc->status == IBV_WC_SUCCESS))
		return true;
	rpcrdma_ep_wc_error(ep, wc, what);
	return false;
}

/*
 * Start the teardown: disconnect when connected, move the QP to ERR (which
 * flushes every outstanding WR) and post the receive-queue drain marker; its
 * completion posts the send-queue marker, whose completion marks the
 * endpoint DRAINED. Completions keep arriving through the owner's polls.
 * Idempotent.
 */
void rpcrdma_ep_begin_close(struct rpcrdma_ep *ep);

/*
 * With an SRQ the QP's receives are not its own and never flush: the drain
 * is the send-queue marker and the Last WQE Reached event (IBA 11.6.3). The
 * owner then polls the shared CQ once more, for what the QP received before.
 */
static inline bool rpcrdma_ep_drained(const struct rpcrdma_ep *ep)
{
	if (ep->state == RPCRDMA_EP_DRAINED)
		return true;
	return ep->srq && ep->sq_drained && atomic_load(&ep->last_wqe);
}

/* Async events (async.c): register endpoints so events can find them. */
void rpcrdma_async_register(struct rpcrdma_ep *ep);
void rpcrdma_async_unregister(struct rpcrdma_ep *ep);
/* Read @ctx's pending async events without blocking and flag their endpoints. */
void rpcrdma_async_poll(struct ibv_context *ctx);

/*
 * Every this many idle polls, and then at most once a millisecond, a busy
 * poller looks at the async events (rpcrdma_pace_due()): a poller spinning
 * for work would otherwise read them every few microseconds.
 */
#define RPCRDMA_ASYNC_PACE 256u
#define RPCRDMA_ASYNC_GAP_US 1000

/*
 * Busy poll: dispatch up to @budget completions. Returns the number
 * dispatched or -errno. Never arms the CQ.
 */
static inline int rpcrdma_ep_poll(struct rpcrdma_ep *ep, int budget)
{
	int n = rpcrdma_cq_poll(ep->cq, budget);

	/*
	 * A completion seen after arming may have raised a channel event (or
	 * may not, if it raced with the arm): either way the arm is spent.
	 */
	if (n > 0)
		ep->armed = false;
	else if (unlikely(rpcrdma_pace_due(&ep->async_pace, RPCRDMA_ASYNC_PACE,
					   RPCRDMA_ASYNC_GAP_US)))
		rpcrdma_async_poll(ep->id->verbs);
	if (unlikely(atomic_load_explicit(&ep->async_error, memory_order_relaxed)))
		ep->close_pending = true;
	return n;
}

/*
 * Prepare to sleep on the channel fd: take the events raised so far, arm
 * the CQ, then poll once more, because a completion that landed between
 * the last poll and the arm raises no event. Returns 0 when the CQ is armed
 * and was empty (safe to sleep), or the number of completions that last
 * poll dispatched (> 0: process them and poll again instead of sleeping).
 * Already armed, it takes the channel's events, since the caller was woken
 * (an event may reach the channel after its completion was polled), and
 * arms again if there were any; else it returns 0 at once.
 */
int rpcrdma_ep_arm(struct rpcrdma_ep *ep, int budget);

/*
 * Poll until the endpoint is drained, sleeping on the completion channel,
 * for at most @timeout_ms. Returns 0, or -ETIMEDOUT if the provider never
 * flushed (the endpoint is then torn down anyway: with the QP and CQ
 * destroyed no handler can run again).
 */
int rpcrdma_ep_drain_sync(struct rpcrdma_ep *ep, int timeout_ms);

/* Destroy QP, CQ and channel. Only when drained (or never connected). */
void rpcrdma_ep_destroy(struct rpcrdma_ep *ep);

/*
 * Post up to @max receives, in one chain, from @free: a list of receive
 * buffers each holding its struct ibv_recv_wr @wr_off bytes after its list
 * node (RPCRDMA_RECV_WR_OFF). Those posted leave the list, in order; they
 * will complete. Returns 0 or -errno, having asked for a close: a side
 * short of receives would make its peer overrun it.
 */
int rpcrdma_ep_post_recvs(struct rpcrdma_ep *ep, struct list_node *free, uint32_t max,
			  ptrdiff_t wr_off);

/* Receives of a free list linked for one post: the list's first @count nodes. */
struct rpcrdma_recv_chain {
	struct ibv_recv_wr *first;	/* NULL when @count is 0 */
	struct list_node *rest;		/* the first node left out */
	uint32_t count;
};

/* Link up to @max receives of @free into @c (the WR of each is @wr_off bytes after its node). */
void rpcrdma_recv_chain(struct rpcrdma_recv_chain *c, struct list_node *free, uint32_t max,
			ptrdiff_t wr_off);
/*
 * @c was posted up to @bad (NULL: all of it): those posted leave @free, all
 * at once when all went. Their nodes' links are stale from then on: the
 * completion that gives a receive back adds its node to a list again.
 * Returns how many were posted.
 */
uint32_t rpcrdma_recv_chain_posted(struct list_node *free, const struct rpcrdma_recv_chain *c,
				   struct ibv_recv_wr *bad);

#define RPCRDMA_RECV_WR_OFF(type, list_member, wr_member) \
	((ptrdiff_t)offsetof(type, wr_member) - (ptrdiff_t)offsetof(type, list_member))

/*
 * Post a chain of @sqecount send WRs whose slots the caller has taken
 * (rpcrdma_sq_get()). On failure a close is requested and the slots of the
 * WRs not posted are given back: if none was posted, -ENOTCONN is returned;
 * if only the chain's head was, -EINPROGRESS, and *@posted (when not NULL)
 * tells how many WRs went: their completions, flushes included, are still
 * to come.
 */
int rpcrdma_ep_post_failed(struct rpcrdma_ep *ep, struct ibv_send_wr *first,
			   struct ibv_send_wr *bad, int rc, uint32_t sqecount, uint32_t *posted);

static inline int rpcrdma_ep_post_send(struct rpcrdma_ep *ep, struct ibv_send_wr *first,
				       uint32_t sqecount, uint32_t *posted)
{
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(ep->qp, first, &bad);

	if (likely(rc == 0))
		return 0;
	return rpcrdma_ep_post_failed(ep, first, bad, rc, sqecount, posted);
}

/*
 * Send-queue slots: the one ledger of the send queue. Every WR a side
 * posts takes a slot from sq_avail, and the handler of the signaled WR
 * that ends its chain gives the chain's slots back (RC ordering: the
 * unsignaled WRs before it are done too). Chains that find too few slots,
 * or waiters ahead of them, queue FIFO: nothing posts past an earlier
 * waiter, so no large chain starves.
 */

/*
 * A chain waiting for @sqecount slots. @post runs with the slots taken and
 * must post the chain (through rpcrdma_ep_post_send()); @abort runs when the
 * endpoint closes first and hands the owner its chain back, unposted.
 */
struct rpcrdma_sq_waiter {
	struct list_node list;
	uint32_t sqecount;
	void (*post)(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w);
	void (*abort)(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w);
};

/* Take @n slots, if they are free and no one waits ahead. */
static inline bool rpcrdma_sq_get(struct rpcrdma_ep *ep, uint32_t n)
{
	if (unlikely(!list_empty(&ep->sq_waiters) || ep->sq_avail < n))
		return false;
	ep->sq_avail -= n;
	return true;
}

/* Give back @n slots: their WRs completed. Waiters go at rpcrdma_sq_wake(). */
static inline void rpcrdma_sq_put(struct rpcrdma_ep *ep, uint32_t n)
{
	ep->sq_avail += n;
}

/*
 * Unsignaled chain ends (the client's inline Sends, as the kernel's
 * re_send_batch): the device frees an unsignaled WR's slot only at a later
 * completion, so such a WR keeps its slot, counted in sq_unsig, until the
 * next signaled WR covers it and that WR's completion gives it back with
 * its own. Let up to @max slots be held so, an eighth of the queue at
 * most, and return the slots left for chains: a chain that waits for room
 * always gets it once the signaled WRs in flight complete, even when the
 * held ones never will. The ledger lives and dies with the endpoint: a
 * failed post closes it (rpcrdma_ep_post_failed()), and nothing is counted
 * on a closing endpoint again.
 */
static inline uint32_t rpcrdma_sq_reserve_unsignaled(struct rpcrdma_ep *ep, uint32_t max)
{
	ep->sq_unsig_max = ep->sq_avail / 8 < max ? ep->sq_avail / 8 : max;
	return ep->sq_avail - ep->sq_unsig_max;
}

/*
 * May a chain of @n slots, just taken, go unsignaled? If so, its slots are
 * held until a signaled chain end covers them.
 */
static inline bool rpcrdma_sq_unsignaled(struct rpcrdma_ep *ep, uint32_t n)
{
	if (ep->sq_unsig >= ep->sq_unsig_max || n > ep->sq_unsig_max - ep->sq_unsig)
		return false;
	ep->sq_unsig += n;
	return true;
}

/*
 * A signaled chain end is posted: it covers the held slots. Returns how
 * many, for its completion to give back (rpcrdma_sq_put()) with its chain's.
 */
static inline uint32_t rpcrdma_sq_signaled(struct rpcrdma_ep *ep)
{
	uint32_t held = ep->sq_unsig;

	ep->sq_unsig = 0;
	return held;
}

/* Post @w now when its slots are free (w->post), or queue it behind the rest. */
void rpcrdma_sq_post(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w);

void rpcrdma_sq_wake_waiters(struct rpcrdma_ep *ep);

/*
 * After a batch of completions: post the waiters whose slots are free, in
 * order, until one does not fit or a close is pending.
 */
static inline void rpcrdma_sq_wake(struct rpcrdma_ep *ep)
{
	if (unlikely(!list_empty(&ep->sq_waiters)))
		rpcrdma_sq_wake_waiters(ep);
}

/* The endpoint closes: every waiter is handed back (w->abort), in order. */
void rpcrdma_sq_flush(struct rpcrdma_ep *ep);

/* The owner gives up on a queued waiter (a timeout, a cancel). */
static inline void rpcrdma_sq_unwait(struct rpcrdma_sq_waiter *w)
{
	list_del(&w->list);
}

/* A signaled Send of one SGE whose completion goes to @cqe. */
static inline void rpcrdma_send_wr_init(struct ibv_send_wr *wr, struct rpcrdma_cqe *cqe,
					struct ibv_sge *sge)
{
	wr->wr_id = rpcrdma_cqe_id(cqe);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/*
 * A Send that fits the QP's inline room carries its bytes in the work
 * request itself: the device need not read the buffer by DMA, and the
 * buffer is the caller's again once the post returns. The server still
 * releases it at the Send's completion, as it releases every reply's; the
 * client sends it unsignaled (XPRT_RDMA_UNSIG_MAX).
 */
static inline void rpcrdma_send_inline(const struct rpcrdma_ep *ep, struct ibv_send_wr *wr)
{
	if (ep->max_inline && wr->sg_list[0].length <= ep->max_inline)
		wr->send_flags |= IBV_SEND_INLINE;
	else
		wr->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}


#endif /* RPCRDMA_EP_H */
