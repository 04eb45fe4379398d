/* SPDX-License-Identifier: MIT */
/*
 * The client's RPC-over-RDMA marshal and reply handling (the kernel's
 * net/sunrpc/xprtrdma/rpc_rdma.c): deciding how a call travels (inline or
 * long call, which chunks), encoding its transport header, and checking a
 * reply against the call it answers before the call takes its results.
 * Registration of the chunks' memory is frwr.c's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "proto_plain.h"
#include "xprt_rdma.h"

static uint32_t rpcrdma_nsegs(const struct rpcrdma_xprt *x, size_t len)
{
	return (uint32_t)((len + x->rx_attr.max_segment - 1) / x->rx_attr.max_segment);
}

/* Bytes of the header for these chunk shapes: at most one Write chunk, one Reply chunk. */
static uint32_t rpcrdma_hdr_len_call(uint32_t nreads, uint32_t nwrite, uint32_t nreply)
{
	return (uint32_t)rpcrdma_hdr_len(nreads, nwrite ? 1 : 0, nwrite, nreply != 0, nreply);
}

/*
 * Where the call's message is: the caller's, which stays unchanged until
 * done() only when it went as a long call at first; or the copy the first
 * send made of an inline one (the caller may have reused theirs), in the
 * send buffer, or in the bounce buffer it went long from after a
 * reconnection with a smaller inline size.
 */
static const void *rpcrdma_msg_source(const struct rpcrdma_req *req, bool remap)
{
	if (!remap || !req->rl_msg_copied)
		return req->rl_call->msg;
	if (req->rl_long_call)
		return req->rl_bounce[RPCRDMA_BOUNCE_MSG].data;
	return req->rl_buf + req->rl_hdr_len;
}

/*
 * Every chunkless call asks for the same credits with the same header but
 * for its XID: the codec encodes it once, and each call copies it.
 */
void rpcrdma_marshal_prefix(struct rpcrdma_xprt *x)
{
	struct rpcrdma_hdr_enc enc = { .credit = x->rx_nreqs, .proc = RPCRDMA_MSG };

	rpcrdma_hdr_encode(x->rx_hdr_msg, sizeof(x->rx_hdr_msg), &enc);
}

/*
 * Prepare a call for the current connection: decide inline or long call and
 * whether to offer a Reply chunk, register what the server must reach
 * (frwr_map()), encode the transport header and, inline, place the message
 * after it. With @remap (a call sent again on a new connection, whose
 * inline size may differ) an inline message already in the send buffer is
 * kept, and goes as a long call from there if it no longer fits. Returns 0
 * or -errno.
 */
