/* SPDX-License-Identifier: MIT */
/*
 * Client receive side: the Receive completion handler, reply matching by XID,
 * credit updates, and keeping receives posted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "xprt_rdma.h"

void rpcrdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;
	struct rpcrdma_rep *rep = container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_rep, rr_cqe);

	x->rx_ep.recv_posted--;
	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		rpcrdma_ep_wc_error(&x->rx_ep, wc, "client receive");
		list_add_tail(&x->rb_reps_free, &rep->rr_list);
		return;
	}
	rep->rr_byte_len = wc->byte_len;
	rep->rr_with_inv = (wc->wc_flags & IBV_WC_WITH_INV) != 0;
	rep->rr_inv_rkey = rep->rr_with_inv ? wc->invalidated_rkey : 0;
	list_add_tail(&x->rb_reps_ready, &rep->rr_list);
}

/* A grant of 0 would deadlock; more than our slots is meaningless. */
static uint32_t clamp_credits(const struct rpcrdma_xprt *x, uint32_t credits)
{
	if (credits == 0)
		return 1;
	return credits < x->rx_nreqs ? credits : x->rx_nreqs;
}

/* Place an RDMA_MSG reply's RPC message. Returns 0 or a call status. */
static int rpcrdma_reply_msg(struct rpcrdma_xprt *x, const struct rpcrdma_hdr *hdr,
			     const struct rpcrdma_rep *rep, struct rpcrdma_call *call)
{
	const unsigned char *body = rep->rr_buf + hdr->hdr_len;
	size_t len = rep->rr_byte_len - hdr->hdr_len;
	uint32_t rpc_xid;

	/* Without chunk support offered, a reply must carry no chunks. */
	if (hdr->read_segs || hdr->write_chunks || hdr->has_reply)
		return -EPROTO;
	if (len < sizeof(rpc_xid))
		return -EPROTO;
	memcpy(&rpc_xid, body, sizeof(rpc_xid));
	if (ntohl(rpc_xid) != hdr->xid)
		return -EPROTO;
	if (len > call->reply_max)
		return -EMSGSIZE;
	memcpy(call->reply, body, len);
	call->reply_len = len;
	return 0;
}

static void rpcrdma_reply_handler(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep)
{
	struct rpcrdma_hdr hdr;
	struct rpcrdma_req *req;
	int rc, status;

	rc = rpcrdma_hdr_decode(rep->rr_buf, rep->rr_byte_len, NULL, &hdr);
	if (rc == -ENODATA || rc == -EPROTONOSUPPORT) {
		/* No XID to match, or a version we cannot parse: drop it. */
		x->rx_stats.dropped++;
		rpcrdma_warn("client: dropped a reply (%s)", strerror(-rc));
		return;
	}
	req = xprt_rdma_lookup(x, hdr.xid);
	if (!req || !(req->rl_flags & RPCRDMA_REQ_SENT)) {
		x->rx_stats.dropped++;
		rpcrdma_warn("client: dropped a reply for unknown XID 0x%08x", hdr.xid);
		return;
	}
	if (rc) {
		status = -EPROTO;
		rpcrdma_warn("client: malformed reply header for XID 0x%08x (%s)", hdr.xid,
			     strerror(-rc));
	} else {
		x->rx_credits = clamp_credits(x, hdr.credit);
		switch (hdr.proc) {
		case RPCRDMA_MSG:
			status = rpcrdma_reply_msg(x, &hdr, rep, req->rl_call);
			break;
		case RPCRDMA_ERROR:
			x->rx_stats.rdma_errors++;
			status = -EREMOTEIO;
			break;
		default:
			/* RDMA_NOMSG needs a Reply chunk, which this call did not offer. */
			status = -EPROTO;
			break;
		}
	}
	if (status == -EPROTO)
		x->rx_stats.dropped++;
	if (rep->rr_with_inv)
		rpcrdma_warn("client: XID 0x%08x invalidated rkey 0x%x we never offered", hdr.xid,
			     rep->rr_inv_rkey);

	x->rx_stats.replies++;
	list_del(&req->rl_list);
	req->rl_flags |= RPCRDMA_REQ_REPLIED;
	req->rl_flags &= ~RPCRDMA_REQ_SENT;
	x->rx_outstanding--;
	xprt_rdma_hash_del(x, req);
	req->rl_status = status;
	if (status)
		req->rl_call->reply_len = 0;
	/* Finished now unless its Send has yet to complete (rpcrdma_wc_send). */
	if (!(req->rl_flags & RPCRDMA_REQ_SEND_PENDING))
		list_add_tail(&x->rb_done, &req->rl_list);
}

void xprt_rdma_process_replies(struct rpcrdma_xprt *x)
{
	struct rpcrdma_rep *rep;

	while ((rep = list_pop(&x->rb_reps_ready, struct rpcrdma_rep, rr_list))) {
		rpcrdma_reply_handler(x, rep);
		list_add_tail(&x->rb_reps_free, &rep->rr_list);
	}
}

/* Post every unposted receive buffer in one chain. */
void xprt_rdma_post_reps(struct rpcrdma_xprt *x)
{
	struct ibv_recv_wr *first = NULL, **link = &first;
	struct list_node *pos;
	uint32_t count = 0, posted;
	int rc;

	if (list_empty(&x->rb_reps_free))
		return;
	list_for_each(&x->rb_reps_free, pos) {
		struct rpcrdma_rep *rep = list_entry(pos, struct rpcrdma_rep, rr_list);

		*link = &rep->rr_recv_wr;
		link = &rep->rr_recv_wr.next;
		count++;
	}
	*link = NULL;
	rc = rpcrdma_ep_post_recv(&x->rx_ep, first, count, &posted);
	/* The posted ones lead the free list, in chain order. */
	while (posted--)
		list_del(x->rb_reps_free.next);
	if (rc) {
		rpcrdma_err("client: posting receives failed: %s", strerror(-rc));
		rpcrdma_ep_close_deferred(&x->rx_ep);
	}
}
