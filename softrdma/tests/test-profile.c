/* SPDX-License-Identifier: MIT */
/*
 * Device profiles (SOFTRDMA_PROFILE, set by meson for each run): the device
 * reports that provider's limits, and refuses what that provider refuses,
 * the way it refuses it. The expected figures are the provider's own (see
 * README.md, "Device profiles"), written out here once more on purpose.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct expect {
	const char *name;
	uint32_t vendor_id;
	int max_sge, max_sge_rd, max_rd_atom;
	uint32_t max_inline;
	int inline_post_err;		/* what a post with too much inline data returns */
	bool mw, iwarp;
	uint32_t max_msg_sz;
	int gid_tbl_len;
};

static const struct expect expects[] = {
	{ "softrdma", 0x1, 32, 16, 16, 512, EINVAL, true, false, 1u << 31, 2 },
	{ "mlx5", 0x02c9, 30, 30, 16, 828, ENOMEM, true, false, 1u << 30, 255 },
	{ "rxe", 0xffffff, 32, 32, 128, 512, EINVAL, true, false, 1u << 23, 1024 },
	{ "siw", 0x626d74, 6, 1, 128, 80, -EINVAL, false, true, 0xffffffffu, 2 },
};

static const struct expect *want;
static struct h_pair p;
static struct h_opts opts;

static void test_device_reports_profile(void **state)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr attr;

	(void)state;
	assert_non_null(list);
	assert_int_equal(list[0]->transport_type, want->iwarp ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB);
	assert_int_equal(list[0]->node_type, want->iwarp ? IBV_NODE_RNIC : IBV_NODE_CA);
	ibv_free_device_list(list);
	assert_int_equal(ibv_query_device(p.ctx, &attr), 0);
	assert_non_null(strstr(attr.fw_ver, want->name));
	assert_int_equal(attr.vendor_id, want->vendor_id);
	assert_int_equal(attr.max_sge, want->max_sge);
	assert_int_equal(attr.max_sge_rd, want->max_sge_rd);
	assert_int_equal(attr.max_qp_rd_atom, want->max_rd_atom);
	assert_int_equal(!!(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW), want->mw);
	assert_int_equal(!!(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B), want->mw);
	assert_int_equal(attr.max_mw != 0, want->mw);
	{
		struct ibv_device_attr_ex ex;

		assert_int_equal(ibv_query_device_ex(p.ctx, NULL, &ex), 0);
		assert_int_equal(ex.device_cap_flags_ex, attr.device_cap_flags);
		assert_int_equal(ex.phys_port_cnt_ex, 1);
	}
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
}

/* The port's limits; GIDs past the two populated ones read as empty entries. */
static void test_port_reports_profile(void **state)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry entry;
	union ibv_gid gid, zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(ibv_query_port(p.ctx, 1, &pa), 0);
	assert_int_equal(pa.max_msg_sz, want->max_msg_sz);
	assert_int_equal(pa.gid_tbl_len, want->gid_tbl_len);
	assert_int_equal(ibv_query_gid(p.ctx, 1, 0, &gid), 0);
	assert_memory_not_equal(&gid, &zero, sizeof(gid));
	assert_int_equal(ibv_query_gid(p.ctx, 1, want->gid_tbl_len - 1, &gid), 0);
	if (want->gid_tbl_len > 2) {
		assert_memory_equal(&gid, &zero, sizeof(gid));
		assert_int_equal(ibv_query_gid_ex(p.ctx, 1, 2, &entry, 0), ENODATA);
	}
	assert_int_equal(ibv_query_gid(p.ctx, 1, want->gid_tbl_len, &gid), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_query_gid_ex(p.ctx, 1, (uint32_t)want->gid_tbl_len, &entry, 0),
			 EINVAL);
}

