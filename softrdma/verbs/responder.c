/* SPDX-License-Identifier: MIT */
/*
 * The responder: executes a wire_req against this QP's registered memory and
 * receive queue, and answers with an ACK or a NAK. Errors it detects move
 * this QP to ERR; those with no receive WQE to complete are reported on the
 * async fd instead (IBA 10.8.3: class C/J errors).
 */
#include <endian.h>
#include <string.h>

#include "soft.h"
#include "tap.h"

static void fail_async(struct soft_qp *qp, enum ibv_event_type type)
{
	async_event_locked(qp->qp.context, type, &qp->qp);
	qp_to_error_locked(qp);
}

static struct soft_rq *recv_ring(struct soft_qp *qp)
{
	return qp->srq ? &qp->srq->rq : &qp->rq;
}

void responder_consume_recv_locked(struct soft_qp *qp, struct soft_rq *rq)
{
	rq_pop_locked(rq);
	if (qp->srq)
		srq_consumed_locked(qp->srq);
}

void responder_fail_recv_locked(struct soft_qp *qp, struct soft_rq *rq,
				enum ibv_wc_status status)
{
	struct ibv_wc wc;

	wc_error(&wc, rq_peek_locked(rq)->wr_id, status, qp->qp.qp_num);
	responder_consume_recv_locked(qp, rq);
	engine_complete_recv_locked(qp, &wc, true);
}

/* The head receive WQE completes in error and the QP (RC) goes to ERR. */
static void fail_recv(struct soft_qp *qp, struct soft_rq *rq, enum ibv_wc_status status)
{
	responder_fail_recv_locked(qp, rq, status);
	qp_to_error_locked(qp);
}

enum scatter { SCATTERED, SCATTER_PROT_ERR, SCATTER_LOST };

/*
 * Copy the payload into the receive WQE's buffers: a protection error, or
 * a payload that could not be read whole (its requester died: wire_pull()).
 */
static enum scatter scatter_payload(struct soft_qp *qp, const struct soft_recv_wqe *rwqe,
				    const struct wire_req *req)
{
	uint8_t *dst[SOFT_MAX_SGE];
	uint32_t dst_len[SOFT_MAX_SGE];
	uint32_t left = req->length, n = 0, i, off = 0;

	/* Check every buffer the payload will touch before writing any of it. */
	for (i = 0; i < rwqe->num_sge && left; i++) {
		const struct ibv_sge *sge = &rwqe->sge[i];
		uint32_t len;

		if (!sge->length)
			continue;
		len = sge->length < left ? sge->length : left;
		dst[n] = mem_local_locked(qp->pd, sge->lkey, sge->addr, len,
					  IBV_ACCESS_LOCAL_WRITE, NULL);
		if (!dst[n])
			return SCATTER_PROT_ERR;
		dst_len[n++] = len;
		left -= len;
	}
	for (i = 0; i < n; i++) {
		if (!wire_pull_msg(req->segs, req->nsegs, off, dst[i], dst_len[i]))
			return SCATTER_LOST;
		off += dst_len[i];
	}
	return SCATTERED;
}

/* The request's payload could not be read: nothing happened, and its link closes. */
static void source_lost(struct wire_resp *resp)
{
	resp->status = WIRE_NO_ANSWER;
	resp->source_lost = true;
}

uint64_t responder_recv_capacity(const struct soft_recv_wqe *rwqe)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < rwqe->num_sge; i++)
		total += rwqe->sge[i].length;
	return total;
}

/* A receive-queue fault fires on the receive about to be consumed. */
static bool recv_fault(struct soft_qp *qp, struct soft_rq *rq, struct wire_resp *resp)
{
	const struct softrdma_fault *f = fault_check_recv_locked(qp);

	if (!f)
		return false;
	switch (f->kind) {
	case SOFTRDMA_FAULT_STATUS:
		if (f->status == IBV_WC_SUCCESS)
			return false;
		fail_recv(qp, rq, f->status);
		resp->status = WIRE_NAK_REM_OP;
		return true;
	case SOFTRDMA_FAULT_RNR:
		rq_nak_rnr_locked(rq, true);
		resp->status = WIRE_NAK_RNR;
		return true;
	case SOFTRDMA_FAULT_QP_ERROR:
		qp_to_error_locked(qp);
		resp->status = WIRE_NO_ANSWER;
		return true;
	case SOFTRDMA_FAULT_QP_FATAL:
		fail_async(qp, IBV_EVENT_QP_FATAL);
		resp->status = WIRE_NO_ANSWER;
		return true;
	case SOFTRDMA_FAULT_DISCONNECT:
		if (!qp->cm_id || fab.cm_ops->fault_disconnect(qp->cm_id))
			qp_to_error_locked(qp);
		resp->status = WIRE_NO_ANSWER;
		return true;
	case SOFTRDMA_FAULT_DELAY:
		return false;
	}
	return false;
}

