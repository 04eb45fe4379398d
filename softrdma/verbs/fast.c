/* SPDX-License-Identifier: MIT */
/*
 * The send fast path: in THREAD mode, a Send (with immediate or invalidate),
 * an RDMA Write or Read between two QPs of this process, or a memory
 * window's bind or local invalidation, that the engine would run at once
 * (nothing older is runnable anywhere) and that succeeds runs in
 * ibv_post_send() under the two QPs' locks and their CQs' push locks,
 * without fab.lock (the gate and the lock order: soft.h; a window's rules
 * on the fast path: struct soft_mw). Every check the engine and the
 * responder would make is made first, with nothing changed yet; a WR that
 * would take any other turn (an error, an RNR NAK, a fault, an async event,
 * the capture, another process) is left to the fab.lock path, with the WRs
 * after it, so that path runs it exactly as before. What the fast path does
 * is what the engine does on success, in the same order: the receive
 * completes, then the send. A Read runs as the engine runs one whose
 * response is the next unit to run (the QP has nothing else in flight): the
 * data scatters, then it completes. A responder on an
 * SRQ shares the ring with the SRQ's other QPs: the SRQ's consume_lock
 * keeps their fast paths apart.
 *
 * This duplicates the responder's success path (responder.c): a rule
 * added there must be added to responder_accepts() too, or make the fast
 * path leave the case to fab.lock.
 */
#include <string.h>

#include "soft.h"
#include "tap.h"

/* What the whole fabric must look like (the gate is open: nothing changes it). */
static bool fabric_allows(void)
{
	return fab.mode == SOFTRDMA_MODE_THREAD && soft_list_empty(&fab.faults) &&
	       soft_list_empty(&fab.active_qps) && soft_list_empty(&fab.work) &&
	       !pcap_on_locked() && !wire_pollable();
}

/* The responder a transmit would reach in this process, resolved already; or NULL. */
static struct soft_qp *cached_peer(struct soft_qp *sqp)
{
	struct wire_qp *peer = sqp->wire.peer;

	if (!wire_stays_local_locked(&sqp->wire) || !peer || peer->qpn != sqp->attr.dest_qp_num)
		return NULL;
	return wire_to_sqp(peer);
}

static void lock_two(pthread_mutex_t *a, pthread_mutex_t *b)
{
	if (a > b) {
		pthread_mutex_t *t = a;

		a = b;
		b = t;
	}
	pthread_mutex_lock(a);
	if (b != a)
		pthread_mutex_lock(b);
}

static void unlock_two(pthread_mutex_t *a, pthread_mutex_t *b)
{
	pthread_mutex_unlock(a);
	if (b != a)
		pthread_mutex_unlock(b);
}

static bool fast_opcode(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       op == IBV_WR_RDMA_READ || op == IBV_WR_LOCAL_INV || op == IBV_WR_BIND_MW;
}

/* Work done on the requester alone: no message, no responder. */
static bool local_opcode(enum ibv_wr_opcode op)
{
	return op == IBV_WR_LOCAL_INV || op == IBV_WR_BIND_MW;
}

static bool consumes_receive(enum ibv_wr_opcode op)
{
	return op != IBV_WR_RDMA_WRITE && op != IBV_WR_RDMA_READ;
}

static struct soft_rq *recv_ring(struct soft_qp *peer)
{
	return peer->srq ? &peer->srq->rq : &peer->rq;
}

/* The requester holds nothing back: no WQE waits, runs or awaits an answer. */
static bool requester_idle(const struct soft_qp *sqp)
{
	return sqp->attr.qp_state == IBV_QPS_RTS && !sqp->active &&
	       sqp->sq_exec == sqp->sq_tail && sqp->sq_comp == sqp->sq_exec &&
	       !sqp->rd_outstanding && !sqp->net_inflight;
}

/*
 * The responder takes the request without an async event or a state change:
 * an RC QP in RTS, or RTR with the connection established already, and not
 * silenced.
 */
