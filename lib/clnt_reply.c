/* SPDX-License-Identifier: MIT */
/*
 * Client receive side: the Receive completion handler, reply matching by XID,
 * credit updates, the reply's chunks (Write list, Reply chunk, remote
 * invalidation), and keeping receives posted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
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

/*
 * The bytes a server reports having written into one of our chunks: the
 * same segments as offered, none longer than offered. Returns the total,
 * or -1 for an echo that does not match.
 */
static int64_t chunk_written(const struct rpcrdma_chunk *echo, const struct rpcrdma_segment *ours,
			     uint32_t nours)
{
	struct rpcrdma_segment seg;
	bool ended = false;
	int64_t total = 0;
	uint32_t i;

	if (echo->nsegs != nours)
		return -1;
	for (i = 0; i < nours; i++) {
		rpcrdma_chunk_segment(echo, i, &seg);
		if (seg.handle != ours[i].handle || seg.offset != ours[i].offset ||
		    seg.length > ours[i].length)
			return -1;
		/* Segments fill in order, so the data is contiguous: a short one ends it. */
		if (ended && seg.length)
			return -1;
		if (seg.length < ours[i].length)
			ended = true;
		total += seg.length;
	}
	return total;
}

/* Account the reply's chunks and place its inline part. Returns 0 or a call status. */
static int rpcrdma_reply_body(const struct rpcrdma_hdr *hdr, const struct rpcrdma_rep *rep,
			      struct rpcrdma_req *req)
{
	struct rpcrdma_call *call = req->rl_call;
	const unsigned char *body = rep->rr_buf + hdr->hdr_len;
	size_t len = rep->rr_byte_len - hdr->hdr_len;
	uint32_t rpc_xid;
	int64_t n;

	/* Chunks the call did not offer, or a Read list: not a reply to this call. */
	if (hdr->read_segs || hdr->write_chunks > (req->rl_nwrite ? 1u : 0u) ||
	    (hdr->has_reply && !req->rl_nreply))
		return -EPROTO;
	if (hdr->write_chunks) {
		n = chunk_written(&hdr->write[0], req->rl_write, req->rl_nwrite);
		if (n < 0 || (uint64_t)n > call->result_max)
			return -EPROTO;
		call->result_len = (size_t)n;
	}
	if (hdr->proc == RPCRDMA_NOMSG) {
		/* The whole reply came by RDMA Write into the Reply chunk. */
		if (!hdr->has_reply)
			return -EPROTO;
		n = chunk_written(&hdr->reply, req->rl_reply, req->rl_nreply);
		if (n < (int64_t)sizeof(rpc_xid) || (uint64_t)n > call->reply_max)
			return -EPROTO;
		call->reply_len = (size_t)n;
		return 0;
	}
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
		if (req->rl_flags & RPCRDMA_REQ_CANCELED) {
			status = -ECANCELED;
		} else if (hdr.proc == RPCRDMA_MSG || hdr.proc == RPCRDMA_NOMSG) {
			status = rpcrdma_reply_body(&hdr, rep, req);
		} else if (hdr.proc == RPCRDMA_ERROR) {
			x->rx_stats.rdma_errors++;
			status = -EREMOTEIO;
		} else {
			status = -EPROTO;
		}
	}
	if (status == -EPROTO)
		x->rx_stats.dropped++;

	x->rx_stats.replies++;
	req->rl_flags |= RPCRDMA_REQ_REPLIED;
	req->rl_flags &= ~RPCRDMA_REQ_SENT;
	x->rx_outstanding--;
	xprt_rdma_hash_del(x, req);
	req->rl_status = status;
	/* Fence the call's memory before anyone looks at the reply (RFC 8166). */
	if (rep->rr_with_inv && !frwr_reminv(x, req, rep->rr_inv_rkey)) {
		req->rl_status = -EPROTO;
		x->rx_stats.dropped++;
	}
	frwr_unmap_async(x, req);
	xprt_rdma_req_ready(x, req);
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
