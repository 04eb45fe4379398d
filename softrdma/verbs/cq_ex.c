/* SPDX-License-Identifier: MIT */
/*
 * Extended CQs (ibv_create_cq_ex): the same CQ and ring as ibv_create_cq()
 * makes (cq.c), so channels, arming, overrun and the fast path are the
 * same, read one completion at a time through ibv_start_poll(),
 * ibv_next_poll() and ibv_end_poll() and the ibv_wc_read_*() functions.
 *
 * A batch holds the CQ's poll_lock from a successful start_poll to
 * end_poll, as rxe and mlx5 hold their CQ lock: ibv_poll_cq() on the same
 * CQ from another thread waits for it. Where those providers would
 * deadlock or unlock a lock they do not hold, a test double refuses: from
 * the polling thread inside its batch, ibv_poll_cq() is -EDEADLK and
 * start_poll EINVAL; from outside a batch the calling thread started,
 * next_poll is EINVAL and end_poll does nothing. The completion a batch is
 * at stays in its slot (head is not moved past it) until the next
 * next_poll or end_poll, so no producer overwrites it while it is read.
 */
#include <errno.h>

#include "soft.h"

static struct soft_cq *to_scq_ex(struct ibv_cq_ex *cq)
{
	return container_of(cq, struct soft_cq, cq_ex);
}

static const struct ibv_wc *cur_wc(struct ibv_cq_ex *cq)
{
	struct soft_cq *scq = to_scq_ex(cq);

	return &scq->ring[scq->ex_cur % scq->size];
}

/* Make ex_cur current if the ring holds it: what start_poll and next_poll report. */
static int ex_load(struct soft_cq *scq)
{
	const struct ibv_wc *wc;

	if (scq->ex_cur == __atomic_load_n(&scq->tail, __ATOMIC_ACQUIRE)) {
		scq->ex_valid = false;
		return ENOENT;
	}
	wc = &scq->ring[scq->ex_cur % scq->size];
	scq->ex_valid = true;
	scq->cq_ex.wr_id = wc->wr_id;
	scq->cq_ex.status = wc->status;
	return 0;
}

static int ex_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct soft_cq *scq = to_scq_ex(cq);
	int ret;

	/* The attribute has no fields yet (comp_mask must be 0); a batch is not nested. */
	if (!attr || attr->comp_mask || owner_is_me(&scq->ex_poller))
		return EINVAL;
	/* As soft_poll_cq(): an empty CQ first runs what came from other processes. */
	if (wire_pollable() &&
	    __atomic_load_n(&scq->tail, __ATOMIC_SEQ_CST) ==
	    __atomic_load_n(&scq->head, __ATOMIC_RELAXED)) {
		fab_lock();
		wire_poll_locked(cq_armed(scq));
		fab_unlock();
	}
	pthread_mutex_lock(&scq->poll_lock);
	scq->ex_cur = scq->head;
	ret = ex_load(scq);
	/* "If an error code is given, end_poll shouldn't be called": nothing is held. */
	if (ret)
		pthread_mutex_unlock(&scq->poll_lock);
	else
		owner_enter(&scq->ex_poller);
	return ret;
}

static int ex_next_poll(struct ibv_cq_ex *cq)
{
	struct soft_cq *scq = to_scq_ex(cq);

	/* Outside a batch of this thread's: refused, nothing read or moved. */
	if (!owner_is_me(&scq->ex_poller))
		return EINVAL;
	if (!scq->ex_valid)
		return ENOENT;
	/* Release: the slot just read may be reused once the producer sees this. */
	scq->ex_cur++;
	__atomic_store_n(&scq->head, scq->ex_cur, __ATOMIC_RELEASE);
	/* On ENOENT the batch stays open: "end_poll should still be called". */
	return ex_load(scq);
}

static void ex_end_poll(struct ibv_cq_ex *cq)
{
	struct soft_cq *scq = to_scq_ex(cq);

	/* Outside a batch of this thread's there is nothing to end (and no lock to let go). */
	if (!owner_is_me(&scq->ex_poller))
		return;
	if (scq->ex_valid)
		__atomic_store_n(&scq->head, scq->ex_cur + 1, __ATOMIC_RELEASE);
	scq->ex_valid = false;
	owner_leave(&scq->ex_poller);
	pthread_mutex_unlock(&scq->poll_lock);
}

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->opcode;
}

