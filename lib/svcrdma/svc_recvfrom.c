/* SPDX-License-Identifier: MIT */
/*
 * Server receive path: the Receive completion handler, keeping receives
 * posted, and turning received messages into calls, error replies or drops
 * as RFC 8166 requires. Calls with Read chunks are handed up only once their
 * data has been pulled (svc_rw.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "proto_plain.h"
#include "svc_pcl.h"
#include "svc_rdma.h"

void svc_rdma_recv_ctxt_init(struct svc_rdma_recv_ctxt *ctxt, unsigned char *buf, uint32_t len,
			     uint32_t lkey)
{
	ctxt->rc_cqe.done = svc_rdma_wc_receive;
	ctxt->rc_recv_buf = buf;
	ctxt->rc_recv_sge.addr = (uintptr_t)buf;
	ctxt->rc_recv_sge.length = len;
	ctxt->rc_recv_sge.lkey = lkey;
	ctxt->rc_recv_wr.wr_id = rpcrdma_cqe_id(&ctxt->rc_cqe);
	ctxt->rc_recv_wr.sg_list = &ctxt->rc_recv_sge;
	ctxt->rc_recv_wr.num_sge = 1;
	list_init(&ctxt->rc_held_node);
}

void svc_rdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svc_rdma_recv_ctxt *ctxt =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_recv_ctxt, rc_cqe);
	struct svcxprt_rdma *rdma = ctxt->rc_rdma;

	if (unlikely(!rpcrdma_ep_recv_done(&rdma->sc_ep, wc, "server receive"))) {
		list_add_tail(&ctxt->rc_list, &rdma->sc_recv_free);
		return;
	}
	ctxt->rc_byte_len = wc->byte_len;
	rdma->sc_recvd++;
	list_add_tail(&ctxt->rc_list, &rdma->sc_rq_dto_q);
}

/*
 * Once the posted receives fall below the grant ceiling, post up to a batch
 * beyond it in one chain (svcrdma's sc_recv_batch): one post per batch of
 * calls, and the grant stays whole, since the refill comes before the
 * replies that carry it. Receive contexts number 2 x credits + the batch:
 * the posted ones and the calls held both fit.
 */
void svc_rdma_refill_post(struct svcxprt_rdma *rdma)
{
	if (rdma->sc_srq) {
		svc_rdma_srq_refill(rdma->sc_srq);
		return;
	}
	rpcrdma_ep_post_recvs(&rdma->sc_ep, &rdma->sc_recv_free,
			      rdma->sc_recv_target - rdma->sc_ep.recv_posted,
			      RPCRDMA_RECV_WR_OFF(struct svc_rdma_recv_ctxt, rc_list, rc_recv_wr));
}

/*
 * The receive buffer holds a call from now on: lent to the application, or
 * pulling. @tracked: the call may come to hold registrations (chunks, a long
 * reply: only a call with chunk lists can), which a close must find on
 * sc_held; a plain call stays off it.
 */
static void svc_rdma_recv_ctxt_hold(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt,
				    bool tracked)
{
	rdma->sc_calls_held++;
	ctxt->rc_held = true;
	if (tracked)
		list_add_tail(&ctxt->rc_held_node, &rdma->sc_held);
}

/* The payloads named for a reply that never went out are released, unsent. */
void svc_rdma_release_payloads(struct rpcrdma_svc_call *call)
{
	unsigned int i;

	for (i = 0; i < call->npayloads; i++)
		if (call->payloads[i].release)
			call->payloads[i].release(call->payloads[i].arg);
	svc_rdma_free_mem(call->rdma, call->payloads,
			  SVC_RDMA_MAX_PAYLOADS * sizeof(*call->payloads));
	call->payloads = NULL;
	call->npayloads = 0;
}

/* A call's Read sinks (those the application did not keep) and its long-reply buffer. */
static void svc_rdma_call_release_chunks(struct svcxprt_rdma *rdma, struct rpcrdma_svc_call *call)
{
	unsigned int i;

	if (call->has_pzrc)
		svc_rdma_sink_put(rdma, &call->pzrc.ch_buf);
	call->has_pzrc = false;
	for (i = 0; i < call->nchunks; i++)
		if (!call->chunks[i].ch_kept)
			svc_rdma_sink_put(rdma, &call->chunks[i].ch_buf);
	/* Allocated for every Read chunk of the header; nchunks may stop short. */
	svc_rdma_free_mem(rdma, call->chunks, call->hdr->read_chunks * sizeof(*call->chunks));
	call->chunks = NULL;
	call->nchunks = 0;
	if (call->long_reply.data)
		svc_rdma_long_reply_put(rdma, &call->long_reply);
}

