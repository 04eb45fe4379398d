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
#include "wire_shm.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct soft_comp_channel *sch = calloc(1, sizeof(*sch));

	if (!sch) {
		errno = ENOMEM;
		return NULL;
	}
	if (evq_init(&sch->q)) {
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
	if (!evq_retire_locked(&sch->q)) {
		fab_unlock();
		return 0;
	}
	fab_unlock();
	evq_fini(&sch->q);
	free(sch);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct soft_cq *scq;

	if (cqe < 1 || cqe > soft_profile()->max_cqe || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	scq = calloc(1, sizeof(*scq));
	if (scq)
		scq->ring = calloc((size_t)cqe, sizeof(*scq->ring));
	if (!scq || !scq->ring) {
		free(scq);
		errno = ENOMEM;
		return NULL;
	}
	scq->size = (uint32_t)cqe;
	scq->cq.context = context;
	scq->cq.channel = channel;
	scq->cq.cq_context = cq_context;
	scq->cq.cqe = cqe;
	pthread_mutex_init(&scq->cq.mutex, NULL);
	pthread_cond_init(&scq->cq.cond, NULL);
	fab_lock();
	if (channel)
		container_of(channel, struct soft_comp_channel, ch)->cqs++;
	scq->cq.handle = ++fab.counts.cqs;
	to_sctx(context)->objects++;
	fab_unlock();
	return &scq->cq;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct soft_cq *scq = to_scq(cq);
	struct ibv_wc *ring;
	uint32_t i;

	if (cqe < 1 || cqe > soft_profile()->max_cqe)
		return EINVAL;
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	fab_lock();
	if ((uint32_t)cqe < scq->count) {
		fab_unlock();
		free(ring);
		return EINVAL;
	}
	for (i = 0; i < scq->count; i++)
		ring[i] = scq->ring[(scq->head + i) % scq->size];
	free(scq->ring);
	scq->ring = ring;
	scq->head = 0;
	scq->size = (uint32_t)cqe;
	cq->cqe = cqe;
	fab_unlock();
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
	/* As rdma-core: wait until every event handed out has been acked. */
	while (scq->comp_acked < scq->comp_read || scq->async_acked < scq->async_read)
		fab_wait_locked(&fab.ack_cv, NULL);
	if (cq->channel) {
		sch = container_of(cq->channel, struct soft_comp_channel, ch);
		evq_cancel_locked(&sch->q, &scq->comp_event);
		sch->cqs--;
	}
	async_forget_locked(cq->context, cq);
	fab.counts.cqs--;
	to_sctx(cq->context)->objects--;
	fab_unlock();
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(scq->ring);
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

bool cq_push_locked(struct soft_cq *scq, const struct ibv_wc *wc, bool solicited)
{
	if (scq->overrun)
		return false;
	if (scq->count == scq->size) {
		/* An overrun CQ is broken for good, as on hardware. */
		scq->overrun = true;
		async_event_locked(scq->cq.context, IBV_EVENT_CQ_ERR, &scq->cq);
		return false;
	}
	scq->ring[(scq->head + scq->count) % scq->size] = *wc;
	__atomic_store_n(&scq->count, scq->count + 1, __ATOMIC_RELAXED);
	if (scq->armed && (!scq->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
		bool presignaled = shm_cq_raised_locked(scq);

		scq->armed = false;
		if (scq->cq.channel) {
			struct soft_comp_channel *sch =
				container_of(scq->cq.channel, struct soft_comp_channel, ch);

			evq_raise_locked(&sch->q, &scq->comp_event, !presignaled);
		}
	}
	return true;
}

int soft_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct soft_cq *scq = to_scq(cq);
	int n = 0;

	/*
	 * Busy pollers find an empty CQ without the fabric lock, so that they
	 * do not fight the progress thread for it. A completion added meanwhile
	 * is found by the next poll, as on hardware.
	 */
	if (!__atomic_load_n(&scq->count, __ATOMIC_RELAXED)) {
		/* Between processes, a busy poller runs what came in rings itself. */
		if (!shm_pending())
			return 0;
		fab_lock();
		shm_poll_locked();
		if (!scq->count) {
			fab_unlock();
			return 0;
		}
	} else {
		fab_lock();
	}
	while (n < num_entries && scq->count) {
		wc[n++] = scq->ring[scq->head];
		scq->head = (scq->head + 1) % scq->size;
		__atomic_store_n(&scq->count, scq->count - 1, __ATOMIC_RELAXED);
	}
	fab_unlock();
	return n;
}

int soft_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct soft_cq *scq = to_scq(cq);

	fab_lock();
	/* Arming for any completion widens an earlier solicited-only arm. */
	if (!scq->armed)
		scq->solicited_only = solicited_only != 0;
	else if (!solicited_only)
		scq->solicited_only = false;
	scq->armed = true;
	scq->arms++;
	/*
	 * Records that came before the arm wake nobody now: run them, so that
	 * what they complete here raises the event the caller will wait for.
	 */
	if (shm_cq_armed_locked(scq))
		shm_drain_all_locked();
	shm_poller_sleeps_locked();
	fab_unlock();
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct soft_comp_channel *sch = container_of(channel, struct soft_comp_channel, ch);
	struct soft_cq *scq;
	struct list_node *node;

	fab_lock();
	node = evq_pop_locked(&sch->q);
	if (!node) {
		fab_unlock();
		return -1;
	}
	scq = container_of(node, struct soft_cq, comp_event.link);
	evq_taken_locked(&sch->q, &scq->comp_event);
	scq->comp_read++;
	*cq = &scq->cq;
	*cq_context = scq->cq.cq_context;
	fab_unlock();
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
