/* SPDX-License-Identifier: MIT */
/*
 * Server RDMA Read and Write work: pulling a call's Read chunks into
 * registered sinks with RDMA Reads, posted in waves of at most the
 * negotiated initiator depth and never waited for by a thread; and the RDMA
 * Writes of a reply's Write-list payloads and Reply chunk, chained ahead of
 * its Send. Their completion handlers mirror the kernel's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "svc_pcl.h"
#include "svc_rdma.h"

static void svc_rdma_read_free(struct svcxprt_rdma *rdma, struct svc_rdma_read_ctxt *rd)
{
	while (rd->rd_nmrs)
		if (ibv_dereg_mr(rd->rd_mrs[--rd->rd_nmrs]))
			rpcrdma_err("server: cannot deregister a Read sink: %s", strerror(errno));
	svc_rdma_free_mem(rdma, rd->rd_mrs, rd->rd_max_mrs * sizeof(*rd->rd_mrs));
	svc_rdma_free_mem(rdma, rd->rd_wrs, rd->rd_max * sizeof(*rd->rd_wrs));
	svc_rdma_free_mem(rdma, rd->rd_sges, rd->rd_max * sizeof(*rd->rd_sges));
	svc_rdma_free_mem(rdma, rd, sizeof(*rd));
}

/*
 * The wave was never posted (the connection closed while it waited for SQ
 * space, or posting failed outright), or only its head was and the drain is
 * over: release the call now.
 */
static void svc_rdma_read_release(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain)
{
	struct svc_rdma_read_ctxt *rd = container_of(chain, struct svc_rdma_read_ctxt, rd_chain);
	struct svc_rdma_recv_ctxt *ctxt = rd->rd_recv;

	ctxt->rc_call.read = NULL;
	svc_rdma_read_free(rdma, rd);
	svc_rdma_recv_ctxt_put(rdma, ctxt);
}

/* Post (or queue for SQ space) the next wave of at most sc_ord Reads. */
static void svc_rdma_read_wave(struct svcxprt_rdma *rdma, struct svc_rdma_read_ctxt *rd)
{
	uint32_t n = rd->rd_nwrs - rd->rd_next, i;

	if (n > rdma->sc_ord)
		n = rdma->sc_ord;
	for (i = 0; i < n; i++) {
		struct ibv_send_wr *wr = &rd->rd_wrs[rd->rd_next + i];

		wr->next = i + 1 < n ? wr + 1 : NULL;
		wr->wr_id = rpcrdma_cqe_id(i + 1 < n ? &rd->rd_cqe : &rd->rd_done_cqe);
		wr->send_flags = i + 1 < n ? 0 : IBV_SEND_SIGNALED;
	}
	svc_rdma_chain_init(&rd->rd_chain, svc_rdma_read_release);
	rd->rd_chain.first = &rd->rd_wrs[rd->rd_next];
	rd->rd_chain.sq.sqecount = n;
	if (svc_rdma_sq_wait(rdma, &rd->rd_chain) == -ENOTCONN)
		svc_rdma_read_release(rdma, &rd->rd_chain);
}

/*
 * The lkey the Reads of @ch place data with. On iWARP the responder writes
 * the data into the sink by its STag, so the sink needs remote write, and
 * that STag travels to the client in each Read request. So each pull gets
 * an MR of its own over just the chunk's bytes, deregistered when the pull
 * is over (svc_rdma_read_free): no client can write a sink outside its own
 * Reads, nor any other client's.
 */
