/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 capture, checked with tshark: raw verbs traffic between two QPs
 * (STEP mode, so the packets come in a known order) and every field tshark's
 * InfiniBand dissector shows: opcodes of a SEND split at the 1024-byte path
 * MTU, SEND with immediate (solicited, padded), RDMA Write with its RETH,
 * RDMA Read request and response packets with AETHs, Send with Invalidate
 * with its IETH, RDMA Write with immediate, an RNR NAK and the retry with the
 * same PSN, a remote access NAK; PSNs and MSNs counting, UDP port 4791,
 * IPv4 addresses from the GIDs. UD Sends: one packet each, with a DETH and
 * no ACK; rdma_cm's UDP space: SIDR REQ and REP. Skipped (77) without tshark.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tshark.h"

static char pcap_path[64];

enum col { OPCODE, PSN, DESTQP, SE, ACKREQ, PADCNT, VA, RKEY, DMALEN, SYNDROME, MSN, IMMDT, IETH,
	   IPSRC, IPDST, UDPDST, NCOLS };

static const char *const fields[] = {
	"infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp",
	"infiniband.bth.se", "infiniband.bth.a", "infiniband.bth.padcnt", "infiniband.reth.va",
	"infiniband.reth.r_key", "infiniband.reth.dmalen", "infiniband.aeth.syndrome",
	"infiniband.aeth.msn", "infiniband.immdt", "infiniband.ieth", "ip.src", "ip.dst",
	"udp.dstport", NULL,
};

/* The packets we expect, as tshark prints their fields. */
struct expect {
	char col[NCOLS][32];
};

static struct expect want[64];
static unsigned int nwant;

static struct expect *packet(unsigned int opcode, unsigned int psn, uint32_t dqp, int se,
			     int ackreq, unsigned int pad)
{
	struct expect *e = &want[nwant++];

	memset(e, 0, sizeof(*e));
	snprintf(e->col[OPCODE], 32, "%u", opcode);
	snprintf(e->col[PSN], 32, "%u", psn);
	snprintf(e->col[DESTQP], 32, "0x%06x", dqp);
	snprintf(e->col[SE], 32, "%d", se);
	snprintf(e->col[ACKREQ], 32, "%d", ackreq);
	snprintf(e->col[PADCNT], 32, "%u", pad);
	strcpy(e->col[IPSRC], "127.0.0.1");
	strcpy(e->col[IPDST], "127.0.0.1");
	strcpy(e->col[UDPDST], "4791");
	return e;
}

static void reth(struct expect *e, uint64_t va, uint32_t rkey, uint32_t len)
{
	snprintf(e->col[VA], 32, "0x%016llx", (unsigned long long)va);
	snprintf(e->col[RKEY], 32, "0x%08x", rkey);
	snprintf(e->col[DMALEN], 32, "%u", len);
}

static void aeth(struct expect *e, unsigned int syndrome, unsigned int msn)
{
	snprintf(e->col[SYNDROME], 32, "%u", syndrome);
	snprintf(e->col[MSN], 32, "%u", msn);
}

static void ack(unsigned int psn, uint32_t dqp, unsigned int syndrome, unsigned int msn)
{
	aeth(packet(17, psn, dqp, 0, 0, 0), syndrome, msn);
}

static void post_wr(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *buf,
		    uint32_t len, uint32_t lkey, unsigned int flags, uint64_t raddr, uint32_t rkey,
		    uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = imm;
	else
		wr.imm_data = htonl(imm);
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
}

