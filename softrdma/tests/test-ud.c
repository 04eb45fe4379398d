/* SPDX-License-Identifier: MIT */
/*
 * UD QPs and address handles, as rxe has them: the state machine's masks,
 * datagrams with their 40-byte GRH, what the receiver drops without a word
 * (another Q_Key, no receive, a receive too short), a message over the MTU
 * (sent as nothing, still a success), SRQs, address handles and their
 * errors; rdma_cm's UDP port space (SIDR) in one process, and between two
 * over the socket backend.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"
#include "peer.h"

#define BUF_LEN		8192
#define QKEY		0x11223344u
#define GRH_LEN		40
/* softrdma0's active MTU (the default profile): UD messages are at most this long. */
#define PORT_MTU	4096

static const char *self;

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_srq *srq;
	struct ibv_ah *ah;		/* to GID 0, ::ffff:127.0.0.1 */
	uint8_t *buf[2];
	struct ibv_mr *mr[2];
};

/* RESET -> INIT (P_Key index, port, Q_Key) -> RTR (nothing) -> RTS (send PSN). */
static void ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY), 0);
	attr.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0x123;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

static struct ibv_qp *ud_create(struct ud *u, int i)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = u->cq[i], .recv_cq = u->cq[i], .srq = i == 1 ? u->srq : NULL,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};

	return ibv_create_qp(u->pd, &qa);
}

static struct ibv_ah *ah_to(struct ibv_pd *pd, int gid_index)
{
	struct ibv_ah_attr attr = { .is_global = 1, .port_num = 1, .dlid = 0x1234 };

	attr.grh.sgid_index = (uint8_t)gid_index;
	attr.grh.hop_limit = 17;
	attr.grh.traffic_class = 0x28;
	attr.grh.flow_label = 0xabcde;
	assert_int_equal(ibv_query_gid(pd->context, 1, gid_index, &attr.grh.dgid), 0);
	return ibv_create_ah(pd, &attr);
}

static void ud_open(struct ud *u, bool srq)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	memset(u, 0, sizeof(*u));
	assert_non_null(list);
	u->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(u->ctx);
	u->pd = ibv_alloc_pd(u->ctx);
	assert_non_null(u->pd);
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };

		u->srq = ibv_create_srq(u->pd, &sa);
		assert_non_null(u->srq);
	}
	for (i = 0; i < 2; i++) {
		u->cq[i] = ibv_create_cq(u->ctx, 64, NULL, NULL, 0);
		assert_non_null(u->cq[i]);
		u->qp[i] = ud_create(u, i);
		assert_non_null(u->qp[i]);
		ud_to_rts(u->qp[i], QKEY);
		u->buf[i] = calloc(1, BUF_LEN);
		assert_non_null(u->buf[i]);
		u->mr[i] = h_reg(u->pd, u->buf[i], BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	}
	u->ah = ah_to(u->pd, 0);
	assert_non_null(u->ah);
}

static void ud_close(struct ud *u)
{
	int i;

	h_settle();
	assert_int_equal(ibv_destroy_ah(u->ah), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(ibv_destroy_qp(u->qp[i]), 0);
		assert_int_equal(ibv_destroy_cq(u->cq[i]), 0);
		assert_int_equal(ibv_dereg_mr(u->mr[i]), 0);
		free(u->buf[i]);
	}
	if (u->srq)
		assert_int_equal(ibv_destroy_srq(u->srq), 0);
	assert_int_equal(ibv_dealloc_pd(u->pd), 0);
	assert_int_equal(ibv_close_device(u->ctx), 0);
}

/* QP 0 sends @len bytes of buf[0] to QP @qpn through @ah. */
static int ud_send(struct ud *u, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey,
		   enum ibv_wr_opcode op, uint32_t len, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)u->buf[0], len, u->mr[0]->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .imm_data = htobe32(imm) }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(u->qp[0], &wr, &bad);
}

