/* SPDX-License-Identifier: MIT */
/*
 * Extended QPs (ibv_create_qp_ex) and the ibv_wr_*() posting interface.
 *
 * A batch is built between ibv_wr_start() and ibv_wr_complete() as the
 * ibv_send_wr list ibv_post_send() would take, in the QP's own slots, and
 * posted at complete through post.c's checks and enqueue, so a WR built
 * here is the same WQE as one posted with ibv_post_send(). The verbs'
 * rule (ibv_wr_post(3)): "No work is executed to the queue until
 * ibv_wr_complete() returns success", and a failure detected on the way
 * makes ibv_wr_complete() fail with "the entire posting aborted": every WR
 * of the batch is checked under fab.lock before any is enqueued.
 *
 * Builders and setters report nothing; the first error of a batch is kept
 * and ibv_wr_complete() returns it. What a provider's own setters check
 * (a full SQ, too many SGEs, too much inline data) gives its errno: rxe's
 * ENOSPC, mlx5's ENOMEM (soft_profile.wr_err), softrdma's the one
 * ibv_post_send() gives. A setter with no WR to apply to is EINVAL.
 *
 * The batch's lock makes wr_start .. wr_complete/wr_abort the per-QP
 * critical section the man page promises (kept with a thread domain too).
 * It is taken before fab.lock and never while it is held. Calls from a
 * thread with no batch open are refused where rxe and mlx5 would unlock a
 * lock they do not hold or write past their queue: builders and setters
 * do nothing, wr_complete is EINVAL, wr_abort does nothing; a wr_start
 * inside the thread's own batch fails that batch (EINVAL at complete).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

/* One WR of a batch, as ibv_post_send() takes it, with room for its SGEs and inline data. */
struct qpx_wr {
	struct ibv_send_wr wr;
	struct ibv_sge *sge;		/* max_send_sge entries (at least one) */
	uint8_t *inline_buf;		/* max_inline_data bytes, or NULL if none */
};

struct qpx_batch {
	pthread_mutex_t lock;		/* the critical section wr_start .. complete/abort */
	struct soft_owner owner;	/* the thread inside it */
	struct qpx_wr *wrs;		/* slots kept from batch to batch */
	uint32_t slots;			/* allocated */
	uint32_t n;			/* WRs built since wr_start */
	int err;			/* the batch's first error, 0 if none */
};

static struct soft_qp *to_sqpx(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct soft_qp, qp_ex);
}

static void batch_fail(struct qpx_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* The errno of what a provider's setter checks itself, for errors post.c reports as @post_err. */
static int setter_err(int post_err)
{
	int err = soft_profile()->wr_err;

	return err ? err : post_err;
}

/* A slot for one more WR: grown on demand, never past the SQ's depth. */
static struct qpx_wr *batch_slot(struct soft_qp *sqp)
{
	struct qpx_batch *b = sqp->qpx;
	uint32_t want;
	struct qpx_wr *wrs, *w;

	if (b->n < b->slots)
		return &b->wrs[b->n];
	if (b->n >= sqp->cap.max_send_wr) {
		batch_fail(b, setter_err(ENOMEM));
		return NULL;
	}
	want = b->slots ? b->slots * 2 : 4;
	if (want > sqp->cap.max_send_wr)
		want = sqp->cap.max_send_wr;
	wrs = realloc(b->wrs, (size_t)want * sizeof(*wrs));
	if (!wrs) {
		batch_fail(b, ENOMEM);
		return NULL;
	}
	b->wrs = wrs;
	for (; b->slots < want; b->slots++) {
		w = &b->wrs[b->slots];
		memset(w, 0, sizeof(*w));
		w->sge = calloc(sqp->cap.max_send_sge ? sqp->cap.max_send_sge : 1, sizeof(*w->sge));
		if (sqp->cap.max_inline_data)
			w->inline_buf = malloc(sqp->cap.max_inline_data);
		if (!w->sge || (sqp->cap.max_inline_data && !w->inline_buf)) {
			free(w->sge);
			free(w->inline_buf);
			batch_fail(b, ENOMEM);
			return NULL;
		}
	}
	return &b->wrs[b->n];
}

/*
 * A builder: a new WR with the QP's wr_id and wr_flags, or NULL (the batch
 * failed, or the calling thread has none open: nothing to report it in).
 */
static struct ibv_send_wr *wr_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	struct soft_qp *sqp = to_sqpx(qpx);
	struct qpx_wr *w;

	if (!owner_is_me(&sqp->qpx->owner) || sqp->qpx->err)
		return NULL;
	w = batch_slot(sqp);
	if (!w)
		return NULL;
	memset(&w->wr, 0, sizeof(w->wr));
	w->wr.wr_id = qpx->wr_id;
	w->wr.send_flags = qpx->wr_flags;
	w->wr.opcode = opcode;
	w->wr.sg_list = w->sge;
	sqp->qpx->n++;
	return &w->wr;
}

/* The WR a setter applies to: the last one built. */
static struct qpx_wr *wr_last(struct ibv_qp_ex *qpx)
{
	struct qpx_batch *b = to_sqpx(qpx)->qpx;