/*
 * The ring looked empty: NAK RNR, where the next post finds it, unless a
 * receive came meanwhile, which is returned.
 */
static struct soft_recv_wqe *no_receive(struct soft_rq *rq, struct wire_resp *resp)
{
	if (rq_nak_rnr_locked(rq, false)) {
		resp->status = WIRE_NAK_RNR;
		return NULL;
	}
	return rq_peek_locked(rq);
}

/* SEND, SEND with immediate, SEND with invalidate: consume the oldest receive. */
static void receive_message(struct soft_qp *qp, const struct wire_req *req,
			    struct wire_resp *resp)
{
	struct soft_rq *rq = recv_ring(qp);
	struct soft_recv_wqe *rwqe = rq_peek_locked(rq);
	struct ibv_wc wc;

	if (!rwqe && (rwqe = no_receive(rq, resp)) == NULL)
		return;
	if (recv_fault(qp, rq, resp))
		return;
	if (req->length > responder_recv_capacity(rwqe)) {
		fail_recv(qp, rq, IBV_WC_LOC_LEN_ERR);
		resp->status = WIRE_NAK_INV_REQ;
		return;
	}
	switch (scatter_payload(qp, rwqe, req)) {
	case SCATTERED:
		break;
	case SCATTER_PROT_ERR:
		fail_recv(qp, rq, IBV_WC_LOC_PROT_ERR);
		resp->status = WIRE_NAK_REM_OP;
		return;
	case SCATTER_LOST:
		/* The receive stays posted: the message never arrived. */
		source_lost(resp);
		return;
	}
	if (req->op == WIRE_SEND_INV && mem_invalidate_locked(qp, req->inv_rkey)) {
		/*
		 * rxe (RESPST_ERR_INVALIDATE_RKEY, class J): the receive completes
		 * in error and the responder goes to ERR, but the message was
		 * taken: the requester is acknowledged and its Send succeeds.
		 */
		fail_recv(qp, rq, IBV_WC_REM_INV_REQ_ERR);
		resp->status = WIRE_ACK;
		return;
	}
	wc_success(&wc, rwqe->wr_id, IBV_WC_RECV, qp->qp.qp_num);
	wc.byte_len = req->length;
	if (req->op == WIRE_SEND_IMM) {
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = req->imm;
	} else if (req->op == WIRE_SEND_INV) {
		wc.wc_flags = IBV_WC_WITH_INV;
		wc.invalidated_rkey = req->inv_rkey;
	}
	responder_consume_recv_locked(qp, rq);
	engine_complete_recv_locked(qp, &wc, req->solicited);
	resp->status = WIRE_ACK;
}

static void rdma_write(struct soft_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	struct soft_rq *rq = recv_ring(qp);
	uint8_t *dst = NULL;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
		fail_async(qp, IBV_EVENT_QP_REQ_ERR);
		resp->status = WIRE_NAK_INV_REQ;
		return;
	}
	/* rxe's order: the receive a Write with immediate needs (RNR), then the rkey. */
	if (req->op == WIRE_WRITE_IMM) {
		if (!rq_peek_locked(rq) && !no_receive(rq, resp))
			return;
		if (recv_fault(qp, rq, resp))
			return;
	}
	/* A zero-length write carries no rkey to check. */
	if (req->length) {
		dst = mem_remote_locked(qp, req->rkey, req->raddr, req->length,
					IBV_ACCESS_REMOTE_WRITE, NULL, NULL);
		if (!dst) {
			fail_async(qp, IBV_EVENT_QP_ACCESS_ERR);
			resp->status = WIRE_NAK_REM_ACCESS;
			return;
		}
	}
	if (req->length && !wire_place(req, dst)) {
		source_lost(resp);
		return;
	}
	if (req->op == WIRE_WRITE_IMM) {
		struct ibv_wc wc;

		wc_success(&wc, rq_peek_locked(rq)->wr_id, IBV_WC_RECV_RDMA_WITH_IMM,
			   qp->qp.qp_num);
		wc.byte_len = req->length;
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = req->imm;
		responder_consume_recv_locked(qp, rq);
		engine_complete_recv_locked(qp, &wc, req->solicited);
	}
	resp->status = WIRE_ACK;
}