static bool responder_ready(const struct soft_qp *peer)
{
	return !peer->silent && peer->qp.qp_type == IBV_QPT_RC &&
	       (peer->attr.qp_state == IBV_QPS_RTS ||
		(peer->attr.qp_state == IBV_QPS_RTR && peer->comm_est));
}

/*
 * The gather the engine makes (engine_gather_locked()), from the WR: NULL segments
 * fail it. A Read's segments are its sink: written locally (and remotely on
 * iWARP, whose Read Response is a tagged write).
 */
static bool gather(struct soft_qp *sqp, const struct ibv_send_wr *wr, struct wire_req *req)
{
	int need = wr->opcode != IBV_WR_RDMA_READ ? 0 : soft_profile()->iwarp ?
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_LOCAL_WRITE;
	uint64_t total = 0;
	int i;

	req->nsegs = 0;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *sge = &wr->sg_list[i];
		struct soft_mr *mr;
		uint8_t *ptr;

		total += sge->length;
		if (!sge->length || (wr->send_flags & IBV_SEND_INLINE))
			continue;
		ptr = mem_local_locked(sqp->pd, sge->lkey, sge->addr, sge->length, need, &mr);
		if (!ptr)
			return false;
		req->segs[req->nsegs++] = wire_seg_mem(ptr, sge->length, mr, NULL);
	}
	if (total > SOFT_MAX_MSG)
		return false;
	req->length = (uint32_t)total;
	return true;
}

/* Room for @n more completions, none lost to an overrun. */
static bool cq_room(struct soft_cq *cq, uint32_t n)
{
	uint64_t used = cq->tail - __atomic_load_n(&cq->head, __ATOMIC_ACQUIRE);

	return !cq->overrun && !cq->wire.shm_links && used + n <= cq->size;
}

/* Where the payload lands: a receive's buffers, or the Write's target; or a Read's source. */
struct fast_sink {
	struct soft_recv_wqe *rwqe;
	uint8_t *dst[SOFT_MAX_SGE];
	uint32_t dst_len[SOFT_MAX_SGE];
	uint32_t n;
	uint8_t *target;
	const uint8_t *source;
};

/*
 * A Read (rdma_read() in responder.c): the requester may issue Reads, the
 * responder serve them, and the source may be read remotely.
 */
static bool read_accepted(struct soft_qp *sqp, struct soft_qp *peer, const struct ibv_send_wr *wr,
			  uint32_t length, struct fast_sink *sink)
{
	/* An inline Read (meaningless) takes the engine's turn, whatever it makes of it. */
	if ((wr->send_flags & IBV_SEND_INLINE) || !sqp->attr.max_rd_atomic ||
	    !(peer->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ) ||
	    !peer->attr.max_dest_rd_atomic)
		return false;
	if (length)
		sink->source = mem_remote_locked(peer, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr,
						 length, IBV_ACCESS_REMOTE_READ, NULL, NULL);
	return !length || sink->source;
}

