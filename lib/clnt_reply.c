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
		list_add_tail(&rep->rr_list, &x->rb_reps_free);
		return;
	}
	rep->rr_byte_len = wc->byte_len;
	rep->rr_with_inv = (wc->wc_flags & IBV_WC_WITH_INV) != 0;
	rep->rr_inv_rkey = rep->rr_with_inv ? wc->invalidated_rkey : 0;
	list_add_tail(&rep->rr_list, &x->rb_reps_ready);
}

/* A grant of 0 would deadlock; more than our slots is meaningless. */
static uint32_t clamp_credits(const struct rpcrdma_xprt *x, uint32_t credits)
{
	if (credits == 0)
		return 1;
	return credits < x->rx_nreqs ? credits : x->rx_nreqs;
}

/*
 * The bytes a server reports having written into one of our chunks: at most
 * the segments offered, each with the handle and offset offered and no
 * longer than offered. Segments fill in order, so the data is contiguous:
 * a short segment ends it. Returns the total, or -1 for an echo that does
 * not match what the call offered.
 */
static int64_t chunk_written(const struct rpcrdma_chunk *echo, const struct rpcrdma_segment *ours,
			     uint32_t nours)
{
	struct rpcrdma_segment seg;
	bool ended = false;
	int64_t total = 0;
	uint32_t i;

	if (echo->nsegs > nours)
		return -1;
	for (i = 0; i < echo->nsegs; i++) {
		rpcrdma_chunk_segment(echo, i, &seg);
		if (seg.handle != ours[i].handle || seg.offset != ours[i].offset ||
		    seg.length > ours[i].length || (ended && seg.length))
			return -1;
		if (seg.length < ours[i].length)
			ended = true;
		total += seg.length;
	}
	return total;
}

/* What an accepted reply brought: set on the call only once it is accepted. */
struct rpcrdma_reply_view {
	int status;
	size_t result_len;
	size_t reply_len;
	uint32_t reply_chunk_len;	/* bytes of the reply that came by Reply chunk */
	const unsigned char *body;	/* an inline reply, to copy to call->reply */
};

/* The Write list of a reply: the call's one Write chunk, used or not. Returns false to drop. */
static bool rpcrdma_reply_write_list(const struct rpcrdma_hdr *hdr, const struct rpcrdma_req *req,
				     struct rpcrdma_reply_view *v)
{
	int64_t n;

	if (hdr->write_chunks > (req->rl_nwrite ? 1u : 0u))
		return false;
	if (!hdr->write_chunks)
		return true;
	n = chunk_written(&hdr->write[0], req->rl_write, req->rl_nwrite);
	if (n < 0)
		return false;
	v->result_len = (size_t)n;
	return true;
}

/*
 * Decide whether the reply can be accepted for @req (RFC 8166 4.5: a
 * Requester silently discards what it cannot accept, and the call waits on
 * for a valid reply or its timeout). Returns true with @v filled, or false.
 */
static bool rpcrdma_reply_accept(struct rpcrdma_xprt *x, const struct rpcrdma_hdr *hdr,
				 const struct rpcrdma_rep *rep, const struct rpcrdma_req *req,
				 struct rpcrdma_reply_view *v)
{
	size_t len = rep->rr_byte_len - hdr->hdr_len;
	uint32_t rpc_xid;
	int64_t n = 0;

