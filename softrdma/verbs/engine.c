/* SPDX-License-Identifier: MIT */
/*
 * The requester: executes a QP's send WQEs one at a time, in order, and turns
 * outcomes into completions. Local operations (bind, local invalidate) run
 * here; everything else becomes a wire_req for the responder. Slots of
 * unsignaled WQEs are released only by a later signaled (or error) completion.
 *
 * An RDMA Read to a QP of this process stays in flight after it is issued:
 * its response (the responder reading its memory, then the scatter here) is
 * a unit of its own, queued behind whatever was posted before it was
 * issued, so later WQEs run past it as on hardware, unless fenced
 * (IBV_SEND_FENCE) or beyond max_rd_atomic Reads in flight. Completions stay
 * in posting order: sq_comp trails sq_exec while a Read is in flight.
 */
#include <endian.h>
#include <string.h>

#include "soft.h"
#include "tap.h"
#include "ud.h"

void engine_activate_locked(struct soft_qp *qp)
{
	if (qp->active || qp->sq_exec == qp->sq_tail || qp->attr.qp_state != IBV_QPS_RTS)
		return;
	qp->active = true;
	qp->wake_at = 0;
	qp->wait_recv = false;
	soft_list_add_tail(&qp->active_link, &fab.active_qps);
}

void engine_deactivate_locked(struct soft_qp *qp)
{
	qp->wait_resp = false;
	qp->wait_rd = false;
	if (!qp->active)
		return;
	soft_list_del(&qp->active_link);
	qp->active = false;
	qp->wake_at = 0;
	qp->wait_recv = false;
}

/* As engine_recv_posted_locked(), for every QP that receives from @srq. */
void engine_srq_posted_locked(struct soft_srq *srq)
{
	struct soft_list *pos, *tmp;
	bool woke = false;

	soft_list_for_each_safe(pos, tmp, &fab.active_qps) {
		struct soft_qp *qp = soft_list_entry(pos, struct soft_qp, active_link);

		if (qp->wait_recv && (!qp->wire.peer || qp_peer(qp)->srq == srq)) {
			qp->wait_recv = false;
			woke = true;
		}
	}
	if (woke)
		fab_kick_locked();
}

