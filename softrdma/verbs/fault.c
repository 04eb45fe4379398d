/* SPDX-License-Identifier: MIT */
/*
 * Fault injection: rules matched against work requests and CM events as they
 * execute, and silent responders.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

struct soft_fault {
	struct soft_list link;
	int id;
	struct softrdma_fault f;
	unsigned int seen;
	unsigned int fired;
};

int softrdma_fault_add(const struct softrdma_fault *fault)
{
	struct soft_fault *sf;
	int id;

	if (!fault || fault->kind < SOFTRDMA_FAULT_STATUS || fault->kind > SOFTRDMA_FAULT_DELAY ||
	    (fault->kind == SOFTRDMA_FAULT_STATUS &&
	     (fault->status <= IBV_WC_SUCCESS || fault->status > IBV_WC_TM_RNDV_INCOMPLETE)))
		return -EINVAL;
	sf = calloc(1, sizeof(*sf));
	if (!sf)
		return -ENOMEM;
	sf->f = *fault;
	fab_lock();
	id = sf->id = fab.next_fault_id++;
	soft_list_add_tail(&sf->link, &fab.faults);
	fab_unlock();
	return id;
}

int softrdma_fault_remove(int id)
{
	struct soft_list *pos, *tmp;
	int ret = id ? -ENOENT : 0;

	fab_lock();
	soft_list_for_each_safe(pos, tmp, &fab.faults) {
		struct soft_fault *sf = soft_list_entry(pos, struct soft_fault, link);

		if (id == 0 || sf->id == id) {
			soft_list_del(pos);
			free(sf);
			ret = 0;
		}
	}
	if (id == 0) {
		memset(fab.cm_faults, 0, sizeof(fab.cm_faults));
		fab.cm_reject = 0;
	}
	fab_unlock();
	return ret;
}

int softrdma_fault_fired(int id)
{
	struct soft_list *pos, *tmp;
	int ret = -ENOENT;

	fab_lock();
	soft_list_for_each_safe(pos, tmp, &fab.faults) {
		struct soft_fault *sf = soft_list_entry(pos, struct soft_fault, link);

		if (sf->id == id)
			ret = (int)sf->fired;
	}
	fab_unlock();
	return ret;
}

static const struct softrdma_fault *check_locked(struct soft_qp *qp, bool recv,
						 enum ibv_wr_opcode op)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &fab.faults) {
		struct soft_fault *sf = soft_list_entry(pos, struct soft_fault, link);
		const struct softrdma_match *m = &sf->f.match;

		if ((m->recv != 0) != recv)
			continue;
		if (m->qp_num && m->qp_num != qp->qp.qp_num)
			continue;
		if (!recv && m->opcode_mask && !(m->opcode_mask & (1U << op)))
			continue;
		if (m->count && sf->fired >= m->count)
			continue;
		sf->seen++;
		/* From the nth match on, count times. */
		if (m->nth && sf->seen < m->nth)
			continue;
		sf->fired++;
		return &sf->f;
	}
	return NULL;
}

const struct softrdma_fault *fault_check_send_locked(struct soft_qp *qp,
						     const struct soft_send_wqe *wqe)
{
	if (soft_list_empty(&fab.faults))
		return NULL;
	return check_locked(qp, false, wqe->opcode);
}

const struct softrdma_fault *fault_check_recv_locked(struct soft_qp *qp)
{
	if (soft_list_empty(&fab.faults))
		return NULL;
	return check_locked(qp, true, IBV_WR_SEND);
}

