/* SPDX-License-Identifier: MIT */
/*
 * Device profiles (SOFTRDMA_PROFILE=mlx5|rxe|siw): softrdma0 reports and
 * enforces another provider's attributes, so that a library meets on
 * softrdma the limits and refusals it will meet on that hardware. The
 * figures and their sources are in README.md ("Device profiles"); where a
 * provider's figure is past what softrdma models (its GID table), the
 * README says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

#define COMMON_CAPS (IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT)

/*
 * The extended verbs (README "Device profiles"). The wc_flags are rxe's
 * RXE_SUP_WC_FLAGS, IBV_WC_STANDARD_FLAGS; mlx5 also reports timestamps,
 * CVLAN, flow tags and tag matching, which softrdma does not model. The
 * send ops are RC's in rxe and mlx5 but for atomics (and mlx5's TSO),
 * which softrdma does not model either.
 */
#define EXT_WC_FLAGS	IBV_WC_STANDARD_FLAGS
#define EXT_SEND_OPS	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

static const struct soft_profile profiles[] = {
	{
		/* softrdma's own device: generous in every limit. */
		.name = "softrdma",
		.vendor_id = 0x1,
		.vendor_part_id = 1,
		.max_qp_wr = SOFT_MAX_QP_WR,
		.max_sge = SOFT_MAX_SGE,
		.max_sge_rd = SOFT_MAX_SGE_RD,
		.max_cqe = SOFT_MAX_CQE,
		.max_rd_atom = SOFT_MAX_RD_ATOM,
		.max_srq_wr = SOFT_MAX_QP_WR,
		.max_srq_sge = SOFT_MAX_SGE,
		.max_inline = SOFT_MAX_INLINE,
		.max_mr_size = SOFT_MAX_MR_SIZE,
		.page_size_cap = 0xfffff000,
		.max_msg_sz = SOFT_MAX_MSG,
		.gid_tbl_len = 2,
		.active_mtu = IBV_MTU_4096,
		.cap_flags = COMMON_CAPS | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			     IBV_DEVICE_MEM_MGT_EXTENSIONS,
		.node_type = IBV_NODE_CA,
		.transport = IBV_TRANSPORT_IB,
		.mw = true,
		.inline_post_err = EINVAL,
		.cq_wc_flags = EXT_WC_FLAGS,
		.cq_ex_attr_err = EOPNOTSUPP,
		.cq_ex_flags_err = EINVAL,
		.qp_send_ops = EXT_SEND_OPS,
		.parent_domain = true,
	},
	{
		/* A ConnectX-5/6 (Dx) in RoCE mode, as its ibv_devinfo -v shows. */
		.name = "mlx5",
		.vendor_id = 0x02c9,
		.vendor_part_id = 4125,
		.max_qp_wr = 32768,
		.max_sge = 30,
		.max_sge_rd = 30,
		.max_cqe = 4194303,
		.max_rd_atom = 16,
		.max_srq_wr = 32767,
		.max_srq_sge = 31,
		.max_inline = 828,
		.max_mr_size = ~0ULL,
		.page_size_cap = 0xfffffffffffff000ULL,
		.max_msg_sz = 1U << 30,
		.gid_tbl_len = 255,
		.active_mtu = IBV_MTU_1024,
		.cap_flags = COMMON_CAPS | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			     IBV_DEVICE_MEM_MGT_EXTENSIONS,
		.node_type = IBV_NODE_CA,
		.transport = IBV_TRANSPORT_IB,
		.mw = true,
		.inline_post_err = ENOMEM,
		.cq_wc_flags = EXT_WC_FLAGS,
		.cq_ex_attr_err = EINVAL,
		.cq_ex_flags_err = EINVAL,
		.qp_send_ops = EXT_SEND_OPS,
		.wr_all_builders = true,
		.wr_err = ENOMEM,
		.parent_domain = true,
	},
	{
		/* Soft-RoCE of Linux 6.1 (rxe_param.h). */
		.name = "rxe",
		.vendor_id = 0xffffff,
		.vendor_part_id = 0,
		.max_qp_wr = 1 << 20,
		.max_sge = 32,
		.max_sge_rd = 32,
		.max_cqe = 32767,
		.max_rd_atom = 128,
		.max_srq_wr = 1 << 20,
		.max_srq_sge = 27,
		.max_inline = 512,
		.inline_from_sges = true,
		.max_mr_size = ~0ULL,
		.page_size_cap = 0xfffff000,
		.max_msg_sz = 1U << 23,
		.gid_tbl_len = 1024,
		.active_mtu = IBV_MTU_1024,
		.cap_flags = COMMON_CAPS | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			     IBV_DEVICE_MEM_MGT_EXTENSIONS,
		.node_type = IBV_NODE_CA,
		.transport = IBV_TRANSPORT_IB,
		.mw = true,
		.inline_post_err = EINVAL,
		.cq_wc_flags = EXT_WC_FLAGS,
		.cq_ex_attr_err = EOPNOTSUPP,
		.qp_send_ops = EXT_SEND_OPS,
		.wr_err = ENOSPC,
	},
	{
		/* Soft-iWARP of Linux 6.1 (siw.h, siw-abi.h) with rdma-core's libsiw. */
		.name = "siw",
		.vendor_id = 0x626d74,
		.vendor_part_id = 1,
		.max_qp_wr = 32768,
		.max_sge = 6,
		.max_sge_rd = 1,
		.max_cqe = 3276800,
		.max_rd_atom = 128,
		.max_srq_wr = 327680,
		.max_srq_sge = 6,
		.max_inline = 80,
		.max_mr_size = ~0ULL,
		.page_size_cap = 0x1000,
		.max_msg_sz = 0xffffffffU,
		.gid_tbl_len = 2,
		.active_mtu = IBV_MTU_1024,
		.cap_flags = IBV_DEVICE_MEM_MGT_EXTENSIONS,
		.node_type = IBV_NODE_RNIC,
		.transport = IBV_TRANSPORT_IWARP,
		.iwarp = true,
		.inline_post_err = EINVAL,
		.negative_post_err = true,
	},
};

static const struct soft_profile *chosen;

static const struct soft_profile *choose(void)
{
	const char *want = getenv("SOFTRDMA_PROFILE");
	size_t i;

	if (!want || !*want)
		return &profiles[0];
	for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (strcmp(want, profiles[i].name) == 0)
			return &profiles[i];
	fprintf(stderr, "softrdma: SOFTRDMA_PROFILE=%s: unknown (softrdma, mlx5, rxe, siw); "
		"using softrdma\n", want);
	return &profiles[0];
}

const struct soft_profile *soft_profile(void)
{
	const struct soft_profile *p = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);

	/* Racing first callers choose the same entry. */
	if (!p) {
		p = choose();
		__atomic_store_n(&chosen, p, __ATOMIC_RELEASE);
	}
	return p;
}

const char *softrdma_profile(void)
{
	return soft_profile()->name;
}
