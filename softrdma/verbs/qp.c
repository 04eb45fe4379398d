/* SPDX-License-Identifier: MIT */
/*
 * RC and UD queue pairs: creation, the state machine of ibv_modify_qp, query,
 * destruction. What UD does differently lives in ud.c; extended QPs and
 * ibv_wr_*, in qp_ex.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"
#include "ud.h"

/*
 * The ring is one buffer, the slots and then their SGEs, so that a parent
 * domain's allocator gives it whole. Its size is bounded by the profile's
 * limits, checked by the callers (max_qp_wr or max_srq_wr, max_sge).
 */
int rq_init(struct soft_rq *rq, struct soft_pd *pd, uint64_t type, uint32_t size,
	    uint32_t max_sge)
{
	uint32_t i, n = size ? size : 1;
	uint32_t per = max_sge ? max_sge : 1;
	size_t slots = (size_t)n * sizeof(*rq->slots);

	memset(rq, 0, sizeof(*rq));
	pthread_mutex_init(&rq->lock, NULL);
	rq->buf_pd = pd;
	rq->buf_type = type;
	rq->slots = pd_buf_alloc(pd, slots + (size_t)n * per * sizeof(*rq->sges), type,
				 &rq->buf_custom);
	if (!rq->slots) {
		rq_fini(rq);
		return -ENOMEM;
	}
	rq->sges = (struct ibv_sge *)((uint8_t *)rq->slots + slots);
	for (i = 0; i < n; i++)
		rq->slots[i].sge = rq->sges + (size_t)i * per;
	rq->size = size;
	rq->max_sge = max_sge;
	return 0;
}

void rq_fini(struct soft_rq *rq)
{
	pthread_mutex_destroy(&rq->lock);
	if (rq->slots)
		pd_buf_free(rq->buf_pd, rq->slots, rq->buf_type, rq->buf_custom);
	rq->slots = NULL;
	rq->sges = NULL;
}

void fab_recv_wrs_add(int delta)
{
	__atomic_add_fetch(&fab.recv_wrs, (unsigned int)delta, __ATOMIC_RELAXED);
}

int rq_add(struct soft_rq *rq, const struct ibv_recv_wr *wr)
{
	struct soft_recv_wqe *wqe;

	if (rq->tail - __atomic_load_n(&rq->head, __ATOMIC_ACQUIRE) >= rq->size)
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge)
		return EINVAL;
	wqe = &rq->slots[rq->tail % rq->size];
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = (uint32_t)wr->num_sge;
	/* A WR without SGEs may carry no sg_list at all (drain markers do). */
	if (wr->num_sge)
		memcpy(wqe->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*wqe->sge));
	__atomic_store_n(&rq->tail, rq->tail + 1, __ATOMIC_RELEASE);
	fab_recv_wrs_add(1);
	return 0;
}

uint32_t rq_count(const struct soft_rq *rq)
{
	return (uint32_t)(__atomic_load_n(&rq->tail, __ATOMIC_ACQUIRE) -
			  __atomic_load_n(&rq->head, __ATOMIC_RELAXED));
}

struct soft_recv_wqe *rq_peek_locked(struct soft_rq *rq)
{
	return rq_count(rq) ? &rq->slots[rq->head % rq->size] : NULL;
}

void rq_pop_locked(struct soft_rq *rq)
{
	/* Release: a poster may refill the slot once it sees the new head. */
	__atomic_store_n(&rq->head, rq->head + 1, __ATOMIC_RELEASE);
	fab_recv_wrs_add(-1);
}

uint32_t rq_clear_locked(struct soft_rq *rq)
{
	uint64_t tail = __atomic_load_n(&rq->tail, __ATOMIC_ACQUIRE);
	uint32_t n = (uint32_t)(tail - rq->head);

	__atomic_store_n(&rq->head, tail, __ATOMIC_RELEASE);
	fab_recv_wrs_add(-(int)n);
	return n;
}

bool rq_nak_rnr_locked(struct soft_rq *rq, bool forced)
{
	bool nak;

	/* Under the posters' lock: a post either came before this look or sees the flag. */
	pthread_mutex_lock(&rq->lock);
	nak = forced || !rq_count(rq);
	if (nak)
		rq->rnr_nak = true;
	pthread_mutex_unlock(&rq->lock);
	return nak;
}

