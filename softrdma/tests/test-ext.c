/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: the extended verbs, under the profile in force
 * (SOFTRDMA_PROFILE). Extended CQs polled with ibv_start_poll() and the
 * ibv_wc_read_*() functions, with channels and ibv_poll_cq() beside them;
 * every ibv_wr_*() opcode between two extended QPs, bytes checked; a batch
 * that fails or is aborted posts nothing; UD datagrams addressed with
 * ibv_wr_set_ud_addr(); thread and parent domains, their
 * allocators and EBUSY; and what each profile's provider refuses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <endian.h>

#include "harness.h"

#define LEN 4096
#define WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
		  IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
		  IBV_WC_EX_WITH_DLID_PATH_BITS)
#define SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		  IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE | \
		  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | \
		  IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

static bool is(const char *profile)
{
	return strcmp(softrdma_profile(), profile) == 0;
}

/* What ibv_wr_complete() returns for a setter's error: each provider's own. */
static int setter_errno(int post_errno)
{
	if (is("rxe"))
		return ENOSPC;
	if (is("mlx5"))
		return ENOMEM;
	return post_errno;
}

/* One completion as read through the extended CQ. */
struct ex_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int wc_flags;
	uint32_t byte_len;
	uint32_t imm;			/* host order; the invalidated rkey too */
	uint32_t qp_num;
	uint32_t src_qp;		/* a receive's */
};

/* Two extended QPs, each with an extended CQ on a channel, on @pd. */
struct ex_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch[2];
	struct ibv_cq_ex *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_ex *qpx[2];
	uint8_t *buf[2];
	struct ibv_mr *mr[2];
};

static struct h_opts opts;
/* The send SGEs of the QPs qp_ex() makes, and the depth of pair_open()'s CQs. */
static uint32_t send_sge = 4;
static uint32_t cq_depth = 64;

static struct ibv_context *open_ctx(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	assert_non_null(list);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx, struct ibv_comp_channel *ch,
			       uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = cq_depth, .channel = ch, .wc_flags = wc_flags };

	return ibv_create_cq_ex(ctx, &ca);
}

static struct ibv_qp *qp_ex(struct ibv_pd *pd, struct ibv_cq_ex *cq, uint64_t ops)
{
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = send_sge,
			 .max_recv_sge = 4, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = ops,
	};

	return ibv_create_qp_ex(pd->context, &qa);
}

static void pair_open_on(struct ex_pair *p, struct ibv_context *ctx, struct ibv_pd *pd,
			 struct ibv_pd *mr_pd)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	p->pd = pd;
	for (i = 0; i < 2; i++) {
		p->ch[i] = ibv_create_comp_channel(ctx);
		assert_non_null(p->ch[i]);
		p->cq[i] = cq_ex(ctx, p->ch[i], WC_FLAGS);
		assert_non_null(p->cq[i]);
		p->qp[i] = qp_ex(pd, p->cq[i], SEND_OPS);
		assert_non_null(p->qp[i]);
		p->qpx[i] = ibv_qp_to_qp_ex(p->qp[i]);
		assert_non_null(p->qpx[i]);
		p->buf[i] = calloc(1, LEN);
		assert_non_null(p->buf[i]);
		p->mr[i] = h_reg(mr_pd, p->buf[i], LEN, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_MW_BIND);
	}
	h_qp_to_rts(p->qp[0], p->qp[1]->qp_num, &opts);
	h_qp_to_rts(p->qp[1], p->qp[0]->qp_num, &opts);
}

/* On a context and PD of their own, closed by pair_close(). */
static void pair_open(struct ex_pair *p)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	assert_non_null(pd);
	pair_open_on(p, ctx, pd, pd);
}

static void pair_close_qps(struct ex_pair *p)
{
	int i;

	h_settle();
	for (i = 0; i < 2; i++) {
		assert_int_equal(ibv_destroy_qp(p->qp[i]), 0);
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(p->cq[i])), 0);
		assert_int_equal(ibv_destroy_comp_channel(p->ch[i]), 0);
		assert_int_equal(ibv_dereg_mr(p->mr[i]), 0);
		free(p->buf[i]);
	}
}

static void pair_close(struct ex_pair *p)
{
	pair_close_qps(p);
	assert_int_equal(ibv_dealloc_pd(p->pd), 0);
	assert_int_equal(ibv_close_device(p->ctx), 0);
}

/* Skip (77) under a profile whose provider has no extended QPs and CQs (siw). */
static bool ext_offered(void)
{
	return !is("siw");
}

/*
 * Read up to @n completions through one batch each time round, within the
 * deadline: start_poll, next_poll until ENOENT, end_poll.
 */
static int ex_poll(struct ibv_cq_ex *cq, struct ex_wc *out, int n)
{
	uint64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	struct ibv_poll_cq_attr attr = { 0 };
	int got = 0, ret;

	while (got < n && h_now_ms() < deadline) {
		if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
			softrdma_progress(1);
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
			continue;
		}
		assert_int_equal(ret, 0);
		do {
			struct ex_wc *w = &out[got++];

			w->wr_id = cq->wr_id;
			w->status = cq->status;
			w->opcode = ibv_wc_read_opcode(cq);
			w->wc_flags = ibv_wc_read_wc_flags(cq);
			w->qp_num = ibv_wc_read_qp_num(cq);
			if (w->status == IBV_WC_SUCCESS && (w->opcode & IBV_WC_RECV)) {
				w->byte_len = ibv_wc_read_byte_len(cq);
				w->src_qp = ibv_wc_read_src_qp(cq);
			}
			if (w->wc_flags & IBV_WC_WITH_IMM)
				w->imm = be32toh(ibv_wc_read_imm_data(cq));
			if (w->wc_flags & IBV_WC_WITH_INV)
				w->imm = ibv_wc_read_invalidated_rkey(cq);
		} while (got < n && (ret = ibv_next_poll(cq)) == 0);
		if (got < n)
			assert_int_equal(ret, ENOENT);
		ibv_end_poll(cq);
	}
	return got;
}