void engine_recv_posted_locked(struct soft_qp *target)
{
	struct soft_list *pos, *tmp;
	bool woke = false;

	soft_list_for_each_safe(pos, tmp, &fab.active_qps) {
		struct soft_qp *qp = soft_list_entry(pos, struct soft_qp, active_link);

		if (qp->wait_recv && (qp->wire.peer == &target->wire || !qp->wire.peer)) {
			qp->wait_recv = false;
			woke = true;
		}
	}
	if (woke)
		fab_kick_locked();
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

static void push_or_fail(struct soft_qp *qp, struct soft_cq *cq, const struct ibv_wc *wc,
			 bool solicited)
{
	/* A completion the CQ could not take leaves the QP unusable. */
	if (!cq_push_locked(cq, wc, solicited))
		qp_to_error_locked(qp);
}

/*
 * Complete, in posting order, every WQE from sq_comp on that is done. Past
 * an error completion, WQEs that ran behind a Read in flight flush.
 */
static void complete_in_order_locked(struct soft_qp *qp)
{
	bool flush = qp->attr.qp_state == IBV_QPS_ERR;

	while (qp->sq_comp != qp->sq_exec) {
		struct soft_send_wqe *wqe = &qp->sq[qp->sq_comp % qp->sq_size];
		struct ibv_wc wc;

		if (!wqe->done)
			return;
		if (flush && wqe->status == IBV_WC_SUCCESS)
			wqe->status = IBV_WC_WR_FLUSH_ERR;
		flush |= wqe->status != IBV_WC_SUCCESS;
		qp->sq_comp++;
		/* Atomic: the fast path completes without fab.lock (fast.c). */
		__atomic_sub_fetch(&fab.counts.send_wrs, 1, __ATOMIC_RELAXED);
		if (wqe->status == IBV_WC_SUCCESS && !wqe->signaled) {
			wqe->executed = true;
			continue;
		}
		qp->sq_head = qp->sq_comp;
		if (wqe->status == IBV_WC_SUCCESS) {
			wc_success(&wc, wqe->wr_id, wc_opcode(wqe->opcode), qp->qp.qp_num);
			/* Defined for an RDMA Read (the bytes it scattered), not for the rest. */
			if (wqe->opcode == IBV_WR_RDMA_READ)
				wc.byte_len = wqe->byte_len;
		} else {
			wc_error(&wc, wqe->wr_id, wqe->status, qp->qp.qp_num);
		}
		qp->stats.send_cqes++;
		push_or_fail(qp, qp->scq, &wc, wqe->status != IBV_WC_SUCCESS);
	}
}

static void wqe_done(struct soft_send_wqe *wqe, enum ibv_wc_status status, uint32_t byte_len)
{
	wqe->done = true;
	wqe->status = status;
	wqe->byte_len = byte_len;
}

/* The WQE at sq_exec has executed with status; it completes in order. */
static void finish_wqe_locked(struct soft_qp *qp, struct soft_send_wqe *wqe,
			      enum ibv_wc_status status, uint32_t byte_len)
{
	__atomic_add_fetch(&fab.executed[wqe->opcode], 1, __ATOMIC_RELAXED);
	qp->sq_exec++;
	qp->wake_at = 0;
	wqe_done(wqe, status, byte_len);
	complete_in_order_locked(qp);
	if (status != IBV_WC_SUCCESS)
		qp_to_error_locked(qp);
	else if (qp->sq_exec == qp->sq_tail)
		engine_deactivate_locked(qp);
}

/*
 * Forget the Reads in flight (their response units will not run) and the
 * requests awaiting answers from another process (a late answer finds
 * nothing). With @flush they complete with IBV_WC_WR_FLUSH_ERR, in order.
 */
void engine_cancel_reads_locked(struct soft_qp *qp, bool flush)
{
	uint32_t i;

	for (i = qp->sq_comp; i != qp->sq_exec; i++) {
		struct soft_send_wqe *wqe = &qp->sq[i % qp->sq_size];

		if (wqe->awaiting) {
			wqe->awaiting = false;
			fab.waiting--;
			wqe_done(wqe, IBV_WC_WR_FLUSH_ERR, 0);
		}
		if (!wqe->outstanding)
			continue;
		soft_list_del(&wqe->rd_work.link);
		wqe->outstanding = false;
		wqe_done(wqe, IBV_WC_WR_FLUSH_ERR, 0);
	}
	qp->net_inflight = 0;
	qp->rd_outstanding = 0;
	qp->wait_rd = false;
	if (flush)
		complete_in_order_locked(qp);
}

void engine_complete_recv_locked(struct soft_qp *qp, const struct ibv_wc *wc, bool solicited)
{
	push_or_fail(qp, qp->rcq, wc, solicited);
}

void engine_flush_locked(struct soft_qp *qp)
{
	struct soft_recv_wqe *rwqe;
	struct ibv_wc wc;

	engine_deactivate_locked(qp);
	/* Reads in flight flush first, with what completed behind them, in order. */
	engine_cancel_reads_locked(qp, true);
	while (qp->sq_exec != qp->sq_tail) {
		struct soft_send_wqe *wqe = &qp->sq[qp->sq_exec % qp->sq_size];

		wc_error(&wc, wqe->wr_id, IBV_WC_WR_FLUSH_ERR, qp->qp.qp_num);
		cq_push_locked(qp->scq, &wc, true);
		qp->stats.send_cqes++;
		qp->sq_exec++;
		fab.counts.send_wrs--;
	}
	qp->sq_comp = qp->sq_exec;
	qp->sq_head = qp->sq_exec;
	/* An SRQ's receives belong to the SRQ, not to this QP: they stay. */
	while ((rwqe = rq_peek_locked(&qp->rq))) {
		wc_error(&wc, rwqe->wr_id, IBV_WC_WR_FLUSH_ERR, qp->qp.qp_num);
		rq_pop_locked(&qp->rq);
		cq_push_locked(qp->rcq, &wc, true);
	}
}

static enum wire_op wire_op_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND_WITH_IMM:
		return WIRE_SEND_IMM;
	case IBV_WR_SEND_WITH_INV:
		return WIRE_SEND_INV;
	case IBV_WR_RDMA_WRITE:
		return WIRE_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return WIRE_WRITE_IMM;
	case IBV_WR_RDMA_READ:
		return WIRE_READ;
	default:
		return WIRE_SEND;
	}
}

