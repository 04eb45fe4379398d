/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: the data path. SEND (with immediate), RDMA Write
 * (with immediate), RDMA Read, gather/scatter lists, zero-length messages,
 * RC ordering and SRQs. Every test runs in STEP mode and again in THREAD mode.
 */
#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LEN 4096

struct fixture {
	struct h_pair p;
	uint8_t *buf[2];
	struct ibv_mr *mr[2];
};

static struct fixture fx;
static struct h_opts opts;

static int open_pair(void **state)
{
	(void)state;
	memset(&fx, 0, sizeof(fx));
	h_pair_open_bufs(&fx.p, &opts, fx.buf, LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, fx.mr);
	return 0;
}

static int close_pair(void **state)
{
	(void)state;
	h_pair_close_bufs(&fx.p, fx.buf, fx.mr);
	return 0;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 31);
}

static void test_send_sge_lists(void **state)
{
	struct ibv_sge ssge[2] = {
		{ (uintptr_t)fx.buf[0], 100, fx.mr[0]->lkey },
		{ (uintptr_t)fx.buf[0] + 1000, 200, fx.mr[0]->lkey },
	};
	struct ibv_sge rsge[3] = {
		{ (uintptr_t)fx.buf[1], 50, fx.mr[1]->lkey },
		{ (uintptr_t)fx.buf[1] + 2000, 0, 0 },
		{ (uintptr_t)fx.buf[1] + 3000, 1000, fx.mr[1]->lkey },
	};
	struct ibv_send_wr wr = { .wr_id = 11, .sg_list = ssge, .num_sge = 2,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rwr = { .wr_id = 22, .sg_list = rsge, .num_sge = 3 }, *rbad;
	struct ibv_wc wc;

	(void)state;
	fill(fx.buf[0], LEN, 1);
	assert_int_equal(ibv_post_recv(fx.p.qp[1], &rwr, &rbad), 0);
	assert_int_equal(ibv_post_send(fx.p.qp[0], &wr, &bad), 0);
	assert_int_equal(h_poll(fx.p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 22);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 300);
	assert_int_equal(wc.qp_num, fx.p.qp[1]->qp_num);
	assert_int_equal(wc.wc_flags, 0);
	assert_memory_equal(fx.buf[1], fx.buf[0], 50);
	assert_memory_equal(fx.buf[1] + 3000, fx.buf[0] + 50, 50);
	assert_memory_equal(fx.buf[1] + 3050, fx.buf[0] + 1000, 200);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
}

static void test_send_with_imm(void **state)
{
	struct ibv_sge sge = { (uintptr_t)fx.buf[0], 8, fx.mr[0]->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(0x1234),
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(fx.p.qp[1], 2, fx.buf[1], 64, fx.mr[1]->lkey), 0);
	assert_int_equal(ibv_post_send(fx.p.qp[0], &wr, &bad), 0);
	assert_int_equal(h_poll(fx.p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234);
	assert_int_equal(wc.byte_len, 8);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
}

static void test_rdma_write_and_imm(void **state)
{
	struct ibv_sge sge = { (uintptr_t)fx.buf[0], 512, fx.mr[0]->lkey };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(77),
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	(void)state;
	fill(fx.buf[0], LEN, 9);
	memset(fx.buf[1], 0, LEN);
	assert_int_equal(h_post(fx.p.qp[0], 4, IBV_WR_RDMA_WRITE, fx.buf[0], 1024,
				fx.mr[0]->lkey, IBV_SEND_SIGNALED, (uintptr_t)fx.buf[1] + 100,
				fx.mr[1]->rkey), 0);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_memory_equal(fx.buf[1] + 100, fx.buf[0], 1024);
	/* No receive was consumed by the plain write. */
	h_assert_empty(fx.p.cq[1]);
	/* Write with immediate consumes one receive and reports the length written. */
	assert_int_equal(h_post_recv(fx.p.qp[1], 6, NULL, 0, 0), 0);
	wr.wr.rdma.remote_addr = (uintptr_t)fx.buf[1] + 2048;
	wr.wr.rdma.rkey = fx.mr[1]->rkey;
	assert_int_equal(ibv_post_send(fx.p.qp[0], &wr, &bad), 0);
	assert_int_equal(h_poll(fx.p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 6);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, 512);
	assert_int_equal(be32toh(wc.imm_data), 77);
	assert_memory_equal(fx.buf[1] + 2048, fx.buf[0], 512);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
}

/*
 * A Read scatters into two segments; in THREAD mode it ran at post time on
 * the fast path, its completion there before ibv_post_send() returned.
 */
static void test_rdma_read(void **state)
{
	struct ibv_sge sge[2] = {
		{ (uintptr_t)fx.buf[0] + 10, 1000, fx.mr[0]->lkey },
		{ (uintptr_t)fx.buf[0] + 2000, 2000, fx.mr[0]->lkey },
	};
	struct ibv_send_wr wr = { .wr_id = 8, .sg_list = sge, .num_sge = 2,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)fx.buf[1] + 5, fx.mr[1]->rkey } };
	unsigned long fast = softrdma_fast_executed(IBV_WR_RDMA_READ);
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;

	(void)state;
	fill(fx.buf[1], LEN, 42);
	memset(fx.buf[0], 0, LEN);
	/* The engine runs a QP's first transmit: it finds the responder. */
	assert_int_equal(h_post(fx.p.qp[0], 7, IBV_WR_RDMA_WRITE, NULL, 0, 0, IBV_SEND_SIGNALED,
				0, 0), 0);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(ibv_post_send(fx.p.qp[0], &wr, &bad), 0);
	h_assert_fast(IBV_WR_RDMA_READ, fast, 1);
	if (softrdma_get_mode() == SOFTRDMA_MODE_THREAD)
		assert_int_equal(ibv_poll_cq(fx.p.cq[0], 1, &wc), 1);
	else
		assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(fx.buf[0] + 10, fx.buf[1] + 5, 1000);
	assert_memory_equal(fx.buf[0] + 2000, fx.buf[1] + 1005, 2000);
	assert_int_equal(fx.buf[0][9], 0);
	assert_int_equal(fx.buf[0][1010], 0);
	assert_int_equal(fx.buf[0][1999], 0);
	/* Zero-length: no rkey checked, byte_len 0, on the fast path too. */
	assert_int_equal(h_post(fx.p.qp[0], 9, IBV_WR_RDMA_READ, NULL, 0, 0, IBV_SEND_SIGNALED,
				0, 0xdead00), 0);
	h_assert_fast(IBV_WR_RDMA_READ, fast, 2);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 0);
}

