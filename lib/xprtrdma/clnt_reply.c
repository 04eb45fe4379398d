/* SPDX-License-Identifier: MIT */
/*
 * Client receive side (the kernel's verbs.c part of it): the Receive
 * completion handler, handing what arrived to rpcrdma_reply_handler()
 * (rpc_rdma.c), and keeping receives posted.
 */

#include "xprt_rdma.h"

void rpcrdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;
	struct rpcrdma_rep *rep = container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_rep, rr_cqe);

	if (unlikely(!rpcrdma_ep_recv_done(&x->rx_ep, wc, "client receive"))) {
		list_add_tail(&rep->rr_list, &x->rb_reps_free);
		return;
	}
	rep->rr_byte_len = wc->byte_len;
	rep->rr_with_inv = (wc->wc_flags & IBV_WC_WITH_INV) != 0;
	rep->rr_inv_rkey = rep->rr_with_inv ? wc->invalidated_rkey : 0;
	list_add_tail(&rep->rr_list, &x->rb_reps_ready);
}