/*
 * Resolve the WQE's local SGEs. A READ scatters into them (needs local write),
 * so only their rights are checked now; everything else gathers from them.
 */
enum ibv_wc_status engine_gather_locked(struct soft_qp *qp, const struct soft_send_wqe *wqe,
					struct wire_req *req)
{
	bool read = wqe->opcode == IBV_WR_RDMA_READ;
	/* iWARP's Read Response is a tagged write into the sink: remote write too. */
	int need = !read ? 0 : soft_profile()->iwarp ?
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_LOCAL_WRITE;
	uint64_t total = 0;
	uint32_t i;

	req->nsegs = 0;
	if (wqe->flags & IBV_SEND_INLINE) {
		req->segs[0] = wire_seg_local(wqe->inline_buf, wqe->inline_len);
		req->nsegs = 1;
		req->length = wqe->inline_len;
		return IBV_WC_SUCCESS;
	}
	for (i = 0; i < wqe->num_sge; i++) {
		const struct ibv_sge *sge = &wqe->sge[i];
		struct soft_mr *mr;
		uint8_t *ptr;

		if (!sge->length)
			continue;
		ptr = mem_local_locked(qp->pd, sge->lkey, sge->addr, sge->length, need, &mr);
		if (!ptr)
			return IBV_WC_LOC_PROT_ERR;
		/* A READ's are its sink, which a shared-memory responder writes. */
		req->segs[req->nsegs++] = wire_seg_mem(ptr, sge->length, mr, NULL);
		total += sge->length;
	}
	if (total > SOFT_MAX_MSG)
		return IBV_WC_LOC_LEN_ERR;	/* beyond the port's max_msg_sz */
	req->length = (uint32_t)total;
	return IBV_WC_SUCCESS;
}

/*
 * READ data arrived: scatter it into the WQE's buffers, resolved again since
 * the answer may come from another process after the lock was dropped.
 */
static enum ibv_wc_status scatter_read_locked(struct soft_qp *qp, const struct soft_send_wqe *wqe,
					      const struct wire_resp *resp, uint32_t *byte_len)
{
	uint32_t left = resp->data.len, off = 0, i;

	*byte_len = 0;
	for (i = 0; i < wqe->num_sge; i++) {
		const struct ibv_sge *sge = &wqe->sge[i];
		uint8_t *dst;

		if (!sge->length)
			continue;
		dst = mem_local_locked(qp->pd, sge->lkey, sge->addr, sge->length,
				       IBV_ACCESS_LOCAL_WRITE, NULL);
		if (!dst)
			return IBV_WC_LOC_PROT_ERR;
		*byte_len += sge->length;
		if (left && resp->placed) {
			uint32_t len = sge->length < left ? sge->length : left;

			SOFT_MEM_WRITTEN(dst, len);
			left -= len;
		} else if (left) {
			uint32_t len = sge->length < left ? sge->length : left;

			wire_pull(&resp->data, off, dst, len);
			off += len;
			left -= len;
		}
	}
	return IBV_WC_SUCCESS;
}

/* IBA 9.7.5.2.8: the RNR NAK timer field, in units of 10 us (0 is 655.36 ms). */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

/* An RNR NAK: retry after the responder's min_rnr_timer. */
static uint64_t rnr_retry_time(uint8_t rnr_timer)
{
	return soft_now_ns() + (uint64_t)rnr_timer_10us[rnr_timer & 31] * 10000ULL;
}

/*
 * No answer: retry after the local ACK timeout, 4.096 us * 2^timeout
 * (IBA 9.7.6.1.3); timeout 0 disables the timer, so the requester waits
 * for good.
 */