/*
 * A held call lets go of its reply buffer, the payloads named for a reply
 * that never went out and its chunks, and leaves sc_held.
 */
static __attribute__((noinline)) void svc_rdma_call_let_go(struct svcxprt_rdma *rdma,
							    struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;

	list_del(&ctxt->rc_held_node);
	if (call->reply_ctxt) {
		svc_rdma_send_ctxt_put(rdma, call->reply_ctxt);
		call->reply_ctxt = NULL;
	}
	if (call->payloads)
		svc_rdma_release_payloads(call);
	if (call->chunks || call->has_pzrc || call->long_reply.data)
		svc_rdma_call_release_chunks(rdma, call);
}

/* svc_rdma_recv_ctxt_put() in general: any buffer, held or not, SRQ or not. */
static __attribute__((noinline)) void svc_rdma_recv_ctxt_release(struct svcxprt_rdma *rdma,
								 struct svc_rdma_recv_ctxt *ctxt)
{
	const struct rpcrdma_svc_call *call = &ctxt->rc_call;
	bool held = ctxt->rc_held;

	if (held) {
		/*
		 * Chunks and a long reply come only with chunk lists, and such a
		 * call is on sc_held (svc_rdma_recv_ctxt_hold()); any call may
		 * hold a reply buffer or payloads. A plain call answered holds
		 * nothing.
		 */
		if (unlikely(!list_empty(&ctxt->rc_held_node) || call->reply_ctxt || call->payloads))
			svc_rdma_call_let_go(rdma, ctxt);
		ctxt->rc_held = false;
	}
	if (ctxt->rc_srq)
		svc_rdma_srq_recv_put(ctxt->rc_srq, ctxt);
	else
		list_add_tail(&ctxt->rc_list, &rdma->sc_recv_free);
	if (held)
		svc_rdma_conn_call_done(rdma);
}

/*
 * The one way a receive buffer comes back, whatever held it (the kernel's
 * svc_rdma_recv_ctxt_put): a call it held lets go of all it holds
 * (svc_rdma_call_let_go()); then the buffer goes back to its free list,
 * its connection's or, with the SRQ, its pool's (svc_rdma_srq_recv_put()),
 * to be posted again. The connection may be freed when this was the last
 * call it held: nothing touches @rdma after.
 *
 * Every reply ends here. The commonest, a held call of a connection
 * without the SRQ that holds nothing beyond its buffer (a plain call
 * answered), takes the three steps below, which call nothing that needs
 * a stack frame; the rest goes through svc_rdma_recv_ctxt_release().
 */
void svc_rdma_recv_ctxt_put(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	const struct rpcrdma_svc_call *call = &ctxt->rc_call;

	if (unlikely(!ctxt->rc_held || ctxt->rc_srq || !list_empty(&ctxt->rc_held_node) ||
		     call->reply_ctxt || call->payloads)) {
		svc_rdma_recv_ctxt_release(rdma, ctxt);
		return;
	}
	ctxt->rc_held = false;
	list_add_tail(&ctxt->rc_list, &rdma->sc_recv_free);
	svc_rdma_conn_call_done(rdma);
}

/*
 * Fold @handle into the one rkey seen so far. Returns false once two
 * differ: then no single Send With Invalidate covers the call.
 */
static bool svc_rdma_one_rkey(uint32_t handle, uint32_t *rkey, bool *found)
{
	if (!*found) {
		*rkey = handle;
		*found = true;
		return true;
	}
	return *rkey == handle;
}

/* The one rkey that a Send With Invalidate may retire, if there is exactly one. */
static bool svc_rdma_get_inv_rkey(const struct rpcrdma_hdr *hdr, uint32_t *rkey)
{
	struct rpcrdma_read_segment rs;
	struct rpcrdma_segment seg;
	bool found = false;
	uint32_t i, j;

	/* Most calls carry no chunk, so no rkey. */
	if (likely(!(hdr->read_segs | hdr->write_chunks) && !hdr->has_reply))
		return false;
	for (i = 0; i < hdr->read_segs; i++) {
		rpcrdma_hdr_read_segment(hdr, i, &rs);
		if (!svc_rdma_one_rkey(rs.seg.handle, rkey, &found))
			return false;
	}
	for (i = 0; i < hdr->write_chunks; i++) {
		for (j = 0; j < hdr->write[i].nsegs; j++) {
			rpcrdma_chunk_segment(&hdr->write[i], j, &seg);
			if (!svc_rdma_one_rkey(seg.handle, rkey, &found))
				return false;
		}
	}
	for (j = 0; hdr->has_reply && j < hdr->reply.nsegs; j++) {
		rpcrdma_chunk_segment(&hdr->reply, j, &seg);
		if (!svc_rdma_one_rkey(seg.handle, rkey, &found))
			return false;
	}
	return found;
}