/* A batch started on a completion, within the deadline (the CQ is empty until it comes). */
static void ex_start(struct ibv_cq_ex *cq)
{
	uint64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	struct ibv_poll_cq_attr attr = { 0 };
	int ret;

	do {
		h_settle();
		ret = ibv_start_poll(cq, &attr);
	} while (ret == ENOENT && h_now_ms() < deadline);
	assert_int_equal(ret, 0);
}

static void expect_one(struct ibv_cq_ex *cq, uint64_t wr_id, enum ibv_wc_opcode op,
		       struct ex_wc *w)
{
	assert_int_equal(ex_poll(cq, w, 1), 1);
	assert_int_equal(w->status, IBV_WC_SUCCESS);
	assert_int_equal(w->wr_id, wr_id);
	assert_int_equal(w->opcode, op);
}

static void post_recv(struct ex_pair *p, int i, uint64_t wr_id, uint32_t off, uint32_t len)
{
	assert_int_equal(h_post_recv(p->qp[i], wr_id, p->buf[i] + off, len, p->mr[i]->lkey), 0);
}

/* ---- extended CQs ----------------------------------------------------------------- */

static void test_cq_ex_empty(void **state)
{
	struct ibv_poll_cq_attr attr = { 0 };
	struct ex_pair p;
	struct ex_wc w;
	struct ibv_wc wc;

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	assert_int_equal(ibv_start_poll(p.cq[0], &attr), ENOENT);
	/* ENOENT holds nothing: ibv_poll_cq() and a new batch still work. */
	assert_int_equal(ibv_start_poll(p.cq[0], &attr), ENOENT);
	memset(p.buf[0], 0x11, 16);
	post_recv(&p, 1, 7, 0, 64);
	assert_int_equal(h_post(p.qp[0], 8, IBV_WR_SEND, p.buf[0], 16, p.mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(ibv_cq_ex_to_cq(p.cq[0]), &wc, 1), 1);
	assert_int_equal(wc.wr_id, 8);
	expect_one(p.cq[1], 7, IBV_WC_RECV, &w);
	assert_int_equal(w.byte_len, 16);
	assert_int_equal(w.qp_num, p.qp[1]->qp_num);
	assert_int_equal(ibv_start_poll(p.cq[1], &attr), ENOENT);
	/* An attribute with fields no provider knows. */
	attr.comp_mask = 1;
	assert_int_equal(ibv_start_poll(p.cq[1], &attr), EINVAL);
	pair_close(&p);
}

/* Arm, one completion raises the event, the batch reads it; ibv_poll_cq() reads the next. */
static void test_cq_ex_channel_mixed(void **state)
{
	struct ex_pair p;
	struct ex_wc w;
	struct ibv_wc wc;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	assert_int_equal(ibv_req_notify_cq(ibv_cq_ex_to_cq(p.cq[1]), 0), 0);
	post_recv(&p, 1, 1, 0, 64);
	post_recv(&p, 1, 2, 64, 64);
	assert_int_equal(h_post(p.qp[0], 3, IBV_WR_SEND, p.buf[0], 8, p.mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_post(p.qp[0], 4, IBV_WR_SEND, p.buf[0], 9, p.mr[0]->lkey, 0, 0, 0), 0);
	h_settle();
	assert_int_equal(ibv_get_cq_event(p.ch[1], &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, ibv_cq_ex_to_cq(p.cq[1]));
	ibv_ack_cq_events(ev_cq, 1);
	expect_one(p.cq[1], 1, IBV_WC_RECV, &w);
	assert_int_equal(w.byte_len, 8);
	assert_int_equal(h_poll(ibv_cq_ex_to_cq(p.cq[1]), &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, 9);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[1]));
	pair_close(&p);
}

/*
 * The readers a CQ gets are those its wc_flags asked for; an error completion reads
 * its status, vendor_err and QP; the flush after it too.
 */
static void test_cq_ex_readers_and_errors(void **state)
{
	struct ibv_cq_ex *narrow;
	struct ex_pair p;
	struct ex_wc w[2];
	uint32_t vendor_err;
	struct ibv_poll_cq_attr attr = { 0 };

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	assert_non_null(p.cq[0]->read_byte_len);
	assert_non_null(p.cq[0]->read_imm_data);
	assert_non_null(p.cq[0]->read_src_qp);
	assert_non_null(p.cq[0]->read_slid);
	assert_non_null(p.cq[0]->read_sl);
	assert_non_null(p.cq[0]->read_dlid_path_bits);
	narrow = cq_ex(p.ctx, NULL, IBV_WC_EX_WITH_BYTE_LEN);
	assert_non_null(narrow);
	assert_non_null(narrow->read_byte_len);
	assert_non_null(narrow->read_opcode);
	assert_non_null(narrow->read_vendor_err);
	assert_non_null(narrow->read_wc_flags);
	assert_null(narrow->read_imm_data);
	assert_null(narrow->read_qp_num);
	assert_null(narrow->read_src_qp);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(narrow)), 0);

	/* A Write to a key nobody has: REM_ACCESS_ERR, then the QP's next WR flushes. */
	assert_int_equal(h_post(p.qp[0], 5, IBV_WR_RDMA_WRITE, p.buf[0], 8, p.mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)p.buf[1], 0x7fff00), 0);
	h_settle();
	assert_int_equal(h_post(p.qp[0], 6, IBV_WR_SEND, p.buf[0], 8, p.mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(ex_poll(p.cq[0], w, 1), 1);
	assert_int_equal(w[0].wr_id, 5);
	assert_int_equal(w[0].status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(w[0].qp_num, p.qp[0]->qp_num);
	ex_start(p.cq[0]);
	assert_int_equal(p.cq[0]->wr_id, 6);
	assert_int_equal(p.cq[0]->status, IBV_WC_WR_FLUSH_ERR);
	vendor_err = ibv_wc_read_vendor_err(p.cq[0]);
	assert_int_not_equal(vendor_err, 0);
	assert_int_equal(ibv_next_poll(p.cq[0]), ENOENT);
	/* Past ENOENT the batch is still open until ibv_end_poll(). */
	assert_int_equal(ibv_next_poll(p.cq[0]), ENOENT);
	ibv_end_poll(p.cq[0]);
	assert_int_equal(ibv_start_poll(p.cq[0], &attr), ENOENT);
	pair_close(&p);
}

/* Out of turn: refused where rxe and mlx5 would deadlock or unlock a lock they do not hold. */
static void test_cq_ex_outside_batch(void **state)
{
	struct ibv_poll_cq_attr attr = { 0 };
	struct ex_pair p;
	struct ibv_wc wc;

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	assert_int_equal(ibv_next_poll(p.cq[0]), EINVAL);
	ibv_end_poll(p.cq[0]);
	assert_int_equal(h_post(p.qp[0], 4, IBV_WR_RDMA_WRITE, NULL, 0, 0, IBV_SEND_SIGNALED, 0,
				0), 0);
	ex_start(p.cq[0]);
	assert_int_equal(p.cq[0]->wr_id, 4);
	assert_int_equal(ibv_start_poll(p.cq[0], &attr), EINVAL);
	assert_int_equal(ibv_poll_cq(ibv_cq_ex_to_cq(p.cq[0]), 1, &wc), -EDEADLK);
	ibv_end_poll(p.cq[0]);
	ibv_end_poll(p.cq[0]);
	assert_int_equal(ibv_start_poll(p.cq[0], &attr), ENOENT);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[0]));
	pair_close(&p);
}