int rpcrdma_marshal_chunks(struct rpcrdma_xprt *x, struct rpcrdma_req *req, bool remap)
{
	struct rpcrdma_call *call = req->rl_call;
	const void *msg = rpcrdma_msg_source(req, remap);
	bool in_buf = msg == req->rl_buf + req->rl_hdr_len;
	struct rpcrdma_hdr_enc enc = { .xid = req->rl_xid, .credit = x->rx_nreqs };
	struct rpcrdma_chunk_desc wdesc, rdesc;
	struct rpcrdma_segment *segs;
	uint32_t npay = call->payload_len ? rpcrdma_nsegs(x, call->payload_len) : 0;
	uint32_t nres = call->result_max ? rpcrdma_nsegs(x, call->result_max) : 0;
	/* Within the send buffers (rpcrdma_marshal_inline() says why). */
	uint32_t send_max = x->rx_inline.send_max, nreply = 0, n, i, hdr_len;
	bool long_call, offer_reply;
	int rc;

	/* A reply that may not fit inline gets a Reply chunk over the caller's buffer. */
	offer_reply = call->reply_max > x->rx_inline.recv_max - rpcrdma_hdr_len_call(0, nres, 0);
	if (offer_reply)
		nreply = rpcrdma_nsegs(x, call->reply_max);
	long_call = rpcrdma_hdr_len_call(npay, nres, nreply) + call->msg_len > send_max;
	hdr_len = rpcrdma_hdr_len_call(npay + (long_call ? rpcrdma_nsegs(x, call->msg_len) : 0), nres, nreply);
	if (hdr_len > send_max)
		return -EMSGSIZE;

	req->rl_nreads = req->rl_nwrite = req->rl_nreply = 0;
	if (long_call) {
		segs = req->rl_write;	/* scratch until the Write chunk is mapped */
		/* From the send buffer, it is copied into a bounce buffer first. */
		rc = frwr_map(x, req, RPCRDMA_BOUNCE_MSG, msg, call->msg_len, true, segs, &n);
		if (rc)
			return rc;
		for (i = 0; i < n; i++) {
			req->rl_reads[req->rl_nreads].position = 0;
			req->rl_reads[req->rl_nreads++].seg = segs[i];
		}
		rpcrdma_count_inc(x->rx_stats.read_chunks);
	}
	if (npay) {
		segs = req->rl_write;
		rc = frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, call->payload, call->payload_len,
				  true, segs, &n);
		if (rc)
			return rc;
		for (i = 0; i < n; i++) {
			req->rl_reads[req->rl_nreads].position = call->payload_pos;
			req->rl_reads[req->rl_nreads++].seg = segs[i];
		}
		rpcrdma_count_inc(x->rx_stats.read_chunks);
	}
	if (nres) {
		rc = frwr_map(x, req, RPCRDMA_BOUNCE_RESULT, call->result, call->result_max,
				  false, req->rl_write, &req->rl_nwrite);
		if (rc)
			return rc;
		wdesc.nsegs = req->rl_nwrite;
		wdesc.segs = req->rl_write;
		enc.write_chunks = 1;
		enc.write = &wdesc;
		rpcrdma_count_inc(x->rx_stats.write_chunks);
	}
	if (offer_reply) {
		rc = frwr_map(x, req, RPCRDMA_BOUNCE_REPLY, call->reply, call->reply_max, false,
				  req->rl_reply, &req->rl_nreply);
		if (rc)
			return rc;
		rdesc.nsegs = req->rl_nreply;
		rdesc.segs = req->rl_reply;
		enc.reply = &rdesc;
		rpcrdma_count_inc(x->rx_stats.reply_chunks);
	}
	enc.proc = long_call ? RPCRDMA_NOMSG : RPCRDMA_MSG;
	enc.read_segs = req->rl_nreads;
	enc.read = req->rl_reads;
	if (!long_call && in_buf && req->rl_hdr_len != hdr_len)
		memmove(req->rl_buf + hdr_len, msg, call->msg_len);
	if (rpcrdma_hdr_encode(req->rl_buf, hdr_len, &enc) != (long)hdr_len)
		return -EPROTO;
	if (!long_call && !in_buf)
		memcpy(req->rl_buf + hdr_len, call->msg, call->msg_len);
	req->rl_hdr_len = hdr_len;
	req->rl_long_call = long_call;
	if (!remap)
		req->rl_msg_copied = !long_call;
	req->rl_sge.length = hdr_len + (long_call ? 0 : (uint32_t)call->msg_len);

	/* The binds go first on the send queue (frwr_send()), the Send last. */
	req->rl_sqecount = 1 + req->rl_nmws;
	req->rl_flags |= RPCRDMA_REQ_MAPPED;
	return 0;
}

/* A grant of 0 would deadlock; more than our slots is meaningless. */
static uint32_t rpcrdma_clamp_credits(const struct rpcrdma_xprt *x, uint32_t credits)
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
static int64_t rpcrdma_chunk_written(const struct rpcrdma_chunk *echo,
				     const struct rpcrdma_segment *ours, uint32_t nours)
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
	n = rpcrdma_chunk_written(&hdr->write[0], req->rl_write, req->rl_nwrite);
	if (n < 0)
		return false;
	v->result_len = (size_t)n;
	return true;
}

/*
 * The head of an RPC reply message (RFC 5531 section 9): the call's XID,
 * msg_type REPLY, and a reply_stat of MSG_ACCEPTED or MSG_DENIED. Whatever
 * way the reply came (inline, after Write chunks, whole in the Reply
 * chunk), a message that does not start so does not answer this call: a
 * zeroed Reply chunk, a peer's stale or misrouted reply.
 */
