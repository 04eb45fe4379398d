/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: type 2B memory windows and invalidation. The
 * FREE/VALID state machine and key byte, bind errors, the QP a window is bound
 * to, local invalidate, Send With Invalidate, the introspection of what
 * an rkey reaches, and these on the fast path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LEN 4096

static struct h_pair p;
static struct h_opts opts;
static uint8_t *buf[2];
static struct ibv_mr *mr[2];
static struct ibv_mw *mw;

static int open_pair(void **state)
{
	(void)state;
	h_opts_default(&opts);
	h_pair_open_bufs(&p, &opts, buf, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, mr);
	mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	return 0;
}

static int close_pair(void **state)
{
	(void)state;
	h_settle();
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	h_pair_close_bufs(&p, buf, mr);
	return 0;
}

static int post_bind(struct ibv_qp *qp, uint64_t wr_id, uint32_t rkey, struct ibv_mr *with,
		     uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = with;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return ibv_post_send(qp, &wr, &bad);
}

static struct ibv_wc one_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	assert_int_equal(h_poll(cq, &wc, 1), 1);
	return wc;
}

/* Bind 1 KiB of buf[0] for remote read and write through QP 0; returns the rkey. */
static uint32_t bind_ok(void)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;

	assert_int_equal(post_bind(p.qp[0], 1, rkey, mr[0], (uintptr_t)buf[0] + 1024, 1024,
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_VALID);
	return rkey;
}

static void test_alloc_free_state(void **state)
{
	struct ibv_mw *t1;
	struct softrdma_counts c;

	(void)state;
	assert_int_equal(mw->type, IBV_MW_TYPE_2);
	assert_int_equal(softrdma_mw_state(mw->rkey), SOFTRDMA_MW_FREE);
	assert_int_equal(softrdma_mw_state(0xffffff00), SOFTRDMA_MW_NONE);
	assert_int_equal(softrdma_rkey_reach(mw->rkey, NULL, NULL, NULL), -ENOENT);
	t1 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);
	assert_null(t1);
	softrdma_get_counts(&c);
	assert_true(c.mws >= 1);
	/* ibv_bind_mw() is the type 1 path: the header refuses type 2 windows. */
	assert_int_equal(ibv_bind_mw(p.qp[0], mw, &(struct ibv_mw_bind){ 0 }), EINVAL);
}

