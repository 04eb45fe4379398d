/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: errors as an HCA reports them. Flush order and the
 * poisoned fields of error completions, local protection and length errors,
 * remote access errors with their async events, RNR and transport retries.
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

/* Only wr_id, status, qp_num and vendor_err are defined in an error completion. */
static void assert_error_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_status status,
			    struct ibv_qp *qp)
{
	assert_string_equal(ibv_wc_status_str(wc->status), ibv_wc_status_str(status));
	assert_int_equal(wc->wr_id, wr_id);
	assert_int_equal(wc->qp_num, qp->qp_num);
	assert_int_not_equal(wc->vendor_err, 0);
	assert_int_equal((uint32_t)wc->opcode, 0xdeadbeef);
	assert_int_equal(wc->byte_len, 0xdeadbeef);
	assert_int_equal(wc->wc_flags, 0xdeadbeef);
}

static void test_flush_order_and_poison(void **state)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[8];
	int i;

	(void)state;
	/* STEP mode: nothing has executed yet, so all of these are outstanding. */
	if (softrdma_get_mode() != SOFTRDMA_MODE_STEP)
		skip();
	for (i = 0; i < 3; i++)
		assert_int_equal(h_post_recv(p.qp[0], 100 + (uint64_t)i, buf[0], 64, mr[0]->lkey),
				 0);
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE, buf[0], 8, mr[0]->lkey, 0,
				(uintptr_t)buf[1], mr[1]->rkey), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(ibv_modify_qp(p.qp[0], &attr, IBV_QP_STATE), 0);
	/* Every outstanding WR completes, signaled or not, in order per queue. */
	assert_int_equal(ibv_poll_cq(p.cq[0], 8, wc), 5);
	assert_error_wc(&wc[0], 1, IBV_WC_WR_FLUSH_ERR, p.qp[0]);
	assert_error_wc(&wc[1], 2, IBV_WC_WR_FLUSH_ERR, p.qp[0]);
	for (i = 0; i < 3; i++)
		assert_error_wc(&wc[2 + i], 100 + (uint64_t)i, IBV_WC_WR_FLUSH_ERR, p.qp[0]);
	/* Posting to a QP in ERR succeeds and flushes at once. */
	assert_int_equal(h_post(p.qp[0], 3, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_post_recv(p.qp[0], 4, buf[0], 8, mr[0]->lkey), 0);
	assert_int_equal(ibv_poll_cq(p.cq[0], 8, wc), 2);
	assert_error_wc(&wc[0], 3, IBV_WC_WR_FLUSH_ERR, p.qp[0]);
	assert_error_wc(&wc[1], 4, IBV_WC_WR_FLUSH_ERR, p.qp[0]);
	h_assert_empty(p.cq[1]);
}

static void test_loc_prot_bad_lkey(void **state)
{
	struct ibv_wc wc[2];

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey + 1, 0, 0, 0), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[0], wc, 2), 2);
	/* Errors complete even when unsignaled; the QP goes to ERR and flushes the rest. */
	assert_error_wc(&wc[0], 1, IBV_WC_LOC_PROT_ERR, p.qp[0]);
	assert_error_wc(&wc[1], 2, IBV_WC_WR_FLUSH_ERR, p.qp[0]);
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_RTS);
}

static void test_loc_prot_sge_bounds(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE, buf[0] + LEN - 4, 8, mr[0]->lkey,
				0, (uintptr_t)buf[1], mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_LOC_PROT_ERR, p.qp[0]);
}

static void test_read_into_readonly_mr(void **state)
{
	static char ro[64];
	struct ibv_mr *romr = h_reg(p.pd, ro, sizeof(ro), 0);
	struct ibv_wc wc;

	(void)state;
	/* A READ writes local memory: its SGEs need IBV_ACCESS_LOCAL_WRITE. */
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_READ, ro, 8, romr->lkey, 0,
				(uintptr_t)buf[1], mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_LOC_PROT_ERR, p.qp[0]);
	assert_int_equal(ibv_dereg_mr(romr), 0);
}

static void test_loc_len(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 7, buf[1], 50, mr[1]->lkey), 0);
	assert_int_equal(h_post_recv(p.qp[1], 8, buf[1], 50, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 100, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_error_wc(&wc, 7, IBV_WC_LOC_LEN_ERR, p.qp[1]);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_error_wc(&wc, 8, IBV_WC_WR_FLUSH_ERR, p.qp[1]);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_REM_INV_REQ_ERR, p.qp[0]);
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_ERR);
}

static void test_recv_bad_lkey(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 7, buf[1], 50, 0x12345), 0);
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 10, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_error_wc(&wc, 7, IBV_WC_LOC_PROT_ERR, p.qp[1]);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_REM_OP_ERR, p.qp[0]);
}

static void remote_access_case(void **state, enum ibv_wr_opcode op, uint64_t raddr,
			       uint32_t rkey)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 9, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 1, op, buf[0], 64, mr[0]->lkey, 0, raddr, rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_REM_ACCESS_ERR, p.qp[0]);
	/* The responder has no WQE to fail: it reports on the async fd and goes to ERR. */
	h_expect_async(p.ctx, IBV_EVENT_QP_ACCESS_ERR, p.qp[1]);
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_ERR);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_error_wc(&wc, 9, IBV_WC_WR_FLUSH_ERR, p.qp[1]);
}