#define RPC_REPLY_HEAD_LEN 12
#define RPC_MSG_REPLY 1
#define RPC_MSG_DENIED 1

static bool rpcrdma_rpc_reply_head(const unsigned char *msg, size_t len, uint32_t xid)
{
	if (len < RPC_REPLY_HEAD_LEN)
		return false;
	/* Word by word as on the wire: reply_stat is 0 or 1, no other bit set. */
	return rpcrdma_plain_word(msg, 0) == htonl(xid) &&
	       rpcrdma_plain_word(msg, 1) == htonl(RPC_MSG_REPLY) &&
	       !(rpcrdma_plain_word(msg, 2) & ~htonl(RPC_MSG_DENIED));
}

/*
 * An inline reply of @len bytes at @body, to call @xid: it must be an RPC
 * reply to that call; one longer than the caller's buffer ends the call
 * with -EMSGSIZE. Returns false to drop it.
 */
static bool rpcrdma_reply_inline(const struct rpcrdma_req *req, uint32_t xid,
				 const unsigned char *body, size_t len,
				 struct rpcrdma_reply_view *v)
{
	if (!rpcrdma_rpc_reply_head(body, len, xid))
		return false;
	if (len > req->rl_call->reply_max) {
		v->status = -EMSGSIZE;
		return true;
	}
	v->body = body;
	v->reply_len = len;
	return true;
}

/*
 * Where the server's Writes into the Reply chunk landed: the caller's
 * buffer, or the bounce buffer that stands in for it until the call
 * completes (frwr_release_regions()).
 */
static const unsigned char *rpcrdma_reply_chunk_data(const struct rpcrdma_req *req)
{
	const struct rpcrdma_buf *b = &req->rl_bounce[RPCRDMA_BOUNCE_REPLY];

	return b->data ? b->data : req->rl_call->reply;
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
	int64_t n = 0;

	memset(v, 0, sizeof(*v));
	/* Most replies come inline with no chunk list: straight to the checks of that. */
	if (likely(hdr->proc == RPCRDMA_MSG && !(hdr->read_segs | hdr->write_chunks) &&
		   !hdr->has_reply))
		goto inline_reply;
	if (hdr->proc == RPCRDMA_ERROR) {
		rpcrdma_count_inc(x->rx_stats.rdma_errors);
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
		n = rpcrdma_chunk_written(&hdr->reply, req->rl_reply, req->rl_nreply);
		if (n < 0)
			return false;
	}
	if (hdr->proc == RPCRDMA_NOMSG) {
		/*
		 * The whole reply came by RDMA Write into the Reply chunk, and
		 * by RC ordering it is in place before this Send arrived.
		 */
		if (!hdr->has_reply ||
		    !rpcrdma_rpc_reply_head(rpcrdma_reply_chunk_data(req), (size_t)n, hdr->xid))
			return false;
		v->reply_len = (size_t)n;
		v->reply_chunk_len = (uint32_t)n;
		return true;
	}
	/* Inline: a Reply chunk may come back, but unused (RFC 8166 4.3.3). */
	if (n)
		return false;
inline_reply:
	return rpcrdma_reply_inline(req, hdr->xid, rep->rr_buf + hdr->hdr_len, len, v);
}

/* A reply not accepted: count it; a window the server invalidated with it is gone all the same. */
static void rpcrdma_reply_drop(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep,
			       struct rpcrdma_req *req, const struct rpcrdma_hdr *hdr, int rc)
{
	rpcrdma_count_inc(x->rx_stats.dropped);
	rpcrdma_dbg("client: dropped a reply for XID 0x%08x (proc %u%s%s)", hdr->xid, hdr->proc,
		    rc ? ", " : "", rc ? strerror(-rc) : "");
	if (rep->rr_with_inv)
		frwr_reminv(x, req, rep->rr_inv_rkey);
}

/*
 * The reply is accepted: the call takes its results, leaves the XID table,
 * and completes once its memory is fenced and its Send is done.
 */