static void test_zero_length(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(fx.p.qp[1], 1, fx.buf[1], 16, fx.mr[1]->lkey), 0);
	assert_int_equal(h_post(fx.p.qp[0], 2, IBV_WR_SEND, NULL, 0, 0, IBV_SEND_SIGNALED, 0, 0),
			 0);
	/* A zero-length write checks no rkey at all. */
	assert_int_equal(h_post(fx.p.qp[0], 3, IBV_WR_RDMA_WRITE, NULL, 0, 0, IBV_SEND_SIGNALED,
				0, 0xdead00), 0);
	assert_int_equal(h_poll(fx.p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 0);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* Completions come back in posting order per queue; a SEND lands after the WRITEs before it. */
static void test_rc_ordering(void **state)
{
	enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ,
				     IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_SEND,
				     IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE, IBV_WR_SEND };
	struct ibv_wc wc[9];
	unsigned int i, sends = 0;

	(void)state;
	fill(fx.buf[0], LEN, 3);
	for (i = 0; i < 4; i++)
		assert_int_equal(h_post_recv(fx.p.qp[1], 100 + i, fx.buf[1] + 3072 + i * 64, 64,
					     fx.mr[1]->lkey), 0);
	for (i = 0; i < 9; i++) {
		uint8_t *local = fx.buf[0] + i * 128;

		if (ops[i] == IBV_WR_RDMA_READ)
			local = fx.buf[0] + 2048 + i * 64;
		assert_int_equal(h_post(fx.p.qp[0], i, ops[i], local, 64, fx.mr[0]->lkey,
					IBV_SEND_SIGNALED, (uintptr_t)fx.buf[1] + i * 128,
					fx.mr[1]->rkey), 0);
	}
	assert_int_equal(h_poll(fx.p.cq[0], wc, 9), 9);
	for (i = 0; i < 9; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, i);
	}
	assert_int_equal(h_poll(fx.p.cq[1], wc, 4), 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].byte_len, 64);
	}
	for (i = 0; i < 9; i++) {
		if (ops[i] == IBV_WR_RDMA_WRITE)
			assert_memory_equal(fx.buf[1] + i * 128, fx.buf[0] + i * 128, 64);
		if (ops[i] == IBV_WR_SEND)
			assert_memory_equal(fx.buf[1] + 3072 + (sends++) * 64,
					    fx.buf[0] + i * 128, 64);
		/* The read of slot 2 saw the write of slot 0 only (slot 2 never written). */
		if (ops[i] == IBV_WR_RDMA_READ)
			assert_memory_equal(fx.buf[0] + 2048 + i * 64, fx.buf[1] + i * 128, 64);
	}
}