static void test_bind_and_use(void **state)
{
	uint32_t old = mw->rkey, rkey;
	uint64_t addr, length;
	int access;
	struct ibv_wc wc;

	(void)state;
	rkey = bind_ok();
	assert_int_equal(rkey >> 8, old >> 8);
	assert_int_equal(rkey & 0xff, (old + 1) & 0xff);
	assert_int_equal(softrdma_rkey_reach(rkey, &addr, &length, &access), 0);
	assert_int_equal(addr, (uintptr_t)buf[0] + 1024);
	assert_int_equal(length, 1024);
	assert_int_equal(access, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	/* The key byte of the allocation is dead once the window carries a new one. */
	assert_int_equal(softrdma_rkey_reach(old, NULL, NULL, NULL), -ENOENT);
	memset(buf[1], 0x5a, 64);
	assert_int_equal(h_post(p.qp[1], 2, IBV_WR_RDMA_WRITE, buf[1], 64, mr[1]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[0] + 1024 + 100, rkey), 0);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(buf[0][1124], 0x5a);
	assert_int_equal(buf[0][1123], 0);
	/* Outside the window (but inside the MR) is an access error. */
	assert_int_equal(h_post(p.qp[1], 3, IBV_WR_RDMA_READ, buf[1], 64, mr[1]->lkey, 0,
				(uintptr_t)buf[0], rkey), 0);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
}

/*
 * Local write among a window's rights is accepted, as rxe and mlx5 accept
 * it, and gives nothing: a window is reached only remotely.
 */
static void test_bind_local_write(void **state)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(post_bind(p.qp[0], 1, rkey, mr[0], (uintptr_t)buf[0], 256,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	memset(buf[1], 0x3c, 16);
	assert_int_equal(h_post(p.qp[1], 2, IBV_WR_RDMA_WRITE, buf[1], 16, mr[1]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[0], rkey), 0);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(buf[0][15], 0x3c);
	assert_int_equal(h_post(p.qp[0], 3, IBV_WR_LOCAL_INV, NULL, 0, 0, IBV_SEND_SIGNALED, 0,
				rkey), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	/* With local write alone, the window lets nobody write. */
	rkey = ibv_inc_rkey(rkey);
	assert_int_equal(post_bind(p.qp[0], 4, rkey, mr[0], (uintptr_t)buf[0], 256,
				   IBV_ACCESS_LOCAL_WRITE), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(h_post(p.qp[1], 5, IBV_WR_RDMA_WRITE, buf[1], 16, mr[1]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[0], rkey), 0);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_ACCESS_ERR, p.qp[0]);
}

static void test_bind_errors(void **state)
{
	static char nb[128];
	struct ibv_mr *nobind = h_reg(p.pd, nb, sizeof(nb), IBV_ACCESS_LOCAL_WRITE);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;

	(void)state;
	/* The MR lacks IBV_ACCESS_MW_BIND. */
	assert_int_equal(post_bind(p.qp[0], 1, rkey, nobind, (uintptr_t)nb, 64,
				   IBV_ACCESS_REMOTE_READ), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_FREE);
	assert_int_equal(ibv_dereg_mr(nobind), 0);
}

static void test_bind_out_of_range(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(post_bind(p.qp[0], 1, ibv_inc_rkey(mw->rkey), mr[0],
				   (uintptr_t)buf[0] + LEN - 10, 64, IBV_ACCESS_REMOTE_READ), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
	assert_int_equal(wc.wr_id, 1);
}

static void test_bind_wrong_index(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(post_bind(p.qp[0], 1, mw->rkey + 0x100, mr[0], (uintptr_t)buf[0], 64,
				   IBV_ACCESS_REMOTE_READ), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
}

static void test_bind_valid_window(void **state)
{
	uint32_t rkey = bind_ok();
	struct ibv_wc wc;

	(void)state;
	/* A VALID type 2 window must be invalidated before it is bound again. */
	assert_int_equal(post_bind(p.qp[0], 2, ibv_inc_rkey(rkey), mr[0], (uintptr_t)buf[0], 64,
				   IBV_ACCESS_REMOTE_READ), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_VALID);
}

static void test_dereg_busy_then_local_inv(void **state)
{
	uint32_t rkey = bind_ok();
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(ibv_dereg_mr(mr[0]), EBUSY);
	assert_int_equal(h_post(p.qp[0], 4, IBV_WR_LOCAL_INV, NULL, 0, 0, IBV_SEND_SIGNALED, 0,
				rkey), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_FREE);
	assert_int_equal(softrdma_rkey_reach(rkey, NULL, NULL, NULL), -ENOENT);
	/* The old key is dead to the peer. */
	assert_int_equal(h_post(p.qp[1], 5, IBV_WR_RDMA_WRITE, buf[1], 8, mr[1]->lkey, 0,
				(uintptr_t)buf[0] + 1024, rkey), 0);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_ACCESS_ERR, p.qp[0]);
	/* Nothing bound any more: the MR can go (and comes back for teardown). */
	assert_int_equal(ibv_dereg_mr(mr[0]), 0);
	mr[0] = h_reg(p.pd, buf[0], LEN, IBV_ACCESS_LOCAL_WRITE);
}

static void test_local_inv_errors(void **state)
{
	struct ibv_wc wc;

	(void)state;
	/* A FREE window cannot be invalidated: local QP operation error. */
	assert_int_equal(h_post(p.qp[0], 4, IBV_WR_LOCAL_INV, NULL, 0, 0, 0, 0, mw->rkey), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(wc.wr_id, 4);
}

static void test_local_inv_of_mr(void **state)
{
	struct ibv_wc wc;

	(void)state;
	/* ibv_reg_mr MRs are not fast-register MRs: rxe refuses to invalidate them. */
	assert_int_equal(h_post(p.qp[0], 4, IBV_WR_LOCAL_INV, NULL, 0, 0, 0, 0, mr[0]->rkey), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_LOC_QP_OP_ERR);
}

static void test_send_with_invalidate(void **state)
{
	uint32_t rkey = bind_ok(), again;
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[0], 9, buf[0], 64, mr[0]->lkey), 0);
	assert_int_equal(h_post(p.qp[1], 8, IBV_WR_SEND_WITH_INV, buf[1], 16, mr[1]->lkey,
				IBV_SEND_SIGNALED, 0, rkey), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, rkey);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_FREE);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* Bound again under the next key byte; the previous key stays dead. */
	assert_int_equal(post_bind(p.qp[0], 10, ibv_inc_rkey(rkey), mr[0], (uintptr_t)buf[0], 64,
				   IBV_ACCESS_REMOTE_WRITE), 0);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	again = ibv_inc_rkey(rkey);
	assert_int_equal(softrdma_rkey_reach(again, NULL, NULL, NULL), 0);
	assert_int_equal(softrdma_rkey_reach(rkey, NULL, NULL, NULL), -ENOENT);
	assert_int_equal(h_post(p.qp[0], 11, IBV_WR_LOCAL_INV, NULL, 0, 0, 0, 0, again), 0);
	h_settle();
}

static void test_send_with_invalidate_bad_key(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[0], 9, buf[0], 64, mr[0]->lkey), 0);
	assert_int_equal(h_post(p.qp[1], 8, IBV_WR_SEND_WITH_INV, buf[1], 16, mr[1]->lkey,
				IBV_SEND_SIGNALED, 0, mw->rkey), 0);
	/*
	 * As rxe (class J): the receive fails and the responder goes to ERR;
	 * the message was taken, so the requester's Send succeeds.
	 */
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(wc.wr_id, 9);
	wc = one_wc(p.cq[1]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_RTS);
}