static uint64_t ack_retry_time(const struct soft_qp *qp)
{
	if (qp->attr.timeout == 0)
		return UINT64_MAX;
	return soft_now_ns() + (4096ULL << (qp->attr.timeout & 31));
}

/*
 * A try went unanswered: its ACK timer runs until the time returned. IBA 9.7.6.1.3:
 * each expiry sends the request again while retries are left, and the
 * expiry that finds none left is the error, so retry_cnt retries cost
 * retry_cnt + 1 timeouts.
 */
static uint64_t ack_timer_start(const struct soft_qp *qp, struct soft_send_wqe *wqe)
{
	if (wqe->retry_left)
		wqe->retry_left--;
	else
		wqe->last_try = true;
	return ack_retry_time(qp);
}

void engine_req_header(const struct soft_qp *qp, const struct soft_send_wqe *wqe,
		       struct wire_req *req)
{
	req->op = wire_op_of(wqe->opcode);
	req->src_qpn = qp->qp.qp_num;
	req->dst_qpn = qp->attr.dest_qp_num;
	req->dgid = qp->attr.ah_attr.grh.dgid;
	req->solicited = (wqe->flags & IBV_SEND_SOLICITED) != 0;
	req->imm = wqe->imm_or_inv;
	req->inv_rkey = wqe->imm_or_inv;
	req->rkey = wqe->rkey;
	req->raddr = wqe->remote_addr;
	req->token = wqe->seq;
	req->psn = wqe->psn;
	req->npsn = wqe->npsn;
	req->last = qp->sq_exec + 1 == qp->sq_tail;
	req->quiet = !qp->net_inflight;
	/* The capture must see the request go and its answer come. */
	req->one_sided = !pcap_on_locked();
	req->lazy_answer = !wqe->signaled && wqe->opcode != IBV_WR_RDMA_READ &&
			   qp->net_inflight < SOFT_NET_WINDOW / 2;
}

static void read_response_run(struct soft_work *w);

static void read_response_discard(struct soft_work *w)
{
	container_of(w, struct soft_send_wqe, rd_work)->outstanding = false;
}

/* Issue an RDMA Read to this process: it flies while later WQEs go on. */
static void read_issue_locked(struct soft_qp *qp, struct soft_send_wqe *wqe, uint32_t length)
{
	wqe->outstanding = true;
	wqe->rd_len = length;
	wqe->rd_qp = qp;
	wqe->rd_work.not_before = 0;
	wqe->rd_work.run = read_response_run;
	wqe->rd_work.discard = read_response_discard;
	wqe->rd_work.qp = qp;
	qp->rd_outstanding++;
	work_queue_locked(&wqe->rd_work);
	fab.executed[wqe->opcode]++;
	qp->sq_exec++;
	qp->wake_at = 0;
	if (qp->sq_exec == qp->sq_tail)
		engine_deactivate_locked(qp);
}

/* The capture sees a request as its requester sends it. */
static void transmit_req_locked(struct soft_qp *qp, const struct wire_req *req,
				struct wire_resp *resp)
{
	if (pcap_on_locked()) {
		struct tap_qp t;

		tap_qp_of(qp, &t);
		tap_request_locked(&t, req);
	}
	wire_transmit(&qp->wire, req, resp);
}

/*
 * The request went to another process: the WQE awaits its answer while the
 * QP goes on with the next ones, up to SOFT_NET_WINDOW.
 */
static void issue_remote_locked(struct soft_qp *qp, struct soft_send_wqe *wqe)
{
	wqe->awaiting = true;
	fab.waiting++;
	if (wqe->opcode == IBV_WR_RDMA_READ)
		qp->rd_outstanding++;
	if (++qp->net_inflight > qp->max_inflight)
		qp->max_inflight = qp->net_inflight;
	qp->sq_exec++;
	qp->wake_at = 0;
	if (qp->sq_exec == qp->sq_tail)
		engine_deactivate_locked(qp);
	else if (qp->net_inflight >= SOFT_NET_WINDOW)
		qp->wait_resp = true;
}