/* An extended CQ overruns as a plain one: IBV_EVENT_CQ_ERR names it, what fitted stays. */
static void test_cq_ex_overrun(void **state)
{
	struct ex_pair p;
	struct ex_wc w[2];
	int i;

	(void)state;
	if (!ext_offered())
		skip();
	cq_depth = 2;
	pair_open(&p);
	cq_depth = 64;
	for (i = 0; i < 3; i++)
		assert_int_equal(h_post(p.qp[0], (uint64_t)i, IBV_WR_RDMA_WRITE, NULL, 0, 0,
					IBV_SEND_SIGNALED, 0, 0), 0);
	h_settle();
	h_expect_async(p.ctx, IBV_EVENT_CQ_ERR, ibv_cq_ex_to_cq(p.cq[0]));
	assert_int_equal(ex_poll(p.cq[0], w, 2), 2);
	assert_int_equal(w[0].wr_id, 0);
	assert_int_equal(w[1].wr_id, 1);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[0]));
	pair_close(&p);
}

/* ---- ibv_wr_*: every opcode, end to end ---------------------------------------- */

/* A window of QP 1 over buf[1][1024, 2048), bound with ibv_wr_bind_mw(); its rkey. */
static uint32_t wr_bind(struct ex_pair *p, struct ibv_mw *mw)
{
	struct ibv_mw_bind_info info = {
		.mr = p->mr[1], .addr = (uintptr_t)p->buf[1] + 1024, .length = 1024,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
	};
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ex_wc w;

	ibv_wr_start(p->qpx[1]);
	p->qpx[1]->wr_id = 100;
	p->qpx[1]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p->qpx[1], mw, rkey, &info);
	assert_int_equal(ibv_wr_complete(p->qpx[1]), 0);
	expect_one(p->cq[1], 100, IBV_WC_BIND_MW, &w);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_VALID);
	return rkey;
}

static void test_wr_opcodes(void **state)
{
	struct ibv_qp_ex *q;
	struct ibv_data_buf inl[2];
	struct ibv_sge sges[2];
	struct ibv_mw *mw;
	struct ex_pair p;
	struct ex_wc w[4];
	uint32_t rkey;
	int i;

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	q = p.qpx[0];
	for (i = 0; i < 256; i++)
		p.buf[0][i] = (uint8_t)(i * 7 + 1);
	mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	rkey = wr_bind(&p, mw);

	/* A Write through the window from two SGEs, then a Write With Immediate, inline. */
	sges[0] = (struct ibv_sge){ (uintptr_t)p.buf[0], 100, p.mr[0]->lkey };
	sges[1] = (struct ibv_sge){ (uintptr_t)p.buf[0] + 100, 28, p.mr[0]->lkey };
	inl[0] = (struct ibv_data_buf){ p.buf[0] + 128, 20 };
	inl[1] = (struct ibv_data_buf){ p.buf[0] + 148, 12 };
	post_recv(&p, 1, 1, 0, 0);
	ibv_wr_start(q);
	q->wr_id = 11;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(q, rkey, (uintptr_t)p.buf[1] + 1024);
	ibv_wr_set_sge_list(q, 2, sges);
	q->wr_id = 12;
	ibv_wr_rdma_write_imm(q, rkey, (uintptr_t)p.buf[1] + 1024 + 128, htobe32(0xabc));
	ibv_wr_set_inline_data_list(q, 2, inl);
	assert_int_equal(ibv_wr_complete(q), 0);
	/* Inline data is the setter's copy: changing the source now changes nothing. */
	memset(p.buf[0] + 128, 0, 32);
	expect_one(p.cq[0], 11, IBV_WC_RDMA_WRITE, w);
	expect_one(p.cq[0], 12, IBV_WC_RDMA_WRITE, w);
	expect_one(p.cq[1], 1, IBV_WC_RECV_RDMA_WITH_IMM, w);
	assert_true(w[0].wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(w[0].imm, 0xabc);
	assert_int_equal(w[0].byte_len, 32);
	for (i = 0; i < 128; i++)
		assert_int_equal(p.buf[1][1024 + i], (uint8_t)(i * 7 + 1));
	for (i = 128; i < 160; i++)
		assert_int_equal(p.buf[1][1024 + i], (uint8_t)(i * 7 + 1));

	/* A Read of those 160 bytes back into buf[0][512, 672). */
	ibv_wr_start(q);
	q->wr_id = 13;
	ibv_wr_rdma_read(q, rkey, (uintptr_t)p.buf[1] + 1024);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0] + 512, 160);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(p.cq[0], 13, IBV_WC_RDMA_READ, w);
	assert_memory_equal(p.buf[0] + 512, p.buf[1] + 1024, 160);

	/* Send, Send With Immediate (inline), Send With Invalidate of the window. */
	post_recv(&p, 1, 2, 0, 64);
	post_recv(&p, 1, 3, 64, 64);
	post_recv(&p, 1, 4, 128, 64);
	ibv_wr_start(q);
	q->wr_id = 14;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 40);
	q->wr_id = 15;
	ibv_wr_send_imm(q, htobe32(0x1234));
	ibv_wr_set_inline_data(q, p.buf[0] + 40, 24);
	q->wr_id = 16;
	ibv_wr_send_inv(q, rkey);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0] + 64, 8);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(p.cq[0], 14, IBV_WC_SEND, w);
	expect_one(p.cq[0], 15, IBV_WC_SEND, w);
	expect_one(p.cq[0], 16, IBV_WC_SEND, w);
	expect_one(p.cq[1], 2, IBV_WC_RECV, &w[0]);
	expect_one(p.cq[1], 3, IBV_WC_RECV, &w[1]);
	expect_one(p.cq[1], 4, IBV_WC_RECV, &w[2]);
	assert_int_equal(w[0].byte_len, 40);
	assert_int_equal(w[0].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV), 0);
	assert_int_equal(w[1].byte_len, 24);
	assert_int_equal(w[1].imm, 0x1234);
	assert_int_equal(w[2].byte_len, 8);
	assert_true(w[2].wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(w[2].imm, rkey);
	assert_memory_equal(p.buf[1], p.buf[0], 40);
	assert_memory_equal(p.buf[1] + 64, p.buf[0] + 40, 24);
	assert_memory_equal(p.buf[1] + 128, p.buf[0] + 64, 8);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_FREE);

	/* Bind again, and a Local Invalidate of it from its own QP. */
	rkey = wr_bind(&p, mw);
	ibv_wr_start(p.qpx[1]);
	p.qpx[1]->wr_id = 17;
	p.qpx[1]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(p.qpx[1], rkey);
	assert_int_equal(ibv_wr_complete(p.qpx[1]), 0);
	expect_one(p.cq[1], 17, IBV_WC_LOCAL_INV, w);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_FREE);

	assert_int_equal(ibv_dealloc_mw(mw), 0);
	pair_close(&p);
}