static int svc_rdma_read_lkey(struct svcxprt_rdma *rdma, struct svc_rdma_read_ctxt *rd,
			      const struct svc_rdma_chunk *ch, uint32_t *lkey)
{
	uint64_t len = xdr_round4(ch->ch_len);
	struct ibv_mr *mr;

	if (!rdma->sc_iwarp) {
		*lkey = ch->ch_buf.mr->lkey;
		return 0;
	}
	mr = ibv_reg_mr(rdma->sc_pd, ch->ch_buf.data, len ? len : 4,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		return rpcrdma_errno(-ENOMEM);
	rd->rd_mrs[rd->rd_nmrs++] = mr;
	*lkey = mr->lkey;
	return 0;
}

/* Build one RDMA Read per segment into the chunk's sink, at its offset. */
static int svc_rdma_read_build(struct svcxprt_rdma *rdma, struct svc_rdma_read_ctxt *rd,
			       struct svc_rdma_chunk *ch, const struct rpcrdma_hdr *hdr)
{
	struct rpcrdma_read_segment rs;
	uint64_t off = 0;
	uint32_t i, lkey;
	int rc;

	rc = svc_rdma_read_lkey(rdma, rd, ch, &lkey);
	if (rc)
		return rc;
	for (i = 0; i < ch->ch_nsegs; i++) {
		struct ibv_send_wr *wr;
		struct ibv_sge *sge;

		uint32_t done = 0;

		rpcrdma_hdr_read_segment(hdr, ch->ch_first_seg + i, &rs);
		/* A segment longer than the port's largest message takes several Reads. */
		while (done < rs.seg.length) {
			uint32_t n = rs.seg.length - done < rdma->sc_max_msg ?
				     rs.seg.length - done : rdma->sc_max_msg;

			wr = &rd->rd_wrs[rd->rd_nwrs];
			sge = &rd->rd_sges[rd->rd_nwrs];
			rd->rd_nwrs++;
			sge->addr = (uintptr_t)(ch->ch_buf.data + off);
			sge->length = n;
			sge->lkey = lkey;
			memset(wr, 0, sizeof(*wr));
			wr->opcode = IBV_WR_RDMA_READ;
			wr->sg_list = sge;
			wr->num_sge = 1;
			wr->wr.rdma.remote_addr = rs.seg.offset + done;
			wr->wr.rdma.rkey = rs.seg.handle;
			off += n;
			done += n;
		}
	}
	return 0;
}

/* The Reads of the whole Read list, segments split at the port's largest message. */
static uint32_t svc_rdma_read_wrs(const struct svcxprt_rdma *rdma, const struct rpcrdma_hdr *hdr)
{
	struct rpcrdma_read_segment rs;
	uint32_t i, n = 0;

	for (i = 0; i < hdr->read_segs; i++) {
		rpcrdma_hdr_read_segment(hdr, i, &rs);
		n += svc_rdma_pieces(rdma, rs.seg.length);
	}
	return n;
}

/* A registered sink of at least @len bytes: a cached one not much larger, or a new one. */
static int svc_rdma_sink(struct svcxprt_rdma *rdma, struct svc_rdma_chunk *ch)
{
	/* Room for the XDR padding the client left out, zeroed: it is restored. */
	uint64_t len = xdr_round4(ch->ch_len);
	unsigned int i;

	if (!len)
		len = 4;
	for (i = 0; i < rdma->sc_nsinks; i++) {
		struct rpcrdma_buf *b = &rdma->sc_sinks[i];

		if (b->len >= len && b->len / 2 <= len) {
			ch->ch_buf = *b;
			*b = rdma->sc_sinks[--rdma->sc_nsinks];
			return 0;
		}
	}
	/*
	 * Sinks for more than a quarter of a huge page come in pairs, the two
	 * halves of one (the second cached): between processes softrdma's
	 * copies pin one page for both instead of one per 4 KiB, and an RNIC
	 * maps them with fewer translations.
	 */
	if (len > RPCRDMA_HUGE_PAGE / 4 && len <= RPCRDMA_HUGE_PAGE / 2 &&
	    rdma->sc_nsinks < SVC_RDMA_SINK_CACHE) {
		struct rpcrdma_buf spare;

		if (rpcrdma_buf_alloc_halves(&ch->ch_buf, &spare, rdma->sc_pd, IBV_ACCESS_LOCAL_WRITE,
					     rdma->sc_stats) == 0) {
			svc_rdma_sink_put(rdma, &spare);
			return 0;
		}
	}
	return rpcrdma_buf_alloc(&ch->ch_buf, rdma->sc_pd, len, IBV_ACCESS_LOCAL_WRITE,
				 rdma->sc_stats);
}

void svc_rdma_sink_put(struct svcxprt_rdma *rdma, struct rpcrdma_buf *buf)
{
	if (buf->mr && rdma->sc_state < SVCXPRT_CLOSING && rdma->sc_nsinks < SVC_RDMA_SINK_CACHE) {
		rdma->sc_sinks[rdma->sc_nsinks++] = *buf;
		memset(buf, 0, sizeof(*buf));
		return;
	}
	rpcrdma_buf_free(buf, rdma->sc_stats);
}

/*
 * A long reply's buffer: the one kept from the last long reply when its
 * mapping has the room, else a new reservation. A fresh mapping costs a
 * page fault per page written and a registration per reply; a reused one
 * has both done already.
 */
int svc_rdma_long_reply_get(struct svcxprt_rdma *rdma, struct rpcrdma_buf *buf, size_t room)
{
	struct rpcrdma_buf *kept = &rdma->sc_long_kept;

	if (kept->data && kept->map_len >= room) {
		*buf = *kept;
		memset(kept, 0, sizeof(*kept));
		return 0;
	}
	return rpcrdma_buf_reserve(buf, room);
}

/* A long reply's buffer is done with (its Send completed, or it never went): keep it. */
void svc_rdma_long_reply_put(struct svcxprt_rdma *rdma, struct rpcrdma_buf *buf)
{
	if (buf->map_len && rdma->sc_state < SVCXPRT_CLOSING) {
		rpcrdma_buf_free(&rdma->sc_long_kept, rdma->sc_stats);
		rdma->sc_long_kept = *buf;
		memset(buf, 0, sizeof(*buf));
		return;
	}
	rpcrdma_buf_free(buf, rdma->sc_stats);
}

void svc_rdma_sinks_free(struct svcxprt_rdma *rdma)
{
	while (rdma->sc_nsinks)
		rpcrdma_buf_free(&rdma->sc_sinks[--rdma->sc_nsinks], rdma->sc_stats);
	rpcrdma_buf_free(&rdma->sc_long_kept, rdma->sc_stats);
}

int svc_rdma_process_read_list(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;
	const struct rpcrdma_hdr *hdr = call->hdr;
	struct svc_rdma_read_ctxt *rd;
	unsigned int i;
	int rc;

	if (call->has_pzrc) {
		rc = svc_rdma_sink(rdma, &call->pzrc);
		if (rc)
			return rc;
	}
	for (i = 0; i < call->nchunks; i++) {
		rc = svc_rdma_sink(rdma, &call->chunks[i]);
		if (rc)
			return rc;
		memset(call->chunks[i].ch_buf.data + call->chunks[i].ch_len, 0,
		       (4 - (call->chunks[i].ch_len & 3)) & 3);
	}
	rd = svc_rdma_alloc(rdma, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	/* Bounded: the sinks of every chunk, thus its segments' lengths, are allocated by now. */
	rd->rd_max = svc_rdma_read_wrs(rdma, hdr);
	if (!rd->rd_max)
		rd->rd_max = 1;
	rd->rd_wrs = svc_rdma_alloc(rdma, rd->rd_max * sizeof(*rd->rd_wrs));
	rd->rd_sges = svc_rdma_alloc(rdma, rd->rd_max * sizeof(*rd->rd_sges));
	if (rdma->sc_iwarp) {
		rd->rd_max_mrs = call->nchunks + 1;
		rd->rd_mrs = svc_rdma_alloc(rdma, rd->rd_max_mrs * sizeof(*rd->rd_mrs));
	}
	if (!rd->rd_wrs || !rd->rd_sges || (rdma->sc_iwarp && !rd->rd_mrs)) {
		svc_rdma_read_free(rdma, rd);
		return -ENOMEM;
	}
	rd->rd_recv = ctxt;
	rd->rd_done_cqe.done = svc_rdma_wc_read_done;
	rd->rd_cqe.done = svc_rdma_wc_read;
	rc = call->has_pzrc ? svc_rdma_read_build(rdma, rd, &call->pzrc, hdr) : 0;
	for (i = 0; rc == 0 && i < call->nchunks; i++)
		rc = svc_rdma_read_build(rdma, rd, &call->chunks[i], hdr);
	if (rc) {
		svc_rdma_read_free(rdma, rd);
		return rc;
	}
	call->read = rd;
	if (rd->rd_nwrs == 0) {
		/* Only zero-length segments: nothing to pull. */
		list_add_tail(&ctxt->rc_list, &rdma->sc_read_complete_q);
		return 0;
	}
	svc_rdma_read_wave(rdma, rd);
	return 0;
}

/*
 * The last Read of a wave completed: by RC ordering so did the wave. Return
 * its SQ slots first; the call goes on from svc_rdma_read_complete(), after
 * the batch, to the next wave or up to the application. A failed Read
 * closes the connection and the call is released there.
 */
void svc_rdma_wc_read_done(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svc_rdma_read_ctxt *rd =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_read_ctxt, rd_done_cqe);
	struct svcxprt_rdma *rdma = rd->rd_recv->rc_rdma;

	if (!rdma->sc_ep.own_cq)
		svc_rdma_mark_ready(rdma);	/* the wave goes on after the batch */
	rpcrdma_sq_put(&rdma->sc_ep, rd->rd_chain.sq.sqecount);
	rd->rd_next += rd->rd_chain.sq.sqecount;
	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server RDMA Read");
		rd->rd_failed = true;
	}
	list_add_tail(&rd->rd_recv->rc_list, &rdma->sc_read_complete_q);
}

