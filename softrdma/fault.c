/* SPDX-License-Identifier: MIT */
/* Fault injection: rules matched against work requests and CM events as they execute. */
#include <errno.h>
#include <stdlib.h>

#include "soft.h"

struct soft_fault {
	struct list_node link;
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
	list_add_tail(&sf->link, &fab.faults);
	fab_unlock();
	return id;
}

int softrdma_fault_remove(int id)
{
	struct list_node *pos, *tmp;
	int ret = id ? -ENOENT : 0;

	fab_lock();
	list_for_each_safe(pos, tmp, &fab.faults) {
		struct soft_fault *sf = list_entry(pos, struct soft_fault, link);

		if (id == 0 || sf->id == id) {
			list_del(pos);
			free(sf);
			ret = 0;
		}
	}
	if (id == 0) {
		unsigned int i;

		for (i = 0; i <= RDMA_CM_EVENT_TIMEWAIT_EXIT; i++)
			fab.cm_drop[i] = 0;
		fab.cm_reject = 0;
	}
	fab_unlock();
	return ret;
}

int softrdma_fault_fired(int id)
{
	struct list_node *pos, *tmp;
	int ret = -ENOENT;

	fab_lock();
	list_for_each_safe(pos, tmp, &fab.faults) {
		struct soft_fault *sf = list_entry(pos, struct soft_fault, link);

		if (sf->id == id)
			ret = (int)sf->fired;
	}
	fab_unlock();
	return ret;
}

static const struct softrdma_fault *check_locked(struct soft_qp *qp, bool recv,
						 enum ibv_wr_opcode op)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &fab.faults) {
		struct soft_fault *sf = list_entry(pos, struct soft_fault, link);
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
	if (list_empty(&fab.faults))
		return NULL;
	return check_locked(qp, false, wqe->opcode);
}

const struct softrdma_fault *fault_check_recv_locked(struct soft_qp *qp)
{
	if (list_empty(&fab.faults))
		return NULL;
	return check_locked(qp, true, IBV_WR_SEND);
}

int softrdma_cm_drop_events(enum rdma_cm_event_type type, unsigned int count)
{
	if ((unsigned int)type > RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return -EINVAL;
	fab_lock();
	fab.cm_drop[type] = count;
	fab_unlock();
	return 0;
}

int softrdma_cm_reject_connects(unsigned int count)
{
	fab_lock();
	fab.cm_reject = count;
	fab_unlock();
	return 0;
}

bool fault_cm_drop_locked(enum rdma_cm_event_type type)
{
	if ((unsigned int)type > RDMA_CM_EVENT_TIMEWAIT_EXIT || !fab.cm_drop[type])
		return false;
	fab.cm_drop[type]--;
	return true;
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
