/* SPDX-License-Identifier: MIT */
/*
 * Posting work requests: checks that fail the post at once (state, ring
 * space, SGE count, opcode, inline size), then a copy into the ring. In
 * THREAD mode the engine may then run the new WQEs in this call
 * (fab_run_posted_locked); otherwise it runs them later, as an HCA would.
 */
#include <errno.h>
#include <string.h>

#include "soft.h"
#include "ud.h"

static bool opcode_supported(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return true;
	default:
		return false;
	}
}

static bool carries_data(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* What the profile's provider does not post: iWARP has no immediate data, libsiw no LOCAL_INV or BIND_MW. */
static bool profile_refuses(enum ibv_wr_opcode op)
{
	const struct soft_profile *p = soft_profile();

	if (p->iwarp && (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
			 op == IBV_WR_LOCAL_INV || op == IBV_WR_BIND_MW))
		return true;
	return op == IBV_WR_BIND_MW && !p->mw;
}

int post_check_send_wr(struct soft_qp *sqp, const struct ibv_send_wr *wr)
{
	enum ibv_qp_state state = sqp->attr.qp_state;

	if (state != IBV_QPS_RTS && state != IBV_QPS_ERR)
		return EINVAL;
	if (sqp->sq_tail - sqp->sq_head >= sqp->cap.max_send_wr)
		return ENOMEM;
	if (!opcode_supported(wr->opcode) || profile_refuses(wr->opcode) || wr->num_sge < 0 ||
	    (uint32_t)wr->num_sge > sqp->cap.max_send_sge)
		return EINVAL;
	/* UD: a datagram needs its address handle. */
	if (sqp->qp.qp_type == IBV_QPT_UD && ud_post_check(wr))
		return EINVAL;
	/* A Read scatters into at most the device's max_sge_rd SGEs. */
	if (wr->opcode == IBV_WR_RDMA_READ && wr->num_sge > soft_profile()->max_sge_rd)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t len = 0;
		int i;

		if (!carries_data(wr->opcode))
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > sqp->cap.max_inline_data)
			return soft_profile()->inline_post_err;
	}
	return 0;
}

void post_enqueue_send_wr(struct soft_qp *sqp, const struct ibv_send_wr *wr)
{
	struct soft_send_wqe *wqe = &sqp->sq[sqp->sq_tail % sqp->sq_size];
	int i;

	wqe->wr_id = wr->wr_id;
	/* Atomic: the fast path posts without fab.lock (fast.c). */
	wqe->seq = __atomic_add_fetch(&fab.seq, 1, __ATOMIC_RELAXED);
	wqe->opcode = wr->opcode;
	wqe->flags = wr->send_flags;
	wqe->signaled = sqp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	wqe->executed = false;
	wqe->started = false;
	wqe->done = false;
	wqe->awaiting = false;
	wqe->outstanding = false;
	wqe->force_rnr = false;
	/* Only the fields the opcode uses: the others may be uninitialised in wr. */
	wqe->imm_or_inv = 0;
	if (wr->opcode == IBV_WR_SEND_WITH_INV || wr->opcode == IBV_WR_LOCAL_INV)
		wqe->imm_or_inv = wr->invalidate_rkey;
	else if (wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		wqe->imm_or_inv = wr->imm_data;
	wqe->remote_addr = 0;
	wqe->rkey = 0;
	if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IBV_WR_RDMA_READ) {
		wqe->remote_addr = wr->wr.rdma.remote_addr;
		wqe->rkey = wr->wr.rdma.rkey;
	}
	wqe->bind_mw = NULL;
	if (wr->opcode == IBV_WR_BIND_MW) {
		wqe->bind_mw = wr->bind_mw.mw;
		wqe->bind_rkey = wr->bind_mw.rkey;
		wqe->bind_info = wr->bind_mw.bind_info;
	}
	if (sqp->qp.qp_type == IBV_QPT_UD)
		ud_post_enqueue(sqp, wqe, wr);
	wqe->num_sge = 0;
	wqe->inline_len = 0;
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* Inline data is copied now: the buffer may be reused once post returns. */
		for (i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			memcpy(wqe->inline_buf + wqe->inline_len,
			       (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			wqe->inline_len += wr->sg_list[i].length;
		}
	} else if (wr->opcode != IBV_WR_BIND_MW && wr->opcode != IBV_WR_LOCAL_INV) {
		wqe->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(wqe->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*wqe->sge));
	}
	sqp->sq_tail++;
	sqp->stats.send_wrs++;
	__atomic_add_fetch(&fab.counts.send_wrs, 1, __ATOMIC_RELAXED);
}