/* An unsignaled Read of a wave: seen only when it failed or flushed. */
void svc_rdma_wc_read(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svc_rdma_read_ctxt *rd =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_read_ctxt, rd_cqe);
	struct svcxprt_rdma *rdma = rd->rd_recv->rc_rdma;

	if (wc->status != IBV_WC_SUCCESS)
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server RDMA Read");
}

/* A long call's message, now pulled: an RPC message carrying the call's XID. */
static bool svc_rdma_pzrc_valid(const struct rpcrdma_svc_call *call)
{
	uint32_t rpc_xid;

	if (call->pzrc.ch_len < sizeof(rpc_xid))
		return false;
	memcpy(&rpc_xid, call->pzrc.ch_buf.data, sizeof(rpc_xid));
	return ntohl(rpc_xid) == call->xid;
}

void svc_rdma_read_complete(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_recv_ctxt *ctxt;

	while ((ctxt = list_pop_entry(&rdma->sc_read_complete_q, struct svc_rdma_recv_ctxt, rc_list))) {
		struct rpcrdma_svc_call *call = &ctxt->rc_call;
		struct svc_rdma_read_ctxt *rd = call->read;

		if (rd->rd_failed || rdma->sc_ep.close_pending || rdma->sc_state >= SVCXPRT_CLOSING) {
			call->read = NULL;
			svc_rdma_read_free(rdma, rd);
			svc_rdma_recv_ctxt_put(rdma, ctxt);
			continue;
		}
		if (rd->rd_next < rd->rd_nwrs) {
			svc_rdma_read_wave(rdma, rd);
			continue;
		}
		call->read = NULL;
		svc_rdma_read_free(rdma, rd);
		if (call->has_pzrc && !svc_rdma_pzrc_valid(call)) {
			/* RFC 8166 4.1: the pulled message must start with rdma_xid. */
			rpcrdma_count_inc(rdma->sc_stats->dropped);
			svc_rdma_send_error(rdma, call->hdr, RPCRDMA_ERR_CHUNK);
			svc_rdma_recv_ctxt_put(rdma, ctxt);
			continue;
		}
		svc_rdma_hand_up(rdma, ctxt);
	}
}