	if (!owner_is_me(&b->owner) || b->err)
		return NULL;
	if (!b->n) {
		batch_fail(b, EINVAL);
		return NULL;
	}
	return &b->wrs[b->n - 1];
}

static void qpx_send(struct ibv_qp_ex *qpx)
{
	wr_new(qpx, IBV_WR_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void qpx_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t rkey,
		    uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm_data;
}

static void qpx_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			       __be32 imm_data)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void qpx_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void qpx_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = wr_new(qpx, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void qpx_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
			const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = wr_new(qpx, IBV_WR_BIND_MW);

	if (!wr)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *bind_info;
}

/*
 * A UD WR's destination (ibv_wr_set_ud_addr(3)), kept as ibv_post_send()'s
 * wr.ud: ud.c copies the AH's address when the batch is posted and applies
 * IBA 10.2.5's rule (a Q_Key with its high bit set means the QP's own) when
 * the datagram leaves, as for any posted WR. A WR of the batch with no
 * address (no AH) fails ibv_wr_complete() with ibv_post_send()'s EINVAL.
 */
static void qpx_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			    uint32_t remote_qkey)
{
	struct qpx_wr *w = wr_last(qpx);

	if (!w)
		return;
	w->wr.wr.ud.ah = ah;
	w->wr.wr.ud.remote_qpn = remote_qpn;
	w->wr.wr.ud.remote_qkey = remote_qkey;
}

/* SGE setters: the WR carries its buffers by reference, not inline. */
static void qpx_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct soft_qp *sqp = to_sqpx(qpx);
	struct qpx_wr *w = wr_last(qpx);

	if (!w)
		return;
	if (num_sge > sqp->cap.max_send_sge) {
		batch_fail(sqp->qpx, setter_err(EINVAL));
		return;
	}
	if (num_sge)
		memcpy(w->sge, sg_list, num_sge * sizeof(*sg_list));
	w->wr.num_sge = (int)num_sge;
	w->wr.sg_list = w->sge;
	w->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void qpx_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	/* As rxe: a zero length sets no SGE (a message of no bytes). */
	qpx_set_sge_list(qpx, length ? 1 : 0, &sge);
}

/*
 * Inline setters copy now ("allows the caller to immediately re-use the
 * buffer"): the WR then carries one SGE over the copy, with
 * IBV_SEND_INLINE, which ibv_post_send() copies into the WQE.
 */
static void qpx_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				     const struct ibv_data_buf *buf_list)
{
	struct soft_qp *sqp = to_sqpx(qpx);
	struct qpx_wr *w = wr_last(qpx);
	size_t i, len = 0;

	if (!w)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > sqp->cap.max_inline_data - len) {
			batch_fail(sqp->qpx, setter_err(soft_profile()->inline_post_err));
			return;
		}
		if (buf_list[i].length)
			memcpy(w->inline_buf + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	w->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)w->inline_buf, .length = (uint32_t)len };
	w->wr.num_sge = len ? 1 : 0;
	w->wr.sg_list = w->sge;
	w->wr.send_flags |= IBV_SEND_INLINE;
}

static void qpx_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qpx_set_inline_data_list(qpx, 1, &buf);
}

static void qpx_start(struct ibv_qp_ex *qpx)
{
	struct qpx_batch *b = to_sqpx(qpx)->qpx;

	/* A start inside the thread's own batch: that batch fails at complete. */
	if (owner_is_me(&b->owner)) {
		batch_fail(b, EINVAL);
		return;
	}
	pthread_mutex_lock(&b->lock);
	owner_enter(&b->owner);
	b->n = 0;
	b->err = 0;
}

/* The batch is over: discarded or posted. */
static void batch_close(struct qpx_batch *b)
{
	b->n = 0;
	owner_leave(&b->owner);
	pthread_mutex_unlock(&b->lock);
}

static void qpx_abort(struct ibv_qp_ex *qpx)
{
	struct qpx_batch *b = to_sqpx(qpx)->qpx;

	/* Outside a batch of the calling thread's there is nothing to abort. */
	if (owner_is_me(&b->owner))
		batch_close(b);
}

/*
 * ibv_post_send()'s checks. An inline WR's one SGE is the setter's copy,
 * not one of the QP's send SGEs (a QP with none may send inline data), and
 * its length was checked by the setter: checked as carrying none.
 */
static int batch_check_wr(struct soft_qp *sqp, const struct ibv_send_wr *wr)
{
	struct ibv_send_wr inl;

	if (!(wr->send_flags & IBV_SEND_INLINE))
		return post_check_send_wr(sqp, wr);
	inl = *wr;
	inl.num_sge = 0;
	return post_check_send_wr(sqp, &inl);
}