static void test_window_bound_to_other_qp(void **state)
{
	struct ibv_cq *cq = ibv_create_cq(p.ctx, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *a = ibv_create_qp(p.pd, &qa), *b = ibv_create_qp(p.pd, &qa);
	uint32_t rkey = bind_ok();
	struct ibv_wc wc;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	h_qp_to_rts(a, b->qp_num, &opts);
	h_qp_to_rts(b, a->qp_num, &opts);
	/* Same PD, right key, but the request arrives on QP a, not on QP 0 that bound it. */
	assert_int_equal(h_post(b, 1, IBV_WR_RDMA_WRITE, buf[1], 8, mr[1]->lkey, 0,
				(uintptr_t)buf[0] + 1024, rkey), 0);
	assert_int_equal(h_poll(cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_ACCESS_ERR, a);
	assert_int_equal(ibv_destroy_qp(a), 0);
	assert_int_equal(ibv_destroy_qp(b), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(h_post(p.qp[0], 11, IBV_WR_LOCAL_INV, NULL, 0, 0, 0, 0, rkey), 0);
	h_settle();
}

static void test_exposed_bytes(void **state)
{
	static char rw[4096];
	struct ibv_mr *rmr;
	uint32_t rkey;

	(void)state;
	/* Local-only MRs expose nothing. */
	assert_int_equal(softrdma_pd_exposed_bytes(p.pd), 0);
	rkey = bind_ok();
	assert_int_equal(softrdma_pd_exposed_bytes(p.pd), 1024);
	rmr = h_reg(p.pd, rw, sizeof(rw), IBV_ACCESS_REMOTE_READ);
	assert_int_equal(softrdma_pd_exposed_bytes(p.pd), 1024 + 4096);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(h_post(p.qp[0], 11, IBV_WR_LOCAL_INV, NULL, 0, 0, 0, 0, rkey), 0);
	h_settle();
	assert_int_equal(softrdma_pd_exposed_bytes(p.pd), 0);
}

static void test_mr_access_rules(void **state)
{
	static char b[64];

	(void)state;
	/* Remote write without local write is refused, as ib_check_mr_access does. */
	assert_null(ibv_reg_mr(p.pd, b, sizeof(b), IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	assert_null(ibv_reg_mr(p.pd, b, 0, IBV_ACCESS_LOCAL_WRITE));
	assert_null(ibv_reg_mr(p.pd, b, sizeof(b), IBV_ACCESS_ON_DEMAND));
}

/*
 * Once each QP has transmitted (which finds its responder), a window's
 * bind, its use, Send With Invalidate and local invalidation run on the
 * fast path in THREAD mode, with the same outcomes; a bind that fails
 * (a VALID window) is the engine's, with its error.
 */
static void test_fast_path(void **state)
{
	unsigned long bind = softrdma_fast_executed(IBV_WR_BIND_MW);
	unsigned long inv = softrdma_fast_executed(IBV_WR_LOCAL_INV);
	unsigned long sinv = softrdma_fast_executed(IBV_WR_SEND_WITH_INV);
	unsigned long write = softrdma_fast_executed(IBV_WR_RDMA_WRITE);
	uint32_t rkey;
	struct ibv_wc wc;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		assert_int_equal(h_post(p.qp[i], 1, IBV_WR_RDMA_WRITE, NULL, 0, 0,
					IBV_SEND_SIGNALED, 0, 0), 0);
		assert_int_equal(one_wc(p.cq[i]).status, IBV_WC_SUCCESS);
	}
	write = softrdma_fast_executed(IBV_WR_RDMA_WRITE);
	rkey = bind_ok();
	h_assert_fast(IBV_WR_BIND_MW, bind, 1);
	memset(buf[1], 0x33, 64);
	assert_int_equal(h_post(p.qp[1], 2, IBV_WR_RDMA_WRITE, buf[1], 64, mr[1]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[0] + 1024, rkey), 0);
	assert_int_equal(one_wc(p.cq[1]).status, IBV_WC_SUCCESS);
	h_assert_fast(IBV_WR_RDMA_WRITE, write, 1);
	assert_int_equal(buf[0][1024 + 63], 0x33);

	assert_int_equal(h_post_recv(p.qp[0], 3, buf[0], 64, mr[0]->lkey), 0);
	assert_int_equal(h_post(p.qp[1], 4, IBV_WR_SEND_WITH_INV, buf[1], 16, mr[1]->lkey,
				IBV_SEND_SIGNALED, 0, rkey), 0);
	h_assert_fast(IBV_WR_SEND_WITH_INV, sinv, 1);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, rkey);
	assert_int_equal(one_wc(p.cq[1]).status, IBV_WC_SUCCESS);
	assert_int_equal(softrdma_mw_state(rkey), SOFTRDMA_MW_FREE);
	/* The MR lost its window: it may be deregistered (then comes back). */
	assert_int_equal(ibv_dereg_mr(mr[0]), 0);
	mr[0] = h_reg(p.pd, buf[0], LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);

	rkey = bind_ok();
	h_assert_fast(IBV_WR_BIND_MW, bind, 2);
	assert_int_equal(h_post(p.qp[0], 5, IBV_WR_LOCAL_INV, NULL, 0, 0, IBV_SEND_SIGNALED, 0,
				rkey), 0);
	h_assert_fast(IBV_WR_LOCAL_INV, inv, 1);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(softrdma_rkey_reach(rkey, NULL, NULL, NULL), -ENOENT);

	/* Bound, then bound again: the second bind fails, on the engine's path. */
	rkey = bind_ok();
	assert_int_equal(post_bind(p.qp[0], 6, ibv_inc_rkey(rkey), mr[0], (uintptr_t)buf[0], 64,
				   IBV_ACCESS_REMOTE_WRITE), 0);
	h_assert_fast(IBV_WR_BIND_MW, bind, 3);
	wc = one_wc(p.cq[0]);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
	assert_int_equal(softrdma_rkey_reach(rkey, NULL, NULL, NULL), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_alloc_free_state),
		T(test_bind_and_use),
		T(test_bind_errors),
		T(test_bind_out_of_range),
		T(test_bind_local_write),
		T(test_bind_wrong_index),
		T(test_bind_valid_window),
		T(test_dereg_busy_then_local_inv),
		T(test_local_inv_errors),
		T(test_local_inv_of_mr),
		T(test_send_with_invalidate),
		T(test_send_with_invalidate_bad_key),
		T(test_window_bound_to_other_qp),
		T(test_exposed_bytes),
		T(test_mr_access_rules),
		T(test_fast_path),
	};

	return h_run_all_modes(tests);
}