/* A receive of @len bytes at buf[1] + @off, on QP 1's RQ or its SRQ. */
static void ud_recv(struct ud *u, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)(u->buf[1] + off), len, u->mr[1]->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (u->srq)
		assert_int_equal(ibv_post_srq_recv(u->srq, &wr, &bad), 0);
	else
		assert_int_equal(ibv_post_recv(u->qp[1], &wr, &bad), 0);
}

static void expect_send_ok(struct ud *u)
{
	struct ibv_wc wc;

	assert_int_equal(h_poll(u->cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, 100);
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* ---- the state machine ----------------------------------------------------------- */

/* IBA 10.3.1 for UD: each transition's required and allowed attributes, no more. */
static void test_modify_masks(void **state)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_qp_init_attr init;
	struct ud u;
	struct ibv_qp *qp;

	(void)state;
	ud_open(&u, false);
	qp = ud_create(&u, 0);
	assert_non_null(qp);
	assert_int_equal(qp->qp_type, IBV_QPT_UD);
	/* INIT needs the Q_Key; access flags are RC's. */
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY), 0);
	/* RTR takes no path, peer or PSN. */
	attr.qp_state = IBV_QPS_RTR;
	attr.dest_qp_num = u.qp[1]->qp_num;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_DEST_QPN), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	attr.qkey = QKEY + 1;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_QKEY), 0);
	/* RTS needs the send PSN, and nothing of RC's retries. */
	attr.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN |
				       IBV_QP_TIMEOUT), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	attr.qkey = QKEY;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_QKEY), 0);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(ibv_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_QKEY, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(attr.qkey, QKEY);
	assert_int_equal(init.qp_type, IBV_QPT_UD);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	ud_close(&u);
}

/* ---- delivery ----------------------------------------------------------------------- */

static uint16_t csum(const uint8_t *p)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/*
 * An IPv4 destination: the receive gets 20 zero bytes and the datagram's
 * IPv4 header, then the message; byte_len counts the 40; the completion
 * names the sender's QP, with the immediate data. ibv_init_ah_from_wc()
 * answers it with an AH back to the sender.
 */
static void test_grh_ipv4(void **state)
{
	uint8_t zero[20] = { 0 }, *grh;
	struct ibv_ah_attr back;
	struct ibv_ah *reply;
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	fill(u.buf[0], 100, 3);
	ud_recv(&u, 7, 0, GRH_LEN + 200);
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND_WITH_IMM, 100,
				 0xfeed), 0);
	expect_send_ok(&u);
	assert_int_equal(h_poll(u.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, GRH_LEN + 100);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xfeed);
	assert_int_equal(wc.src_qp, u.qp[0]->qp_num);
	assert_int_equal(wc.qp_num, u.qp[1]->qp_num);
	assert_int_equal(wc.slid, 0);
	assert_int_equal(wc.sl, 0);
	assert_int_equal(wc.pkey_index, 0);
	grh = u.buf[1];
	assert_memory_equal(grh, zero, 20);
	assert_int_equal(grh[20], 0x45);		/* IPv4, 5 words */
	assert_int_equal(grh[21], 0x28);		/* the traffic class */
	/* IP, UDP, BTH, DETH, ImmDt, 100 bytes, ICRC */
	assert_int_equal(grh[22] << 8 | grh[23], 20 + 8 + 12 + 8 + 4 + 100 + 4);
	assert_int_equal(grh[28], 17);			/* the hop limit */
	assert_int_equal(grh[29], IPPROTO_UDP);
	assert_int_equal(csum(grh + 20), 0xffff);
	assert_memory_equal(grh + 32, "\x7f\x00\x00\x01", 4);
	assert_memory_equal(grh + 36, "\x7f\x00\x00\x01", 4);
	assert_memory_equal(u.buf[1] + GRH_LEN, u.buf[0], 100);

	assert_int_equal(ibv_init_ah_from_wc(u.ctx, 1, &wc, (struct ibv_grh *)grh, &back), 0);
	assert_int_equal(back.is_global, 1);
	assert_int_equal(back.port_num, 1);
	assert_int_equal(back.grh.sgid_index, 0);
	assert_int_equal(back.grh.hop_limit, 17);
	assert_int_equal(back.grh.traffic_class, 0x28);
	assert_memory_equal(back.grh.dgid.raw + 10, "\xff\xff\x7f\x00\x00\x01", 6);
	reply = ibv_create_ah_from_wc(u.pd, &wc, (struct ibv_grh *)grh, 1);
	assert_non_null(reply);
	assert_ptr_equal(reply->pd, u.pd);
	assert_int_equal(ibv_destroy_ah(reply), 0);
	ud_close(&u);
}