void rq_set_post_locked(struct soft_rq *rq, enum soft_rq_post post)
{
	pthread_mutex_lock(&rq->lock);
	rq->post = post;
	pthread_mutex_unlock(&rq->lock);
}

/* One buffer, as the RQ's (rq_init): the WQEs, their SGEs, their inline data. */
static int sq_init(struct soft_qp *sqp)
{
	uint32_t i, n = sqp->cap.max_send_wr ? sqp->cap.max_send_wr : 1;
	uint32_t per = sqp->cap.max_send_sge ? sqp->cap.max_send_sge : 1;
	size_t inl = sqp->cap.max_inline_data;
	size_t wqes = (size_t)n * sizeof(*sqp->sq), sges = (size_t)n * per * sizeof(*sqp->sq_sges);

	sqp->sq = pd_buf_alloc(sqp->pd, wqes + sges + n * inl, SOFT_RES_QP, &sqp->sq_custom);
	if (!sqp->sq)
		return -ENOMEM;
	sqp->sq_sges = (struct ibv_sge *)((uint8_t *)sqp->sq + wqes);
	sqp->sq_inline = inl ? (uint8_t *)sqp->sq_sges + sges : NULL;
	for (i = 0; i < n; i++) {
		sqp->sq[i].sge = sqp->sq_sges + (size_t)i * per;
		sqp->sq[i].inline_buf = inl ? sqp->sq_inline + (size_t)i * inl : NULL;
	}
	sqp->sq_size = n;
	return 0;
}

static void qp_free(struct soft_qp *sqp)
{
	qpx_free(sqp);
	if (sqp->sq)
		pd_buf_free(sqp->pd, sqp->sq, SOFT_RES_QP, sqp->sq_custom);
	rq_fini(&sqp->rq);
	pthread_mutex_destroy(&sqp->lock);
	free(sqp);
}

static bool qpn_in_use_locked(uint32_t qpn)
{
	return qp_lookup_locked(qpn) != NULL;
}

/*
 * The next free number of this process's range (wire_qpn_range_locked()),
 * in turn, so that a number comes back only after all the others: false if
 * every one is taken.
 */
static bool qpn_alloc_locked(uint32_t *out)
{
	uint32_t count, base = wire_qpn_range_locked(&count);

	if (!base) {
		base = SOFT_FIRST_QPN;
		count = (1u << 16) - SOFT_FIRST_QPN;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint32_t n = base + (fab.next_qpn + i) % count;

		if (!qpn_in_use_locked(n)) {
			fab.next_qpn = (n - base + 1) % count;
			*out = n;
			return true;
		}
	}
	return false;
}

static struct soft_qp **qp_bucket(uint32_t qpn)
{
	return &fab.qp_hash[qpn % SOFT_QP_HASH];
}

struct soft_qp *qp_lookup_locked(uint32_t qpn)
{
	struct soft_qp *sqp = *qp_bucket(qpn);

	while (sqp && sqp->qp.qp_num != qpn)
		sqp = sqp->hash_next;
	return sqp;
}

static void qp_unhash_locked(struct soft_qp *sqp)
{
	struct soft_qp **pp = qp_bucket(sqp->qp.qp_num);

	while (*pp != sqp)
		pp = &(*pp)->hash_next;
	*pp = sqp->hash_next;
}

static bool caps_valid(const struct ibv_qp_init_attr *init)
{
	const struct soft_profile *p = soft_profile();
	const struct ibv_qp_cap *cap = &init->cap;

	return cap->max_send_wr <= (uint32_t)p->max_qp_wr &&
	       cap->max_send_sge <= (uint32_t)p->max_sge && cap->max_inline_data <= p->max_inline &&
	       (init->srq || (cap->max_recv_wr <= (uint32_t)p->max_qp_wr &&
			      cap->max_recv_sge <= (uint32_t)p->max_sge));
}

/* The inline data a QP gets: what it asked, or for rxe at least 16 bytes per send SGE. */
static uint32_t inline_granted(const struct ibv_qp_cap *cap)
{
	const struct soft_profile *p = soft_profile();
	uint32_t from_sges = cap->max_send_sge * (uint32_t)sizeof(struct ibv_sge);

	if (p->inline_from_sges && from_sges > cap->max_inline_data)
		return from_sges < p->max_inline ? from_sges : p->max_inline;
	return cap->max_inline_data;
}

