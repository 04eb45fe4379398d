/* SPDX-License-Identifier: MIT */
/* Shared receive queues: one receive ring consumed by every QP attached to it. */
#include <errno.h>
#include <stdlib.h>

#include "soft.h"

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct soft_srq *ssrq;

	if (init->attr.max_wr < 1 || init->attr.max_wr > (uint32_t)soft_profile()->max_srq_wr ||
	    init->attr.max_sge > (uint32_t)soft_profile()->max_srq_sge ||
	    init->attr.srq_limit > init->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	ssrq = calloc(1, sizeof(*ssrq));
	if (!ssrq || rq_init(&ssrq->rq, to_spd(pd), SOFT_RES_SRQ, init->attr.max_wr,
			     init->attr.max_sge)) {
		free(ssrq);
		errno = ENOMEM;
		return NULL;
	}
	ssrq->srq.context = pd->context;
	ssrq->srq.srq_context = init->srq_context;
	ssrq->srq.pd = pd;
	pthread_mutex_init(&ssrq->srq.mutex, NULL);
	pthread_mutex_init(&ssrq->consume_lock, NULL);
	pthread_cond_init(&ssrq->srq.cond, NULL);
	ssrq->pd = to_spd(pd);
	ssrq->limit = init->attr.srq_limit;
	fab_lock();
	ssrq->pd->users++;
	ssrq->srq.handle = ++fab.counts.srqs;
	fab_unlock();
	return &ssrq->srq;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct soft_srq *ssrq = to_ssrq(srq);

	/* Resizing is not offered (no IBV_DEVICE_SRQ_RESIZE). */
	if (mask & ~IBV_SRQ_LIMIT)
		return EINVAL;
	fab_lock();
	if (attr->srq_limit > ssrq->rq.size) {
		fab_unlock();
		return EINVAL;
	}
	ssrq->limit = attr->srq_limit;
	fab_unlock();
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct soft_srq *ssrq = to_ssrq(srq);

	fab_lock();
	attr->max_wr = ssrq->rq.size;
	attr->max_sge = ssrq->rq.max_sge;
	attr->srq_limit = ssrq->limit;
	fab_unlock();
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct soft_srq *ssrq = to_ssrq(srq);

	fab_lock();
	if (ssrq->users) {
		fab_unlock();
		return EBUSY;
	}
	async_settle_locked(srq->context, srq, &ssrq->async_read, &ssrq->async_acked);
	rq_clear_locked(&ssrq->rq);
	ssrq->pd->users--;
	fab.counts.srqs--;
	fab_unlock();
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&ssrq->consume_lock);
	rq_fini(&ssrq->rq);
	free(ssrq);
	return 0;
}

void srq_consumed_locked(struct soft_srq *ssrq)
{
	/* The limit event fires once, then the SRQ must be armed again. */
	if (ssrq->limit && rq_count(&ssrq->rq) < ssrq->limit) {
		ssrq->limit = 0;
		async_event_locked(ssrq->srq.context, IBV_EVENT_SRQ_LIMIT_REACHED, &ssrq->srq);
	}
}