int soft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct soft_qp *sqp = to_sqp(qp);
	int ret = 0;

	/* What it leaves (from the first WR it could not run on) takes fab.lock. */
	if (fast_post_send(sqp, &wr))
		return 0;
	fab_lock();
	sqp->stats.send_posts++;
	for (; wr; wr = wr->next) {
		ret = post_check_send_wr(sqp, wr);
		if (ret) {
			*bad_wr = wr;
			/* As libsiw does, against the verbs' rule of a positive errno. */
			if (soft_profile()->negative_post_err)
				ret = -ret;
			break;
		}
		post_enqueue_send_wr(sqp, wr);
	}
	post_kick_locked(sqp);
	fab_unlock();
	return ret;
}

void post_kick_locked(struct soft_qp *sqp)
{
	if (sqp->attr.qp_state == IBV_QPS_ERR) {
		engine_flush_locked(sqp);
	} else {
		engine_activate_locked(sqp);
		fab_run_posted_locked(sqp);
		/*
		 * What is left for the progress thread: WQEs not yet executed. A
		 * Read in flight needs it only in this process, where queueing its
		 * response kicked it already; to another process it awaits an answer.
		 */
		if (sqp->active)
			fab_kick_locked();
	}
}

/*
 * Posts that need the engine: the QP is in ERR (what was added flushes) or
 * an RNR NAK stalled a requester that this receive lets go on.
 */
static void recv_posted(struct soft_qp *sqp)
{
	fab_lock();
	if (sqp->attr.qp_state == IBV_QPS_ERR)
		engine_flush_locked(sqp);
	else
		engine_recv_posted_locked(sqp);
	fab_unlock();
}

/* Under the RQ's lock alone (soft.h): the engine takes fab.lock only when it must. */
int soft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct soft_qp *sqp = to_sqp(qp);
	struct soft_rq *rq = &sqp->rq;
	bool engine;
	int ret = 0;

	pthread_mutex_lock(&rq->lock);
	sqp->stats.recv_posts++;
	for (; wr; wr = wr->next) {
		/* Receives may be posted from INIT on; a QP on an SRQ has no RQ. */
		ret = rq->post == RQ_REFUSE ? EINVAL : rq_add(rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		sqp->stats.recv_wrs++;
	}
	engine = rq->post == RQ_ADD_FLUSH || rq->rnr_nak;
	rq->rnr_nak = false;
	pthread_mutex_unlock(&rq->lock);
	if (engine)
		recv_posted(sqp);
	return ret;
}

int soft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct soft_srq *ssrq = to_ssrq(srq);
	struct soft_rq *rq = &ssrq->rq;
	bool stalled;
	int ret = 0;

	pthread_mutex_lock(&rq->lock);
	for (; wr; wr = wr->next) {
		ret = rq_add(rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	stalled = rq->rnr_nak;
	rq->rnr_nak = false;
	pthread_mutex_unlock(&rq->lock);
	/* Requesters stalled on an RNR toward any QP of this SRQ go again. */
	if (stalled) {
		fab_lock();
		engine_srq_posted_locked(ssrq);
		fab_unlock();
	}
	return ret;
}