/* The responder's checks (responder.c) on the success path, nothing consumed. */
static bool responder_accepts(struct soft_qp *sqp, struct soft_qp *peer,
			      const struct ibv_send_wr *wr, uint32_t length, struct fast_sink *sink)
{
	uint32_t left = length, i;

	sink->rwqe = NULL;
	sink->n = 0;
	sink->target = NULL;
	sink->source = NULL;
	if (wr->opcode == IBV_WR_RDMA_READ)
		return read_accepted(sqp, peer, wr, length, sink);
	if (consumes_receive(wr->opcode)) {
		struct soft_rq *rq = recv_ring(peer);

		sink->rwqe = rq_peek_locked(rq);
		if (!sink->rwqe)
			return false;	/* an RNR NAK */
		/* Crossing an armed SRQ limit raises an event: the fab.lock path's. */
		if (peer->srq && peer->srq->limit && rq_count(rq) - 1 < peer->srq->limit)
			return false;
		/* A failed invalidation errs the receive and the responder. */
		if (wr->opcode == IBV_WR_SEND_WITH_INV &&
		    !mem_invalidate_fast_ok(peer, wr->invalidate_rkey))
			return false;
	}
	if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		if (!(peer->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE))
			return false;
		if (length) {
			sink->target = mem_remote_locked(peer, wr->wr.rdma.rkey,
							 wr->wr.rdma.remote_addr, length,
							 IBV_ACCESS_REMOTE_WRITE, NULL, NULL);
			if (!sink->target)
				return false;
		}
		return true;
	}
	/* A Send: it fits the receive, and every buffer it touches may be written. */
	for (i = 0; i < sink->rwqe->num_sge && left; i++) {
		const struct ibv_sge *sge = &sink->rwqe->sge[i];
		uint32_t len;

		if (!sge->length)
			continue;
		len = sge->length < left ? sge->length : left;
		sink->dst[sink->n] = mem_local_locked(peer->pd, sge->lkey, sge->addr, len,
						      IBV_ACCESS_LOCAL_WRITE, NULL);
		if (!sink->dst[sink->n])
			return false;
		sink->dst_len[sink->n++] = len;
		left -= len;
	}
	return left == 0;
}

/* The responder's success path: the payload lands and the receive completes. */
static void respond(struct soft_qp *peer, const struct wire_req *req, struct fast_sink *sink)
{
	struct ibv_wc wc;
	uint32_t i, off = 0;

	if (sink->source) {
		/* A Read's response scatters into the requester's segments (all local). */
		for (i = 0; i < req->nsegs; i++) {
			memcpy((void *)(uintptr_t)req->segs[i].addr, sink->source + off,
			       req->segs[i].len);
			off += req->segs[i].len;
		}
	} else if (sink->target) {
		wire_pull_msg(req->segs, req->nsegs, 0, sink->target, req->length);
	} else {
		for (i = 0; i < sink->n; i++) {
			wire_pull_msg(req->segs, req->nsegs, off, sink->dst[i], sink->dst_len[i]);
			off += sink->dst_len[i];
		}
	}
	if (sink->rwqe) {
		bool write = req->op == WIRE_WRITE_IMM;

		wc_success(&wc, sink->rwqe->wr_id, write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
			   peer->qp.qp_num);
		wc.byte_len = req->length;
		if (req->op == WIRE_SEND_IMM || write) {
			wc.wc_flags = IBV_WC_WITH_IMM;
			wc.imm_data = req->imm;
		}
		if (req->op == WIRE_SEND_INV) {
			/* Checked by responder_accepts(): it succeeds. */
			mem_invalidate_locked(peer, req->inv_rkey);
			wc.wc_flags = IBV_WC_WITH_INV;
			wc.invalidated_rkey = req->inv_rkey;
		}
		rq_pop_locked(recv_ring(peer));
		/* Above the limit (responder_accepts()): no event, and none is raised. */
		if (peer->srq)
			srq_consumed_locked(peer->srq);
		engine_complete_recv_locked(peer, &wc, req->solicited);
	}
	/* As responder_receive() counts it (the capture is off here). */
	peer->msn = (peer->msn + 1) & 0xffffff;
}

/*
 * A bind or a local invalidation (engine_run_locked()'s), once it is known
 * to succeed: a bind has claimed its window.
 */