/* Inline data needs no send SGE of the QP: the setter copies it (rxe and mlx5 alike). */
static void test_wr_inline_without_sges(void **state)
{
	struct ex_pair p;
	struct ex_wc w;

	(void)state;
	if (!ext_offered())
		skip();
	send_sge = 0;
	pair_open(&p);
	send_sge = 4;
	memcpy(p.buf[0], "inline, no SGE", 14);
	post_recv(&p, 1, 1, 0, 64);
	ibv_wr_start(p.qpx[0]);
	p.qpx[0]->wr_id = 2;
	p.qpx[0]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(p.qpx[0]);
	ibv_wr_set_inline_data(p.qpx[0], p.buf[0], 14);
	assert_int_equal(ibv_wr_complete(p.qpx[0]), 0);
	expect_one(p.cq[0], 2, IBV_WC_SEND, &w);
	expect_one(p.cq[1], 1, IBV_WC_RECV, &w);
	assert_int_equal(w.byte_len, 14);
	assert_memory_equal(p.buf[1], "inline, no SGE", 14);
	pair_close(&p);
}

/* ---- batches that fail or are aborted post nothing ------------------------------ */

static unsigned int send_wrs(void)
{
	struct softrdma_counts c;

	softrdma_get_counts(&c);
	return c.send_wrs;
}

static void test_wr_batch_fails(void **state)
{
	struct ibv_sge sges[5];
	struct ibv_qp_ex *q;
	struct ibv_qp *idle;
	struct ex_pair p;
	struct ex_wc w;
	int i;

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	q = p.qpx[0];
	for (i = 0; i < 5; i++)
		sges[i] = (struct ibv_sge){ (uintptr_t)p.buf[0] + i, 1, p.mr[0]->lkey };
	post_recv(&p, 1, 1, 0, 64);

	/* A good Send, then one with more SGEs than the QP has: neither goes. */
	ibv_wr_start(q);
	q->wr_id = 1;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	ibv_wr_send(q);
	ibv_wr_set_sge_list(q, 5, sges);
	assert_int_equal(ibv_wr_complete(q), setter_errno(EINVAL));
	/* A good Send and inline data past the QP's max_inline_data (64). */
	ibv_wr_start(q);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	ibv_wr_send(q);
	ibv_wr_set_inline_data(q, p.buf[0], LEN);
	assert_int_equal(ibv_wr_complete(q), setter_errno(is("mlx5") ? ENOMEM : EINVAL));
	/* A setter with no WR to apply to. */
	ibv_wr_start(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	assert_int_equal(ibv_wr_complete(q), EINVAL);
	/* More WRs than the SQ holds (16). */
	ibv_wr_start(q);
	for (i = 0; i < 17; i++) {
		ibv_wr_send(q);
		ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	}
	assert_int_equal(ibv_wr_complete(q), setter_errno(ENOMEM));
	/* Aborted: nothing goes either. */
	ibv_wr_start(q);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	ibv_wr_abort(q);
	h_settle();
	assert_int_equal(send_wrs(), 0);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[0]));
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[1]));

	/* A QP not in RTS fails the batch at ibv_wr_complete(), as ibv_post_send() would. */
	idle = qp_ex(p.pd, p.cq[0], SEND_OPS);
	assert_non_null(idle);
	ibv_wr_start(ibv_qp_to_qp_ex(idle));
	ibv_wr_send(ibv_qp_to_qp_ex(idle));
	ibv_wr_set_sge(ibv_qp_to_qp_ex(idle), p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	assert_int_equal(ibv_wr_complete(ibv_qp_to_qp_ex(idle)), EINVAL);
	assert_int_equal(send_wrs(), 0);
	assert_int_equal(ibv_destroy_qp(idle), 0);

	/* The QP still works: the one receive gets the next good Send, and only it. */
	memset(p.buf[0], 0x5a, 8);
	ibv_wr_start(q);
	q->wr_id = 9;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(p.cq[0], 9, IBV_WC_SEND, &w);
	expect_one(p.cq[1], 1, IBV_WC_RECV, &w);
	assert_int_equal(w.byte_len, 8);
	assert_memory_equal(p.buf[1], p.buf[0], 8);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[1]));
	pair_close(&p);
}

/*
 * Calls out of turn are refused, where rxe and mlx5 would unlock a lock they
 * do not hold: nothing they build is posted, and the QP works on after.
 */