static void unawait_locked(struct soft_qp *qp, struct soft_send_wqe *wqe)
{
	wqe->awaiting = false;
	fab.waiting--;
	qp->net_inflight--;
	qp->wait_resp = false;
	if (wqe->opcode == IBV_WR_RDMA_READ) {
		qp->rd_outstanding--;
		qp->wait_rd = false;	/* the head looks again when it runs */
	}
}

/*
 * Go back N: the WQE at @idx is to be sent again, and every one after it
 * that awaited an answer with it (the responder drops those ahead of the
 * PSN it expects and acknowledges those it executed already).
 */
static void rewind_locked(struct soft_qp *qp, uint32_t idx)
{
	uint32_t i;

	for (i = idx; i != qp->sq_exec; i++) {
		struct soft_send_wqe *wqe = &qp->sq[i % qp->sq_size];

		if (wqe->awaiting) {
			unawait_locked(qp, wqe);
			qp->resends++;
		}
	}
	qp->sq_exec = idx;
	engine_activate_locked(qp);
}

/* The index of the oldest WQE awaiting an answer from another process (net_inflight > 0). */
static uint32_t oldest_awaiting_locked(const struct soft_qp *qp)
{
	uint32_t i = qp->sq_comp;

	while (!qp->sq[i % qp->sq_size].awaiting)
		i++;
	return i;
}

bool engine_link_awaited_locked(struct net_link *link)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &fab.qps) {
		struct soft_qp *qp = soft_list_entry(pos, struct soft_qp, link);

		if (qp->wire.remote == link && qp->net_inflight)
			return true;
	}
	return false;
}

void engine_link_lost_locked(struct net_link *link)
{
	struct wire_resp none = { .status = WIRE_NO_ANSWER };
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &fab.qps) {
		struct soft_qp *qp = soft_list_entry(pos, struct soft_qp, link);

		if (qp->wire.remote != link || !qp->net_inflight)
			continue;
		/* No answer will come: the oldest awaiting request times out, the rest go again. */
		engine_answer_locked(qp, qp->sq[oldest_awaiting_locked(qp) % qp->sq_size].seq,
				     &none);
	}
}

static void answer_now_locked(struct soft_qp *qp, const struct wire_resp *resp);

/* Send the WQE over the wire; act on the answer now or when it comes. */
static void transmit_locked(struct soft_qp *qp, struct soft_send_wqe *wqe)
{
	struct wire_req req;
	struct wire_resp resp = { .status = WIRE_NO_ANSWER };
	bool is_send = wqe->opcode == IBV_WR_SEND || wqe->opcode == IBV_WR_SEND_WITH_IMM ||
		wqe->opcode == IBV_WR_SEND_WITH_INV;
	enum ibv_wc_status local;

	memset(&req, 0, sizeof(req));
	local = engine_gather_locked(qp, wqe, &req);
	if (local != IBV_WC_SUCCESS) {
		finish_wqe_locked(qp, wqe, local, 0);
		return;
	}
	/* With no initiator depth granted the QP may not issue RDMA Reads. */
	if (wqe->opcode == IBV_WR_RDMA_READ && qp->attr.max_rd_atomic == 0) {
		finish_wqe_locked(qp, wqe, IBV_WC_LOC_QP_OP_ERR, 0);
		return;
	}
	/* Across processes a Read keeps the QP waiting for its answer, as before. */
	if (wqe->opcode == IBV_WR_RDMA_READ && wire_is_local_locked(&qp->wire)) {
		read_issue_locked(qp, wqe, req.length);
		return;
	}
	engine_req_header(qp, wqe, &req);

	if (wqe->force_rnr && is_send)
		resp.status = WIRE_NAK_RNR;
	else
		transmit_req_locked(qp, &req, &resp);
	if (resp.status == WIRE_PENDING) {
		issue_remote_locked(qp, wqe);
		return;
	}
	if (resp.status == WIRE_BUSY) {
		/* The link had no room: the same try again shortly (the capture shows it twice). */
		qp->wake_at = soft_now_ns() + SOFT_BUSY_RETRY_NS;
		return;
	}
	answer_now_locked(qp, &resp);
}