	memset(v, 0, sizeof(*v));
	if (hdr->proc == RPCRDMA_ERROR) {
		x->rx_stats.rdma_errors++;
		if (hdr->err == RPCRDMA_ERR_VERS) {
			x->rx_vers_low = hdr->vers_low;
			x->rx_vers_high = hdr->vers_high;
			v->status = -EPROTONOSUPPORT;
		} else {
			v->status = -EREMOTEIO;
		}
		return true;
	}
	if ((hdr->proc != RPCRDMA_MSG && hdr->proc != RPCRDMA_NOMSG) || hdr->read_segs ||
	    !rpcrdma_reply_write_list(hdr, req, v))
		return false;
	if (hdr->has_reply) {
		if (!req->rl_nreply)
			return false;
		n = chunk_written(&hdr->reply, req->rl_reply, req->rl_nreply);
		if (n < 0)
			return false;
	}
	if (hdr->proc == RPCRDMA_NOMSG) {
		/* The whole reply came by RDMA Write into the Reply chunk. */
		if (!hdr->has_reply || n < (int64_t)sizeof(rpc_xid))
			return false;
		v->reply_len = (size_t)n;
		v->reply_chunk_len = (uint32_t)n;
		return true;
	}
	/* Inline: a Reply chunk may come back, but unused (RFC 8166 4.3.3). */
	if (n || len < sizeof(rpc_xid))
		return false;
	memcpy(&rpc_xid, rep->rr_buf + hdr->hdr_len, sizeof(rpc_xid));
	if (ntohl(rpc_xid) != hdr->xid)
		return false;
	if (len > req->rl_call->reply_max) {
		v->status = -EMSGSIZE;
		return true;
	}
	v->body = rep->rr_buf + hdr->hdr_len;
	v->reply_len = len;
	return true;
}

/* A reply not accepted: count it; a window the server invalidated with it is gone all the same. */
static void rpcrdma_reply_drop(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep,
			       struct rpcrdma_req *req, const struct rpcrdma_hdr *hdr, int rc)
{
	x->rx_stats.dropped++;
	rpcrdma_dbg("client: dropped a reply for XID 0x%08x (proc %u%s%s)", hdr->xid, hdr->proc,
		    rc ? ", " : "", rc ? strerror(-rc) : "");
	if (rep->rr_with_inv)
		frwr_reminv(x, req, rep->rr_inv_rkey);
}

static void rpcrdma_reply_handler(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep)
{
	struct rpcrdma_reply_view v;
	struct rpcrdma_hdr hdr;
	struct rpcrdma_req *req;
	int rc;

	rc = rpcrdma_hdr_decode(rep->rr_buf, rep->rr_byte_len, NULL, &hdr);
	if (rc == -ENODATA || rc == -EPROTONOSUPPORT) {
		/* No XID to match, or a version we cannot parse: drop it. */
		x->rx_stats.dropped++;
		rpcrdma_dbg("client: dropped a reply (%s)", strerror(-rc));
		return;
	}
	req = xprt_rdma_lookup(x, hdr.xid);
	if (!req || !(req->rl_flags & RPCRDMA_REQ_SENT)) {
		x->rx_stats.dropped++;
		rpcrdma_dbg("client: dropped a reply for unknown XID 0x%08x", hdr.xid);
		return;
	}
	if (req->rl_flags & RPCRDMA_REQ_CANCELED) {
		/* Any answer frees the slot: its windows were invalidated at cancel time. */
		memset(&v, 0, sizeof(v));
		v.status = -ECANCELED;
	} else if (rc || !rpcrdma_reply_accept(x, &hdr, rep, req, &v)) {
		rpcrdma_reply_drop(x, rep, req, &hdr, rc);
		return;
	}
	x->rx_credits = clamp_credits(x, hdr.credit);
	if (v.body)
		memcpy(req->rl_call->reply, v.body, v.reply_len);
	if (!v.status) {
		req->rl_call->reply_len = v.reply_len;
		req->rl_call->result_len = v.result_len;
	}
	req->rl_reply_chunk_len = v.reply_chunk_len;

	x->rx_stats.replies++;
	req->rl_flags |= RPCRDMA_REQ_REPLIED;
	req->rl_flags &= ~RPCRDMA_REQ_SENT;
	x->rx_outstanding--;
	xprt_rdma_hash_del(x, req);
	req->rl_status = v.status;
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

	while ((rep = list_pop_entry(&x->rb_reps_ready, struct rpcrdma_rep, rr_list))) {
		rpcrdma_reply_handler(x, rep);
		list_add_tail(&rep->rr_list, &x->rb_reps_free);
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
	list_for_each(pos, &x->rb_reps_free) {
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