static void expect_status(struct ibv_cq *cq, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	assert_int_equal(h_poll(cq, &wc, 1), 1);
	assert_string_equal(ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
}

static void compare(void)
{
	struct tshark_rows rows;
	unsigned int i, c;
	char got[64];
	int bad = 0;

	assert_int_equal(tshark_fields(pcap_path, NULL, fields, &rows), 0);
	if (rows.n != nwant)
		fprintf(stderr, "%zu packets, expected %u\n", rows.n, nwant);
	for (i = 0; i < rows.n && i < nwant; i++) {
		for (c = 0; c < NCOLS; c++) {
			tshark_field(rows.row[i], c, got, sizeof(got));
			if (strcmp(got, want[i].col[c])) {
				fprintf(stderr, "packet %u, %s: \"%s\", expected \"%s\"\n", i + 1,
					fields[c], got, want[i].col[c]);
				bad = 1;
			}
		}
	}
	assert_int_equal(rows.n, nwant);
	tshark_rows_free(&rows);
	assert_int_equal(bad, 0);
}

static void test_verbs_packets(void **state)
{
	static uint8_t mem[16384];
	struct ibv_send_wr bw, *bad;
	struct h_opts o;
	struct h_pair p;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	uint32_t q0, q1, mw_rkey;
	uint64_t va = (uintptr_t)mem + 4096;
	struct ibv_cq *cq0, *cq1;

	(void)state;
	h_opts_default(&o);
	o.rnr_retry = 1;
	unlink(pcap_path);
	assert_int_equal(softrdma_pcap_open(pcap_path), 0);
	h_pair_open(&p, &o);
	cq0 = p.cq[0];
	cq1 = p.cq[1];
	q0 = p.qp[0]->qp_num;
	q1 = p.qp[1]->qp_num;
	mr = h_reg(p.pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);

	/* A SEND of 3000 bytes: FIRST, MIDDLE, LAST (AckReq), one ACK. */
	memset(mem, 'A', 3000);
	assert_int_equal(h_post_recv(p.qp[1], 1, mem + 8192, 4096, mr->lkey), 0);
	post_wr(p.qp[0], 1, IBV_WR_SEND, mem, 3000, mr->lkey, 0, 0, 0, 0);
	expect_status(cq0, IBV_WC_SUCCESS);
	expect_status(cq1, IBV_WC_SUCCESS);
	packet(0, 0, q1, 0, 0, 0);
	packet(1, 1, q1, 0, 0, 0);
	packet(2, 2, q1, 0, 1, 0);
	ack(2, q0, 31, 1);

	/* SEND with immediate, solicited, 10 bytes (2 bytes of pad). */
	assert_int_equal(h_post_recv(p.qp[1], 2, mem + 8192, 4096, mr->lkey), 0);
	post_wr(p.qp[0], 2, IBV_WR_SEND_WITH_IMM, mem, 10, mr->lkey, IBV_SEND_SOLICITED, 0, 0,
		0x01020304);
	expect_status(cq0, IBV_WC_SUCCESS);
	expect_status(cq1, IBV_WC_SUCCESS);
	/* tshark 4.0 prints the ImmDt and IETH fields twice (header and value). */
	strcpy(packet(5, 3, q1, 1, 1, 2)->col[IMMDT], "01020304,01020304");
	ack(3, q0, 31, 2);

	/* RDMA Write of 2048 bytes: the RETH on the first packet. */
	post_wr(p.qp[0], 3, IBV_WR_RDMA_WRITE, mem, 2048, mr->lkey, 0, va, mr->rkey, 0);
	expect_status(cq0, IBV_WC_SUCCESS);
	reth(packet(6, 4, q1, 0, 0, 0), va, mr->rkey, 2048);
	packet(8, 5, q1, 0, 1, 0);
	ack(5, q0, 31, 3);

	/* RDMA Read of 1500 bytes: the request, then responses FIRST and LAST with AETHs. */
	post_wr(p.qp[0], 4, IBV_WR_RDMA_READ, mem + 12288, 1500, mr->lkey, 0, va, mr->rkey, 0);
	expect_status(cq0, IBV_WC_SUCCESS);
	reth(packet(12, 6, q1, 0, 1, 0), va, mr->rkey, 1500);
	aeth(packet(13, 6, q0, 0, 0, 0), 31, 4);
	aeth(packet(15, 7, q0, 0, 0, 0), 31, 4);

	/* Send with Invalidate of a window bound by the receiving QP: the IETH. */
	mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	mw_rkey = ibv_inc_rkey(mw->rkey);
	memset(&bw, 0, sizeof(bw));
	bw.wr_id = 50;
	bw.opcode = IBV_WR_BIND_MW;
	bw.send_flags = IBV_SEND_SIGNALED;
	bw.bind_mw.mw = mw;
	bw.bind_mw.rkey = mw_rkey;
	bw.bind_mw.bind_info.mr = mr;
	bw.bind_mw.bind_info.addr = va;
	bw.bind_mw.bind_info.length = 64;
	bw.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_post_send(p.qp[1], &bw, &bad), 0);
	expect_status(cq1, IBV_WC_SUCCESS);
	assert_int_equal(h_post_recv(p.qp[1], 5, mem + 8192, 4096, mr->lkey), 0);
	post_wr(p.qp[0], 5, IBV_WR_SEND_WITH_INV, mem, 16, mr->lkey, 0, 0, 0, mw_rkey);
	expect_status(cq0, IBV_WC_SUCCESS);
	expect_status(cq1, IBV_WC_SUCCESS);
	snprintf(packet(23, 8, q1, 0, 1, 0)->col[IETH], 32, "%08x,%08x", mw_rkey, mw_rkey);
	ack(8, q0, 31, 5);

	/* RDMA Write with immediate, one packet: RETH and ImmDt. */
	assert_int_equal(h_post_recv(p.qp[1], 6, NULL, 0, 0), 0);
	post_wr(p.qp[0], 6, IBV_WR_RDMA_WRITE_WITH_IMM, mem, 100, mr->lkey, 0, va, mr->rkey,
		0xa0b0c0d0);
	expect_status(cq0, IBV_WC_SUCCESS);
	expect_status(cq1, IBV_WC_SUCCESS);
	reth(packet(11, 9, q1, 0, 1, 0), va, mr->rkey, 100);
	strcpy(want[nwant - 1].col[IMMDT], "a0b0c0d0,a0b0c0d0");
	ack(9, q0, 31, 6);

	/* No receive posted: an RNR NAK; after a receive, the retry goes with the same PSN. */
	post_wr(p.qp[0], 7, IBV_WR_SEND, mem, 8, mr->lkey, 0, 0, 0, 0);
	assert_int_equal(softrdma_progress(1), 1);
	packet(4, 10, q1, 0, 1, 0);
	ack(10, q0, 0x20 | 12, 6);
	assert_int_equal(h_post_recv(p.qp[1], 7, mem + 8192, 4096, mr->lkey), 0);
	expect_status(cq0, IBV_WC_SUCCESS);
	expect_status(cq1, IBV_WC_SUCCESS);
	packet(4, 10, q1, 0, 1, 0);
	ack(10, q0, 31, 7);

	/* A bad rkey: remote access NAK. */
	post_wr(p.qp[0], 8, IBV_WR_RDMA_WRITE, mem, 8, mr->lkey, 0, va, 0xdead00, 0);
	expect_status(cq0, IBV_WC_REM_ACCESS_ERR);
	reth(packet(10, 11, q1, 0, 1, 0), va, 0xdead00, 8);
	ack(11, q0, 0x62, 7);

	assert_int_equal(softrdma_pcap_close(), 0);
	h_settle();
	while (ibv_poll_cq(cq1, 1, &(struct ibv_wc){ 0 }) > 0)
		;
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	h_pair_close(&p);
	compare();
	unlink(pcap_path);
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t qkey)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY), 0);
	attr.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 100;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return qp;
}