static rpcrdma_always_inline void rpcrdma_complete_rqst(struct rpcrdma_xprt *x,
							struct rpcrdma_req *req,
							const struct rpcrdma_rep *rep,
							const struct rpcrdma_reply_view *v)
{
	if (v->body)
		memcpy(req->rl_call->reply, v->body, v->reply_len);
	if (!v->status) {
		req->rl_call->reply_len = v->reply_len;
		req->rl_call->result_len = v->result_len;
	}
	req->rl_reply_chunk_len = v->reply_chunk_len;

	rpcrdma_count_inc(x->rx_stats.replies);
	req->rl_flags |= RPCRDMA_REQ_REPLIED;
	req->rl_flags &= ~RPCRDMA_REQ_SENT;
	x->rx_outstanding--;
	xprt_rdma_hash_del(req);
	req->rl_status = v->status;
	/* Fence the call's memory before anyone looks at the reply (RFC 8166). */
	if (rep->rr_with_inv && !frwr_reminv(x, req, rep->rr_inv_rkey)) {
		req->rl_status = -EPROTO;
		rpcrdma_count_inc(x->rx_stats.dropped);
	}
	frwr_unmap_async(x, req);
	/*
	 * Replies are handled after the batch, outside the handlers: a call
	 * that is over with its reply (no signaled Send, no window to
	 * invalidate) returns now, the rest when their last completion comes.
	 */
	if (likely(!(req->rl_flags & (RPCRDMA_REQ_SEND_PENDING | RPCRDMA_REQ_LINV_PENDING |
				      RPCRDMA_REQ_LINV_FAILED | RPCRDMA_REQ_CANCELED)))) {
		list_del(&req->rl_list);
		xprt_rdma_done(x, req);
		return;
	}
	xprt_rdma_req_ready(x, req);
}

/*
 * The commonest reply, inline with no chunk list, to a call that waits for
 * it and got no Send With Invalidate, taken without the general decode.
 * Returns false for anything else, which rpcrdma_reply_handler() then
 * decides, the same way as it would have.
 */
bool rpcrdma_reply_plain(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep)
{
	struct rpcrdma_reply_view v = { 0 };
	struct rpcrdma_req *req;
	uint32_t xid, credit;

	if (!rpcrdma_hdr_plain(rep->rr_buf, rep->rr_byte_len, &xid, &credit) || rep->rr_with_inv)
		return false;
	req = xprt_rdma_lookup(x, xid);
	if (!req || (req->rl_flags & (RPCRDMA_REQ_SENT | RPCRDMA_REQ_CANCELED)) !=
			    RPCRDMA_REQ_SENT ||
	    !rpcrdma_reply_inline(req, xid, rep->rr_buf + RPCRDMA_HDR_MIN_LEN,
				  rep->rr_byte_len - RPCRDMA_HDR_MIN_LEN, &v))
		return false;
	x->rx_credits = rpcrdma_clamp_credits(x, credit);
	rpcrdma_complete_rqst(x, req, rep, &v);
	return true;
}

void rpcrdma_reply_handler(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep)
{
	struct rpcrdma_reply_view v;
	struct rpcrdma_hdr hdr;
	struct rpcrdma_req *req;
	int rc;

	rc = rpcrdma_hdr_decode(rep->rr_buf, rep->rr_byte_len, NULL, &hdr);
	if (rc == -ENODATA || rc == -EPROTONOSUPPORT) {
		/* No XID to match, or a version we cannot parse: drop it. */
		rpcrdma_count_inc(x->rx_stats.dropped);
		rpcrdma_dbg("client: dropped a reply (%s)", strerror(-rc));
		return;
	}
	req = xprt_rdma_lookup(x, hdr.xid);
	if (!req || !(req->rl_flags & RPCRDMA_REQ_SENT)) {
		rpcrdma_count_inc(x->rx_stats.dropped);
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
	x->rx_credits = rpcrdma_clamp_credits(x, hdr.credit);
	rpcrdma_complete_rqst(x, req, rep, &v);
}