static bool local_ok(struct soft_qp *sqp, const struct ibv_send_wr *wr)
{
	if (wr->opcode == IBV_WR_LOCAL_INV)
		return mem_invalidate_fast_ok(sqp, wr->invalidate_rkey);
	return mw_bind_claim(sqp, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
}

static bool run_local(struct soft_qp *sqp, const struct ibv_send_wr *wr, bool signaled)
{
	struct soft_send_wqe *wqe;

	if (!cq_room(sqp->scq, signaled) || !local_ok(sqp, wr))
		return false;
	post_enqueue_send_wr(sqp, wr);
	wqe = &sqp->sq[sqp->sq_exec % sqp->sq_size];
	engine_fast_start(sqp, wqe);
	if (wqe->opcode == IBV_WR_LOCAL_INV)
		mem_invalidate_locked(sqp, wqe->imm_or_inv);
	else
		mw_bind_claimed(sqp, wqe->bind_mw, wqe->bind_rkey, &wqe->bind_info);
	engine_fast_finish(sqp, wqe, 0);
	return true;
}

/*
 * One WR, both QPs and their CQs locked: true if it ran (then it has
 * completed as the engine would have completed it), false if it was left
 * as it was, with nothing changed.
 */
static bool run_one(struct soft_qp *sqp, struct soft_qp *peer, const struct ibv_send_wr *wr)
{
	struct soft_send_wqe *wqe;
	struct fast_sink sink;
	struct wire_req req;
	bool signaled = sqp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	uint32_t recv_cqes;

	if (!fast_opcode(wr->opcode) || post_check_send_wr(sqp, wr) || !requester_idle(sqp) ||
	    !responder_ready(peer))
		return false;
	if (local_opcode(wr->opcode))
		return run_local(sqp, wr, signaled);
	memset(&req, 0, sizeof(req));
	if (!gather(sqp, wr, &req) || !responder_accepts(sqp, peer, wr, req.length, &sink))
		return false;
	recv_cqes = sink.rwqe ? 1 : 0;
	if (sqp->scq == peer->rcq ? !cq_room(sqp->scq, recv_cqes + signaled) :
	    !cq_room(sqp->scq, signaled) || !cq_room(peer->rcq, recv_cqes))
		return false;

	post_enqueue_send_wr(sqp, wr);
	wqe = &sqp->sq[sqp->sq_exec % sqp->sq_size];
	engine_fast_start(sqp, wqe);
	/* Inline data was copied into the WQE: the message reads it there. */
	if (wqe->flags & IBV_SEND_INLINE) {
		req.segs[0] = wire_seg_local(wqe->inline_buf, wqe->inline_len);
		req.nsegs = 1;
	}
	engine_req_header(sqp, wqe, &req);
	respond(peer, &req, &sink);
	/* A Read's byte_len is its sink's length, as scatter_read_locked() gives it. */
	engine_fast_finish(sqp, wqe, wr->opcode == IBV_WR_RDMA_READ ? req.length : 0);
	return true;
}

bool fast_post_send(struct soft_qp *sqp, struct ibv_send_wr **wr)
{
	struct soft_qp *peer;
	pthread_mutex_t *scq_lock, *rcq_lock;
	bool all;

	/* Datagrams (UD) always take the fabric lock (ud.c). */
	if (!*wr || sqp->qp.qp_type != IBV_QPT_RC || !fab_fast_enter())
		return false;
	if (!fabric_allows() || !(peer = cached_peer(sqp))) {
		fab_fast_exit();
		return false;
	}
	scq_lock = &sqp->scq->push_lock;
	rcq_lock = &peer->rcq->push_lock;
	lock_two(&sqp->lock, &peer->lock);
	if (peer->srq)
		pthread_mutex_lock(&peer->srq->consume_lock);
	lock_two(scq_lock, rcq_lock);
	while (*wr && run_one(sqp, peer, *wr)) {
		__atomic_add_fetch(&fab.fast_executed[(*wr)->opcode], 1, __ATOMIC_RELAXED);
		*wr = (*wr)->next;
	}
	all = !*wr;
	if (all)
		sqp->stats.send_posts++;
	unlock_two(scq_lock, rcq_lock);
	if (peer->srq)
		pthread_mutex_unlock(&peer->srq->consume_lock);
	unlock_two(&sqp->lock, &peer->lock);
	fab_fast_exit();
	/* A completion event raised here: its token is written now, without a lock. */
	fab_signals_flush();
	return all;
}