/*
 * Write-list and Reply-chunk Writes are unsignaled: these run only for a
 * flush or an error, which leaves the client's reply incomplete, so the
 * connection closes. They free nothing and return no SQ slots: the pages
 * under I/O are released by the Send completion that follows them on the
 * same send queue (svc_rdma_wc_send), which also returns every slot of the
 * chain.
 */
void svc_rdma_write_done(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svcxprt_rdma *rdma =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_send_ctxt, sc_write_cqe)->sc_rdma;

	if (unlikely(wc->status != IBV_WC_SUCCESS))
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server RDMA Write (Write list)");
}

void svc_rdma_reply_done(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svcxprt_rdma *rdma =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_send_ctxt, sc_reply_cqe)->sc_rdma;

	if (unlikely(wc->status != IBV_WC_SUCCESS))
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server RDMA Write (Reply chunk)");
}

static int svc_rdma_grow_wrs(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			     uint32_t need)
{
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	uint32_t n, i;

	if (ctxt->sc_nwrs + need <= ctxt->sc_max_wrs)
		return 0;
	n = ctxt->sc_max_wrs ? ctxt->sc_max_wrs * 2 : 16;
	while (n < ctxt->sc_nwrs + need)
		n *= 2;
	/* Both new arrays first: a failure leaves the context as it was. */
	wrs = svc_rdma_alloc(rdma, n * sizeof(*wrs));
	sges = svc_rdma_alloc(rdma, n * sizeof(*sges));
	if (!wrs || !sges) {
		svc_rdma_free_mem(rdma, wrs, n * sizeof(*wrs));
		svc_rdma_free_mem(rdma, sges, n * sizeof(*sges));
		return -ENOMEM;
	}
	if (ctxt->sc_nwrs) {
		memcpy(wrs, ctxt->sc_wrs, ctxt->sc_nwrs * sizeof(*wrs));
		memcpy(sges, ctxt->sc_wr_sges, ctxt->sc_nwrs * sizeof(*sges));
	}
	svc_rdma_free_mem(rdma, ctxt->sc_wrs, ctxt->sc_max_wrs * sizeof(*wrs));
	svc_rdma_free_mem(rdma, ctxt->sc_wr_sges, ctxt->sc_max_wrs * sizeof(*sges));
	ctxt->sc_wrs = wrs;
	ctxt->sc_wr_sges = sges;
	/* The arrays moved: point each WR at its own SGE again. */
	for (i = 0; i < ctxt->sc_nwrs; i++)
		wrs[i].sg_list = &sges[i];
	ctxt->sc_max_wrs = n;
	return 0;
}