static uint32_t ex_read_vendor_err(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->vendor_err;
}

static unsigned int ex_read_wc_flags(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->wc_flags;
}

static uint32_t ex_read_byte_len(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->byte_len;
}

static __be32 ex_read_imm_data(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->imm_data;
}

static uint32_t ex_read_qp_num(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->qp_num;
}

static uint32_t ex_read_src_qp(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->src_qp;
}

static uint32_t ex_read_slid(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->slid;
}

static uint8_t ex_read_sl(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->sl;
}

static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *cq)
{
	return cur_wc(cq)->dlid_path_bits;
}

/*
 * As rxe: the iterator, opcode, vendor_err and wc_flags always; a field's
 * reader only if wc_flags asked for it (the others stay NULL, so reading
 * an unrequested field faults as on rxe). ibv_wc_read_invalidated_rkey()
 * is read_imm_data(): the two share the completion's word (ibv_wc.ex).
 */
void cq_ex_set_ops(struct soft_cq *scq, uint64_t wc_flags)
{
	struct ibv_cq_ex *cq = &scq->cq_ex;

	cq->start_poll = ex_start_poll;
	cq->next_poll = ex_next_poll;
	cq->end_poll = ex_end_poll;
	cq->read_opcode = ex_read_opcode;
	cq->read_vendor_err = ex_read_vendor_err;
	cq->read_wc_flags = ex_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cq->read_byte_len = ex_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		cq->read_imm_data = ex_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cq->read_qp_num = ex_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cq->read_src_qp = ex_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		cq->read_slid = ex_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		cq->read_sl = ex_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cq->read_dlid_path_bits = ex_read_dlid_path_bits;
}

/*
 * What the profile's provider refuses: wc_flags it does not report
 * (EOPNOTSUPP: rxe's check, mlx5's ENOTSUP, the same value), comp_mask bits
 * it does not know (libibverbs' EOPNOTSUPP for rxe, mlx5's EINVAL), and
 * creation flags nobody defines (mlx5's EINVAL; libibverbs passes them by
 * for rxe). Of the defined flags, SINGLE_THREADED is a locking hint every
 * provider may take; IGNORE_OVERRUN rxe's kernel refuses (rxe_create_cq:
 * attr->flags), and an overrun CQ that goes on is not modelled.
 */
static int cq_ex_check(const struct ibv_cq_init_attr_ex *attr)
{
	const struct soft_profile *p = soft_profile();

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return p->cq_ex_attr_err;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && p->cq_ex_flags_err &&
	    (attr->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
				       IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))
		return p->cq_ex_flags_err;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
		return EOPNOTSUPP;
	if (attr->wc_flags & ~p->cq_wc_flags)
		return EOPNOTSUPP;
	return 0;
}

/*
 * IBV_CQ_INIT_ATTR_MASK_PD names the parent domain whose allocator holds
 * the ring (mlx5: anything else is EINVAL). A provider without parent
 * domains (rxe) ignores the field, as libibverbs passes it to no kernel.
 */
static int cq_ex_parent(const struct ibv_cq_init_attr_ex *attr, struct soft_pd **pd)
{
	*pd = NULL;
	if (!(attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) || !soft_profile()->parent_domain)
		return 0;
	if (!attr->parent_domain || to_spd(attr->parent_domain)->protection ==
	    to_spd(attr->parent_domain))
		return EINVAL;
	*pd = to_spd(attr->parent_domain);
	return 0;
}

struct ibv_cq_ex *soft_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct soft_cq *scq;
	struct soft_pd *pd;
	int ret;

	ret = cq_ex_check(attr);
	if (!ret)
		ret = cq_ex_parent(attr, &pd);
	if (ret) {
		errno = ret;
		return NULL;
	}
	if (attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	scq = cq_create(context, (int)attr->cqe, attr->cq_context, attr->channel,
			(int)attr->comp_vector, pd);
	if (!scq)
		return NULL;
	/* Before anyone can poll it: the CQ is not yet handed out. */
	cq_ex_set_ops(scq, attr->wc_flags);
	return &scq->cq_ex;
}