struct soft_qp *qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct soft_qp *sqp;

	/* Only RC and UD are modelled; siw (iWARP) has RC alone. */
	if (init->qp_type != IBV_QPT_RC &&
	    (init->qp_type != IBV_QPT_UD || soft_profile()->iwarp)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!init->send_cq || !init->recv_cq || !caps_valid(init)) {
		errno = EINVAL;
		return NULL;
	}
	sqp = calloc(1, sizeof(*sqp));
	if (!sqp) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&sqp->lock, NULL);
	init->cap.max_inline_data = inline_granted(&init->cap);
	sqp->cap = init->cap;
	if (init->srq) {
		sqp->cap.max_recv_wr = 0;
		sqp->cap.max_recv_sge = 0;
	}
	/* On a parent domain, its allocator gives the rings (ibv_alloc_parent_domain(3)). */
	sqp->pd = to_spd(pd);
	if (sq_init(sqp) || rq_init(&sqp->rq, sqp->pd, SOFT_RES_QP, sqp->cap.max_recv_wr,
				    sqp->cap.max_recv_sge)) {
		qp_free(sqp);
		errno = ENOMEM;
		return NULL;
	}
	sqp->sq_sig_all = init->sq_sig_all != 0;
	sqp->scq = to_scq(init->send_cq);
	sqp->rcq = to_scq(init->recv_cq);
	sqp->wire.scq = &sqp->scq->wire;
	sqp->wire.rcq = &sqp->rcq->wire;
	sqp->srq = init->srq ? to_ssrq(init->srq) : NULL;
	sqp->qp.context = pd->context;
	sqp->qp.qp_context = init->qp_context;
	sqp->qp.pd = pd;
	sqp->qp.send_cq = init->send_cq;
	sqp->qp.recv_cq = init->recv_cq;
	sqp->qp.srq = init->srq;
	sqp->qp.state = IBV_QPS_RESET;
	sqp->qp.qp_type = init->qp_type;
	pthread_mutex_init(&sqp->qp.mutex, NULL);
	pthread_cond_init(&sqp->qp.cond, NULL);
	sqp->attr.qp_state = IBV_QPS_RESET;
	sqp->attr.cap = sqp->cap;
	/* UD has no path: its messages are bounded by the port's MTU (ud.c). */
	sqp->attr.path_mtu = init->qp_type == IBV_QPT_UD ? soft_profile()->active_mtu :
		IBV_MTU_1024;
	soft_list_init(&sqp->active_link);

	fab_lock();
	if (!qpn_alloc_locked(&sqp->qp.qp_num)) {
		fab_unlock();
		qp_free(sqp);
		errno = ENOMEM;
		return NULL;
	}
	sqp->wire.qpn = sqp->qp.qp_num;
	sqp->qp.handle = sqp->qp.qp_num;
	soft_list_add_tail(&sqp->link, &fab.qps);
	sqp->hash_next = *qp_bucket(sqp->qp.qp_num);
	*qp_bucket(sqp->qp.qp_num) = sqp;
	sqp->pd->users++;
	sqp->scq->users++;
	sqp->rcq->users++;
	if (sqp->srq)
		sqp->srq->users++;
	fab.counts.qps++;
	fab_unlock();
	init->cap = sqp->cap;
	return sqp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct soft_qp *sqp = qp_create(pd, init);

	return sqp ? &sqp->qp : NULL;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct soft_qp *sqp = to_sqp(qp);
	struct soft_list *pos, *tmp;

	fab_lock();
	async_settle_locked(qp->context, qp, &sqp->async_read, &sqp->async_acked);
	engine_deactivate_locked(sqp);
	/* Requesters waiting on our receives must time out instead. */
	engine_recv_posted_locked(sqp);
	soft_list_del(&sqp->link);
	qp_unhash_locked(sqp);
	soft_list_for_each_safe(pos, tmp, &fab.qps) {
		struct soft_qp *other = soft_list_entry(pos, struct soft_qp, link);

		if (other->wire.peer == &sqp->wire)
			other->wire.peer = NULL;
	}
	qp_publish_locked(sqp, false);
	mw_qp_gone_locked(sqp);
	wire_detach_locked(&sqp->wire);
	if (sqp->cm_id)
		fab.cm_ops->qp_destroyed(sqp->cm_id);
	engine_cancel_reads_locked(sqp, false);
	fab.counts.send_wrs -= sqp->sq_tail - sqp->sq_comp;
	rq_clear_locked(&sqp->rq);
	sqp->pd->users--;
	sqp->scq->users--;
	sqp->rcq->users--;
	if (sqp->srq)
		sqp->srq->users--;
	fab.counts.qps--;
	fab_unlock();
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	qp_free(sqp);
	return 0;
}