/* Append one RDMA Write of @len bytes at @src to @remote_addr under @rkey; room is made. */
static void svc_rdma_add_write(struct svc_rdma_send_ctxt *ctxt, const unsigned char *src,
			       uint32_t len, uint32_t lkey, struct rpcrdma_cqe *cqe,
			       uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr *wr = &ctxt->sc_wrs[ctxt->sc_nwrs];
	struct ibv_sge *sge = &ctxt->sc_wr_sges[ctxt->sc_nwrs];

	sge->addr = (uintptr_t)src;
	sge->length = len;
	sge->lkey = lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = rpcrdma_cqe_id(cqe);
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->wr.rdma.rkey = rkey;
	ctxt->sc_nwrs++;
}

/*
 * Append RDMA Writes that place @len bytes from @src (under @lkey) into the
 * client's @chunk, segment by segment, recording the bytes each segment
 * received in @written. Returns 0, or -EMSGSIZE if the chunk is too small.
 */
static int svc_rdma_add_writes(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			       const struct rpcrdma_chunk *chunk, const unsigned char *src,
			       uint64_t len, uint32_t lkey, struct rpcrdma_cqe *cqe,
			       uint32_t *written)
{
	struct rpcrdma_segment seg;
	uint64_t off = 0;
	uint32_t i;

	if (len > chunk->total)
		return -EMSGSIZE;
	for (i = 0; i < chunk->nsegs; i++) {
		uint32_t n, done;

		rpcrdma_chunk_segment(chunk, i, &seg);
		n = len - off < seg.length ? (uint32_t)(len - off) : seg.length;
		written[i] = n;
		/* A segment longer than the port's largest message takes several Writes. */
		if (svc_rdma_grow_wrs(rdma, ctxt, svc_rdma_pieces(rdma, n)))
			return -ENOMEM;
		for (done = 0; done < n;) {
			uint32_t piece = n - done < rdma->sc_max_msg ? n - done : rdma->sc_max_msg;

			svc_rdma_add_write(ctxt, src + off, piece, lkey, cqe,
					   seg.offset + done, seg.handle);
			off += piece;
			done += piece;
		}
	}
	return 0;
}

