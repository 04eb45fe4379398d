/* SPDX-License-Identifier: MIT */
/*
 * Completion queues and completion channels. A CQ is a bounded ring; arming
 * it (ibv_req_notify_cq) makes the next qualifying completion write one event
 * to its channel. Completions already queued when the CQ is armed raise
 * nothing, which is why consumers poll again after arming.
 */
#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct soft_comp_channel *sch = calloc(1, sizeof(*sch));

	if (!sch) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&sch->lock, NULL);
	if (evq_init(&sch->q, &sch->lock)) {
		pthread_mutex_destroy(&sch->lock);
		free(sch);
		errno = EMFILE;
		return NULL;
	}
	sch->ch.context = context;
	sch->ch.fd = sch->q.fd;
	fab_lock();
	fab.counts.comp_channels++;
	to_sctx(context)->objects++;
	fab_unlock();
	return &sch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct soft_comp_channel *sch = container_of(channel, struct soft_comp_channel, ch);

	fab_lock();
	if (sch->cqs) {
		fab_unlock();
		return EBUSY;
	}
	fab.counts.comp_channels--;
	to_sctx(channel->context)->objects--;
	pthread_mutex_lock(&sch->lock);
	if (!evq_retire_locked(&sch->q)) {
		pthread_mutex_unlock(&sch->lock);
		fab_unlock();
		return 0;
	}
	pthread_mutex_unlock(&sch->lock);
	fab_unlock();
	evq_fini(&sch->q);
	pthread_mutex_destroy(&sch->lock);
	free(sch);
	return 0;
}

struct soft_cq *cq_create(struct ibv_context *context, int cqe, void *cq_context,
			  struct ibv_comp_channel *channel, int comp_vector, struct soft_pd *pd)
{
	struct soft_cq *scq;

