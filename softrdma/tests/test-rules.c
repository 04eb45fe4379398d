/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: verbs rules that a lenient fabric would let a
 * library get wrong, each with the provider whose behaviour it follows
 * (README, "Which provider each rule follows"). Runs in the mode
 * SOFTRDMA_MODE names; meson runs it in both.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define LEN 4096

static struct h_pair p;
static struct h_opts opts;
static uint8_t *buf[2];
static struct ibv_mr *mr[2];

static int open_pair(void **state)
{
	(void)state;
	h_pair_open_bufs(&p, &opts, buf, LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, mr);
	return 0;
}

static int close_pair(void **state)
{
	(void)state;
	h_pair_close_bufs(&p, buf, mr);
	h_opts_default(&opts);
	return 0;
}

static bool thread_mode(void)
{
	return softrdma_get_mode() != SOFTRDMA_MODE_STEP;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Nothing on the async fd (after settling). */
static void assert_no_async(struct ibv_context *ctx)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	h_settle();
	assert_int_equal(poll(&pfd, 1, 0), 0);
}

/*
 * What a successful completion leaves undefined is poisoned, not zero:
 * src_qp and slid on RC (UD only), byte_len of a requester's Send or Write,
 * imm_data without IBV_WC_WITH_IMM. A library that read them would break.
 */
static void test_success_poisons_undefined(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 1, buf[1], 256, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND, buf[0], 100, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_post(p.qp[0], 3, IBV_WR_RDMA_WRITE, buf[0], 64, mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey), 0);

	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 100);
	assert_int_equal(wc.wc_flags, 0);
	assert_int_equal(wc.imm_data, htobe32(0xdeadbeef));
	assert_int_equal(wc.src_qp, 0xdeadbe);
	assert_int_equal(wc.slid, 0xdead);

	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.byte_len, 0xdeadbeef);
	assert_int_equal(wc.src_qp, 0xdeadbe);
	assert_int_equal(wc.imm_data, htobe32(0xdeadbeef));
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc.byte_len, 0xdeadbeef);
	assert_int_equal(wc.vendor_err, 0);
}

static int post_sges(struct ibv_qp *qp, enum ibv_wr_opcode op, int n, uint32_t rkey)
{
	struct ibv_sge sge[32];
	struct ibv_send_wr wr, *bad = NULL;
	int i;

	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)buf[0] + 64u * (unsigned int)i;
		sge[i].length = 64;
		sge[i].lkey = mr[0]->lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)n;
	wr.sg_list = sge;
	wr.num_sge = n;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)buf[1];
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* An RDMA Read takes at most max_sge_rd SGEs, whatever max_send_sge allows. */
static void test_read_sge_limit(void **state)
{
	struct ibv_device_attr da;
	struct ibv_wc wc;
	int rd;

	(void)state;
	assert_int_equal(ibv_query_device(p.ctx, &da), 0);
	rd = da.max_sge_rd;
	/* The default device has fewer Read SGEs than send SGEs: the case is real. */
	assert_true(rd < (int)opts.max_sge);
	assert_int_equal(post_sges(p.qp[0], IBV_WR_RDMA_READ, rd + 1, mr[1]->rkey), EINVAL);
	/* A Write may use them all. */
	assert_int_equal(post_sges(p.qp[0], IBV_WR_RDMA_WRITE, rd + 1, mr[1]->rkey), 0);
	assert_int_equal(post_sges(p.qp[0], IBV_WR_RDMA_READ, rd, mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, (uint64_t)rd + 1);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, 64u * (unsigned int)rd);
}

static int wide_pair(void **state)
{
	struct ibv_device_attr da;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = ibv_open_device(list[0]);

	ibv_free_device_list(list);
	assert_int_equal(ibv_query_device(ctx, &da), 0);
	ibv_close_device(ctx);
	opts.max_sge = (uint32_t)da.max_sge;
	return open_pair(state);
}

/* libibverbs' ibv_query_qp() refreshes qp->state when the state is asked for. */
static void test_query_qp_refreshes_state(void **state)
{
	struct ibv_wc wc[2];

	(void)state;
	assert_int_equal(p.qp[0]->state, IBV_QPS_RTS);
	/* A bad lkey moves the QP to ERR inside the device. */
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey + 1, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[0], wc, 1), 1);
	assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(p.qp[0]->state, IBV_QPS_RTS);	/* the mirror knows nothing yet */
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	assert_int_equal(p.qp[0]->state, IBV_QPS_ERR);
}

/*
 * rxe, class J: a Send With Invalidate whose rkey cannot be invalidated
 * (here an ibv_reg_mr MR) fails the receive and moves the responder to
 * ERR; the requester was acknowledged, and its Send succeeds.
 */
static void test_send_inv_of_plain_mr(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 1, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND_WITH_INV, buf[0], 16, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_ERR);
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_RTS);
}