int softrdma_cm_fault_set(const struct softrdma_cm_fault *fault)
{
	struct fab_cm_fault *cf;

	if (!fault || (unsigned int)fault->event > RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return -EINVAL;
	switch (fault->kind) {
	case SOFTRDMA_CM_FAULT_DELAY:
		if (fault->count && (fault->delay_ms == 0 ||
				     fault->delay_ms > SOFTRDMA_CM_DELAY_MAX_MS))
			return -EINVAL;
		break;
	case SOFTRDMA_CM_FAULT_DROP:
	case SOFTRDMA_CM_FAULT_DUPLICATE:
		if (fault->delay_ms)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	fab_lock();
	cf = &fab.cm_faults[fault->event];
	switch (fault->kind) {
	case SOFTRDMA_CM_FAULT_DROP:
		cf->drop = fault->count;
		break;
	case SOFTRDMA_CM_FAULT_DELAY:
		cf->delay = fault->count;
		cf->delay_ms = fault->delay_ms;
		break;
	case SOFTRDMA_CM_FAULT_DUPLICATE:
		cf->duplicate = fault->count;
		break;
	}
	fab_unlock();
	return 0;
}

int softrdma_cm_fault_left(enum rdma_cm_event_type type, enum softrdma_cm_fault_kind kind)
{
	const struct fab_cm_fault *cf;
	int left;

	if ((unsigned int)type > RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return -EINVAL;
	fab_lock();
	cf = &fab.cm_faults[type];
	switch (kind) {
	case SOFTRDMA_CM_FAULT_DROP:
		left = (int)cf->drop;
		break;
	case SOFTRDMA_CM_FAULT_DELAY:
		left = (int)cf->delay;
		break;
	case SOFTRDMA_CM_FAULT_DUPLICATE:
		left = (int)cf->duplicate;
		break;
	default:
		left = -EINVAL;
		break;
	}
	fab_unlock();
	return left;
}

int softrdma_cm_drop_events(enum rdma_cm_event_type type, unsigned int count)
{
	struct softrdma_cm_fault f = { .event = type, .kind = SOFTRDMA_CM_FAULT_DROP,
				       .count = count };

	return softrdma_cm_fault_set(&f);
}

int softrdma_cm_reject_connects(unsigned int count)
{
	fab_lock();
	fab.cm_reject = count;
	fab_unlock();
	return 0;
}

void fault_cm_event_locked(enum rdma_cm_event_type type, struct fault_cm_verdict *v)
{
	struct fab_cm_fault *cf;

	memset(v, 0, sizeof(*v));
	if ((unsigned int)type > RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return;
	cf = &fab.cm_faults[type];
	/* A dropped event is gone: the other kinds wait for the next one. */
	if (cf->drop) {
		cf->drop--;
		v->drop = true;
		return;
	}
	if (cf->delay) {
		cf->delay--;
		v->delay_ns = (uint64_t)cf->delay_ms * 1000000ULL;
	}
	if (cf->duplicate) {
		cf->duplicate--;
		v->duplicate = true;
	}
}

bool fault_cm_reject_locked(void)
{
	if (!fab.cm_reject)
		return false;
	fab.cm_reject--;
	return true;
}

int softrdma_qp_set_error(struct ibv_qp *qp, int fatal)
{
	struct soft_qp *sqp = to_sqp(qp);

	fab_lock();
	qp_to_error_locked(sqp);
	if (fatal)
		async_event_locked(qp->context, IBV_EVENT_QP_FATAL, qp);
	fab_unlock();
	return 0;
}

/* A QP of this process, alive: what the caller passed is ours to use. */
static struct soft_qp *live_qp_locked(struct ibv_qp *qp)
{
	struct soft_qp *sqp = qp ? qp_lookup_locked(qp->qp_num) : NULL;

	return sqp && &sqp->qp == qp ? sqp : NULL;
}

int softrdma_qp_silence(struct ibv_qp *qp, int on)
{
	struct soft_qp *sqp;

	if (on != 0 && on != 1)
		return -EINVAL;
	fab_lock();
	sqp = live_qp_locked(qp);
	if (sqp) {
		sqp->silent = on;
		qp_publish_locked(sqp, true);
	}
	fab_unlock();
	return sqp ? 0 : -EINVAL;
}

unsigned long softrdma_qp_ignored(struct ibv_qp *qp)
{
	struct soft_qp *sqp;
	unsigned long n;

	fab_lock();
	sqp = live_qp_locked(qp);
	n = sqp ? sqp->ignored : 0;
	fab_unlock();
	return n;
}