/*
 * UD Sends, each one packet (UD SEND only, with immediate: 0x64, 0x65) with
 * its DETH (the Q_Key and the source QP) and no ACK back; PSNs from sq_psn.
 */
static void test_ud_packets(void **state)
{
	static const char *const ud_fields[] = {
		"infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp",
		"infiniband.bth.se", "infiniband.bth.padcnt", "infiniband.deth.q_key",
		"infiniband.deth.srcqp", "infiniband.immdt", "ip.src", "udp.dstport", NULL,
	};
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	static uint8_t mem[256];
	struct ibv_context *ctx;
	struct ibv_device **list;
	struct tshark_rows rows;
	struct ibv_qp *qp[2];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	char ud_want[2][160], got[160];
	unsigned int i, c;

	(void)state;
	list = ibv_get_device_list(NULL);
	assert_non_null(list);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	assert_non_null(cq);
	qp[0] = ud_qp(pd, cq, 0x1234);
	qp[1] = ud_qp(pd, cq, 0x1234);
	mr = h_reg(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &aa.grh.dgid), 0);
	ah = ibv_create_ah(pd, &aa);
	assert_non_null(ah);
	unlink(pcap_path);
	assert_int_equal(softrdma_pcap_open(pcap_path), 0);
	for (i = 0; i < 2; i++) {
		struct ibv_sge sge = { (uintptr_t)mem, i ? 8 : 10, mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = i ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM,
					  .send_flags = i ? 0 : IBV_SEND_SOLICITED,
					  .imm_data = htonl(0x0a0b0c0d) }, *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qp[1]->qp_num;
		wr.wr.ud.remote_qkey = 0x1234;
		assert_int_equal(h_post_recv(qp[1], i, mem + 128, 128, mr->lkey), 0);
		assert_int_equal(ibv_post_send(qp[0], &wr, &bad), 0);
		expect_status(cq, IBV_WC_SUCCESS);
		expect_status(cq, IBV_WC_SUCCESS);
	}
	assert_int_equal(softrdma_pcap_close(), 0);
	snprintf(ud_want[0], sizeof(ud_want[0]),
		 "101;100;0x%06x;1;2;0x0000000000001234;0x%08x;0a0b0c0d,0a0b0c0d;127.0.0.1;4791",
		 qp[1]->qp_num, qp[0]->qp_num);
	snprintf(ud_want[1], sizeof(ud_want[1]),
		 "100;101;0x%06x;0;0;0x0000000000001234;0x%08x;;127.0.0.1;4791",
		 qp[1]->qp_num, qp[0]->qp_num);
	/*
	 * The source port is the sender's QP number, 19 or so here: tshark
	 * would take that for chargen's, the lower port first.
	 */
	assert_int_equal(tshark_fields(pcap_path, "--disable-protocol chargen", ud_fields, &rows),
			 0);
	assert_int_equal(rows.n, 2);
	for (i = 0; i < 2; i++) {
		got[0] = '\0';
		for (c = 0; ud_fields[c]; c++) {
			char f[64];

			tshark_field(rows.row[i], c, f, sizeof(f));
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", c ? ";" : "",
				 f);
		}
		assert_string_equal(got, ud_want[i]);
	}
	tshark_rows_free(&rows);
	unlink(pcap_path);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_destroy_qp(qp[0]), 0);
	assert_int_equal(ibv_destroy_qp(qp[1]), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * rdma_cm's UDP space resolves with SIDR: a SIDR REQ (attribute 0x17) and a
 * SIDR REP (0x18) to QP1, where a connection has REQ, REP and RTU. tshark
 * has no dissector for their contents; the attributes are what it checks.
 */
static void test_sidr_mads(void **state)
{
	static const char *const mad_fields[] = { "infiniband.mad.attributeid", NULL };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen, *client, *server;
	struct rdma_cm_event *ev;
	struct tshark_rows rows;
	char got[32];

	(void)state;
	assert_non_null(ch);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	unlink(pcap_path);
	assert_int_equal(softrdma_pcap_open(pcap_path), 0);
	assert_int_equal(rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(listen, 1), 0);
	sin.sin_port = rdma_get_src_port(listen);
	assert_int_equal(rdma_create_id(ch, &client, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(client, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(client, 1000), 0);
	h_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(client, NULL), 0);
	ev = h_cm_get(ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_accept(server, NULL), 0);
	h_cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(softrdma_pcap_close(), 0);
	assert_int_equal(tshark_fields(pcap_path, "-Y infiniband.mad", mad_fields, &rows), 0);
	assert_int_equal(rows.n, 2);
	assert_string_equal(tshark_field(rows.row[0], 0, got, sizeof(got)), "0x0017");
	assert_string_equal(tshark_field(rows.row[1], 0, got, sizeof(got)), "0x0018");
	tshark_rows_free(&rows);
	unlink(pcap_path);
	assert_int_equal(rdma_destroy_id(server), 0);
	assert_int_equal(rdma_destroy_id(client), 0);
	assert_int_equal(rdma_destroy_id(listen), 0);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verbs_packets),
		cmocka_unit_test(test_ud_packets),
		cmocka_unit_test(test_sidr_mads),
	};
	int ret;

	if (!tshark_present()) {
		printf("tshark is not installed (Debian: tshark): skipped\n");
		return 77;
	}
	snprintf(pcap_path, sizeof(pcap_path), "/tmp/softrdma-capture-%d.pcap", (int)getpid());
	softrdma_set_mode(SOFTRDMA_MODE_STEP);
	ret = cmocka_run_group_tests_name("capture-verbs", tests, NULL, NULL);
	return ret;
}