static void test_qp_caps_are_the_profiles(void **state)
{
	struct ibv_qp_init_attr init = {
		.send_cq = p.cq[0], .recv_cq = p.cq[0], .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	(void)state;
	init.cap.max_inline_data = want->max_inline + 1;
	errno = 0;
	assert_null(ibv_create_qp(p.pd, &init));
	assert_int_equal(errno, EINVAL);
	init.cap.max_inline_data = 0;
	init.cap.max_send_sge = (uint32_t)want->max_sge + 1;
	assert_null(ibv_create_qp(p.pd, &init));
	/* rxe grants 16 bytes of inline data per send SGE, whatever was asked. */
	init.cap.max_send_sge = 2;
	qp = ibv_create_qp(p.pd, &init);
	assert_non_null(qp);
	assert_int_equal(init.cap.max_inline_data, strcmp(want->name, "rxe") == 0 ? 32 : 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_inline_too_long(void **state)
{
	static uint8_t buf[1024];
	struct ibv_sge sge = { (uintptr_t)buf, 0, 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE };
	struct ibv_send_wr *bad = NULL;

	(void)state;
	sge.length = opts.max_inline + 1;
	assert_int_equal(ibv_post_send(p.qp[0], &wr, &bad), want->inline_post_err);
	assert_ptr_equal(bad, &wr);
}

static void test_windows(void **state)
{
	struct ibv_mw *mw;

	(void)state;
	errno = 0;
	mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	if (want->mw) {
		assert_non_null(mw);
		assert_int_equal(ibv_dealloc_mw(mw), 0);
	} else {
		assert_null(mw);
		assert_int_equal(errno, EOPNOTSUPP);
	}
}

/* UD QPs, their address handles and rdma_cm's UDP space: all but siw (iWARP) have them. */
static void test_ud(void **state)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = p.cq[0], .recv_cq = p.cq[0], .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct rdma_cm_id *id = NULL;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	int ret;

	(void)state;
	errno = 0;
	qp = ibv_create_qp(p.pd, &qa);
	assert_int_equal(qp == NULL, want->iwarp);
	assert_true(qp || errno == EOPNOTSUPP);
	if (qp)
		assert_int_equal(ibv_destroy_qp(qp), 0);
	errno = 0;
	ah = ibv_create_ah(p.pd, &aa);
	assert_int_equal(ah == NULL, want->iwarp);
	assert_true(ah || errno == EOPNOTSUPP);
	if (ah)
		assert_int_equal(ibv_destroy_ah(ah), 0);
	errno = 0;
	ret = rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP);
	assert_int_equal(ret == -1, want->iwarp);
	assert_true(!ret || errno == EOPNOTSUPP);
	if (!ret)
		assert_int_equal(rdma_destroy_id(id), 0);
}

/* iWARP: no immediate data and no LOCAL_INV from user space; libsiw says so negatively. */
static void test_iwarp_opcodes(void **state)
{
	static uint8_t buf[64];
	struct ibv_mr *mr = h_reg(p.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	int refused = want->iwarp ? -EINVAL : 0;

	(void)state;
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_LOCAL_INV, NULL, 0, 0, 0, 0, 0x12345678),
			 refused);
	if (!refused) {
		/* Elsewhere it runs (and fails: no such key), taking the QP to ERR. */
		h_settle();
	} else {
		assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND_WITH_IMM, buf, 8, mr->lkey, 0, 0, 0),
				 -EINVAL);
		assert_int_equal(h_post(p.qp[0], 3, IBV_WR_RDMA_WRITE_WITH_IMM, buf, 8, mr->lkey, 0,
					(uintptr_t)buf, 0), -EINVAL);
	}
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

/* A Read's sink: iWARP writes it remotely (tagged), so it needs REMOTE_WRITE; and one SGE. */
static void test_read_sink(void **state)
{
	static uint8_t src[64], dst[64];
	struct ibv_mr *smr = h_reg(p.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *local_only = h_reg(p.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sges[2] = {
		{ (uintptr_t)dst, 32, local_only->lkey },
		{ (uintptr_t)dst + 32, 32, local_only->lkey },
	};
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = sges, .num_sge = 2,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;

	(void)state;
	memset(src, 'R', sizeof(src));
	wr.wr.rdma.remote_addr = (uintptr_t)src;
	wr.wr.rdma.rkey = smr->rkey;
	if (want->max_sge_rd < 2)
		assert_int_equal(ibv_post_send(p.qp[0], &wr, &bad), -EINVAL);
	wr.num_sge = 1;
	sges[0].length = sizeof(dst);
	assert_int_equal(ibv_post_send(p.qp[0], &wr, &bad), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, want->iwarp ? IBV_WC_LOC_PROT_ERR : IBV_WC_SUCCESS);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(local_only), 0);
}

static void test_read_sink_remote_write(void **state)
{
	static uint8_t src[64], dst[64];
	struct ibv_mr *smr = h_reg(p.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *dmr = h_reg(p.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	(void)state;
	memset(src, 'S', sizeof(src));
	assert_int_equal(h_post(p.qp[0], 10, IBV_WR_RDMA_READ, dst, sizeof(dst), dmr->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)src, smr->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(dst[63], 'S');
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

static int open_pair(void **state)
{
	(void)state;
	h_opts_default(&opts);
	if (opts.max_sge > (uint32_t)want->max_sge)
		opts.max_sge = (uint32_t)want->max_sge;
	if (opts.max_inline > want->max_inline)
		opts.max_inline = want->max_inline;
	h_pair_open(&p, &opts);
	return 0;
}

static int close_pair(void **state)
{
	struct ibv_wc wc;

	(void)state;
	h_settle();
	while (ibv_poll_cq(p.cq[0], 1, &wc) > 0 || ibv_poll_cq(p.cq[1], 1, &wc) > 0)
		;
	h_pair_close(&p);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_device_reports_profile),
		T(test_port_reports_profile),
		T(test_qp_caps_are_the_profiles),
		T(test_inline_too_long),
		T(test_windows),
		T(test_iwarp_opcodes),
		T(test_ud),
		T(test_read_sink),
		T(test_read_sink_remote_write),
	};
	const char *name = softrdma_profile();
	size_t i;

	for (i = 0; i < sizeof(expects) / sizeof(expects[0]); i++)
		if (strcmp(expects[i].name, name) == 0)
			want = &expects[i];
	if (!want)
		return 1;
	return h_run_all_modes(tests);
}