/* An IPv6 destination (GID 1, ::1): the 40 bytes are the IPv6 header. */
static void test_grh_ipv6(void **state)
{
	struct ibv_grh grh;
	struct ibv_ah_attr back;
	union ibv_gid gid;
	struct ibv_ah *ah6;
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	ah6 = ah_to(u.pd, 1);
	assert_non_null(ah6);
	fill(u.buf[0], 33, 9);
	ud_recv(&u, 8, 0, GRH_LEN + 33);
	assert_int_equal(ud_send(&u, ah6, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 33, 0), 0);
	expect_send_ok(&u);
	assert_int_equal(h_poll(u.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, GRH_LEN + 33);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH);
	memcpy(&grh, u.buf[1], sizeof(grh));
	assert_int_equal(be32toh(grh.version_tclass_flow), 6u << 28 | 0x28 << 20 | 0xabcde);
	/* UDP, BTH, DETH, 33 bytes and 3 of padding, ICRC */
	assert_int_equal(be16toh(grh.paylen), 8 + 12 + 8 + 33 + 3 + 4);
	assert_int_equal(grh.next_hdr, IPPROTO_UDP);
	assert_int_equal(grh.hop_limit, 17);
	assert_int_equal(ibv_query_gid(u.ctx, 1, 1, &gid), 0);
	assert_memory_equal(&grh.sgid, &gid, sizeof(gid));
	assert_memory_equal(&grh.dgid, &gid, sizeof(gid));
	assert_memory_equal(u.buf[1] + GRH_LEN, u.buf[0], 33);
	assert_int_equal(ibv_init_ah_from_wc(u.ctx, 1, &wc, &grh, &back), 0);
	assert_int_equal(back.grh.sgid_index, 1);
	assert_int_equal(back.grh.flow_label, 0xabcde);
	assert_int_equal(back.grh.traffic_class, 0x28);
	assert_int_equal(ibv_destroy_ah(ah6), 0);
	ud_close(&u);
}

/*
 * What the receiver drops without a word, while the sender's Send succeeds:
 * another Q_Key (rxe's check_keys()), no receive posted (no RNR on UD), a
 * receive too short for the GRH and the message (rxe's class D), a
 * destination that is not softrdma0's GID. The receive stays posted and
 * takes the next datagram that fits. A Q_Key with its high bit set means
 * the sender's own (IBA 10.2.5).
 */
