/* SPDX-License-Identifier: MIT */
/*
 * Server reply path: send contexts, send-queue accounting with FIFO waiters,
 * the Send completion handler, inline replies and RDMA_ERROR replies.
 */
#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "svc_rdma.h"

struct svc_rdma_send_ctxt *svc_rdma_send_ctxt_get(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_send_ctxt *ctxt;

	ctxt = list_pop(&rdma->sc_send_free, struct svc_rdma_send_ctxt, sc_list);
	if (unlikely(!ctxt))
		return NULL;
	ctxt->sc_wr_chain = &ctxt->sc_send_wr;
	ctxt->sc_sqecount = 1;
	ctxt->sc_send_wr.next = NULL;
	ctxt->sc_send_wr.opcode = IBV_WR_SEND;
	return ctxt;
}

void svc_rdma_send_ctxt_put(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	list_add_tail(&rdma->sc_send_free, &ctxt->sc_list);
}

uint32_t svc_rdma_grant(const struct svcxprt_rdma *rdma)
{
	uint32_t grant = rdma->sc_ep.recv_posted;

	if (grant > rdma->sc_max_requests)
		grant = rdma->sc_max_requests;
	/* A grant of 0 would deadlock the client (RFC 8166 3.3.1). */
	return grant ? grant : 1;
}

/*
 * The Send ending a chain completed (or flushed): every WR before it on this
 * send queue has completed too, by RC ordering. Return the chain's SQ slots
 * first, then release the context and whatever it holds, on success and
 * error alike; an error schedules a close.
 */
void svc_rdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svcxprt_rdma *rdma = cq->cq_context;
	struct svc_rdma_send_ctxt *ctxt =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_send_ctxt, sc_cqe);

	rdma->sc_ep.sq_avail += ctxt->sc_sqecount;
	if (unlikely(wc->status != IBV_WC_SUCCESS))
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server send");
	svc_rdma_send_ctxt_put(rdma, ctxt);
}

static bool svc_rdma_can_send(const struct svcxprt_rdma *rdma)
{
	return (rdma->sc_state == SVCXPRT_CONNECTED || rdma->sc_state == SVCXPRT_ACCEPTING) &&
	       !rdma->sc_ep.close_pending;
}

/* Post a chain whose SQ slots were just taken. Consumes @ctxt on failure. */
static int svc_rdma_post_chain(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	int rc;

	rdma->sc_ep.sq_avail -= ctxt->sc_sqecount;
	rc = rpcrdma_ep_post_send(&rdma->sc_ep, ctxt->sc_wr_chain, ctxt->sc_sqecount);
	if (likely(rc == 0))
		return 0;
	if (rc == -EINPROGRESS) {
		/* The head is in flight: release the context after the drain. */
		list_add_tail(&rdma->sc_orphans, &ctxt->sc_list);
		return 0;
	}
	svc_rdma_send_ctxt_put(rdma, ctxt);
	return rc;
}

/*
 * Send a prepared chain, or queue it behind earlier ones (FIFO) until the
 * send queue has room. Consumes @ctxt whatever the result.
 */
static int svc_rdma_post_send(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	if (unlikely(!svc_rdma_can_send(rdma))) {
		svc_rdma_send_ctxt_put(rdma, ctxt);
		return -ENOTCONN;
	}
	if (unlikely(!list_empty(&rdma->sc_send_waiters) ||
		     rdma->sc_ep.sq_avail < ctxt->sc_sqecount)) {
		rdma->sc_stats->sq_waits++;
		list_add_tail(&rdma->sc_send_waiters, &ctxt->sc_list);
		return 0;
	}
	return svc_rdma_post_chain(rdma, ctxt);
}

void svc_rdma_post_waiters(struct svcxprt_rdma *rdma)
{
	while (!list_empty(&rdma->sc_send_waiters) && svc_rdma_can_send(rdma)) {
		struct svc_rdma_send_ctxt *ctxt =
			list_first_entry(&rdma->sc_send_waiters, struct svc_rdma_send_ctxt, sc_list);

		if (rdma->sc_ep.sq_avail < ctxt->sc_sqecount)
			break;
		list_del(&ctxt->sc_list);
		svc_rdma_post_chain(rdma, ctxt);
	}
}

/* Every close path comes here: queued chains are released, never posted. */
void svc_rdma_fail_waiters(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_send_ctxt *ctxt;

	while ((ctxt = list_pop(&rdma->sc_send_waiters, struct svc_rdma_send_ctxt, sc_list)))
		svc_rdma_send_ctxt_put(rdma, ctxt);
}

int svc_rdma_send_error(struct svcxprt_rdma *rdma, uint32_t xid, uint32_t err)
{
	struct rpcrdma_hdr_enc enc = {
		.xid = xid,
		.proc = RPCRDMA_ERROR,
		.err = err,
		.vers_low = RPCRDMA_VERSION,
		.vers_high = RPCRDMA_VERSION,
	};
	struct svc_rdma_send_ctxt *ctxt;
	long len;

	ctxt = svc_rdma_send_ctxt_get(rdma);
	if (!ctxt)
		return -ENOMEM;
	enc.credit = svc_rdma_grant(rdma);
	len = rpcrdma_hdr_encode(ctxt->sc_xprt_buf, rdma->sc_send_slab.bufsize, &enc);
	if (len < 0) {
		svc_rdma_send_ctxt_put(rdma, ctxt);
		return (int)len;
	}
	ctxt->sc_sge.length = (uint32_t)len;
	rdma->sc_stats->rdma_errors++;
	return svc_rdma_post_send(rdma, ctxt);
}