static void test_wr_outside_batch(void **state)
{
	struct ibv_qp_ex *q;
	struct ex_pair p;
	struct ex_wc w;

	(void)state;
	if (!ext_offered())
		skip();
	pair_open(&p);
	q = p.qpx[0];
	assert_int_equal(ibv_wr_complete(q), EINVAL);
	ibv_wr_abort(q);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	/* A start inside the thread's own batch fails it. */
	ibv_wr_start(q);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	ibv_wr_start(q);
	assert_int_equal(ibv_wr_complete(q), EINVAL);
	assert_int_equal(ibv_wr_complete(q), EINVAL);
	h_settle();
	assert_int_equal(send_wrs(), 0);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[0]));

	post_recv(&p, 1, 1, 0, 64);
	memset(p.buf[0], 0x77, 8);
	ibv_wr_start(q);
	q->wr_id = 3;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(p.cq[0], 3, IBV_WC_SEND, &w);
	expect_one(p.cq[1], 1, IBV_WC_RECV, &w);
	assert_memory_equal(p.buf[1], p.buf[0], 8);
	h_assert_empty(ibv_cq_ex_to_cq(p.cq[1]));
	pair_close(&p);
}

/* ---- extended UD QPs ------------------------------------------------------------- */

#define UD_QKEY		0x11111111u
#define UD_GRH		40
#define UD_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

/* Two extended UD QPs in RTS, each with an extended CQ, and an AH to GID 0. */
struct ud_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_ex *qpx[2];
	struct ibv_ah *ah;
	uint8_t *buf[2];
	struct ibv_mr *mr[2];
};

static struct ibv_qp *ud_qp_ex(struct ibv_pd *pd, struct ibv_cq_ex *cq, uint64_t ops)
{
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = ops,
	};

	return ibv_create_qp_ex(pd->context, &qa);
}

/* RESET -> INIT (P_Key index, port, Q_Key) -> RTR -> RTS (send PSN). */
static void ud_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };

	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY), 0);
	attr.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0x42;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

static void ud_pair_open(struct ud_pair *u)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	int i;

	memset(u, 0, sizeof(*u));
	u->ctx = open_ctx();
	u->pd = ibv_alloc_pd(u->ctx);
	assert_non_null(u->pd);
	for (i = 0; i < 2; i++) {
		u->cq[i] = cq_ex(u->ctx, NULL, WC_FLAGS);
		assert_non_null(u->cq[i]);
		u->qp[i] = ud_qp_ex(u->pd, u->cq[i], UD_OPS);
		assert_non_null(u->qp[i]);
		u->qpx[i] = ibv_qp_to_qp_ex(u->qp[i]);
		assert_non_null(u->qpx[i]);
		ud_to_rts(u->qp[i]);
		u->buf[i] = calloc(1, LEN);
		assert_non_null(u->buf[i]);
		u->mr[i] = h_reg(u->pd, u->buf[i], LEN, IBV_ACCESS_LOCAL_WRITE);
	}
	aa.grh.hop_limit = 64;
	assert_int_equal(ibv_query_gid(u->ctx, 1, 0, &aa.grh.dgid), 0);
	u->ah = ibv_create_ah(u->pd, &aa);
	assert_non_null(u->ah);
}

static void ud_pair_close(struct ud_pair *u)
{
	int i;

	h_settle();
	assert_int_equal(ibv_destroy_ah(u->ah), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(ibv_destroy_qp(u->qp[i]), 0);
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(u->cq[i])), 0);
		assert_int_equal(ibv_dereg_mr(u->mr[i]), 0);
		free(u->buf[i]);
	}
	assert_int_equal(ibv_dealloc_pd(u->pd), 0);
	assert_int_equal(ibv_close_device(u->ctx), 0);
}

static void ud_recv(struct ud_pair *u, uint64_t wr_id, uint32_t len)
{
	assert_int_equal(h_post_recv(u->qp[1], wr_id, u->buf[1], UD_GRH + len, u->mr[1]->lkey),
			 0);
}

/* The datagram's receive: its wr_id, @len bytes after the GRH, from QP 0. */
static void ud_expect_recv(struct ud_pair *u, uint64_t wr_id, uint32_t len, struct ex_wc *w)
{
	expect_one(u->cq[1], wr_id, IBV_WC_RECV, w);
	assert_int_equal(w->byte_len, UD_GRH + len);
	assert_int_equal(w->src_qp, u->qp[0]->qp_num);
	assert_true(w->wc_flags & IBV_WC_GRH);
}

/*
 * ibv_wr_*() on UD QPs, as rxe allows them (Send and Send with immediate):
 * each WR's destination from ibv_wr_set_ud_addr(), through the path
 * ibv_post_send()'s wr.ud takes, with its rules: the high bit of the Q_Key
 * asks for the QP's own, another Q_Key is dropped at the receiver, a WR
 * without an address fails the whole batch.
 */