static void test_srq(void **state)
{
	struct ibv_srq_attr sattr = { .srq_limit = 2 };
	struct ibv_recv_wr rwr[3], *rbad;
	struct ibv_sge sge[3];
	struct ibv_wc wc[3];
	int i;

	(void)state;
	assert_non_null(fx.p.srq);
	/* A QP on an SRQ has no receive queue of its own. */
	assert_int_equal(h_post_recv(fx.p.qp[1], 1, fx.buf[1], 8, fx.mr[1]->lkey), EINVAL);
	for (i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)fx.buf[1] + (uint64_t)i * 100, 100,
					   fx.mr[1]->lkey };
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 50 + (uint64_t)i, .sg_list = &sge[i],
					       .num_sge = 1, .next = i < 2 ? &rwr[i + 1] : NULL };
	}
	assert_int_equal(ibv_post_srq_recv(fx.p.srq, rwr, &rbad), 0);
	assert_int_equal(ibv_modify_srq(fx.p.srq, &sattr, IBV_SRQ_LIMIT), 0);
	fill(fx.buf[0], 300, 5);
	for (i = 0; i < 2; i++)
		assert_int_equal(h_post(fx.p.qp[0], (uint64_t)i, IBV_WR_SEND,
					fx.buf[0] + i * 100, 100, fx.mr[0]->lkey,
					IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(fx.p.cq[1], wc, 2), 2);
	assert_int_equal(wc[0].wr_id, 50);
	assert_int_equal(wc[1].wr_id, 51);
	assert_memory_equal(fx.buf[1], fx.buf[0], 200);
	/* Falling below the armed limit raises the event once. */
	h_expect_async(fx.p.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, fx.p.srq);
	assert_int_equal(ibv_query_srq(fx.p.srq, &sattr), 0);
	assert_int_equal(sattr.srq_limit, 0);
	assert_int_equal(h_poll(fx.p.cq[0], wc, 2), 2);
	/* A QP on an SRQ that leaves for ERR says when its last WQE is done. */
	assert_int_equal(softrdma_qp_set_error(fx.p.qp[1], 0), 0);
	h_expect_async(fx.p.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, fx.p.qp[1]);
	/* The SRQ's remaining receive is the SRQ's, not flushed with the QP. */
	h_assert_empty(fx.p.cq[1]);
}

static void test_mr_iova(void **state)
{
	uint64_t iova = 0x7700000000ULL;
	struct ibv_mr *imr = ibv_reg_mr_iova(fx.p.pd, fx.buf[1], LEN, iova,
					     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ);
	unsigned long fast;
	struct ibv_wc wc;

	(void)state;
	assert_non_null(imr);
	fill(fx.buf[0], 64, 17);
	memset(fx.buf[1], 0, LEN);
	/* Remote addresses are in the MR's IOVA space, not the host's. */
	assert_int_equal(h_post(fx.p.qp[0], 1, IBV_WR_RDMA_WRITE, fx.buf[0], 64, fx.mr[0]->lkey,
				IBV_SEND_SIGNALED, iova + 512, imr->rkey), 0);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(fx.buf[1] + 512, fx.buf[0], 64);
	/* The host address is outside the IOVA range: an access error, the engine's. */
	fast = softrdma_fast_executed(IBV_WR_RDMA_READ);
	assert_int_equal(h_post(fx.p.qp[0], 2, IBV_WR_RDMA_READ, fx.buf[0], 64, fx.mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)fx.buf[1], imr->rkey), 0);
	h_assert_fast(IBV_WR_RDMA_READ, fast, 0);
	assert_int_equal(h_poll(fx.p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	h_expect_async(fx.p.ctx, IBV_EVENT_QP_ACCESS_ERR, fx.p.qp[1]);
	assert_int_equal(ibv_dereg_mr(imr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_sge_lists, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_send_with_imm, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_rdma_write_and_imm, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_rdma_read, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_zero_length, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_rc_ordering, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_mr_iova, open_pair, close_pair),
	};
	const struct CMUnitTest srq_tests[] = {
		cmocka_unit_test_setup_teardown(test_srq, open_pair, close_pair),
	};
	int failed = 0;

	h_opts_default(&opts);
	failed += h_run_all_modes(tests);
	opts.use_srq = 1;
	failed += h_run_all_modes(srq_tests);
	return failed;
}