struct transition {
	int required;
	int optional;
};

/* IBA 10.3.1 / ib_modify_qp_is_ok() for RC. Returns false if not allowed. */
static bool rc_transition(enum ibv_qp_state cur, enum ibv_qp_state next, struct transition *t)
{
	t->required = 0;
	t->optional = 0;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	switch (cur) {
	case IBV_QPS_RESET:
		if (next != IBV_QPS_INIT)
			return false;
		t->required = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return true;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT) {
			t->optional = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
			return true;
		}
		if (next != IBV_QPS_RTR)
			return false;
		t->required = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		t->optional = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
		return true;
	case IBV_QPS_RTR:
		if (next != IBV_QPS_RTS)
			return false;
		t->required = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
		t->optional = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
			IBV_QP_PATH_MIG_STATE;
		return true;
	case IBV_QPS_RTS:
		if (next != IBV_QPS_RTS)
			return false;
		t->optional = IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
			IBV_QP_MIN_RNR_TIMER;
		return true;
	default:
		/* SQD and SQE are not modelled; ERR leaves only to RESET. */
		return false;
	}
}

static bool values_valid(const struct ibv_qp_attr *attr, int mask)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	if ((mask & IBV_QP_PORT) && attr->port_num != 1)
		return false;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return false;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~(unsigned int)access))
		return false;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > soft_profile()->max_rd_atom)
		return false;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > soft_profile()->max_rd_atom)
		return false;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096))
		return false;
	if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return false;
	if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return false;
	if ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31)
		return false;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return false;
	if ((mask & IBV_QP_AV) && attr->ah_attr.port_num != 1 && attr->ah_attr.port_num != 0)
		return false;
	if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff)
		return false;
	return true;
}

void qp_publish_locked(const struct soft_qp *sqp, bool alive)
{
	struct wire_qp_grant g = {
		.qpn = sqp->qp.qp_num,
		.dest_qpn = sqp->attr.dest_qp_num,
		.access = sqp->attr.qp_access_flags,
		.pd = pd_id(sqp->pd),
		.ready = alive && sqp->qp.qp_type == IBV_QPT_RC && !sqp->silent &&
			 sqp->attr.qp_state == IBV_QPS_RTS,
		.reads = sqp->attr.max_dest_rd_atomic > 0,
	};

	wire_qp_grant(&g);
}

/* The state, and what it lets ibv_post_recv do (its RQ's own copy). */
static void qp_set_state_locked(struct soft_qp *sqp, enum ibv_qp_state state)
{
	enum soft_rq_post post = RQ_ADD;

	sqp->attr.qp_state = state;
	if (state == IBV_QPS_RESET || sqp->srq)
		post = RQ_REFUSE;
	else if (state == IBV_QPS_ERR)
		post = RQ_ADD_FLUSH;
	if (post != sqp->rq.post)
		rq_set_post_locked(&sqp->rq, post);
	qp_publish_locked(sqp, true);
}

static void qp_reset_locked(struct soft_qp *sqp)
{
	engine_deactivate_locked(sqp);
	engine_cancel_reads_locked(sqp, false);
	fab.counts.send_wrs -= sqp->sq_tail - sqp->sq_comp;
	sqp->sq_head = sqp->sq_comp = sqp->sq_exec = sqp->sq_tail = 0;
	rq_clear_locked(&sqp->rq);
	sqp->comm_est = false;
	sqp->wire.epsn = sqp->attr.rq_psn;
	sqp->wire.duplicates = 0;
	sqp->max_inflight = 0;
	sqp->resends = 0;
	wire_detach_locked(&sqp->wire);
}

