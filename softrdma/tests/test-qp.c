/* SPDX-License-Identifier: MIT */
/* softrdma conformance: QP creation, the state machine, and the rules of posting. */
#include <errno.h>
#include <string.h>

#include "harness.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;

static struct ibv_qp *new_qp(uint32_t send_wr, uint32_t recv_wr, int sig_all)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 32 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = sig_all,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	assert_non_null(qp);
	return qp;
}

static void test_create_validation(void **state)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 5, .max_recv_wr = 3, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UC,
	};
	struct ibv_qp *qp;

	(void)state;
	/* RC and UD are modelled (UD in test-ud.c), UC is not. */
	assert_null(ibv_create_qp(pd, &qa));
	assert_int_equal(errno, EOPNOTSUPP);
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_sge = 33;
	assert_null(ibv_create_qp(pd, &qa));
	assert_int_equal(errno, EINVAL);
	qa.cap.max_send_sge = 1;
	qa.send_cq = NULL;
	assert_null(ibv_create_qp(pd, &qa));
	qa.send_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	assert_non_null(qp);
	/* Depths are exact: a consumer cannot lean on hidden slack. */
	assert_int_equal(qa.cap.max_send_wr, 5);
	assert_int_equal(qa.cap.max_recv_wr, 3);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	assert_true(qp->qp_num > 1);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_state_machine(void **state)
{
	struct ibv_qp *qp = new_qp(4, 4, 0);
	struct ibv_qp_attr attr, got;
	struct ibv_qp_init_attr init;
	struct h_opts o;

	(void)state;
	h_opts_default(&o);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), EINVAL);
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	/* INIT needs PKEY_INDEX, PORT and ACCESS_FLAGS, and nothing else. */
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN), EINVAL);
	attr.port_num = 2;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				       IBV_QP_ACCESS_FLAGS), EINVAL);
	attr.port_num = 1;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				       IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(qp->state, IBV_QPS_INIT);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.max_dest_rd_atomic = 17;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), EINVAL);
	attr.max_dest_rd_atomic = 16;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.rnr_retry = 8;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), EINVAL);
	attr.rnr_retry = 5;
	attr.retry_cnt = 6;
	attr.max_rd_atomic = 3;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
	assert_int_equal(ibv_query_qp(qp, &got, IBV_QP_STATE, &init), 0);
	assert_int_equal(got.qp_state, IBV_QPS_RTS);
	assert_int_equal(got.rnr_retry, 5);
	assert_int_equal(got.retry_cnt, 6);
	assert_int_equal(got.max_rd_atomic, 3);
	assert_int_equal(got.max_dest_rd_atomic, 16);
	assert_int_equal(got.dest_qp_num, qp->qp_num);
	assert_int_equal(init.cap.max_send_wr, 4);
	/* Back to INIT is not a transition; ERR is always one, and leaves only to RESET. */
	attr.qp_state = IBV_QPS_INIT;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), EINVAL);
	attr.qp_state = IBV_QPS_ERR;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	attr.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), EINVAL);
	attr.qp_state = IBV_QPS_RESET;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	h_qp_to_rts(qp, qp->qp_num, &o);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_post_needs_state(void **state)
{
	struct ibv_qp *qp = new_qp(4, 4, 1);
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	static char buf[16];
	struct ibv_mr *mr = h_reg(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

	(void)state;
	assert_int_equal(h_post(qp, 1, IBV_WR_SEND, buf, 8, mr->lkey, 0, 0, 0), EINVAL);
	assert_int_equal(h_post_recv(qp, 1, buf, 8, mr->lkey), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				       IBV_QP_ACCESS_FLAGS), 0);
	/* Receives may be posted in INIT (before connecting); sends may not. */
	assert_int_equal(h_post_recv(qp, 2, buf, 8, mr->lkey), 0);
	assert_int_equal(h_post(qp, 3, IBV_WR_SEND, buf, 8, mr->lkey, 0, 0, 0), EINVAL);
	h_assert_empty(cq);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

static void test_sq_full_and_unsignaled_slots(void **state)
{
	static char src[64], dst[64];
	struct ibv_mr *smr = h_reg(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = h_reg(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *qp = new_qp(4, 4, 0);
	struct softrdma_counts counts;
	struct ibv_wc wc;
	struct h_opts o;
	int i;

	(void)state;
	h_opts_default(&o);
	h_qp_to_rts(qp, qp->qp_num, &o);
	for (i = 0; i < 3; i++)
		assert_int_equal(h_post(qp, (uint64_t)i, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, 0,
					(uintptr_t)dst, dmr->rkey), 0);
	softrdma_get_counts(&counts);
	assert_int_equal(counts.send_wrs, 3);
	h_settle();
	softrdma_get_counts(&counts);
	assert_int_equal(counts.send_wrs, 0);
	/* Executed, unsignaled: no completion, and their slots are still taken. */
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	assert_int_equal(h_post(qp, 3, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, 0,
				(uintptr_t)dst, dmr->rkey), 0);
	assert_int_equal(h_post(qp, 4, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dmr->rkey), ENOMEM);
	h_settle();
	assert_int_equal(h_post(qp, 5, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dmr->rkey), ENOMEM);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	/* Only a signaled completion releases the slots before it. */
	assert_int_equal(ibv_destroy_qp(qp), 0);
	qp = new_qp(4, 4, 0);
	h_qp_to_rts(qp, qp->qp_num, &o);
	for (i = 0; i < 3; i++)
		assert_int_equal(h_post(qp, (uint64_t)i, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, 0,
					(uintptr_t)dst, dmr->rkey), 0);
	assert_int_equal(h_post(qp, 3, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dmr->rkey), 0);
	assert_int_equal(h_poll(cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	for (i = 0; i < 4; i++)
		assert_int_equal(h_post(qp, 10 + (uint64_t)i, IBV_WR_RDMA_WRITE, src, 8, smr->lkey,
					IBV_SEND_SIGNALED, (uintptr_t)dst, dmr->rkey), 0);
	assert_int_equal(h_poll(cq, (struct ibv_wc[4]){ 0 }, 4), 4);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

/* Doorbells, WRs and send completions are counted per QP, a chain once. */
static void test_qp_stats(void **state)
{
	static char src[64], dst[64];
	struct ibv_mr *smr = h_reg(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = h_reg(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *qp = new_qp(8, 8, 0);
	struct ibv_sge sge[3] = {
		{ (uintptr_t)src, 8, smr->lkey }, { (uintptr_t)src, 8, smr->lkey },
		{ (uintptr_t)src, 8, smr->lkey },
	};
	struct ibv_send_wr wr[3], *bad;
	struct softrdma_qp_stats st, active, passive;
	struct ibv_wc wc[2];
	struct h_opts o;
	int i;

	(void)state;
	h_opts_default(&o);
	h_qp_to_rts(qp, qp->qp_num, &o);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].wr.rdma.remote_addr = (uintptr_t)dst;
		wr[i].wr.rdma.rkey = dmr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[2].send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(ibv_post_send(qp, wr, &bad), 0);
	assert_int_equal(h_post(qp, 9, IBV_WR_RDMA_WRITE, src, 8, smr->lkey, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dmr->rkey), 0);
	assert_int_equal(h_post_recv(qp, 10, dst, 8, dmr->lkey), 0);
	assert_int_equal(h_poll(cq, wc, 2), 2);
	softrdma_qp_stats(qp, &st);
	assert_int_equal(st.send_posts, 2);
	assert_int_equal(st.send_wrs, 4);
	assert_int_equal(st.send_cqes, 2);
	assert_int_equal(st.recv_posts, 1);
	assert_int_equal(st.recv_wrs, 1);
	/* A QP made without rdma_cm counts on the active side. */
	softrdma_qp_stats_sum(&active, &passive);
	assert_true(active.send_posts >= 2);
	assert_int_equal(passive.send_posts, 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

static void test_bad_wr_in_chain(void **state)
{
	static char buf[64];
	struct ibv_mr *mr = h_reg(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *qp = new_qp(2, 2, 1);
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_recv_wr rwr[3], *rbad = NULL;
	struct h_opts o;
	int i;

	(void)state;
	h_opts_default(&o);
	h_qp_to_rts(qp, qp->qp_num, &o);
	memset(wr, 0, sizeof(wr));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
		rwr[i].wr_id = (uint64_t)i;
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 2 ? &rwr[i + 1] : NULL;
	}
	wr[0].num_sge = 3;
	assert_int_equal(ibv_post_send(qp, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	wr[0].num_sge = 1;
	wr[1].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	assert_int_equal(ibv_post_send(qp, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[1]);
	wr[1].opcode = IBV_WR_SEND;
	h_settle();
	/* The WR before the bad one was accepted and runs (RNR: nothing posted yet). */
	assert_int_equal(h_poll(cq, (struct ibv_wc[1]){ 0 }, 1), 1);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	qp = new_qp(2, 2, 1);
	h_qp_to_rts(qp, qp->qp_num, &o);
	/* Three into a ring of two: the third is refused, the first two stand. */
	assert_int_equal(ibv_post_recv(qp, rwr, &rbad), ENOMEM);
	assert_ptr_equal(rbad, &rwr[2]);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[2]);
	assert_int_equal(h_poll(cq, (struct ibv_wc[4]){ 0 }, 4), 4);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

static void test_inline_copied_at_post(void **state)
{
	char src[32] = "inline payload";
	static char dst[32];
	struct ibv_mr *dmr = h_reg(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *qp = new_qp(4, 4, 1);
	struct ibv_wc wc[2];
	struct h_opts o;

	(void)state;
	h_opts_default(&o);
	h_qp_to_rts(qp, qp->qp_num, &o);
	assert_int_equal(h_post_recv(qp, 7, dst, sizeof(dst), dmr->lkey), 0);
	/* No lkey: inline data is never looked up in an MR. */
	assert_int_equal(h_post(qp, 1, IBV_WR_SEND, src, 15, 0, IBV_SEND_INLINE, 0, 0), 0);
	memset(src, 'X', sizeof(src));
	assert_int_equal(h_poll(cq, wc, 2), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id + wc[1].wr_id, 8);
	assert_string_equal(dst, "inline payload");
	assert_int_equal(h_post(qp, 2, IBV_WR_SEND, src, 32 + 1, 0, IBV_SEND_INLINE, 0, 0), EINVAL);
	assert_int_equal(h_post(qp, 2, IBV_WR_RDMA_READ, src, 8, 0, IBV_SEND_INLINE, 0, 0), EINVAL);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

static void test_destroy_busy(void **state)
{
	struct ibv_qp *qp = new_qp(1, 1, 0);

	(void)state;
	assert_int_equal(ibv_destroy_cq(cq), EBUSY);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static int setup(void **state)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	(void)state;
	softrdma_set_mode(SOFTRDMA_MODE_STEP);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	return ctx && pd && cq ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	return ibv_close_device(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_validation),
		cmocka_unit_test(test_state_machine),
		cmocka_unit_test(test_post_needs_state),
		cmocka_unit_test(test_sq_full_and_unsignaled_slots),
		cmocka_unit_test(test_qp_stats),
		cmocka_unit_test(test_bad_wr_in_chain),
		cmocka_unit_test(test_inline_copied_at_post),
		cmocka_unit_test(test_destroy_busy),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
