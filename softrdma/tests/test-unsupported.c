/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: what softrdma0 does not model answers at call time
 * as libibverbs answers for a provider without the operation (EOPNOTSUPP,
 * NULL with errno), after the checks libibverbs makes itself; and the
 * queries with a true answer of their own (fork protection, extended QPs,
 * data placement order).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* Multicast, which UD QPs would join; and the one P_Key, found. */
static void test_multicast_and_pkeys(void **state)
{
	union ibv_gid gid = { .raw = { 0xff, 0x12 } };
	struct h_pair p;
	struct h_opts o;

	(void)state;
	h_opts_default(&o);
	h_pair_open(&p, &o);
	assert_int_equal(ibv_attach_mcast(p.qp[0], &gid, 0), EOPNOTSUPP);
	assert_int_equal(ibv_detach_mcast(p.qp[0], &gid, 0), EOPNOTSUPP);
	assert_int_equal(ibv_get_pkey_index(p.ctx, 1, htobe16(0xffff)), 0);
	assert_int_equal(ibv_get_pkey_index(p.ctx, 1, htobe16(0x8001)), -1);
	assert_int_equal(ibv_get_pkey_index(p.ctx, 2, htobe16(0xffff)), -1);
	h_pair_close(&p);
}

static void test_import(void **state)
{
	struct h_pair p;
	struct h_opts o;
	int fds[2];
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	(void)state;
	h_opts_default(&o);
	h_pair_open(&p, &o);
	/* Not a character device: EINVAL; one that is no uverbs device of ours: ENODEV. */
	assert_int_equal(pipe(fds), 0);
	errno = 0;
	assert_null(ibv_import_device(fds[0]));
	assert_int_equal(errno, EINVAL);
	assert_true(null_fd >= 0);
	errno = 0;
	assert_null(ibv_import_device(null_fd));
	assert_int_equal(errno, ENODEV);
	close(fds[0]);
	close(fds[1]);
	close(null_fd);
	/* The context's own cmd_fd, as a program dup()s it to import: softrdma0 cannot. */
	assert_true(p.ctx->cmd_fd >= 0);
	null_fd = dup(p.ctx->cmd_fd);
	assert_true(null_fd >= 0);
	errno = 0;
	assert_null(ibv_import_device(null_fd));
	assert_int_equal(errno, EOPNOTSUPP);
	close(null_fd);
	errno = 0;
	assert_null(ibv_import_pd(p.ctx, p.pd->handle));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_mr(p.pd, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_dm(p.ctx, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	h_pair_close(&p);
}

static void test_ece(void **state)
{
	struct h_pair p;
	struct h_opts o;
	struct ibv_ece ece = { 0 };

	(void)state;
	h_opts_default(&o);
	h_pair_open(&p, &o);
	errno = 0;
	assert_int_equal(ibv_set_ece(p.qp[0], &ece), EOPNOTSUPP);
	assert_int_equal(errno, EOPNOTSUPP);
	ece.vendor_id = 0x15b3;
	assert_int_equal(ibv_set_ece(p.qp[0], &ece), EOPNOTSUPP);
	assert_int_equal(ibv_query_ece(p.qp[0], &ece), EOPNOTSUPP);
	h_pair_close(&p);
}

static void test_registrations(void **state)
{
	struct h_pair p;
	struct h_opts o;
	static char buf[256], other[256];
	struct ibv_mr *mr, before;

	(void)state;
	h_opts_default(&o);
	h_pair_open(&p, &o);
	errno = 0;
	assert_null(ibv_reg_dmabuf_mr(p.pd, 0, sizeof(buf), 0, 0, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	mr = h_reg(p.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	before = *mr;
	/* libibverbs' own checks: unknown flags, a translation without range, access unasked. */
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, 1 << 3, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, p.pd, NULL, 0,
				      IBV_ACCESS_LOCAL_WRITE), IBV_REREG_MR_ERR_INPUT);
	/* A well-formed request fails as the command, and the MR is as it was. */
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
			 IBV_REREG_MR_ERR_CMD);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other,
				      sizeof(other), 0), IBV_REREG_MR_ERR_CMD);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_memory_equal(mr, &before, sizeof(before));
	assert_int_equal(ibv_dereg_mr(mr), 0);
	h_pair_close(&p);
}

static void test_true_answers(void **state)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_SEND,
						  IBV_WR_RDMA_READ };
	struct h_pair p;
	struct h_opts o;
	static char buf[64];
	uint8_t mac[ETHERNET_LL_SIZE];
	struct ibv_ah_attr attr = { .port_num = 1, .is_global = 1 };
	uint16_t vid;
	size_t i;

	(void)state;
	/* No DMA, so nothing to protect across fork(). */
	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	assert_int_equal(ibv_dontfork_range(buf, sizeof(buf)), 0);
	assert_int_equal(ibv_dofork_range(buf, sizeof(buf)), 0);
	h_opts_default(&o);
	h_pair_open(&p, &o);
	/* No extended QPs; data is placed by memcpy(), in no promised order. */
	assert_null(ibv_qp_to_qp_ex(p.qp[0]));
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		assert_int_equal(ibv_query_qp_data_in_order(p.qp[0], ops[i], 0), 0);
	assert_int_equal(ibv_resolve_eth_l2_from_gid(p.ctx, &attr, mac, &vid), -EHOSTUNREACH);
	h_pair_close(&p);
}

static int setup(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_STEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multicast_and_pkeys),
		cmocka_unit_test(test_import),
		cmocka_unit_test(test_ece),
		cmocka_unit_test(test_registrations),
		cmocka_unit_test(test_true_answers),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