/*
 * rxe's responder checks for a receive (RNR) before the rkey: a Write with
 * immediate to a bad rkey on a QP with no receive posted is an RNR NAK.
 */
static void test_write_imm_rnr_before_rkey(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE_WITH_IMM, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey ^ 0x100), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	/* Nothing was checked at the responder: it stays up. */
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_RTS);
}

/* The first message an RTR QP receives raises IBV_EVENT_COMM_EST, once (IBA 11.6.3). */
static void test_comm_est_in_rtr(void **state)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	int i;

	(void)state;
	assert_int_equal(ibv_modify_qp(p.qp[1], &reset, IBV_QP_STATE), 0);
	h_qp_to_rtr(p.qp[1], p.qp[0]->qp_num, &opts);
	for (i = 0; i < 2; i++) {
		assert_int_equal(h_post_recv(p.qp[1], 10 + (uint64_t)i, buf[1], 64, mr[1]->lkey),
				 0);
		assert_int_equal(h_post(p.qp[0], 20 + (uint64_t)i, IBV_WR_SEND, buf[0], 8,
					mr[0]->lkey, IBV_SEND_SIGNALED, 0, 0), 0);
		assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (i == 0)
			h_expect_async(p.ctx, IBV_EVENT_COMM_EST, p.qp[1]);
		else
			assert_no_async(p.ctx);
	}
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_RTR);
}

/* An RTS QP raises no COMM_EST: the CM did it (or need not). */
static void test_no_comm_est_in_rts(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 1, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_no_async(p.ctx);
}

/*
 * THREAD mode honours time: RNR retries wait the responder's
 * min_rnr_timer (20: 10.24 ms), not a fixed interval. Two retries, then
 * RNR_RETRY_EXC_ERR, no sooner than 20.48 ms.
 */
static void test_rnr_waits_min_rnr_timer(void **state)
{
	struct ibv_wc wc;
	uint64_t start;

	(void)state;
	if (!thread_mode())
		skip();
	start = now_us();
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_true(now_us() - start >= 20480);
}

static int rnr_timer_20(void **state)
{
	opts.rnr_retry = 2;
	opts.min_rnr_timer = 20;
	return open_pair(state);
}

/*
 * And transport retries wait the local ACK timeout, 4.096 us * 2^timeout
 * (13: 33.6 ms) per try: one retry is two tries, two timeouts, then
 * RETRY_EXC_ERR, no sooner (IBA 9.7.6.1.3).
 */
static void test_retry_waits_ack_timeout(void **state)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	uint64_t start;

	(void)state;
	if (!thread_mode())
		skip();
	assert_int_equal(ibv_modify_qp(p.qp[1], &reset, IBV_QP_STATE), 0);
	start = now_us();
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_true(now_us() - start >= 2 * 33554);
}

static int timeout_13(void **state)
{
	opts.retry_cnt = 1;
	opts.timeout = 13;
	return open_pair(state);
}

/*
 * Reads in flight (IBA 10.8.3.3): a Read's response may come after later
 * WQEs of its QP have run, unless they are fenced. Here QP 1 lends a type-2
 * window W over its buffer, QP 0 reads through it and then posts a Send
 * With Invalidate of W.
 */
struct window {
	struct ibv_mr *mr;	/* buf[1] again, bindable */
	struct ibv_mw *mw;
	uint32_t rkey;
};

static void window_bind(struct window *w)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;

	w->mr = h_reg(p.pd, buf[1], LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	w->mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	assert_non_null(w->mw);
	w->rkey = ibv_inc_rkey(w->mw->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 77;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = w->mw;
	wr.bind_mw.rkey = w->rkey;
	wr.bind_mw.bind_info.mr = w->mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)buf[1];
	wr.bind_mw.bind_info.length = LEN;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_post_send(p.qp[1], &wr, &bad), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	memset(buf[1], 0x5a, LEN);
}

static void window_free(struct window *w)
{
	h_settle();
	assert_int_equal(ibv_dealloc_mw(w->mw), 0);
	assert_int_equal(ibv_dereg_mr(w->mr), 0);
}