static void test_wr_ud(void **state)
{
	struct ibv_qp_ex *q;
	struct ud_pair u;
	struct ex_wc w;
	uint32_t dst;

	(void)state;
	if (!ext_offered())
		skip();
	ud_pair_open(&u);
	q = u.qpx[0];
	dst = u.qp[1]->qp_num;
	/* Only the Sends are built on UD; the address setter is there. */
	assert_non_null(q->wr_set_ud_addr);
	assert_non_null(q->wr_send_imm);
	assert_null(q->wr_rdma_write);
	assert_null(q->wr_send_inv);

	/* A Send: 32 bytes after the receive's 40-byte GRH. */
	ud_recv(&u, 1, 32);
	memset(u.buf[0], 0x5e, 32);
	ibv_wr_start(q);
	q->wr_id = 10;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_ud_addr(q, u.ah, dst, UD_QKEY);
	ibv_wr_set_sge(q, u.mr[0]->lkey, (uintptr_t)u.buf[0], 32);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(u.cq[0], 10, IBV_WC_SEND, &w);
	ud_expect_recv(&u, 1, 32, &w);
	assert_false(w.wc_flags & IBV_WC_WITH_IMM);
	assert_memory_equal(u.buf[1] + UD_GRH, u.buf[0], 32);

	/* With immediate data, and the QP's own Q_Key asked for with the high bit. */
	ud_recv(&u, 2, 8);
	ibv_wr_start(q);
	q->wr_id = 11;
	ibv_wr_send_imm(q, htobe32(0xfeed));
	ibv_wr_set_ud_addr(q, u.ah, dst, 0x80000000u);
	ibv_wr_set_sge(q, u.mr[0]->lkey, (uintptr_t)u.buf[0], 8);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(u.cq[0], 11, IBV_WC_SEND, &w);
	ud_expect_recv(&u, 2, 8, &w);
	assert_true(w.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(w.imm, 0xfeed);

	/* Another Q_Key is dropped; two WRs of one batch, the second inline and empty. */
	ud_recv(&u, 3, 16);
	ibv_wr_start(q);
	q->wr_id = 12;
	ibv_wr_send(q);
	ibv_wr_set_ud_addr(q, u.ah, dst, UD_QKEY + 1);
	ibv_wr_set_inline_data(q, u.buf[0], 16);
	q->wr_id = 13;
	ibv_wr_send(q);
	ibv_wr_set_ud_addr(q, u.ah, dst, UD_QKEY);
	ibv_wr_set_sge(q, u.mr[0]->lkey, (uintptr_t)u.buf[0], 0);
	assert_int_equal(ibv_wr_complete(q), 0);
	expect_one(u.cq[0], 12, IBV_WC_SEND, &w);
	expect_one(u.cq[0], 13, IBV_WC_SEND, &w);
	ud_expect_recv(&u, 3, 0, &w);

	/* A WR with no address: the batch fails whole, nothing leaves. */
	ud_recv(&u, 4, 16);
	ibv_wr_start(q);
	q->wr_id = 14;
	ibv_wr_send(q);
	ibv_wr_set_ud_addr(q, u.ah, dst, UD_QKEY);
	ibv_wr_set_sge(q, u.mr[0]->lkey, (uintptr_t)u.buf[0], 16);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, u.mr[0]->lkey, (uintptr_t)u.buf[0], 16);
	assert_int_equal(ibv_wr_complete(q), EINVAL);
	h_settle();
	h_assert_empty(ibv_cq_ex_to_cq(u.cq[0]));
	h_assert_empty(ibv_cq_ex_to_cq(u.cq[1]));
	/* The receive is still there for an inline Send. */
	memset(u.buf[0], 0x61, 16);
	ibv_wr_start(q);
	q->wr_id = 15;
	ibv_wr_send(q);
	ibv_wr_set_inline_data(q, u.buf[0], 16);
	ibv_wr_set_ud_addr(q, u.ah, dst, UD_QKEY);
	assert_int_equal(ibv_wr_complete(q), 0);
	memset(u.buf[0], 0, 16);
	expect_one(u.cq[0], 15, IBV_WC_SEND, &w);
	ud_expect_recv(&u, 4, 16, &w);
	assert_int_equal(u.buf[1][UD_GRH], 0x61);
	assert_int_equal(u.buf[1][UD_GRH + 15], 0x61);
	ud_pair_close(&u);
}

/* ---- thread and parent domains ---------------------------------------------------- */

struct alloc_count {
	unsigned int allocs, frees, live;
	unsigned int defaults;		/* calls answered IBV_ALLOCATOR_USE_DEFAULT */
};

static void *count_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
			 uint64_t resource_type)
{
	struct alloc_count *c = pd_context;
	void *ptr;

	/* As rdma-core's own tests' allocator: posix_memalign(), not zeroed. */
	if (posix_memalign(&ptr, alignment, size))
		return NULL;
	memset(ptr, 0xa5, size);
	c->allocs++;
	c->live++;
	return ptr;
}

static void count_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
	struct alloc_count *c = pd_context;

	c->frees++;
	c->live--;
	free(ptr);
}

/* Every buffer from the provider's own allocator. */
static void *default_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
			   uint64_t resource_type)
{
	struct alloc_count *c = pd_context;

	c->defaults++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static struct ibv_pd *parent_of(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_td *td,
				struct alloc_count *c)
{
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd, .td = td, .alloc = count_alloc, .free = count_free, .pd_context = c,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
	};

	return ibv_alloc_parent_domain(ctx, &pa);
}

/* rxe and siw have neither: libibverbs' EOPNOTSUPP. */
static void test_domains_refused(void **state)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_context *ctx;
	struct alloc_count c = { 0 };
	struct ibv_pd *pd;

	(void)state;
	if (is("softrdma") || is("mlx5"))
		skip();
	ctx = open_ctx();
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	errno = 0;
	assert_null(ibv_alloc_td(ctx, &ta));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(parent_of(ctx, pd, NULL, &c));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* QPs, a CQ, an SRQ and MRs on a parent domain; traffic; every EBUSY on the way down. */