static void test_rem_access_bad_rkey(void **state)
{
	remote_access_case(state, IBV_WR_RDMA_WRITE, (uintptr_t)buf[1], mr[1]->rkey ^ 0x01);
}

static void test_rem_access_bounds_write(void **state)
{
	remote_access_case(state, IBV_WR_RDMA_WRITE, (uintptr_t)buf[1] + LEN - 63, mr[1]->rkey);
}

static void test_rem_access_bounds_read(void **state)
{
	remote_access_case(state, IBV_WR_RDMA_READ, (uintptr_t)buf[1] - 1, mr[1]->rkey);
}

static void test_rem_access_rights(void **state)
{
	static char ro[64];
	struct ibv_mr *romr = h_reg(p.pd, ro, sizeof(ro), IBV_ACCESS_REMOTE_READ);

	remote_access_case(state, IBV_WR_RDMA_WRITE, (uintptr_t)ro, romr->rkey);
	assert_int_equal(ibv_dereg_mr(romr), 0);
}

static void test_rem_access_no_read_right(void **state)
{
	static char wo[64];
	struct ibv_mr *womr = h_reg(p.pd, wo, sizeof(wo), IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE);

	remote_access_case(state, IBV_WR_RDMA_READ, (uintptr_t)wo, womr->rkey);
	assert_int_equal(ibv_dereg_mr(womr), 0);
}

static void test_qp_without_remote_read(void **state)
{
	struct ibv_wc wc;

	(void)state;
	/* Set up with qp_access = REMOTE_WRITE only: reads are an invalid request. */
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_READ, buf[0], 64, mr[0]->lkey, 0,
				(uintptr_t)buf[1], mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_REM_INV_REQ_ERR, p.qp[0]);
	h_expect_async(p.ctx, IBV_EVENT_QP_REQ_ERR, p.qp[1]);
}

static int write_only(void **state)
{
	opts.qp_access = IBV_ACCESS_REMOTE_WRITE;
	return open_pair(state);
}

static void test_rnr_retry_zero(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_RNR_RETRY_EXC_ERR, p.qp[0]);
	/* RNR consumed nothing at the responder, which stays usable. */
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_RTS);
}

static int rnr_forever(void **state)
{
	opts.rnr_retry = 7;
	return open_pair(state);
}

static void test_rnr_retry_forever(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	h_settle();
	/* Retry 7 waits for a receive; the send is neither done nor failed. */
	assert_int_equal(ibv_poll_cq(p.cq[0], 1, &wc), 0);
	assert_int_equal(softrdma_progress(100), 0);
	assert_int_equal(h_post_recv(p.qp[1], 5, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 5);
}

static int rnr_three(void **state)
{
	opts.rnr_retry = 3;
	return open_pair(state);
}

static void test_rnr_retry_counted(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, 0, 0, 0), 0);
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP) {
		/* The first try and three retries: four units, then the error. */
		assert_int_equal(softrdma_progress(3), 3);
		assert_int_equal(ibv_poll_cq(p.cq[0], 1, &wc), 0);
		assert_int_equal(softrdma_progress(1), 1);
	}
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_error_wc(&wc, 1, IBV_WC_RNR_RETRY_EXC_ERR, p.qp[0]);
}

static void test_retry_exceeded(void **state)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	(void)state;
	/* A responder that does not answer (here: reset) exhausts retry_cnt. */
	assert_int_equal(ibv_modify_qp(p.qp[1], &attr, IBV_QP_STATE), 0);
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE, buf[0], 8, mr[0]->lkey, 0,
				(uintptr_t)buf[1], mr[1]->rkey), 0);
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP) {
		/* A unit per try, retry_cnt + 1 of them; the last try's timer expiring is one more. */
		assert_int_equal(softrdma_progress(opts.retry_cnt + 1u), opts.retry_cnt + 1);
		assert_int_equal(ibv_poll_cq(p.cq[0], 1, &wc), 0);
		assert_int_equal(softrdma_progress(1), 1);
		assert_int_equal(ibv_poll_cq(p.cq[0], 1, &wc), 1);
	} else {
		assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	}
	assert_error_wc(&wc, 1, IBV_WC_RETRY_EXC_ERR, p.qp[0]);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_flush_order_and_poison),
		T(test_loc_prot_bad_lkey),
		T(test_loc_prot_sge_bounds),
		T(test_read_into_readonly_mr),
		T(test_loc_len),
		T(test_recv_bad_lkey),
		T(test_rem_access_bad_rkey),
		T(test_rem_access_bounds_write),
		T(test_rem_access_bounds_read),
		T(test_rem_access_rights),
		T(test_rem_access_no_read_right),
		cmocka_unit_test_setup_teardown(test_qp_without_remote_read, write_only,
						close_pair),
		T(test_rnr_retry_zero),
		cmocka_unit_test_setup_teardown(test_rnr_retry_forever, rnr_forever, close_pair),
		cmocka_unit_test_setup_teardown(test_rnr_retry_counted, rnr_three, close_pair),
		T(test_retry_exceeded),
	};

	h_opts_default(&opts);
	return h_run_all_modes(tests);
}