/* Bytes an inline RDMA_MSG reply header takes: the Write list is echoed. */
static uint32_t svc_rdma_reply_reserve(const struct rpcrdma_hdr *hdr)
{
	uint32_t segs = 0, i;

	if (likely(!hdr->write_chunks))
		return RPCRDMA_HDR_MIN_LEN;
	for (i = 0; i < hdr->write_chunks; i++)
		segs += hdr->write[i].nsegs;
	return (uint32_t)rpcrdma_hdr_len(0, hdr->write_chunks, segs, 0, 0);
}

/* Hand a complete call up: its message is in place, inline or pulled. Inline in the plain path. */
static rpcrdma_always_inline void svc_rdma_call_up(struct svcxprt_rdma *rdma,
						   struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;
	struct rpcrdma_svc *svc = rdma->sc_svc;

	if (call->has_pzrc) {
		call->msg = call->pzrc.ch_buf.data;
		call->msg_len = call->pzrc.ch_len;
	}
	rpcrdma_count_inc(rdma->sc_stats->calls);
	if (!rdma->sc_announced) {
		rdma->sc_announced = true;
		if (svc->sv_attr.on_conn)
			svc->sv_attr.on_conn(svc_rdma_conn(rdma), RPCRDMA_CONN_ESTABLISHED,
					     svc->sv_attr.arg);
	}
	svc->sv_attr.on_call(call, svc->sv_attr.arg);
}

void svc_rdma_hand_up(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	svc_rdma_call_up(rdma, ctxt);
}

/*
 * Start @call afresh for a message from @rdma whose header is @hdr: every
 * field set (a new field of struct rpcrdma_svc_call belongs here), but the
 * long call's chunk, whose bytes mean something only once has_pzrc says so
 * (svc_rdma_map_reads() clears it then). Field by field, not memset: the
 * compiler turns a clear this size into a rep stos, slower on every call.
 */
static void svc_rdma_call_clear(struct rpcrdma_svc_call *call, struct svcxprt_rdma *rdma,
				struct rpcrdma_hdr *hdr)
{
	call->rdma = rdma;
	call->xid = 0;
	call->msg = NULL;
	call->msg_len = 0;
	call->hdr = hdr;
	call->reply_ctxt = NULL;
	call->long_reply = (struct rpcrdma_buf){ 0 };
	call->long_room = 0;
	call->hdr_reserve = 0;
	call->has_pzrc = false;
	call->chunks = NULL;
	call->nchunks = 0;
	call->read = NULL;
	call->payloads = NULL;
	call->npayloads = 0;
	call->inv_rkey = 0;
	call->inv = false;
}

/* An accepted header: check what RFC 8166 asks of a call's chunks. Returns an ERR_ code or 0. */
static uint32_t svc_rdma_check_call(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;
	const struct rpcrdma_hdr *hdr = call->hdr;
	size_t inline_len = ctxt->rc_byte_len - hdr->hdr_len;
	uint32_t rpc_xid;
	int rc;

	if (hdr->proc == RPCRDMA_NOMSG) {
		/* A long call: the message is in a position-zero Read chunk. */
		inline_len = 0;
	} else {
		/* The RPC message must be there and carry the same XID (RFC 8166 4.1). */
		if (inline_len < sizeof(rpc_xid))
			return RPCRDMA_ERR_CHUNK;
		memcpy(&rpc_xid, ctxt->rc_recv_buf + hdr->hdr_len, sizeof(rpc_xid));
		if (ntohl(rpc_xid) != hdr->xid)
			return RPCRDMA_ERR_CHUNK;
	}
	/* Most calls carry no Read list: nothing to map (the call was zeroed). */
	rc = hdr->read_segs ? svc_rdma_map_reads(rdma, call, inline_len) : 0;
	if (rc) {
		rpcrdma_info("server: XID 0x%08x: unusable Read list (%s)", hdr->xid,
			     strerror(-rc));
		return RPCRDMA_ERR_CHUNK;
	}
	/* NOMSG needs a position-zero chunk; MSG must not have one. */
	if ((hdr->proc == RPCRDMA_NOMSG) != call->has_pzrc)
		return RPCRDMA_ERR_CHUNK;
	if (hdr->read_segs && rdma->sc_ord == 0)
		return RPCRDMA_ERR_CHUNK;
	call->msg = ctxt->rc_recv_buf + hdr->hdr_len;
	call->msg_len = inline_len;
	call->hdr_reserve = svc_rdma_reply_reserve(hdr);
	call->inv = rdma->sc_inline.remote_inv && svc_rdma_get_inv_rkey(hdr, &call->inv_rkey);
	return 0;
}