static void test_parent_domain(void **state)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_parent_domain_init_attr bad = { 0 };
	struct alloc_count c = { 0 };
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 8, .wc_flags = WC_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_context *ctx;
	struct ibv_pd *pd, *par;
	struct ibv_td *td;
	struct ibv_cq_ex *pcq;
	struct ibv_srq *srq;
	struct ibv_mr *pmr;
	struct ex_pair p;
	struct ex_wc w;
	unsigned int qp_live, srq_live;

	(void)state;
	if (!is("softrdma") && !is("mlx5"))
		skip();
	ctx = open_ctx();
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	ta.comp_mask = 1;
	errno = 0;
	assert_null(ibv_alloc_td(ctx, &ta));
	assert_int_equal(errno, EINVAL);
	ta.comp_mask = 0;
	td = ibv_alloc_td(ctx, &ta);
	assert_non_null(td);
	/* "pd: reference to a protection domain, can't be NULL." */
	errno = 0;
	assert_null(ibv_alloc_parent_domain(ctx, &bad));
	assert_int_equal(errno, EINVAL);
	par = parent_of(ctx, pd, td, &c);
	assert_non_null(par);
	assert_ptr_equal(par->context, ctx);
	assert_int_equal(ibv_dealloc_td(td), EBUSY);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);

	/* Its allocator holds the ring of a CQ made on it; a plain PD there is EINVAL. */
	ca.parent_domain = pd;
	errno = 0;
	assert_null(ibv_create_cq_ex(ctx, &ca));
	assert_int_equal(errno, EINVAL);
	ca.parent_domain = par;
	pcq = ibv_create_cq_ex(ctx, &ca);
	assert_non_null(pcq);
	assert_int_equal(c.allocs, 1);
	assert_int_equal(ibv_resize_cq(ibv_cq_ex_to_cq(pcq), 16), 0);
	assert_int_equal(c.allocs, 2);
	assert_int_equal(c.live, 1);

	/*
	 * QPs on the parent domain reach MRs of its PD: one protection domain.
	 * Their rings, and an SRQ's, come from its allocator too.
	 */
	pair_open_on(&p, ctx, par, pd);
	assert_true(c.live >= 1 + 2);
	qp_live = c.live;
	srq = ibv_create_srq(par, &sa);
	assert_non_null(srq);
	assert_true(c.live > qp_live);
	srq_live = c.live - qp_live;
	pmr = h_reg(par, p.buf[0] + 2048, 64, IBV_ACCESS_LOCAL_WRITE);
	post_recv(&p, 1, 1, 0, 64);
	memset(p.buf[0] + 2048, 0x3c, 32);
	ibv_wr_start(p.qpx[0]);
	p.qpx[0]->wr_id = 2;
	p.qpx[0]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(p.qpx[0]);
	ibv_wr_set_sge(p.qpx[0], pmr->lkey, (uintptr_t)p.buf[0] + 2048, 32);
	assert_int_equal(ibv_wr_complete(p.qpx[0]), 0);
	expect_one(p.cq[0], 2, IBV_WC_SEND, &w);
	expect_one(p.cq[1], 1, IBV_WC_RECV, &w);
	assert_memory_equal(p.buf[1], p.buf[0] + 2048, 32);

	/* EBUSY while anything lives on it, then down in order. */
	assert_int_equal(ibv_dealloc_pd(par), EBUSY);
	pair_close_qps(&p);
	assert_int_equal(c.live, 1 + srq_live);
	assert_int_equal(ibv_dealloc_pd(par), EBUSY);
	assert_int_equal(ibv_dereg_mr(pmr), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(c.live, 1);
	assert_int_equal(ibv_dealloc_pd(par), EBUSY);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(pcq)), 0);
	assert_int_equal(c.frees, c.allocs);
	assert_int_equal(c.live, 0);
	assert_int_equal(c.defaults, 0);
	assert_int_equal(ibv_dealloc_pd(par), 0);
	assert_int_equal(ibv_dealloc_td(td), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * An allocator that answers IBV_ALLOCATOR_USE_DEFAULT for every buffer is
 * asked for each QP's and SRQ's rings, and its free is never called: the
 * provider frees what it allocated itself. Traffic runs over those rings.
 */
static void test_parent_domain_default(void **state)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_parent_domain_init_attr pa = {
		.alloc = default_alloc, .free = count_free,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
	};
	struct alloc_count c = { 0 };
	struct ibv_context *ctx;
	struct ibv_pd *pd, *par;
	struct ibv_srq *srq;
	struct ex_pair p;
	struct ex_wc w;
	unsigned int qp_calls;

	(void)state;
	if (!is("softrdma") && !is("mlx5"))
		skip();
	ctx = open_ctx();
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	pa.pd = pd;
	pa.pd_context = &c;
	par = ibv_alloc_parent_domain(ctx, &pa);
	assert_non_null(par);
	pair_open_on(&p, ctx, par, pd);
	assert_true(c.defaults >= 2);
	qp_calls = c.defaults;
	srq = ibv_create_srq(par, &sa);
	assert_non_null(srq);
	assert_true(c.defaults > qp_calls);

	post_recv(&p, 1, 1, 0, 64);
	memset(p.buf[0], 0x2d, 24);
	ibv_wr_start(p.qpx[0]);
	p.qpx[0]->wr_id = 5;
	p.qpx[0]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(p.qpx[0]);
	ibv_wr_set_sge(p.qpx[0], p.mr[0]->lkey, (uintptr_t)p.buf[0], 24);
	assert_int_equal(ibv_wr_complete(p.qpx[0]), 0);
	expect_one(p.cq[0], 5, IBV_WC_SEND, &w);
	expect_one(p.cq[1], 1, IBV_WC_RECV, &w);
	assert_memory_equal(p.buf[1], p.buf[0], 24);

	pair_close_qps(&p);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(c.frees, 0);
	assert_int_equal(ibv_dealloc_pd(par), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* ---- what each profile's provider refuses ---------------------------------------- */

static void expect_cq_refused(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *ca, int err)
{
	errno = 0;
	assert_null(ibv_create_cq_ex(ctx, ca));
	assert_int_equal(errno, err);
}

static void expect_qp_refused(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *qa, int err)
{
	errno = 0;
	assert_null(ibv_create_qp_ex(ctx, qa));
	assert_int_equal(errno, err);
}

static void test_refusals(void **state)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex ca = { .cqe = 8, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp *plain, *ex;

	(void)state;
	assert_non_null(pd);
	assert_non_null(cq);
	/* ibv_create_qp() is as before, and its QP is not an extended one. */
	plain = ibv_create_qp(pd, (struct ibv_qp_init_attr *)&qa);
	assert_non_null(plain);
	assert_null(ibv_qp_to_qp_ex(plain));
	assert_int_equal(ibv_destroy_qp(plain), 0);
	if (is("siw")) {
		/* libsiw has neither create_cq_ex nor create_qp_ex. */
		expect_cq_refused(ctx, &ca, EOPNOTSUPP);
		expect_qp_refused(ctx, &qa, EOPNOTSUPP);
		goto out;
	}
	ex = ibv_create_qp_ex(ctx, &qa);
	assert_non_null(ex);
	assert_non_null(ibv_qp_to_qp_ex(ex));
	assert_non_null(ibv_qp_to_qp_ex(ex)->wr_send);
	/* rxe fills the builders asked for, mlx5 every one it supports. */
	if (is("mlx5"))
		assert_non_null(ibv_qp_to_qp_ex(ex)->wr_rdma_read);
	else
		assert_null(ibv_qp_to_qp_ex(ex)->wr_rdma_read);
	assert_null(ibv_qp_to_qp_ex(ex)->wr_atomic_cmp_swp);
	/* The UD address setter: rxe gives it to every QP, mlx5 to UD QPs alone. */
	if (is("mlx5"))
		assert_null(ibv_qp_to_qp_ex(ex)->wr_set_ud_addr);
	else
		assert_non_null(ibv_qp_to_qp_ex(ex)->wr_set_ud_addr);
	assert_int_equal(ibv_destroy_qp(ex), 0);

	/* A UD QP is made, with the Sends alone: nothing else is a datagram. */
	qa.qp_type = IBV_QPT_UD;
	ex = ibv_create_qp_ex(ctx, &qa);
	assert_non_null(ex);
	assert_non_null(ibv_qp_to_qp_ex(ex)->wr_set_ud_addr);
	assert_int_equal(ibv_destroy_qp(ex), 0);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_INV;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.qp_type = IBV_QPT_UC;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.qp_type = IBV_QPT_RC;

	/* Atomics (not modelled), TSO, creation flags, no PD. */
	qa.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.send_ops_flags = IBV_QP_EX_WITH_TSO;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qa.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qa.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	expect_qp_refused(ctx, &qa, EOPNOTSUPP);
	qa.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qa.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_PD;
	expect_qp_refused(ctx, &qa, EINVAL);

	/* wc_flags past rxe's set, flags, and comp_mask bits nobody defines. */
	ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	expect_cq_refused(ctx, &ca, EOPNOTSUPP);
	ca.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;
	expect_cq_refused(ctx, &ca, EOPNOTSUPP);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	expect_cq_refused(ctx, &ca, EOPNOTSUPP);
	/* Flags nobody defines: mlx5 refuses them, rxe (libibverbs) passes them by. */
	ca.flags = 1 << 7;
	if (is("rxe"))
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(ibv_create_cq_ex(ctx, &ca))), 0);
	else
		expect_cq_refused(ctx, &ca, EINVAL);
	ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS | (1 << 5);
	expect_cq_refused(ctx, &ca, is("mlx5") ? EINVAL : EOPNOTSUPP);
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.cqe = 0;
	expect_cq_refused(ctx, &ca, EINVAL);
	ca.cqe = 8;
	{
		struct ibv_cq_ex *ok = ibv_create_cq_ex(ctx, &ca);

		assert_non_null(ok);
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(ok)), 0);
	}