static enum ibv_wc_status nak_status(enum wire_status st)
{
	switch (st) {
	case WIRE_ACK:
		return IBV_WC_SUCCESS;
	case WIRE_NAK_INV_REQ:
		return IBV_WC_REM_INV_REQ_ERR;
	case WIRE_NAK_REM_ACCESS:
		return IBV_WC_REM_ACCESS_ERR;
	case WIRE_NAK_REM_OP:
		return IBV_WC_REM_OP_ERR;
	default:
		return IBV_WC_RETRY_EXC_ERR;
	}
}

/*
 * A Read's response: the responder serves it now (after whatever ran past
 * it), and the data scatters here. Completes in order; lets a WQE that
 * waited for Reads in flight go.
 */
static void read_response_run(struct soft_work *w)
{
	struct soft_send_wqe *wqe = container_of(w, struct soft_send_wqe, rd_work);
	struct soft_qp *qp = wqe->rd_qp;
	struct wire_resp resp = { .status = WIRE_NO_ANSWER };
	struct wire_req req;
	enum ibv_wc_status st;
	uint32_t byte_len = 0;

	/* The last try's timer expired: resp stays WIRE_NO_ANSWER, RETRY_EXC_ERR. */
	if (!wqe->last_try) {
		memset(&req, 0, sizeof(req));
		engine_req_header(qp, wqe, &req);
		req.length = wqe->rd_len;
		req.rd_depth = qp->rd_outstanding;
		transmit_req_locked(qp, &req, &resp);
	}
	if (resp.status == WIRE_NO_ANSWER && !wqe->last_try) {
		/* The responder went away meanwhile: retry on the ACK timeout. */
		wqe->rd_work.not_before = ack_timer_start(qp, wqe);
		work_queue_locked(&wqe->rd_work);
		return;
	}
	wqe->outstanding = false;
	qp->rd_outstanding--;
	st = nak_status(resp.status);
	if (st == IBV_WC_SUCCESS)
		st = scatter_read_locked(qp, wqe, &resp, &byte_len);
	wqe_done(wqe, st, st == IBV_WC_SUCCESS ? byte_len : 0);
	complete_in_order_locked(qp);
	if (st != IBV_WC_SUCCESS) {
		qp_to_error_locked(qp);
	} else if (qp->wait_rd) {
		qp->wait_rd = false;
		fab_kick_locked();
	}
}

/* An answer from another process: find its WQE among those awaiting one. */
void engine_answer_locked(struct soft_qp *qp, uint64_t token, const struct wire_resp *resp)
{
	struct soft_send_wqe *wqe = NULL;
	enum ibv_wc_status st;
	uint32_t i, oldest = qp->sq_exec, byte_len = 0;

	for (i = qp->sq_comp; i != qp->sq_exec; i++) {
		struct soft_send_wqe *w = &qp->sq[i % qp->sq_size];

		if (w->awaiting && oldest == qp->sq_exec)
			oldest = i;
		if (w->awaiting && w->seq == token) {
			wqe = w;
			break;
		}
	}
	if (!wqe || qp->attr.qp_state != IBV_QPS_RTS)
		return;
	if (resp->status == WIRE_NAK_RNR || resp->status == WIRE_NO_ANSWER) {
		/* Sent again from here (no answer: from the oldest still awaiting one). */
		rewind_locked(qp, resp->status == WIRE_NAK_RNR ? i : oldest);
		answer_now_locked(qp, resp);
		fab_kick_locked();
		return;
	}
	unawait_locked(qp, wqe);
	st = nak_status(resp->status);
	if (st == IBV_WC_SUCCESS && wqe->opcode == IBV_WR_RDMA_READ)
		st = scatter_read_locked(qp, wqe, resp, &byte_len);
	fab.executed[wqe->opcode]++;
	wqe_done(wqe, st, st == IBV_WC_SUCCESS ? byte_len : 0);
	complete_in_order_locked(qp);
	if (st != IBV_WC_SUCCESS)
		qp_to_error_locked(qp);
	else if (qp->active)
		fab_kick_locked();	/* what waited for room in the window goes on */
}