static void svc_rdma_handle_call(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;
	uint32_t err;
	int rc;

	svc_rdma_call_clear(call, rdma, &ctxt->rc_hdr);
	rc = rpcrdma_hdr_decode(ctxt->rc_recv_buf, ctxt->rc_byte_len, NULL, call->hdr);
	/*
	 * Too short for any version 1 call (RFC 8166 4.5): discarded. Another
	 * version's header still gets ERR_VERS, which its sender can read.
	 */
	if (rc != -EPROTONOSUPPORT && ctxt->rc_byte_len < RPCRDMA_HDR_MIN_LEN) {
		rpcrdma_count_inc(rdma->sc_stats->dropped);
		goto out_put;
	}
	switch (rpcrdma_hdr_verdict(rc, call->hdr)) {
	case RPCRDMA_ACCEPT:
		break;
	case RPCRDMA_REPLY_ERR_VERS:
		rpcrdma_count_inc(rdma->sc_stats->dropped);
		svc_rdma_send_error(rdma, call->hdr, RPCRDMA_ERR_VERS);
		goto out_put;
	case RPCRDMA_REPLY_ERR_CHUNK:
		rpcrdma_count_inc(rdma->sc_stats->dropped);
		rpcrdma_info("server: bad header from the client (%s)", strerror(-rc));
		svc_rdma_send_error(rdma, call->hdr, RPCRDMA_ERR_CHUNK);
		goto out_put;
	case RPCRDMA_DROP:
	default:
		rpcrdma_count_inc(rdma->sc_stats->dropped);
		goto out_put;
	}
	call->xid = call->hdr->xid;
	err = svc_rdma_check_call(rdma, ctxt);
	if (err) {
		rpcrdma_count_inc(rdma->sc_stats->dropped);
		svc_rdma_call_release_chunks(rdma, call);
		svc_rdma_send_error(rdma, call->hdr, err);
		goto out_put;
	}
	svc_rdma_recv_ctxt_hold(rdma, ctxt, true);
	if (call->hdr->read_segs) {
		rpcrdma_count_add(rdma->sc_stats->read_chunks, call->hdr->read_chunks);
		/* Handed up from svc_rdma_read_complete() once the data is in. */
		if (svc_rdma_process_read_list(rdma, ctxt) == 0)
			return;
		rpcrdma_count_inc(rdma->sc_stats->dropped);
		svc_rdma_send_error(rdma, call->hdr, RPCRDMA_ERR_CHUNK);
		svc_rdma_recv_ctxt_put(rdma, ctxt);
		return;
	}
	svc_rdma_hand_up(rdma, ctxt);
	return;

out_put:
	svc_rdma_recv_ctxt_put(rdma, ctxt);
}

/*
 * The commonest call, RDMA_MSG with no chunk list, taken without the
 * general decode and checks. Returns false for anything else, and for a
 * plain header the general path must answer (its RPC message missing or
 * carrying another XID): svc_rdma_handle_call() decides those the same way
 * it always has.
 */
static bool svc_rdma_handle_plain(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;
	const unsigned char *msg = ctxt->rc_recv_buf + RPCRDMA_HDR_MIN_LEN;
	uint32_t xid, credit, rpc_xid;

	if (!rpcrdma_hdr_plain(ctxt->rc_recv_buf, ctxt->rc_byte_len, &xid, &credit) ||
	    ctxt->rc_byte_len < RPCRDMA_HDR_MIN_LEN + sizeof(rpc_xid))
		return false;
	memcpy(&rpc_xid, msg, sizeof(rpc_xid));
	if (ntohl(rpc_xid) != xid)
		return false;
	svc_rdma_call_clear(call, rdma, &ctxt->rc_hdr);
	rpcrdma_hdr_plain_fill(call->hdr, xid, credit);
	call->xid = xid;
	call->msg = msg;
	call->msg_len = ctxt->rc_byte_len - RPCRDMA_HDR_MIN_LEN;
	call->hdr_reserve = RPCRDMA_HDR_MIN_LEN;
	svc_rdma_recv_ctxt_hold(rdma, ctxt, false);
	svc_rdma_call_up(rdma, ctxt);
	return true;
}