out:
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* The extended device query: what is not modelled reads as zero on every profile. */
static void test_query_device_ex(void **state)
{
	struct ibv_query_device_ex_input in = { 0 };
	struct ibv_device_attr_ex attr;
	struct ibv_context *ctx = open_ctx();

	(void)state;
	memset(&attr, 0xff, sizeof(attr));
	assert_int_equal(ibv_query_device_ex(ctx, &in, &attr), 0);
	assert_int_equal(attr.phys_port_cnt_ex, 1);
	assert_int_equal(attr.completion_timestamp_mask, 0);
	assert_int_equal(attr.hca_core_clock, 0);
	assert_int_equal(attr.max_dm_size, 0);
	assert_int_equal(attr.odp_caps.general_caps, 0);
	assert_int_equal(attr.tm_caps.max_num_tags, 0);
	assert_int_equal(attr.device_cap_flags_ex, attr.orig_attr.device_cap_flags);
	in.comp_mask = 1;
	assert_int_equal(ibv_query_device_ex(ctx, &in, &attr), EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* rdma_create_qp_ex() makes an extended QP when asked for send ops; siw has none. */
static void test_rdma_create_qp_ex(void **state)
{
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
	};

	(void)state;
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	if (is("siw")) {
		errno = 0;
		assert_int_equal(rdma_create_qp_ex(id, &qa), -1);
		assert_int_equal(errno, EOPNOTSUPP);
	} else {
		assert_int_equal(rdma_create_qp_ex(id, &qa), 0);
		assert_non_null(id->qp);
		assert_non_null(ibv_qp_to_qp_ex(id->qp));
		assert_non_null(ibv_qp_to_qp_ex(id->qp)->wr_rdma_write);
		rdma_destroy_qp(id);
	}
	assert_int_equal(rdma_destroy_id(id), 0);

	/*
	 * On a UDP id, a UD QP, ready to send at once (RTS), with its address
	 * setter; a Write is no UD op. siw has no UDP port space (no UD).
	 */
	errno = 0;
	if (is("siw")) {
		assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), -1);
		assert_int_equal(errno, EOPNOTSUPP);
		return;
	}
	qa.qp_type = IBV_QPT_UD;
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	errno = 0;
	assert_int_equal(rdma_create_qp_ex(id, &qa), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_null(id->qp);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	assert_int_equal(rdma_create_qp_ex(id, &qa), 0);
	assert_int_equal(id->qp->qp_type, IBV_QPT_UD);
	assert_int_equal(h_qp_state(id->qp), IBV_QPS_RTS);
	assert_non_null(ibv_qp_to_qp_ex(id->qp));
	assert_non_null(ibv_qp_to_qp_ex(id->qp)->wr_set_ud_addr);
	assert_non_null(ibv_qp_to_qp_ex(id->qp)->wr_send_imm);
	rdma_destroy_qp(id);
	assert_int_equal(rdma_destroy_id(id), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cq_ex_empty),
		cmocka_unit_test(test_cq_ex_channel_mixed),
		cmocka_unit_test(test_cq_ex_readers_and_errors),
		cmocka_unit_test(test_cq_ex_overrun),
		cmocka_unit_test(test_cq_ex_outside_batch),
		cmocka_unit_test(test_wr_opcodes),
		cmocka_unit_test(test_wr_inline_without_sges),
		cmocka_unit_test(test_wr_batch_fails),
		cmocka_unit_test(test_wr_outside_batch),
		cmocka_unit_test(test_wr_ud),
		cmocka_unit_test(test_domains_refused),
		cmocka_unit_test(test_parent_domain),
		cmocka_unit_test(test_parent_domain_default),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_query_device_ex),
		cmocka_unit_test(test_rdma_create_qp_ex),
	};

	h_opts_default(&opts);
	return h_run_all_modes(tests);
}