/* The answer to the WQE at sq_exec, there and then (in this process, or a dead link). */
static void answer_now_locked(struct soft_qp *qp, const struct wire_resp *resp)
{
	struct soft_send_wqe *wqe = &qp->sq[qp->sq_exec % qp->sq_size];
	enum ibv_wc_status st;
	uint32_t byte_len;

	/* The responder's error handling may have torn our connection down. */
	if (qp->attr.qp_state != IBV_QPS_RTS || qp->sq_exec == qp->sq_tail)
		return;

	switch (resp->status) {
	case WIRE_ACK:
		if (wqe->opcode != IBV_WR_RDMA_READ) {
			finish_wqe_locked(qp, wqe, IBV_WC_SUCCESS, 0);
			break;
		}
		st = scatter_read_locked(qp, wqe, resp, &byte_len);
		finish_wqe_locked(qp, wqe, st, st == IBV_WC_SUCCESS ? byte_len : 0);
		break;
	case WIRE_NAK_RNR:
		/* Across processes a posted receive wakes nobody: retry on the clock. */
		if (wqe->rnr_left == 7 && !wqe->force_rnr && !qp->wire.remote) {
			qp->wait_recv = true;	/* retry forever: until a receive shows up */
		} else if (wqe->rnr_left) {
			if (wqe->rnr_left != 7)
				wqe->rnr_left--;
			qp->wake_at = rnr_retry_time(resp->rnr_timer);
		} else {
			finish_wqe_locked(qp, wqe, IBV_WC_RNR_RETRY_EXC_ERR, 0);
		}
		wqe->force_rnr = false;
		break;
	case WIRE_NAK_INV_REQ:
		finish_wqe_locked(qp, wqe, IBV_WC_REM_INV_REQ_ERR, 0);
		break;
	case WIRE_NAK_REM_ACCESS:
		finish_wqe_locked(qp, wqe, IBV_WC_REM_ACCESS_ERR, 0);
		break;
	case WIRE_NAK_REM_OP:
		finish_wqe_locked(qp, wqe, IBV_WC_REM_OP_ERR, 0);
		break;
	case WIRE_NO_ANSWER:
	case WIRE_PENDING:
	case WIRE_BUSY:		/* not here: transmit_locked() retries it */
		/* The link is dead: the oldest request awaiting its answer times out first. */
		if (qp->net_inflight) {
			rewind_locked(qp, oldest_awaiting_locked(qp));
			wqe = &qp->sq[qp->sq_exec % qp->sq_size];
		}
		qp->wake_at = ack_timer_start(qp, wqe);
		break;
	}
}

void engine_peer_lost_locked(struct soft_qp *qp)
{
	enum ibv_qp_state state = qp->attr.qp_state;

	if (state == IBV_QPS_RESET || state == IBV_QPS_ERR)
		return;
	if (state == IBV_QPS_RTS && qp->net_inflight)
		rewind_locked(qp, oldest_awaiting_locked(qp));
	if (state == IBV_QPS_RTS && qp->sq_exec != qp->sq_tail) {
		finish_wqe_locked(qp, &qp->sq[qp->sq_exec % qp->sq_size],
				  IBV_WC_RETRY_EXC_ERR, 0);
		return;
	}
	qp_to_error_locked(qp);
}

/* Returns true if the fault consumed the unit (the WQE must not execute now). */
static bool apply_fault_locked(struct soft_qp *qp, struct soft_send_wqe *wqe,
			       const struct softrdma_fault *f)
{
	switch (f->kind) {
	case SOFTRDMA_FAULT_STATUS:
		if (f->status == IBV_WC_SUCCESS)
			return false;
		finish_wqe_locked(qp, wqe, f->status, 0);
		return true;
	case SOFTRDMA_FAULT_RNR:
		wqe->force_rnr = true;
		return false;
	case SOFTRDMA_FAULT_QP_ERROR:
		qp_to_error_locked(qp);
		return true;
	case SOFTRDMA_FAULT_QP_FATAL:
		qp_to_error_locked(qp);
		async_event_locked(qp->qp.context, IBV_EVENT_QP_FATAL, &qp->qp);
		return true;
	case SOFTRDMA_FAULT_DISCONNECT:
		if (!qp->cm_id || fab.cm_ops->fault_disconnect(qp->cm_id))
			qp_to_error_locked(qp);
		return true;
	case SOFTRDMA_FAULT_DELAY:
		if (!fab_honours_time())
			return false;
		qp->wake_at = soft_now_ns() + (uint64_t)f->delay_us * 1000ULL;
		return true;
	}
	return false;
}