int qp_modify_locked(struct soft_qp *sqp, struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur = sqp->attr.qp_state;
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	struct transition t;

	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return EINVAL;
	mask &= ~IBV_QP_CUR_STATE;
	if (!(mask & IBV_QP_STATE) && mask)
		return EINVAL;
	if (next > IBV_QPS_ERR)
		return EINVAL;
	if (sqp->qp.qp_type == IBV_QPT_UD ? !ud_transition(cur, next, &t.required, &t.optional) :
	    !rc_transition(cur, next, &t))
		return EINVAL;
	if ((mask & t.required) != t.required ||
	    (mask & ~(t.required | t.optional | IBV_QP_STATE)) || !values_valid(attr, mask))
		return EINVAL;

	if (mask & IBV_QP_PKEY_INDEX)
		sqp->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		sqp->attr.port_num = attr->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		sqp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_AV)
		sqp->attr.ah_attr = attr->ah_attr;
	if (mask & IBV_QP_ALT_PATH)
		sqp->attr.alt_ah_attr = attr->alt_ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		sqp->attr.path_mtu = attr->path_mtu;
	if (mask & IBV_QP_DEST_QPN) {
		sqp->attr.dest_qp_num = attr->dest_qp_num;
		sqp->wire.dest_qpn = attr->dest_qp_num;
		sqp->wire.peer = NULL;
	}
	if (mask & IBV_QP_RQ_PSN) {
		sqp->attr.rq_psn = attr->rq_psn & WIRE_PSN_MASK;
		sqp->wire.epsn = sqp->attr.rq_psn;
	}
	if (mask & IBV_QP_SQ_PSN) {
		sqp->attr.sq_psn = attr->sq_psn & 0xffffff;
		sqp->next_psn = sqp->attr.sq_psn;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		sqp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		sqp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		sqp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		sqp->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		sqp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		sqp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_PATH_MIG_STATE)
		sqp->attr.path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_QKEY)
		sqp->attr.qkey = attr->qkey;

	if (next == IBV_QPS_ERR) {
		qp_to_error_locked(sqp);
		return 0;
	}
	qp_set_state_locked(sqp, next);
	/* A UD QP has no responder to reach: each datagram finds its own (ud.c). */
	if (next == IBV_QPS_RTR && sqp->qp.qp_type == IBV_QPT_RC)
		wire_attach_locked(&sqp->wire, NULL);
	if (next == IBV_QPS_RESET)
		qp_reset_locked(sqp);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	int ret;

	fab_lock();
	ret = qp_modify_locked(to_sqp(qp), attr, attr_mask);
	/* libibverbs mirrors the state the caller asked for (rdma_cm writes it too). */
	if (!ret && (attr_mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	fab_unlock();
	return ret;
}

void qp_to_error_locked(struct soft_qp *sqp)
{
	if (sqp->attr.qp_state == IBV_QPS_ERR)
		return;
	/* Posters see ERR before the flush: what they add later they flush themselves. */
	qp_set_state_locked(sqp, IBV_QPS_ERR);
	engine_flush_locked(sqp);
	/* Requesters stalled on our receives now get no answer and time out. */
	engine_recv_posted_locked(sqp);
	if (sqp->srq)
		async_event_locked(sqp->qp.context, IBV_EVENT_QP_LAST_WQE_REACHED, &sqp->qp);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct soft_qp *sqp = to_sqp(qp);

	fab_lock();
	*attr = sqp->attr;
	attr->cur_qp_state = sqp->attr.qp_state;
	/* libibverbs' wrapper refreshes the mirror when the state is asked for. */
	if (attr_mask & IBV_QP_STATE)
		qp->state = sqp->attr.qp_state;
	attr->cap = sqp->cap;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = sqp->cap;
	init_attr->qp_type = qp->qp_type;
	init_attr->sq_sig_all = sqp->sq_sig_all;
	fab_unlock();
	return 0;
}

/*
 * The responder places a message with memcpy() (process_vm_writev() from
 * another process), and a Read's data is scattered the same way: neither
 * promises any order among the bytes it writes, so a reader must wait for
 * the completion rather than poll the last byte. Never in order.
 */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;
}
