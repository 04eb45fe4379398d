/* SPDX-License-Identifier: MIT */
/*
 * Server receive path: the Receive completion handler, keeping receives
 * posted, and turning received messages into calls, error replies or drops
 * as RFC 8166 requires.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "svc_rdma.h"

void svc_rdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svcxprt_rdma *rdma = cq->cq_context;
	struct svc_rdma_recv_ctxt *ctxt =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_recv_ctxt, rc_cqe);

	rdma->sc_ep.recv_posted--;
	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server receive");
		list_add_tail(&rdma->sc_recv_free, &ctxt->rc_list);
		return;
	}
	ctxt->rc_byte_len = wc->byte_len;
	list_add_tail(&rdma->sc_rq_dto_q, &ctxt->rc_list);
}

/* Bring the posted receives back up to the grant ceiling, in one chain. */
void svc_rdma_refill_recvs(struct svcxprt_rdma *rdma)
{
	struct ibv_recv_wr *first = NULL, **link = &first;
	struct list_node *pos;
	uint32_t want, count = 0, posted;
	int rc;

	if (rdma->sc_ep.recv_posted >= rdma->sc_max_requests)
		return;
	want = rdma->sc_max_requests - rdma->sc_ep.recv_posted;
	list_for_each(&rdma->sc_recv_free, pos) {
		struct svc_rdma_recv_ctxt *ctxt = list_entry(pos, struct svc_rdma_recv_ctxt, rc_list);

		if (count == want)
			break;
		*link = &ctxt->rc_recv_wr;
		link = &ctxt->rc_recv_wr.next;
		count++;
	}
	if (!count)
		return;
	*link = NULL;
	rc = rpcrdma_ep_post_recv(&rdma->sc_ep, first, count, &posted);
	while (posted--)
		list_del(rdma->sc_recv_free.next);
	if (rc) {
		/* A server short of receives would make clients overrun it. */
		rpcrdma_err("server: posting receives failed: %s", strerror(-rc));
		rpcrdma_ep_close_deferred(&rdma->sc_ep);
	}
}

static void svc_rdma_put_recv(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	list_add_tail(&rdma->sc_recv_free, &ctxt->rc_list);
}

/* An accepted header whose lists this server does not serve yet. */
static bool svc_rdma_has_chunks(const struct rpcrdma_hdr *hdr)
{
	return hdr->proc != RPCRDMA_MSG || hdr->read_segs || hdr->write_chunks || hdr->has_reply;
}

static void svc_rdma_handle_call(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt)
{
	struct rpcrdma_svc_call *call = &ctxt->rc_call;
	struct rpcrdma_hdr hdr;
	uint32_t rpc_xid;
	int rc;

	rc = rpcrdma_hdr_decode(ctxt->rc_recv_buf, ctxt->rc_byte_len, NULL, &hdr);
	switch (rpcrdma_hdr_verdict(rc, &hdr)) {
	case RPCRDMA_ACCEPT:
		break;
	case RPCRDMA_REPLY_ERR_VERS:
		rdma->sc_stats->dropped++;
		svc_rdma_send_error(rdma, hdr.xid, RPCRDMA_ERR_VERS);
		goto out_put;
	case RPCRDMA_REPLY_ERR_CHUNK:
		rdma->sc_stats->dropped++;
		rpcrdma_info("server: bad header from the client (%s)", strerror(-rc));
		svc_rdma_send_error(rdma, hdr.xid, RPCRDMA_ERR_CHUNK);
		goto out_put;
	case RPCRDMA_DROP:
	default:
		rdma->sc_stats->dropped++;
		goto out_put;
	}
	if (svc_rdma_has_chunks(&hdr)) {
		rdma->sc_stats->dropped++;
		svc_rdma_send_error(rdma, hdr.xid, RPCRDMA_ERR_CHUNK);
		goto out_put;
	}
	call->msg = ctxt->rc_recv_buf + hdr.hdr_len;
	call->msg_len = ctxt->rc_byte_len - hdr.hdr_len;
	/* The RPC message must be there and carry the same XID (RFC 8166 4.1). */
	if (call->msg_len < sizeof(rpc_xid)) {
		rdma->sc_stats->dropped++;
		goto out_put;
	}
	memcpy(&rpc_xid, call->msg, sizeof(rpc_xid));
	if (ntohl(rpc_xid) != hdr.xid) {
		rdma->sc_stats->dropped++;
		svc_rdma_send_error(rdma, hdr.xid, RPCRDMA_ERR_CHUNK);
		goto out_put;
	}
	call->rdma = rdma;
	call->xid = hdr.xid;
	call->reply_ctxt = NULL;
	call->hdr_reserve = RPCRDMA_HDR_MIN_LEN;
	rdma->sc_calls_held++;
	rdma->sc_stats->calls++;
	if (!rdma->sc_announced) {
		rdma->sc_announced = true;
		if (rdma->sc_svc->sv_attr.on_conn)
			rdma->sc_svc->sv_attr.on_conn(svc_rdma_conn(rdma), RPCRDMA_CONN_ESTABLISHED,
						      rdma->sc_svc->sv_attr.arg);
	}
	rdma->sc_svc->sv_attr.on_call(call, rdma->sc_svc->sv_attr.arg);
	return;

out_put:
	svc_rdma_put_recv(rdma, ctxt);
}

/* Decode what arrived and hand the calls up, in arrival order. */
void svc_rdma_recvfrom(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_recv_ctxt *ctxt;

	while ((ctxt = list_pop(&rdma->sc_rq_dto_q, struct svc_rdma_recv_ctxt, rc_list))) {
		if (rdma->sc_ep.close_pending || rdma->sc_state >= SVCXPRT_CLOSING) {
			svc_rdma_put_recv(rdma, ctxt);
			continue;
		}
		svc_rdma_handle_call(rdma, ctxt);
	}
}