/* Packets the WQE's request takes at the path MTU (a READ: its response packets). */
static uint32_t wqe_packets(const struct soft_qp *qp, const struct soft_send_wqe *wqe)
{
	uint64_t len = 0;
	uint32_t mtu = 128u << qp->attr.path_mtu, i;

	if (wqe->opcode == IBV_WR_LOCAL_INV || wqe->opcode == IBV_WR_BIND_MW)
		return 0;
	/* A UD message is one packet; one over the MTU is not sent and takes one too (rxe). */
	if (qp->qp.qp_type == IBV_QPT_UD)
		return 1;
	if (wqe->flags & IBV_SEND_INLINE)
		len = wqe->inline_len;
	else
		for (i = 0; i < wqe->num_sge; i++)
			len += wqe->sge[i].length;
	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

/* The WQE's first try: its retry budgets, and its PSN for the capture. */
static void wqe_start(struct soft_qp *qp, struct soft_send_wqe *wqe)
{
	wqe->started = true;
	wqe->rnr_left = qp->attr.rnr_retry;
	wqe->retry_left = qp->attr.retry_cnt;
	wqe->last_try = false;
	wqe->psn = qp->next_psn;
	wqe->npsn = wqe_packets(qp, wqe);
	qp->next_psn = (qp->next_psn + wqe->npsn) & WIRE_PSN_MASK;
}

void engine_fast_start(struct soft_qp *qp, struct soft_send_wqe *wqe)
{
	wqe_start(qp, wqe);
	qp->wake_at = 0;
}

void engine_fast_finish(struct soft_qp *qp, struct soft_send_wqe *wqe, uint32_t byte_len)
{
	finish_wqe_locked(qp, wqe, IBV_WC_SUCCESS, byte_len);
}

void engine_run_locked(struct soft_qp *qp)
{
	struct soft_send_wqe *wqe = &qp->sq[qp->sq_exec % qp->sq_size];

	if (qp->attr.qp_state != IBV_QPS_RTS || qp->sq_exec == qp->sq_tail) {
		engine_deactivate_locked(qp);
		return;
	}
	/* A fenced WQE waits for every Read in flight; a Read, for room under ORD. */
	if (((wqe->flags & IBV_SEND_FENCE) && qp->rd_outstanding) ||
	    (wqe->opcode == IBV_WR_RDMA_READ && qp->rd_outstanding &&
	     qp->rd_outstanding >= qp->attr.max_rd_atomic)) {
		qp->wait_rd = true;
		return;
	}
	if (!wqe->started) {
		const struct softrdma_fault *f;

		wqe_start(qp, wqe);
		f = fault_check_send_locked(qp, wqe);
		if (f && apply_fault_locked(qp, wqe, f))
			return;
	}
	qp->wake_at = 0;
	if (wqe->last_try) {
		finish_wqe_locked(qp, wqe, IBV_WC_RETRY_EXC_ERR, 0);
		return;
	}
	switch (wqe->opcode) {
	case IBV_WR_LOCAL_INV:
		finish_wqe_locked(qp, wqe, mem_invalidate_locked(qp, wqe->imm_or_inv) ?
				  IBV_WC_LOC_QP_OP_ERR : IBV_WC_SUCCESS, 0);
		break;
	case IBV_WR_BIND_MW:
		finish_wqe_locked(qp, wqe, mw_bind_locked(qp, wqe->bind_mw, wqe->bind_rkey,
							  &wqe->bind_info), 0);
		break;
	default:
		/* UD: a datagram, done once it leaves (ud.c). */
		if (qp->qp.qp_type == IBV_QPT_UD)
			finish_wqe_locked(qp, wqe, ud_send_locked(qp, wqe), 0);
		else
			transmit_locked(qp, wqe);
		break;
	}
}