void svc_rdma_credit_overrun(struct svcxprt_rdma *rdma, const char *what)
{
	if (rdma->sc_ep.close_pending || rdma->sc_state >= SVCXPRT_CLOSING)
		return;
	rpcrdma_warn("server: a client sent past its credits (%s); closing the connection", what);
	rpcrdma_count_inc(rdma->sc_stats->credit_overruns);
	rpcrdma_ep_close_deferred(&rdma->sc_ep);
	svc_rdma_mark_ready(rdma);
}

/*
 * A client within its credits (RFC 8166 3.3.1) has at most max_requests
 * calls outstanding, and each call the server holds is one of them: the
 * server let go of it before posting its reply. So a message that finds
 * max_requests calls held comes from a client past its credits, which
 * would make the server hold more than one connection may (svc.h): it is
 * dropped and the connection closed. This bounds the send contexts the
 * held calls' replies take, too (svc_rdma_send_max()).
 */
static rpcrdma_always_inline bool svc_rdma_within_credits(struct svcxprt_rdma *rdma,
							  struct svc_rdma_recv_ctxt *ctxt)
{
	if (likely(rdma->sc_calls_held < rdma->sc_max_requests))
		return true;
	rpcrdma_count_inc(rdma->sc_stats->dropped);
	svc_rdma_credit_overrun(rdma, "more calls in progress than max_requests");
	svc_rdma_recv_ctxt_put(rdma, ctxt);
	return false;
}

/* Decode what arrived and hand the calls up, in arrival order. */
void svc_rdma_recvfrom(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_recv_ctxt *ctxt;

	while ((ctxt = list_pop_entry(&rdma->sc_rq_dto_q, struct svc_rdma_recv_ctxt, rc_list))) {
		if (rdma->sc_ep.close_pending || rdma->sc_state >= SVCXPRT_CLOSING) {
			svc_rdma_recv_ctxt_put(rdma, ctxt);
			continue;
		}
		if (!svc_rdma_within_credits(rdma, ctxt))
			continue;
		if (!svc_rdma_handle_plain(rdma, ctxt))
			svc_rdma_handle_call(rdma, ctxt);
	}
	/*
	 * Last: the pulls this batch's completions finished, and the calls
	 * the loop above found nothing to pull for (Read chunks of zero
	 * length only). Both queues are empty when this returns, so no poll
	 * or arm path has to look at them again before it sleeps. Pulls
	 * finish in few passes: spare the others the call.
	 */
	if (unlikely(!list_empty(&rdma->sc_read_complete_q)))
		svc_rdma_read_complete(rdma);
}

/* Calls: accessors. */

RPCRDMA_EXPORT unsigned int rpcrdma_svc_call_payloads(const struct rpcrdma_svc_call *call)
{
	return call ? call->nchunks : 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_call_payload(const struct rpcrdma_svc_call *call, unsigned int i,
					    const void **data, size_t *len, uint32_t *pos)
{
	if (!call || i >= call->nchunks)
		return -EINVAL;
	if (data)
		*data = call->chunks[i].ch_buf.data;
	if (len)
		*len = call->chunks[i].ch_len;
	if (pos)
		*pos = call->chunks[i].ch_pos;
	return 0;
}

RPCRDMA_EXPORT void *rpcrdma_svc_call_keep_payload(struct rpcrdma_svc_call *call, unsigned int i,
						   size_t *len)
{
	struct svc_rdma_chunk *ch;
	void *data;

	if (!call || i >= call->nchunks || call->chunks[i].ch_kept)
		return NULL;
	ch = &call->chunks[i];
	/* A sink that is half a huge page is unmapped, not freed: remember it. */
	if (ch->ch_buf.map_len && rpcrdma_buf_keep_mapped(ch->ch_buf.data, ch->ch_buf.map_len))
		return NULL;
	if (len)
		*len = ch->ch_len;
	/* The data is in place and no RDMA will touch it again: keep the memory only. */
	data = rpcrdma_buf_detach(&ch->ch_buf, call->rdma->sc_stats);
	ch->ch_buf.data = data;
	ch->ch_kept = true;
	return data;
}

RPCRDMA_EXPORT void rpcrdma_svc_payload_free(void *data)
{
	rpcrdma_buf_release_kept(data);
}

RPCRDMA_EXPORT uint64_t rpcrdma_svc_call_write_chunk(const struct rpcrdma_svc_call *call,
						     unsigned int i)
{
	if (!call || i >= call->hdr->write_chunks)
		return 0;
	return call->hdr->write[i].total;
}

RPCRDMA_EXPORT int rpcrdma_svc_call_write_segs(const struct rpcrdma_svc_call *call, unsigned int i)
{
	if (!call)
		return -EINVAL;
	if (i >= call->hdr->write_chunks)
		return -ENOENT;
	return (int)call->hdr->write[i].nsegs;
}
