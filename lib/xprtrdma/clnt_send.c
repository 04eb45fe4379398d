/* SPDX-License-Identifier: MIT */
/*
 * Client send side: the XID table, sending queued calls within the credit
 * grant and the send queue's room, the Send completion handler, and
 * finishing calls.
 */
#include <errno.h>

#include "xprt_rdma.h"

/*
 * The call is over as far as the connection is concerned; done() runs from
 * xprt_rdma_run_done() once the current batch of completions is handled.
 */
void xprt_rdma_finish(struct rpcrdma_xprt *x, struct rpcrdma_req *req, int status)
{
	xprt_rdma_hash_del(req);
	if (unlikely(req->rl_flags & RPCRDMA_REQ_SQ_WAIT)) {
		/* Timed out or canceled while queued for the send queue. */
		rpcrdma_sq_unwait(&req->rl_sqw);
		req->rl_flags &= ~RPCRDMA_REQ_SQ_WAIT;
		x->rx_outstanding--;
	}
	req->rl_status = status;
	if (status) {
		req->rl_call->reply_len = 0;
		req->rl_call->result_len = 0;
	}
	list_del(&req->rl_list);
	list_add_tail(&req->rl_list, &x->rb_done);
}

/* A slot whose call is gone (canceled) and whose last WR is done: reusable. */
static void xprt_rdma_free_slot(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	xprt_rdma_hash_del(req);
	frwr_release(x, req);
	req->rl_flags = 0;
	list_del(&req->rl_list);
	xprt_rdma_req_put(x, req);
}

/*
 * A call completes once its reply is consumed, its windows are invalidated
 * and its Send has completed, in whatever order those happen.
 */
void xprt_rdma_req_ready(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	unsigned int f = req->rl_flags;

	if (!(f & RPCRDMA_REQ_REPLIED) ||
	    (f & (RPCRDMA_REQ_SEND_PENDING | RPCRDMA_REQ_LINV_PENDING | RPCRDMA_REQ_LINV_FAILED)))
		return;
	if (f & RPCRDMA_REQ_CANCELED)
		xprt_rdma_free_slot(x, req);
	else
		xprt_rdma_finish(x, req, req->rl_status);
}

void xprt_rdma_run_done_list(struct rpcrdma_xprt *x)
{
	struct rpcrdma_req *req;

	while ((req = list_pop_entry(&x->rb_done, struct rpcrdma_req, rl_list)))
		xprt_rdma_done(x, req);
}

/*
 * The Send has completed, and with it the binds chained ahead of it: return
 * the chain's slots; the send buffer is free. The call may be complete.
 */
void rpcrdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;
	struct rpcrdma_req *req = container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_req, rl_cqe);

	rpcrdma_sq_put(&x->rx_ep, req->rl_sqecount + req->rl_sq_extra);
	req->rl_flags &= ~RPCRDMA_REQ_SEND_PENDING;
	if (unlikely(wc->status != IBV_WC_SUCCESS))
		rpcrdma_ep_wc_error(&x->rx_ep, wc, "client send");
	xprt_rdma_req_ready(x, req);
}

/*
 * Only its failure or its flush completes an unsignaled Send, and the call
 * may be over and its slot reused by then: the completion names the
 * transport, not the call. A call whose Send is lost gets no reply, and
 * the loss of the connection settles it.
 */
void xprt_rdma_wc_send_unsignaled(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;

	rpcrdma_ep_wc_error(&x->rx_ep, wc, "client send");
}

/* The post of xprt_rdma_send() failed with @rc. */
void xprt_rdma_send_failed(struct rpcrdma_xprt *x, struct rpcrdma_req *req, int rc)
{
	if (rc == -EINPROGRESS) {
		/* Binds went out, the Send did not: the loss of the connection settles it. */
		req->rl_flags &= ~RPCRDMA_REQ_SEND_PENDING;
		return;
	}
	/*
	 * Nothing went out: it waits for the next connection, unsent, ahead of
	 * the rest. The send queue's ledger goes with this endpoint.
	 */
	req->rl_flags &= ~(RPCRDMA_REQ_SEND_PENDING | RPCRDMA_REQ_SENT);
	list_del(&req->rl_list);
	list_add(&req->rl_list, &x->rb_pending);
	x->rx_outstanding--;
	rpcrdma_count_sub(x->rx_stats.calls, 1);
}

static void xprt_rdma_sq_send(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	struct rpcrdma_req *req = container_of(w, struct rpcrdma_req, rl_sqw);

	req->rl_flags &= ~RPCRDMA_REQ_SQ_WAIT;
	list_del(&req->rl_list);
	xprt_rdma_send(container_of(ep, struct rpcrdma_xprt, rx_ep), req);
}

/* The connection closed first: the call stays pending, unsent, and gives back its credit. */
static void xprt_rdma_sq_unsent(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	struct rpcrdma_req *req = container_of(w, struct rpcrdma_req, rl_sqw);

	req->rl_flags &= ~RPCRDMA_REQ_SQ_WAIT;
	container_of(ep, struct rpcrdma_xprt, rx_ep)->rx_outstanding--;
}

/* A call on rb_pending that holds a credit goes now, or waits there for its slots. */
static void xprt_rdma_sq_wait(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	x->rx_outstanding++;
	if (likely(rpcrdma_sq_get(&x->rx_ep, req->rl_sqecount))) {
		list_del(&req->rl_list);
		xprt_rdma_send(x, req);
		return;
	}
	req->rl_flags |= RPCRDMA_REQ_SQ_WAIT;
	req->rl_sqw.sqecount = req->rl_sqecount;
	req->rl_sqw.post = xprt_rdma_sq_send;
	req->rl_sqw.abort = xprt_rdma_sq_unsent;
	rpcrdma_sq_post(&x->rx_ep, &req->rl_sqw);
}

/*
 * A new call that cannot go at once (xprt_rdma_enqueue()) queues behind
 * the others; a full grant counts as a credit stall.
 */
void xprt_rdma_enqueue_pending(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	if (x->rx_outstanding >= x->rx_credits)
		rpcrdma_count_inc(x->rx_stats.credit_stalls);
	list_add_tail(&req->rl_list, &x->rb_pending);
	xprt_rdma_kick(x);
}

/* The calls on rb_pending go, in order, while the gate lets them. */
void xprt_rdma_kick_pending(struct rpcrdma_xprt *x)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &x->rb_pending) {
		struct rpcrdma_req *req = list_entry(pos, struct rpcrdma_req, rl_list);

		if (!xprt_rdma_may_send(x))
			return;
		if (req->rl_flags & RPCRDMA_REQ_SQ_WAIT)
			continue;
		if (!(req->rl_flags & RPCRDMA_REQ_MAPPED)) {
			/* Sent again on a new connection: new windows, new sizes. */
			int rc = rpcrdma_marshal_req(x, req, true);

			if (rc) {
				frwr_release(x, req);
				xprt_rdma_finish(x, req, rc);
				continue;
			}
		}
		if (unlikely(req->rl_sqecount > x->rx_sq_depth)) {
			/* More binds than the whole send queue holds: it could never go. */
			frwr_release(x, req);
			xprt_rdma_finish(x, req, -EMSGSIZE);
			continue;
		}
		xprt_rdma_sq_wait(x, req);
	}
}