/* Post, in one chain: Reads of W (and of mr[1] when @other), then a Send With Invalidate of W. */
static void read_then_send_inv(const struct window *w, bool other, unsigned int fence)
{
	struct ibv_sge rs = { (uintptr_t)buf[0], 512, mr[0]->lkey };
	struct ibv_sge os = { (uintptr_t)buf[0] + 1024, 64, mr[0]->lkey };
	struct ibv_sge ss = { (uintptr_t)buf[0] + 2048, 16, mr[0]->lkey };
	struct ibv_send_wr wr[3], *bad = NULL;

	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = &rs;
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_RDMA_READ;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].wr.rdma.remote_addr = (uintptr_t)buf[1];
	wr[0].wr.rdma.rkey = w->rkey;
	wr[1].wr_id = 2;
	wr[1].sg_list = &os;
	wr[1].num_sge = 1;
	wr[1].opcode = IBV_WR_RDMA_READ;
	wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[1].wr.rdma.remote_addr = (uintptr_t)buf[1] + 1024;
	wr[1].wr.rdma.rkey = mr[1]->rkey;
	wr[2].wr_id = 3;
	wr[2].sg_list = &ss;
	wr[2].num_sge = 1;
	wr[2].opcode = IBV_WR_SEND_WITH_INV;
	wr[2].send_flags = IBV_SEND_SIGNALED | fence;
	wr[2].invalidate_rkey = w->rkey;
	wr[0].next = other ? &wr[1] : &wr[2];
	wr[1].next = &wr[2];
	assert_int_equal(h_post_recv(p.qp[1], 9, buf[1] + 3072, 64, mr[1]->lkey), 0);
	assert_int_equal(ibv_post_send(p.qp[0], wr, &bad), 0);
}

/* Without a fence the invalidation overtakes the Read: it fails, the rest flushes. */
static void test_read_overtaken_without_fence(void **state)
{
	struct window w;
	struct ibv_wc wc;

	(void)state;
	window_bind(&w);
	read_then_send_inv(&w, false, 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_ACCESS_ERR, p.qp[1]);
	window_free(&w);
}

/* IBV_SEND_FENCE holds the Send With Invalidate until the Read is done. */
static void test_fence_holds_send_inv(void **state)
{
	struct window w;
	struct ibv_wc wc;

	(void)state;
	window_bind(&w);
	read_then_send_inv(&w, false, IBV_SEND_FENCE);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 512);
	assert_int_equal(buf[0][0], 0x5a);
	assert_int_equal(buf[0][511], 0x5a);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.invalidated_rkey, w.rkey);
	window_free(&w);
}

/*
 * At most max_rd_atomic Reads fly: with 1, the second Read waits for the
 * first's response, which then lands before the invalidation.
 */
static void test_ord_one_serialises_reads(void **state)
{
	struct window w;
	struct ibv_wc wc;
	int i;

	(void)state;
	window_bind(&w);
	read_then_send_inv(&w, true, 0);
	for (i = 1; i <= 3; i++) {
		assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	window_free(&w);
}

static int ord_one(void **state)
{
	opts.rd_atomic = 1;
	return open_pair(state);
}

/* With room for both, the same chain lets the invalidation overtake the first Read. */
static void test_ord_two_lets_reads_fly(void **state)
{
	struct window w;
	struct ibv_wc wc;

	(void)state;
	window_bind(&w);
	read_then_send_inv(&w, true, 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_ACCESS_ERR, p.qp[1]);
	window_free(&w);
}

/* @n signaled 64-byte Reads of mr[1], in one chain. */
static int post_reads(int n)
{
	struct ibv_sge sge[4];
	struct ibv_send_wr wr[4], *bad = NULL;
	int i;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)buf[0] + 64u * (unsigned int)i;
		sge[i].length = 64;
		sge[i].lkey = mr[0]->lkey;
		wr[i].wr_id = (uint64_t)i + 1;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)buf[1];
		wr[i].wr.rdma.rkey = mr[1]->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	return ibv_post_send(p.qp[0], wr, &bad);
}

/*
 * The responder serves at most max_dest_rd_atomic Reads at once: a
 * requester that sends more (its max_rd_atomic is larger) gets
 * REM_INV_REQ_ERR, and the responder goes to ERR (class C).
 */
static void test_responder_rd_limit(void **state)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct h_opts one = opts;
	struct ibv_wc wc;

	(void)state;
	one.rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(p.qp[1], &reset, IBV_QP_STATE), 0);
	h_qp_to_rts(p.qp[1], p.qp[0]->qp_num, &one);
	/* One chain, so that both are posted before either runs, in THREAD mode too. */
	assert_int_equal(post_reads(2), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_REQ_ERR, p.qp[1]);
}

static int group_setup(void **state)
{
	(void)state;
	h_opts_default(&opts);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_success_poisons_undefined),
		cmocka_unit_test_setup_teardown(test_read_sge_limit, wide_pair, close_pair),
		T(test_query_qp_refreshes_state),
		T(test_send_inv_of_plain_mr),
		T(test_write_imm_rnr_before_rkey),
		T(test_comm_est_in_rtr),
		T(test_no_comm_est_in_rts),
		cmocka_unit_test_setup_teardown(test_rnr_waits_min_rnr_timer, rnr_timer_20,
						close_pair),
		cmocka_unit_test_setup_teardown(test_retry_waits_ack_timeout, timeout_13,
						close_pair),
		T(test_read_overtaken_without_fence),
		T(test_fence_holds_send_inv),
		cmocka_unit_test_setup_teardown(test_ord_one_serialises_reads, ord_one, close_pair),
		T(test_ord_two_lets_reads_fly),
		T(test_responder_rd_limit),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