static void test_dropped(void **state)
{
	union ibv_gid elsewhere = { .raw = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 } };
	struct ibv_ah_attr attr = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *away;
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	/* No receive posted: gone, and a receive posted later does not bring it back. */
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 10, 0), 0);
	expect_send_ok(&u);
	h_assert_empty(u.cq[1]);
	ud_recv(&u, 1, 0, GRH_LEN + 10);
	h_assert_empty(u.cq[1]);
	/* Another Q_Key. */
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY + 1, IBV_WR_SEND, 10, 0), 0);
	expect_send_ok(&u);
	h_assert_empty(u.cq[1]);
	/* Too long for the receive: one byte over. */
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 11, 0), 0);
	expect_send_ok(&u);
	h_assert_empty(u.cq[1]);
	/* Nobody at that address, or no such QP. */
	attr.grh.dgid = elsewhere;
	away = ibv_create_ah(u.pd, &attr);
	assert_non_null(away);
	assert_int_equal(ud_send(&u, away, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 10, 0), 0);
	expect_send_ok(&u);
	assert_int_equal(ud_send(&u, u.ah, 0xabcdef, QKEY, IBV_WR_SEND, 10, 0), 0);
	expect_send_ok(&u);
	h_assert_empty(u.cq[1]);
	/* The sender's own Q_Key, asked for with the high bit: the receive takes it. */
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, 0x80000000u, IBV_WR_SEND, 10, 0), 0);
	expect_send_ok(&u);
	assert_int_equal(h_poll(u.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, GRH_LEN + 10);
	assert_int_equal(h_qp_state(u.qp[1]), IBV_QPS_RTS);
	assert_int_equal(ibv_destroy_ah(away), 0);
	ud_close(&u);
}

/*
 * A message longer than the port's MTU: not sent, and no error (IBA
 * C10-93.1.1; rxe fakes a successful send). One of exactly the MTU goes.
 */
static void test_over_mtu(void **state)
{
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	ud_recv(&u, 2, 0, GRH_LEN + PORT_MTU + 1);
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, PORT_MTU + 1, 0),
			 0);
	expect_send_ok(&u);
	h_assert_empty(u.cq[1]);
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, PORT_MTU, 0), 0);
	expect_send_ok(&u);
	assert_int_equal(h_poll(u.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, GRH_LEN + PORT_MTU);
	assert_int_equal(h_qp_state(u.qp[0]), IBV_QPS_RTS);
	ud_close(&u);
}

/*
 * An SRQ feeds a UD QP as an RQ does; a receive too short there completes
 * with IBV_WC_REM_INV_REQ_ERR (rxe's class E) and the QP stays in RTS.
 */