/*
 * The reply's DDP payloads by RDMA Write into the client's Write chunks, in
 * order, and the Write list's echo. Returns 0, -EMSGSIZE (a payload larger
 * than its chunk) or -ENOMEM.
 */
int svc_rdma_prepare_write_list(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
				struct rpcrdma_svc_call *call, struct svc_rdma_reply *r)
{
	const struct rpcrdma_hdr *hdr = call->hdr;
	uint32_t i, off;
	int rc;

	for (off = 0, i = 0; i < hdr->write_chunks; off += hdr->write[i].nsegs, i++) {
		if (i < call->npayloads && svc_rdma_payload_ddp(hdr, i)) {
			const unsigned char *src;
			uint32_t lkey;

			rc = svc_rdma_payload_lkey(rdma, ctxt, &call->payloads[i], &src, &lkey);
			if (!rc)
				rc = svc_rdma_add_writes(rdma, ctxt, &hdr->write[i], src,
							 call->payloads[i].len, lkey,
							 &ctxt->sc_write_cqe, r->written + off);
			if (rc)
				return rc;
			rpcrdma_count_inc(rdma->sc_stats->write_chunks);
		}
		svc_rdma_echo(&hdr->write[i], r->written + off, r->echo + off, &r->wdesc[i]);
	}
	r->enc.write_chunks = hdr->write_chunks;
	r->enc.write = r->wdesc;
	return 0;
}

/*
 * The whole reply by RDMA Write into the client's Reply chunk: RFC 8166
 * has a Reply chunk offered be a Reply chunk used, never truncated. The
 * message goes from where it was encoded when it is whole there, else from
 * a registered buffer it is assembled in, with its inline payloads.
 * Returns 0, -EMSGSIZE (larger than the chunk) or -ENOMEM.
 */
int svc_rdma_prepare_reply_chunk(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
				 struct rpcrdma_svc_call *call, struct svc_rdma_reply *r)
{
	const struct rpcrdma_hdr *hdr = call->hdr;
	const struct svc_rdma_msg *m = r->msg;
	struct svc_rdma_release rel = { 0 };
	uint32_t off = r->nsegs - hdr->reply.nsegs;
	int rc;

	if (r->stream_len > hdr->reply.total)
		return -EMSGSIZE;
	if (m->long_buf && r->ninl == 0) {
		rel.buf = *m->long_buf;
		memset(m->long_buf, 0, sizeof(*m->long_buf));
	} else {
		rc = rpcrdma_buf_alloc(&rel.buf, rdma->sc_pd, r->stream_len ? r->stream_len : 4, 0,
				       rdma->sc_stats);
		if (rc)
			return rc;
		svc_rdma_splice(rel.buf.data, m->msg, m->len, r->inl, r->ninl);
	}
	rc = svc_rdma_add_release(rdma, ctxt, &rel);
	if (rc) {
		rpcrdma_buf_free(&rel.buf, rdma->sc_stats);
		return rc;
	}
	rc = svc_rdma_add_writes(rdma, ctxt, &hdr->reply, rel.buf.data, r->stream_len,
				 rel.buf.mr->lkey, &ctxt->sc_reply_cqe, r->written + off);
	if (rc)
		return rc;
	svc_rdma_echo(&hdr->reply, r->written + off, r->echo + off, &r->rdesc);
	r->enc.reply = &r->rdesc;
	r->enc.proc = RPCRDMA_NOMSG;
	rpcrdma_count_inc(rdma->sc_stats->reply_chunks);
	return 0;
}