	if (cqe < 1 || cqe > soft_profile()->max_cqe || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	scq = calloc(1, sizeof(*scq));
	if (scq)
		scq->ring = pd_buf_alloc(pd, (size_t)cqe * sizeof(*scq->ring), SOFT_RES_CQ,
					 &scq->ring_custom);
	if (!scq || !scq->ring) {
		free(scq);
		errno = ENOMEM;
		return NULL;
	}
	scq->pd = pd;
	scq->size = (uint32_t)cqe;
	scq->cq.context = context;
	scq->cq.channel = channel;
	scq->cq.cq_context = cq_context;
	scq->cq.cqe = cqe;
	pthread_mutex_init(&scq->cq.mutex, NULL);
	pthread_cond_init(&scq->cq.cond, NULL);
	pthread_mutex_init(&scq->poll_lock, NULL);
	pthread_mutex_init(&scq->push_lock, NULL);
	fab_lock();
	if (channel)
		container_of(channel, struct soft_comp_channel, ch)->cqs++;
	scq->cq.handle = ++fab.counts.cqs;
	to_sctx(context)->objects++;
	if (pd)
		pd->users++;
	fab_unlock();
	return scq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct soft_cq *scq = cq_create(context, cqe, cq_context, channel, comp_vector, NULL);

	return scq ? &scq->cq : NULL;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct soft_cq *scq = to_scq(cq);
	struct ibv_wc *ring, *old;
	bool custom, old_custom;
	uint32_t i, count;

	if (cqe < 1 || cqe > soft_profile()->max_cqe)
		return EINVAL;
	ring = pd_buf_alloc(scq->pd, (size_t)cqe * sizeof(*ring), SOFT_RES_CQ, &custom);
	if (!ring)
		return ENOMEM;
	/* fab.lock stops the producers, poll_lock the pollers. */
	fab_lock();
	pthread_mutex_lock(&scq->poll_lock);
	count = (uint32_t)(scq->tail - scq->head);
	if ((uint32_t)cqe < count) {
		pthread_mutex_unlock(&scq->poll_lock);
		fab_unlock();
		pd_buf_free(scq->pd, ring, SOFT_RES_CQ, custom);
		return EINVAL;
	}
	for (i = 0; i < count; i++)
		ring[i] = scq->ring[(scq->head + i) % scq->size];
	old = scq->ring;
	old_custom = scq->ring_custom;
	scq->ring = ring;
	scq->ring_custom = custom;
	__atomic_store_n(&scq->head, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&scq->tail, count, __ATOMIC_RELAXED);
	scq->size = (uint32_t)cqe;
	cq->cqe = cqe;
	pthread_mutex_unlock(&scq->poll_lock);
	fab_unlock();
	/* A parent domain's free() is the application's: called with no lock held. */
	pd_buf_free(scq->pd, old, SOFT_RES_CQ, old_custom);
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct soft_cq *scq = to_scq(cq);
	struct soft_comp_channel *sch = NULL;

	fab_lock();
	if (scq->users) {
		fab_unlock();
		return EBUSY;
	}
	if (cq->channel)
		sch = container_of(cq->channel, struct soft_comp_channel, ch);
	/*
	 * As rdma-core: wait until every event handed out has been acked.
	 * Readers count what they take under their queue's lock: forget what
	 * is unread first, then what was read is all counted.
	 */
	for (;;) {
		if (sch) {
			pthread_mutex_lock(&sch->lock);
			evq_cancel_locked(&sch->q, &scq->comp_event);
			pthread_mutex_unlock(&sch->lock);
		}
		async_forget_locked(cq->context, cq);
		if (scq->comp_acked >= __atomic_load_n(&scq->comp_read, __ATOMIC_RELAXED) &&
		    scq->async_acked >= __atomic_load_n(&scq->async_read, __ATOMIC_RELAXED))
			break;
		fab_wait_locked(&fab.ack_cv, NULL);
	}
	if (sch)
		sch->cqs--;
	fab.counts.cqs--;
	to_sctx(cq->context)->objects--;
	if (scq->pd)
		scq->pd->users--;
	fab_unlock();
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	pthread_mutex_destroy(&scq->poll_lock);
	pthread_mutex_destroy(&scq->push_lock);
	pd_buf_free(scq->pd, scq->ring, SOFT_RES_CQ, scq->ring_custom);
	free(scq);
	return 0;
}

void wc_error(struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_status status, uint32_t qp_num)
{
	/* Poison what is undefined in an error completion so that readers break. */
	memset(wc, 0xa5, sizeof(*wc));
	wc->opcode = (enum ibv_wc_opcode)0xdeadbeef;
	wc->byte_len = 0xdeadbeef;
	wc->imm_data = htobe32(0xdeadbeef);
	wc->wc_flags = 0xdeadbeef;
	wc->src_qp = 0xdeadbe;
	wc->pkey_index = 0xbeef;
	wc->slid = 0xdead;
	wc->wr_id = wr_id;
	wc->status = status;
	wc->qp_num = qp_num;
	wc->vendor_err = SOFT_VENDOR_ERR_BASE + (uint32_t)status;
}

void wc_success(struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode opcode, uint32_t qp_num)
{
	/* What the verbs leave undefined here is poisoned, as in wc_error(). */
	memset(wc, 0xa5, sizeof(*wc));
	wc->byte_len = 0xdeadbeef;
	wc->imm_data = htobe32(0xdeadbeef);
	wc->src_qp = 0xdeadbe;		/* defined for UD QPs only */
	wc->pkey_index = 0xbeef;	/* GSI only */
	wc->slid = 0xdead;
	wc->wr_id = wr_id;
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = opcode;
	wc->qp_num = qp_num;
	wc->wc_flags = 0;
	wc->vendor_err = 0;
}

/* The producer's half of the arm: true if this completion takes it (and raises the event). */
static bool cq_disarm(struct soft_cq *scq, bool solicited)
{
	unsigned int arm = __atomic_load_n(&scq->arm, __ATOMIC_SEQ_CST);

	while (arm == CQ_ARM_ANY || (arm == CQ_ARM_SOLICITED && solicited)) {
		if (__atomic_compare_exchange_n(&scq->arm, &arm, CQ_ARM_IDLE, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return true;
	}
	return false;
}

static void cq_raise_locked(struct soft_cq *scq)
{
	bool presignaled = wire_raised_locked(&scq->wire);
	struct soft_comp_channel *sch;

	if (!scq->cq.channel)
		return;
	sch = container_of(scq->cq.channel, struct soft_comp_channel, ch);
	pthread_mutex_lock(&sch->lock);
	evq_raise_locked(&sch->q, &scq->comp_event, !presignaled);
	pthread_mutex_unlock(&sch->lock);
}

bool cq_push_locked(struct soft_cq *scq, const struct ibv_wc *wc, bool solicited)
{
	uint64_t tail = scq->tail;

	if (scq->overrun)
		return false;
	if (tail - __atomic_load_n(&scq->head, __ATOMIC_ACQUIRE) == scq->size) {
		/* An overrun CQ is broken for good, as on hardware. */
		scq->overrun = true;
		async_event_locked(scq->cq.context, IBV_EVENT_CQ_ERR, &scq->cq);
		return false;
	}
	scq->ring[tail % scq->size] = *wc;
	/* seq_cst: published before the arm is looked at (the arm's rule, soft.h). */
	__atomic_store_n(&scq->tail, tail + 1, __ATOMIC_SEQ_CST);
	if (cq_disarm(scq, solicited || wc->status != IBV_WC_SUCCESS))
		cq_raise_locked(scq);
	return true;
}

bool cq_armed(struct soft_cq *scq)
{
	return __atomic_load_n(&scq->arm, __ATOMIC_SEQ_CST) != CQ_ARM_IDLE;
}

static bool cq_empty(struct soft_cq *scq)
{
	return __atomic_load_n(&scq->tail, __ATOMIC_SEQ_CST) ==
	       __atomic_load_n(&scq->head, __ATOMIC_RELAXED);
}

int soft_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct soft_cq *scq = to_scq(cq);
	uint64_t head, tail;
	int n = 0;

	/* Inside the calling thread's own extended batch (cq_ex.c): poll_lock is its. */
	if (owner_is_me(&scq->ex_poller))
		return -EDEADLK;
	/*
	 * Only pollers take poll_lock, so a poller never waits for the engine.
	 * Between processes, a poller that finds the CQ empty runs what came
	 * in the rings itself, which takes fab.lock (then this CQ's lock).
	 */
	if (cq_empty(scq)) {
		if (!wire_pollable())
			return 0;
		fab_lock();
		wire_poll_locked(cq_armed(scq));
		fab_unlock();
		if (cq_empty(scq))
			return 0;
	}
	pthread_mutex_lock(&scq->poll_lock);
	head = scq->head;
	tail = __atomic_load_n(&scq->tail, __ATOMIC_ACQUIRE);
	while (n < num_entries && head != tail)
		wc[n++] = scq->ring[head++ % scq->size];
	/* Release: the producer may reuse the slots once it sees the new head. */
	__atomic_store_n(&scq->head, head, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&scq->poll_lock);
	return n;
}

/* The arming thread's half: widen the arm to @want, never narrow it. */
static void cq_arm(struct soft_cq *scq, unsigned int want)
{
	unsigned int arm = __atomic_load_n(&scq->arm, __ATOMIC_RELAXED);

	/* Stored even unchanged: the seq_cst write orders the arm before the next poll. */
	while (!__atomic_compare_exchange_n(&scq->arm, &arm, arm > want ? arm : want, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

int soft_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct soft_cq *scq = to_scq(cq);

	__atomic_add_fetch(&scq->arms, 1, __ATOMIC_RELAXED);
	cq_arm(scq, solicited_only ? CQ_ARM_SOLICITED : CQ_ARM_ANY);
	/*
	 * Read after the arm: a link made meanwhile either shows here or finds
	 * the arm when it binds the CQ (shm_link_bind_qp_locked). A backend
	 * that rings the channel itself hears of the arm under fab.lock.
	 */
	if (wire_pollable()) {
		fab_lock();
		wire_arm_locked(&scq->wire);
		fab_unlock();
	}
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct soft_comp_channel *sch = container_of(channel, struct soft_comp_channel, ch);
	struct soft_cq *scq;
	struct soft_list *node;

	/* The channel's lock alone (soft_comp_channel): the engine may run meanwhile. */
	pthread_mutex_lock(&sch->lock);
	node = evq_pop_locked(&sch->q);
	if (!node) {
		pthread_mutex_unlock(&sch->lock);
		return -1;
	}
	scq = container_of(node, struct soft_cq, comp_event.link);
	evq_taken_locked(&sch->q, &scq->comp_event);
	/* Counted before the CQ is handed out: ibv_destroy_cq() waits for its ack. */
	__atomic_add_fetch(&scq->comp_read, 1, __ATOMIC_RELAXED);
	*cq = &scq->cq;
	*cq_context = scq->cq.cq_context;
	pthread_mutex_unlock(&sch->lock);
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct soft_cq *scq = to_scq(cq);

	fab_lock();
	scq->comp_acked += nevents;
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&fab.ack_cv);
	fab_unlock();
}