/* Check every WR of the batch, then enqueue them all: 0 or the errno nothing was posted for. */
static int batch_post_locked(struct soft_qp *sqp)
{
	struct qpx_batch *b = sqp->qpx;
	uint32_t i;
	int ret;

	if (sqp->sq_tail - sqp->sq_head + b->n > sqp->cap.max_send_wr)
		return setter_err(ENOMEM);
	for (i = 0; i < b->n; i++) {
		ret = batch_check_wr(sqp, &b->wrs[i].wr);
		if (ret)
			return ret;
	}
	sqp->stats.send_posts++;
	for (i = 0; i < b->n; i++)
		post_enqueue_send_wr(sqp, &b->wrs[i].wr);
	post_kick_locked(sqp);
	return 0;
}

static int qpx_complete(struct ibv_qp_ex *qpx)
{
	struct soft_qp *sqp = to_sqpx(qpx);
	struct qpx_batch *b = sqp->qpx;
	int ret;

	/* Without ibv_wr_start() there is nothing to post (and no lock to let go). */
	if (!owner_is_me(&b->owner))
		return EINVAL;
	ret = b->err;
	if (!ret && b->n) {
		fab_lock();
		ret = batch_post_locked(sqp);
		fab_unlock();
	}
	batch_close(b);
	return ret;
}

/* What a UD QP may build (rxe's RXE_SUP_UD_QP_SEND_OPS_FLAGS, mlx5's ..._UD): Sends alone. */
#define UD_SEND_OPS	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

/* The send_ops_flags ibv_create_qp_ex() accepts for a QP of @type. */
static uint64_t type_send_ops(enum ibv_qp_type type)
{
	uint64_t ops = soft_profile()->qp_send_ops;

	return type == IBV_QPT_UD ? ops & UD_SEND_OPS : ops;
}

/*
 * The builders a QP gets: as rxe, those asked for in send_ops_flags; as
 * mlx5, every one it supports for the QP's type. The setters and the
 * critical section always. wr_set_ud_addr: mlx5 gives it to UD QPs only,
 * rxe to every QP (on RC it writes wr.ud, which RC ignores).
 */
static void qpx_set_ops(struct ibv_qp_ex *qpx, uint64_t ops, enum ibv_qp_type type)
{
	if (soft_profile()->wr_all_builders)
		ops = type_send_ops(type);
	if (ops & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = qpx_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = qpx_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = qpx_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = qpx_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = qpx_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = qpx_rdma_read;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = qpx_local_inv;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = qpx_bind_mw;
	if (type == IBV_QPT_UD || !soft_profile()->wr_all_builders)
		qpx->wr_set_ud_addr = qpx_set_ud_addr;
	qpx->wr_set_sge = qpx_set_sge;
	qpx->wr_set_sge_list = qpx_set_sge_list;
	qpx->wr_set_inline_data = qpx_set_inline_data;
	qpx->wr_set_inline_data_list = qpx_set_inline_data_list;
	qpx->wr_start = qpx_start;
	qpx->wr_complete = qpx_complete;
	qpx->wr_abort = qpx_abort;
}

void qpx_free(struct soft_qp *sqp)
{
	struct qpx_batch *b = sqp->qpx;
	uint32_t i;

	if (!b)
		return;
	for (i = 0; i < b->slots; i++) {
		free(b->wrs[i].sge);
		free(b->wrs[i].inline_buf);
	}
	free(b->wrs);
	pthread_mutex_destroy(&b->lock);
	free(b);
	sqp->qpx = NULL;
}

/*
 * What the profile's provider refuses, as rxe's check_qp_init_attr()
 * refuses it: comp_mask bits past PD, creation flags and send ops the QP's
 * type does not support (atomics: softrdma models none; TSO; on UD all but
 * the Sends) are EOPNOTSUPP. No PD is EINVAL (libibverbs). RC and UD QPs
 * are modelled; any other type is EOPNOTSUPP (siw, with no UD, has no
 * ibv_create_qp_ex() at all).
 */
static int qp_ex_check(struct ibv_context *context, const struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	if (attr->comp_mask & ~known)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~type_send_ops(attr->qp_type)))
		return EOPNOTSUPP;
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD)
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context)
		return EINVAL;
	return 0;
}

struct ibv_qp *soft_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct soft_qp *sqp;
	struct qpx_batch *b;
	int ret = qp_ex_check(context, attr);

	if (ret) {
		errno = ret;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	/* ibv_qp_init_attr_ex begins with the fields of an ibv_qp_init_attr (libibverbs' cast). */
	sqp = qp_create(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (!sqp) {
		free(b);
		return NULL;
	}
	/* Not handed out yet: nobody else reaches these fields. */
	pthread_mutex_init(&b->lock, NULL);
	sqp->qpx = b;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		qpx_set_ops(&sqp->qp_ex, attr->send_ops_flags, attr->qp_type);
	/* As rxe: every QP ibv_create_qp_ex() makes is extended, with or without builders. */
	sqp->comp_mask |= SOFT_VERBS_QP_EX;
	return &sqp->qp;
}

/* libibverbs' own test (verbs_qp.comp_mask): NULL for a QP ibv_create_qp() made. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct soft_qp *sqp = to_sqp(qp);

	return (sqp->comp_mask & SOFT_VERBS_QP_EX) ? &sqp->qp_ex : NULL;
}