/* Encode the RDMA_MSG header ahead of the reply at hdr_reserve and send. */
static int svc_rdma_send_reply(struct svcxprt_rdma *rdma, struct rpcrdma_svc_call *call,
			       struct svc_rdma_send_ctxt *ctxt, size_t len)
{
	struct rpcrdma_hdr_enc enc = { .xid = call->xid, .proc = RPCRDMA_MSG };
	size_t total = call->hdr_reserve + len;
	long hdr_len;

	if (unlikely(!svc_rdma_can_send(rdma))) {
		svc_rdma_send_ctxt_put(rdma, ctxt);
		return -ENOTCONN;
	}
	if (unlikely(total > rdma->sc_inline.send_max)) {
		/* No Reply chunk to carry it: tell the client rather than truncate. */
		svc_rdma_send_ctxt_put(rdma, ctxt);
		svc_rdma_send_error(rdma, call->xid, RPCRDMA_ERR_CHUNK);
		return -EMSGSIZE;
	}
	enc.credit = svc_rdma_grant(rdma);
	hdr_len = rpcrdma_hdr_encode(ctxt->sc_xprt_buf, call->hdr_reserve, &enc);
	if (unlikely(hdr_len != (long)call->hdr_reserve)) {
		svc_rdma_send_ctxt_put(rdma, ctxt);
		return -EPROTO;
	}
	ctxt->sc_sge.length = (uint32_t)total;
	rdma->sc_stats->replies++;
	return svc_rdma_post_send(rdma, ctxt);
}

static struct svc_rdma_recv_ctxt *call_ctxt(struct rpcrdma_svc_call *call)
{
	return container_of(call, struct svc_rdma_recv_ctxt, rc_call);
}

RPCRDMA_EXPORT int rpcrdma_svc_reply(struct rpcrdma_svc_call *call, const void *msg, size_t len)
{
	struct svcxprt_rdma *rdma;
	struct svc_rdma_send_ctxt *ctxt;
	int rc;

	if (!call)
		return -EINVAL;
	rdma = call->rdma;
	if (!msg && len) {
		rc = -EINVAL;
	} else if (!svc_rdma_can_send(rdma)) {
		rc = -ENOTCONN;
	} else {
		ctxt = call->reply_ctxt;
		call->reply_ctxt = NULL;
		if (!ctxt)
			ctxt = svc_rdma_send_ctxt_get(rdma);
		if (!ctxt) {
			rc = -ENOMEM;
		} else if (call->hdr_reserve + len > rdma->sc_send_slab.bufsize) {
			svc_rdma_send_ctxt_put(rdma, ctxt);
			svc_rdma_send_error(rdma, call->xid, RPCRDMA_ERR_CHUNK);
			rc = -EMSGSIZE;
		} else {
			memcpy(ctxt->sc_xprt_buf + call->hdr_reserve, msg, len);
			rc = svc_rdma_send_reply(rdma, call, ctxt, len);
		}
	}
	svc_rdma_conn_put_call(rdma, call_ctxt(call));
	return rc;
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_buf(struct rpcrdma_svc_call *call, void **buf, size_t *max)
{
	struct svcxprt_rdma *rdma;

	if (!call || !buf || !max)
		return -EINVAL;
	rdma = call->rdma;
	if (!svc_rdma_can_send(rdma))
		return -ENOTCONN;
	if (!call->reply_ctxt) {
		call->reply_ctxt = svc_rdma_send_ctxt_get(rdma);
		if (!call->reply_ctxt)
			return -ENOMEM;
	}
	*buf = call->reply_ctxt->sc_xprt_buf + call->hdr_reserve;
	*max = rdma->sc_send_slab.bufsize - call->hdr_reserve;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_commit(struct rpcrdma_svc_call *call, size_t len)
{
	struct svc_rdma_send_ctxt *ctxt;
	struct svcxprt_rdma *rdma;
	int rc;

	if (!call)
		return -EINVAL;
	rdma = call->rdma;
	ctxt = call->reply_ctxt;
	call->reply_ctxt = NULL;
	if (!ctxt) {
		rc = -EINVAL;
	} else if (call->hdr_reserve + len > rdma->sc_send_slab.bufsize) {
		svc_rdma_send_ctxt_put(rdma, ctxt);
		rc = -EINVAL;
	} else {
		rc = svc_rdma_send_reply(rdma, call, ctxt, len);
	}
	svc_rdma_conn_put_call(rdma, call_ctxt(call));
	return rc;
}

RPCRDMA_EXPORT void rpcrdma_svc_call_drop(struct rpcrdma_svc_call *call)
{
	if (call)
		svc_rdma_conn_put_call(call->rdma, call_ctxt(call));
}