static void rdma_read(struct soft_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	/*
	 * Without REMOTE_READ or responder resources the QP cannot serve reads,
	 * nor more at once than its max_dest_rd_atomic.
	 */
	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ) ||
	    qp->attr.max_dest_rd_atomic == 0 || req->rd_depth > qp->attr.max_dest_rd_atomic) {
		fail_async(qp, IBV_EVENT_QP_REQ_ERR);
		resp->status = WIRE_NAK_INV_REQ;
		return;
	}
	resp->data = wire_seg_local(NULL, req->length);
	if (req->length) {
		struct soft_mr *mr;
		struct soft_mw *mw;
		const void *src = mem_remote_locked(qp, req->rkey, req->raddr, req->length,
						    IBV_ACCESS_REMOTE_READ, &mr, &mw);

		resp->data = wire_seg_mem(src, req->length, mr, mw);
		if (!src) {
			fail_async(qp, IBV_EVENT_QP_ACCESS_ERR);
			resp->status = WIRE_NAK_REM_ACCESS;
			return;
		}
	}
	resp->status = WIRE_ACK;
}

static void respond(struct soft_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	resp->data = wire_seg_local(NULL, 0);
	resp->silenced = false;
	resp->source_lost = false;
	resp->rnr_timer = qp->attr.min_rnr_timer;
	/*
	 * RESET, INIT and ERR QPs drop packets: the requester hears nothing. So
	 * does a UD QP, which takes datagrams only (ud.c; rxe's check_type_state()).
	 */
	if ((qp->attr.qp_state != IBV_QPS_RTR && qp->attr.qp_state != IBV_QPS_RTS) ||
	    qp->qp.qp_type != IBV_QPT_RC) {
		resp->status = WIRE_NO_ANSWER;
		return;
	}
	/* A silenced QP drops the request before it touches anything, as a hung peer. */
	if (qp->silent) {
		qp->ignored++;
		resp->status = WIRE_NO_ANSWER;
		resp->silenced = true;
		return;
	}
	/* The first packet an RTR QP receives establishes the connection (IBA 11.6.3). */
	if (qp->attr.qp_state == IBV_QPS_RTR && !qp->comm_est) {
		qp->comm_est = true;
		async_event_locked(qp->qp.context, IBV_EVENT_COMM_EST, &qp->qp);
	}
	switch (req->op) {
	case WIRE_SEND:
	case WIRE_SEND_IMM:
	case WIRE_SEND_INV:
		receive_message(qp, req, resp);
		break;
	case WIRE_WRITE:
	case WIRE_WRITE_IMM:
		rdma_write(qp, req, resp);
		break;
	case WIRE_READ:
		rdma_read(qp, req, resp);
		break;
	}
}

void tap_qp_of(const struct soft_qp *qp, struct tap_qp *t)
{
	soft_fill_gid(&t->sgid, qp->attr.ah_attr.grh.sgid_index);
	t->dgid = qp->attr.ah_attr.grh.dgid;
	t->mtu = 128u << qp->attr.path_mtu;
	t->min_rnr_timer = qp->attr.min_rnr_timer;
	t->msn = qp->msn;
}

/* The responder counts the messages it completes (its MSN), which the capture writes. */
void responder_receive(struct soft_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	struct tap_qp t;

	respond(qp, req, resp);
	if (resp->status == WIRE_ACK)
		qp->msn = (qp->msn + 1) & 0xffffff;
	if (!pcap_on_locked())
		return;
	tap_qp_of(qp, &t);
	tap_response_locked(&t, req, resp);
}