static void test_srq(void **state)
{
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_open(&u, true);
	ud_recv(&u, 3, 0, GRH_LEN + 64);
	ud_recv(&u, 4, 1024, GRH_LEN + 4);
	fill(u.buf[0], 64, 1);
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 64, 0), 0);
	expect_send_ok(&u);
	assert_int_equal(h_poll(u.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.src_qp, u.qp[0]->qp_num);
	assert_memory_equal(u.buf[1] + GRH_LEN, u.buf[0], 64);
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 5, 0), 0);
	expect_send_ok(&u);
	assert_int_equal(h_poll(u.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(h_qp_state(u.qp[1]), IBV_QPS_RTS);
	ud_close(&u);
}

/* Address handles: rxe's and libibverbs' refusals, and the PD they hold. */
static void test_ah_errors(void **state)
{
	struct ibv_ah_attr attr = { .is_global = 1, .port_num = 1 };
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH };
	struct ibv_ah_attr back;
	struct ibv_grh grh;
	struct ibv_pd *pd2;
	struct ibv_ah *ah;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	assert_int_equal(ibv_query_gid(u.ctx, 1, 0, &attr.grh.dgid), 0);
	attr.port_num = 2;
	errno = 0;
	assert_null(ibv_create_ah(u.pd, &attr));
	assert_int_equal(errno, EINVAL);
	attr.port_num = 1;
	attr.is_global = 0;		/* RoCE needs the GRH */
	errno = 0;
	assert_null(ibv_create_ah(u.pd, &attr));
	assert_int_equal(errno, EINVAL);
	attr.is_global = 1;
	attr.grh.sgid_index = 2;	/* not a populated GID */
	errno = 0;
	assert_null(ibv_create_ah(u.pd, &attr));
	assert_int_equal(errno, EINVAL);
	attr.grh.sgid_index = 0;
	/* The PD is busy while its AH lives. */
	pd2 = ibv_alloc_pd(u.ctx);
	assert_non_null(pd2);
	ah = ibv_create_ah(pd2, &attr);
	assert_non_null(ah);
	assert_int_equal(ibv_dealloc_pd(pd2), EBUSY);
	/* An AH of another PD: rxe finds no address for the WQE. */
	assert_int_equal(ud_send(&u, ah, u.qp[1]->qp_num, QKEY, IBV_WR_SEND, 4, 0), 0);
	assert_int_equal(h_poll(u.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	/* A GRH that is neither IPv4 nor IPv6. */
	memset(&grh, 0, sizeof(grh));
	wc.wc_flags = IBV_WC_GRH;
	errno = 0;
	assert_int_equal(ibv_init_ah_from_wc(u.ctx, 1, &wc, &grh, &back), -1);
	assert_int_equal(errno, EPROTONOSUPPORT);
	/* An IPv6 GRH to an address that is none of the port's GIDs. */
	grh.version_tclass_flow = htobe32(6u << 28);
	grh.next_hdr = IPPROTO_UDP;
	grh.dgid.raw[0] = 0xfe;
	errno = 0;
	assert_null(ibv_create_ah_from_wc(u.pd, &wc, &grh, 1));
	assert_int_equal(errno, EINVAL);
	ud_close(&u);
}

/* UD has Sends only (rxe fails anything else at execution); a WR needs its AH. */
static void test_post_errors(void **state)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad = NULL;
	struct ibv_wc wc;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	sge = (struct ibv_sge){ (uintptr_t)u.buf[0], 8, u.mr[0]->lkey };
	wr.wr.ud.remote_qpn = u.qp[1]->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(ibv_post_send(u.qp[0], &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	h_assert_empty(u.cq[0]);
	assert_int_equal(ud_send(&u, u.ah, u.qp[1]->qp_num, QKEY, IBV_WR_RDMA_WRITE, 8, 0), 0);
	assert_int_equal(h_poll(u.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(h_qp_state(u.qp[0]), IBV_QPS_ERR);
	ud_close(&u);
}

/* An RC QP that names a UD QP as its peer finds no responder: UD takes datagrams only. */
static void test_rc_to_ud(void **state)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *rc;
	struct ibv_wc wc;
	struct h_opts o;
	struct ud u;

	(void)state;
	ud_open(&u, false);
	qa.send_cq = qa.recv_cq = u.cq[0];
	rc = ibv_create_qp(u.pd, &qa);
	assert_non_null(rc);
	h_opts_default(&o);
	o.retry_cnt = 0;
	o.timeout = 1;
	h_qp_to_rts(rc, u.qp[1]->qp_num, &o);
	ud_recv(&u, 9, 0, GRH_LEN + 64);
	assert_int_equal(h_post(rc, 1, IBV_WR_SEND, u.buf[0], 8, u.mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(u.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	h_assert_empty(u.cq[1]);
	assert_int_equal(ibv_destroy_qp(rc), 0);
	ud_close(&u);
}

/* ---- rdma_cm's UDP port space ----------------------------------------------------- */

/*
 * SIDR in one process: CONNECT_REQUEST with 180 bytes of private data and
 * no peer yet; rdma_accept returns at once; the active side's ESTABLISHED
 * names the passive QP, rdma_cm's Q_Key and an address back; datagrams
 * flow both ways on QPs rdma_create_qp left in RTS.
 */
static void test_cm_udp(void **state)
{
	struct sockaddr_in sin = h_loopback(0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct rdma_conn_param param = { .private_data = "hello", .private_data_len = 6 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen, *server, *client;
	struct ibv_qp_init_attr init;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr attr;
	struct ibv_ah *ah;
	struct ibv_mr *smr, *cmr;
	struct ibv_wc wc;
	uint32_t peer_qpn, qkey;
	char sbuf[64] = "", cbuf[64] = "ping";

	(void)state;
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(listen, 1), 0);
	sin.sin_port = rdma_get_src_port(listen);
	assert_int_equal(rdma_create_id(ch, &client, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(client->qp_type, IBV_QPT_UD);
	assert_int_equal(rdma_resolve_addr(client, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(client, 1000), 0);
	h_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(client, NULL, &qa), 0);
	assert_int_equal(ibv_query_qp(client->qp, &attr, IBV_QP_STATE | IBV_QP_QKEY, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(attr.qkey, RDMA_UDP_QKEY);
	cmr = h_reg(client->pd, cbuf, sizeof(cbuf), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rdma_connect(client, &param), 0);

	ev = h_cm_get(ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(ev->param.ud.private_data_len, 180);
	assert_string_equal(ev->param.ud.private_data, "hello");
	assert_int_equal(ev->param.ud.qp_num, 0);
	server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_create_qp(server, NULL, &qa), 0);
	smr = h_reg(server->pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rdma_post_recv(server, NULL, sbuf, sizeof(sbuf), smr), 0);
	assert_int_equal(rdma_accept(server, NULL), 0);

	ev = h_cm_get(ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, client);
	assert_int_equal(ev->param.ud.private_data_len, 136);
	assert_int_equal(ev->param.ud.qp_num, server->qp->qp_num);
	assert_int_equal(ev->param.ud.qkey, RDMA_UDP_QKEY);
	assert_int_equal(ev->param.ud.ah_attr.is_global, 1);
	assert_int_equal(ev->param.ud.ah_attr.port_num, 1);
	ah = ibv_create_ah(client->pd, &ev->param.ud.ah_attr);
	assert_non_null(ah);
	peer_qpn = ev->param.ud.qp_num;
	qkey = ev->param.ud.qkey;
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	assert_int_equal(rdma_post_ud_send(client, NULL, cbuf, 5, cmr, IBV_SEND_SIGNALED, ah,
					   peer_qpn), 0);
	assert_int_equal(h_poll(client->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(h_poll(server->recv_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, GRH_LEN + 5);
	assert_int_equal(wc.src_qp, client->qp->qp_num);
	assert_string_equal(sbuf + GRH_LEN, "ping");
	assert_int_equal(qkey, RDMA_UDP_QKEY);

	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(rdma_dereg_mr(smr), 0);
	assert_int_equal(rdma_dereg_mr(cmr), 0);
	rdma_destroy_qp(server);
	rdma_destroy_qp(client);
	assert_int_equal(rdma_destroy_id(server), 0);
	assert_int_equal(rdma_destroy_id(client), 0);
	assert_int_equal(rdma_destroy_id(listen), 0);
	rdma_destroy_event_channel(ch);
}

/* A refused SIDR REQ is UNREACHABLE with the SIDR REP's status: 2 rejected, 1 nobody. */
static void test_cm_udp_refused(void **state)
{
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen, *client;
	struct rdma_cm_event *ev;
	int round;

	(void)state;
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(listen, 1), 0);
	for (round = 0; round < 2; round++) {
		sin.sin_port = round ? htons(ntohs(rdma_get_src_port(listen)) + 1) :
			rdma_get_src_port(listen);
		assert_int_equal(rdma_create_id(ch, &client, NULL, RDMA_PS_UDP), 0);
		assert_int_equal(rdma_resolve_addr(client, NULL, (struct sockaddr *)&sin, 1000),
				 0);
		h_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		assert_int_equal(rdma_resolve_route(client, 1000), 0);
		h_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
		assert_int_equal(rdma_connect(client, NULL), 0);
		if (round == 0) {
			struct rdma_cm_id *server;

			ev = h_cm_get(ch);
			assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
			server = ev->id;
			assert_int_equal(rdma_ack_cm_event(ev), 0);
			assert_int_equal(rdma_reject(server, NULL, 0), 0);
			assert_int_equal(rdma_destroy_id(server), 0);
		}
		ev = h_cm_get(ch);
		assert_int_equal(ev->event, RDMA_CM_EVENT_UNREACHABLE);
		assert_int_equal(ev->status, round == 0 ? 2 : 1);
		assert_int_equal(rdma_ack_cm_event(ev), 0);
		assert_int_equal(rdma_destroy_id(client), 0);
	}
	assert_int_equal(rdma_destroy_id(listen), 0);
	rdma_destroy_event_channel(ch);
}

/* ---- between two processes ----------------------------------------------------------- */

/* A datagram larger than a link message's 2 KiB head, which its sender copies aside. */
#define BIG		3000

static bool pattern_ok(const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(0x5a + i * 7))
			return false;
	return true;
}

/* In the peer: the next event on @ch, which must be @type, within the deadline. */
static struct rdma_cm_event *p_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	PEER_CHECK(poll(&pfd, 1, peer_timeout_ms(H_TIMEOUT_MS)) == 1);
	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	PEER_CHECK(ev->event == type);
	return ev;
}

/* In the peer: one completion of @cq within the deadline. */
static void p_poll(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(H_TIMEOUT_MS);
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		PEER_CHECK(h_now_ms() < deadline);
	PEER_CHECK(n == 1 && wc->status == IBV_WC_SUCCESS);
}

/*
 * The active side, in the peer process: SIDR to the test's listener, a
 * Send with immediate data through the address ESTABLISHED gave, and the
 * answer back, with its GRH.
 */
static int role_udp_client(void)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
	};
	struct rdma_conn_param param = { .private_data = "hi", .private_data_len = 3 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = h_loopback((uint16_t)atoi(peer_hear()));
	/* Two receives (the answer, then the large datagram) and the Send's buffer. */
	static char buf[3][GRH_LEN + BIG];
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(42) }, *bad;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	uint32_t peer_qpn;

	PEER_CHECK(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	PEER_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 1000) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)) == 0);
	PEER_CHECK(rdma_resolve_route(id, 1000) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) == 0);
	PEER_CHECK(rdma_create_qp(id, NULL, &qa) == 0);
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	PEER_CHECK(mr && rdma_post_recv(id, NULL, buf[0], sizeof(buf[0]), mr) == 0);
	PEER_CHECK(rdma_post_recv(id, NULL, buf[1], sizeof(buf[1]), mr) == 0);
	PEER_CHECK(rdma_connect(id, &param) == 0);
	ev = p_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	PEER_CHECK(ev->param.ud.qkey == RDMA_UDP_QKEY && ev->param.ud.private_data_len == 136);
	ah = ibv_create_ah(id->pd, &ev->param.ud.ah_attr);
	peer_qpn = ev->param.ud.qp_num;
	PEER_CHECK(ah && rdma_ack_cm_event(ev) == 0);
	peer_say("qpn %u", id->qp->qp_num);
	PEER_CHECK(strcmp(peer_hear(), "go") == 0);
	memcpy(buf[2], "ping", 5);
	sge = (struct ibv_sge){ (uintptr_t)buf[2], 5, mr->lkey };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = peer_qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	PEER_CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
	p_poll(id->send_cq, &wc);
	p_poll(id->recv_cq, &wc);
	PEER_CHECK(wc.byte_len == GRH_LEN + 5 && wc.src_qp == peer_qpn);
	PEER_CHECK((wc.wc_flags & IBV_WC_GRH) && strcmp(buf[0] + GRH_LEN, "pong") == 0);
	/* A datagram too large for a message's head: copied aside when it left. */
	p_poll(id->recv_cq, &wc);
	PEER_CHECK(wc.byte_len == GRH_LEN + BIG && pattern_ok((uint8_t *)buf[1] + GRH_LEN, BIG));
	peer_say("done");
	PEER_CHECK(ibv_destroy_ah(ah) == 0 && rdma_dereg_mr(mr) == 0);
	rdma_destroy_qp(id);
	PEER_CHECK(rdma_destroy_id(id) == 0);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * The passive side here, the active side in another process: the SIDR
 * exchange crosses over the socket backend, and so do the datagrams both
 * ways (the id's link carries them). The answer goes to an AH made from
 * the receive's GRH.
 */
static void test_cm_udp_two_processes(void **state)
{
	struct sockaddr_in sin = h_loopback(0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen, *server;
	char buf[GRH_LEN + BIG] = "";
	struct rdma_cm_event *ev;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct peer p;
	uint32_t peer_qpn;

	(void)state;
	assert_non_null(ch);
	peer_start(&p, self, "udp-client");
	assert_int_equal(rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(listen, 1), 0);
	peer_send(&p, "%u", ntohs(rdma_get_src_port(listen)));
	ev = h_cm_get(ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(ev->param.ud.private_data_len, 180);
	assert_string_equal(ev->param.ud.private_data, "hi");
	server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_create_qp(server, NULL, &qa), 0);
	mr = rdma_reg_msgs(server, buf, sizeof(buf));
	assert_non_null(mr);
	assert_int_equal(rdma_post_recv(server, NULL, buf, sizeof(buf), mr), 0);
	assert_int_equal(rdma_accept(server, NULL), 0);
	peer_qpn = (uint32_t)strtoul(peer_expect(&p, "qpn "), NULL, 10);
	peer_send(&p, "go");
	assert_int_equal(h_poll(server->recv_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.src_qp, peer_qpn);
	assert_int_equal(wc.byte_len, GRH_LEN + 5);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 42);
	assert_int_equal((uint8_t)buf[20], 0x45);
	assert_string_equal(buf + GRH_LEN, "ping");
	ah = ibv_create_ah_from_wc(server->pd, &wc, (struct ibv_grh *)buf, 1);
	assert_non_null(ah);
	memcpy(buf, "pong", 5);
	assert_int_equal(rdma_post_ud_send(server, NULL, buf, 5, mr, IBV_SEND_SIGNALED, ah,
					   peer_qpn), 0);
	assert_int_equal(h_poll(server->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	fill((uint8_t *)buf, BIG, 0x5a);
	assert_int_equal(rdma_post_ud_send(server, NULL, buf, BIG, mr, IBV_SEND_SIGNALED, ah,
					   peer_qpn), 0);
	assert_int_equal(h_poll(server->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* Reused at once: the datagram took its bytes when it left. */
	memset(buf, 0, sizeof(buf));
	peer_expect(&p, "done");
	assert_int_equal(peer_wait(&p, peer_timeout_ms(H_TIMEOUT_MS)), 0);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(rdma_dereg_mr(mr), 0);
	rdma_destroy_qp(server);
	assert_int_equal(rdma_destroy_id(server), 0);
	assert_int_equal(rdma_destroy_id(listen), 0);
	rdma_destroy_event_channel(ch);
}

static int mode_thread(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_THREAD);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modify_masks),
		cmocka_unit_test(test_grh_ipv4),
		cmocka_unit_test(test_grh_ipv6),
		cmocka_unit_test(test_dropped),
		cmocka_unit_test(test_over_mtu),
		cmocka_unit_test(test_srq),
		cmocka_unit_test(test_ah_errors),
		cmocka_unit_test(test_post_errors),
		cmocka_unit_test(test_rc_to_ud),
		cmocka_unit_test(test_cm_udp),
		cmocka_unit_test(test_cm_udp_refused),
	};
	const struct CMUnitTest two[] = {
		cmocka_unit_test(test_cm_udp_two_processes),
	};
	int failed;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0) {
		if (strcmp(argv[2], "udp-client") == 0)
			return role_udp_client();
		peer_say("FAIL no role %s", argv[2]);
		return 2;
	}
	self = argv[0];
	peer_setup_dir();
	failed = h_run_all_modes(tests);
	failed += cmocka_run_group_tests_name("two processes", two, mode_thread, NULL);
	peer_cleanup_dir();
	return failed;
}
