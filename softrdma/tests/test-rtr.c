/* SPDX-License-Identifier: MIT */
/*
 * QPs connected without rdma_cm, across processes: the way most verbs
 * programs connect them (perftest without -R, qperf, MPI). Each of two
 * peer processes makes an RC QP, they swap QP numbers, PSNs and buffers
 * through the test, and each moves its QP to RTR with the other's number
 * and the loopback GID (net_qpn.c).
 *
 * - traffic: the QP numbers are the machine's own (each process's in a
 *   block of its own, neither in the block of processes without one); both
 *   sides send numbered messages of many sizes at once, 16 deep, and each
 *   receives all of them, in order, with their bytes; then each writes a
 *   pattern into the other's memory and reads the other's back.
 * - ud: UD QPs, numbers swapped the same way, address handles to the
 *   loopback GID: datagrams of many sizes both ways, each received once,
 *   with its GRH, its sender's number and its bytes.
 * - dead: one peer is killed; the other's next Send completes with
 *   IBV_WC_RETRY_EXC_ERR, as it would on hardware whose peer vanished, and
 *   so does a Send to a number no process owns.
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "peer.h"

/* Messages each way: fewer under valgrind, which slows the copies 50-fold. */
#define MSGS		300
#define MSGS_VALGRIND	60
#define DEPTH		16
#define MAX_MSG		70000u
#define AREA		(128u * 1024)	/* written by the peer, then read back by the test */
#define BLOCK_SHIFT	16		/* net_qpn.c: 2^16 numbers a process */

static const char *self;
static const uint32_t sizes[] = { 4, 100, 3000, MAX_MSG, 8, 65536 };

/* Byte @off of message @seq from the side named @side. */
static uint8_t pattern(char side, uint32_t seq, uint32_t off)
{
	return (uint8_t)(side * 7 + seq * 13 + off);
}

static uint32_t msg_len(uint32_t seq)
{
	return sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* ==== a peer ==================================================================== */

struct side {
	char name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	/* DEPTH receive buffers, DEPTH send buffers, the area the peer writes, the one it reads */
	uint8_t *mem;
	unsigned long long peer_addr;
	unsigned int peer_rkey;
};

static uint8_t *recv_buf(struct side *s, uint64_t i)
{
	return s->mem + (i % DEPTH) * MAX_MSG;
}

static uint8_t *send_buf(struct side *s, uint64_t i)
{
	return s->mem + (DEPTH + i % DEPTH) * MAX_MSG;
}

static uint8_t *area(struct side *s, unsigned int which)
{
	return s->mem + 2 * DEPTH * MAX_MSG + which * AREA;
}

static void side_open(struct side *s, char name)
{
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	size_t len = 2 * DEPTH * MAX_MSG + 2 * AREA;

	s->name = name;
	PEER_CHECK(devs && devs[0]);
	s->ctx = ibv_open_device(devs[0]);
	ibv_free_device_list(devs);
	PEER_CHECK(s->ctx);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 4 * DEPTH, NULL, NULL, 0);
	PEER_CHECK(s->pd && s->cq);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &qa);
	s->mem = malloc(len);
	PEER_CHECK(s->qp && s->mem);
	memset(s->mem, 0, len);
	for (uint32_t i = 0; i < AREA; i++)
		area(s, 1)[i] = pattern(name, 0xffff, i);
	s->mr = ibv_reg_mr(s->pd, s->mem, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	PEER_CHECK(s->mr);
}

/* Swap numbers and memory with the other side, through the test; then RTS. */
static void side_connect(struct side *s, uint8_t retry_cnt, uint8_t timeout)
{
	struct h_opts o;
	unsigned int qpn;

	peer_say("qp %u %llx %x", s->qp->qp_num, (unsigned long long)(uintptr_t)s->mem,
		 s->mr->rkey);
	PEER_CHECK(sscanf(peer_hear(), "peer %u %llx %x", &qpn, &s->peer_addr,
			  &s->peer_rkey) == 3);
	h_opts_default(&o);
	o.qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	o.rd_atomic = 4;
	o.rnr_retry = 7;
	o.retry_cnt = retry_cnt;
	o.timeout = timeout;
	h_qp_to_rts(s->qp, qpn, &o);
}

static struct ibv_wc poll_one(struct side *s)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(20000);
	struct ibv_wc wc;
	int n = 0;

	while (n == 0 && h_now_ms() < deadline)
		n = ibv_poll_cq(s->cq, 1, &wc);
	PEER_CHECK(n == 1);
	return wc;
}

static void post_msg(struct side *s, uint32_t seq)
{
	uint8_t *buf = send_buf(s, seq);
	uint32_t len = msg_len(seq);

	for (uint32_t i = 0; i < len; i++)
		buf[i] = pattern(s->name, seq, i);
	memcpy(buf, &seq, sizeof(seq));
	PEER_CHECK(h_post(s->qp, seq, IBV_WR_SEND, buf, len, s->mr->lkey, 0, 0, 0) == 0);
}

/* Did message @seq arrive whole, in its turn? */
static bool msg_ok(struct side *s, char from, uint32_t seq, const struct ibv_wc *wc)
{
	const uint8_t *buf = recv_buf(s, wc->wr_id);
	uint32_t got;

	memcpy(&got, buf, sizeof(got));
	if (got != seq || wc->byte_len != msg_len(seq))
		return false;
	for (uint32_t i = sizeof(seq); i < wc->byte_len; i++)
		if (buf[i] != pattern(from, seq, i))
			return false;
	return true;
}

/* Both directions at once: MSGS Sends out, MSGS receives checked. */
static void side_traffic(struct side *s, char from)
{
	uint32_t sent = 0, acked = 0, got = 0, good = 0, errors = 0, msgs;

	for (uint64_t i = 0; i < DEPTH; i++)
		PEER_CHECK(h_post_recv(s->qp, i, recv_buf(s, i), MAX_MSG, s->mr->lkey) == 0);
	peer_say("ready");
	PEER_CHECK(sscanf(peer_hear(), "go %u", &msgs) == 1);
	while (acked < msgs || got < msgs) {
		struct ibv_wc wc;

		while (sent < msgs && sent - acked < DEPTH)
			post_msg(s, sent++);
		wc = poll_one(s);
		if (wc.status != IBV_WC_SUCCESS) {
			errors++;
			break;
		}
		if (wc.opcode == IBV_WC_SEND) {
			acked++;
			continue;
		}
		good += msg_ok(s, from, got, &wc);
		got++;
		PEER_CHECK(h_post_recv(s->qp, got + DEPTH - 1, recv_buf(s, got + DEPTH - 1),
				       MAX_MSG, s->mr->lkey) == 0);
	}
	peer_say("traffic sent %u received %u good %u errors %u", acked, got, good, errors);
}

/* Bytes of @p that hold the pattern side @from gives its second area. */
static uint32_t area_good(const uint8_t *p, char from)
{
	uint32_t good = 0;

	for (uint32_t i = 0; i < AREA; i++)
		good += p[i] == pattern(from, 0xffff, i);
	return good;
}

/*
 * One-sided, both ways: write our second area into the peer's first, read
 * the peer's second into our send buffers, and tell the peer with a Send
 * behind the Write (a Send is placed after the Writes before it on its QP):
 * its receive says the peer's Write to us has landed.
 */
static void side_one_sided(struct side *s, char from)
{
	uint64_t peer_area0 = s->peer_addr + 2 * DEPTH * MAX_MSG;
	uint32_t read_good = 0, written_good = 0;
	unsigned int seen = 0;

	/* Once both sides are done with the traffic, whose receives this Send would take. */
	PEER_CHECK(strcmp(peer_hear(), "one-sided") == 0);
	memset(send_buf(s, 0), 0, AREA);
	PEER_CHECK(h_post(s->qp, 1, IBV_WR_RDMA_WRITE, area(s, 1), AREA, s->mr->lkey, 0,
			  peer_area0, s->peer_rkey) == 0);
	PEER_CHECK(h_post(s->qp, 2, IBV_WR_SEND, send_buf(s, 2), 8, s->mr->lkey, 0, 0, 0) == 0);
	PEER_CHECK(h_post(s->qp, 3, IBV_WR_RDMA_READ, send_buf(s, 0), AREA, s->mr->lkey, 0,
			  peer_area0 + AREA, s->peer_rkey) == 0);
	/* Our Write, Send and Read complete, and the peer's Send comes in. */
	while (seen != 0xf) {
		struct ibv_wc wc = poll_one(s);

		PEER_CHECK(wc.status == IBV_WC_SUCCESS);
		switch (wc.opcode) {
		case IBV_WC_RDMA_WRITE:
			seen |= 1;
			break;
		case IBV_WC_SEND:
			seen |= 2;
			break;
		case IBV_WC_RDMA_READ:
			read_good = area_good(send_buf(s, 0), from);
			seen |= 4;
			break;
		case IBV_WC_RECV:
			written_good = area_good(area(s, 0), from);
			seen |= 8;
			break;
		default:
			PEER_CHECK(!"an unexpected completion");
		}
	}
	peer_say("area read %u written %u", read_good, written_good);
}

/* A Send after the other side died: its completion's status. */
static void side_orphan(struct side *s)
{
	struct ibv_wc wc;

	PEER_CHECK(strcmp(peer_hear(), "send") == 0);
	PEER_CHECK(h_post(s->qp, 7, IBV_WR_SEND, send_buf(s, 0), 64, s->mr->lkey, 0, 0, 0) == 0);
	wc = poll_one(s);
	peer_say("status %d", (int)wc.status);
}

/* A Send to a QP number in a block no process owns: its completion's status. */
static void side_nobody(struct side *s)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	uint32_t block;
	char path[4096];

	/*
	 * A block nobody has published. This test's processes are the
	 * directory's only users, and all of them have claimed their blocks
	 * by now (a killed one leaves its file behind), so an absent file is
	 * a block no process owns or will own during this test.
	 */
	for (block = 0xfe; block > 0; block--) {
		snprintf(path, sizeof(path), "%s/qpn-%02x", getenv("SOFTRDMA_DIR"), block);
		if (access(path, F_OK) != 0)
			break;
	}
	PEER_CHECK(block > 0);
	PEER_CHECK(ibv_modify_qp(s->qp, &attr, IBV_QP_STATE) == 0);
	peer_say("qp 0 0 0");
	peer_hear();
	{
		struct h_opts o;

		h_opts_default(&o);
		o.retry_cnt = 1;
		o.timeout = 8;
		h_qp_to_rts(s->qp, block << BLOCK_SHIFT | 0x42, &o);
	}
	PEER_CHECK(h_post(s->qp, 8, IBV_WR_SEND, send_buf(s, 0), 64, s->mr->lkey, 0, 0, 0) == 0);
	peer_say("status %d", (int)poll_one(s).status);
}

/* ---- UD, numbers swapped by hand ---- */

#define UD_MSGS		DEPTH	/* a send buffer each */
#define UD_QKEY		0x2468aceu
#define GRH_LEN		40u

static uint32_t ud_len(uint32_t seq)
{
	return 1 + (seq * 337) % 1000;	/* up to the path MTU (1024) */
}

static struct ibv_qp *ud_open(struct side *s)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = s->cq, .recv_cq = s->cq,
		.cap = { .max_send_wr = UD_MSGS, .max_recv_wr = UD_MSGS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	struct ibv_qp *qp = ibv_create_qp(s->pd, &qa);

	PEER_CHECK(qp);
	PEER_CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_QKEY) == 0);
	attr.qp_state = IBV_QPS_RTR;
	PEER_CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	PEER_CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
	return qp;
}

/* Numbered datagrams to the peer's UD QP, while taking the peer's: each once, whole. */
static void side_ud(struct side *s, char from)
{
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	struct ibv_qp *qp = ud_open(s);
	uint32_t got = 0, good = 0, peer_qpn, acked = 0;
	struct ibv_ah *ah;

	ah_attr.grh.dgid.raw[10] = ah_attr.grh.dgid.raw[11] = 0xff;
	ah_attr.grh.dgid.raw[12] = 127;
	ah_attr.grh.dgid.raw[15] = 1;
	ah = ibv_create_ah(s->pd, &ah_attr);
	PEER_CHECK(ah);
	for (uint32_t i = 0; i < UD_MSGS; i++) {
		struct ibv_sge sge = { (uintptr_t)recv_buf(s, i), GRH_LEN + 1024, s->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		PEER_CHECK(ibv_post_recv(qp, &wr, &bad) == 0);
	}
	peer_say("ud %u", qp->qp_num);
	PEER_CHECK(sscanf(peer_hear(), "peer ud %u", &peer_qpn) == 1);
	for (uint32_t seq = 0; seq < UD_MSGS; seq++) {
		struct ibv_sge sge = { (uintptr_t)send_buf(s, seq), ud_len(seq), s->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND }, *bad;

		for (uint32_t i = 0; i < ud_len(seq); i++)
			send_buf(s, seq)[i] = pattern(s->name, seq, i);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = peer_qpn;
		wr.wr.ud.remote_qkey = UD_QKEY;
		PEER_CHECK(ibv_post_send(qp, &wr, &bad) == 0);
	}
	while (acked < UD_MSGS || got < UD_MSGS) {
		struct ibv_wc wc = poll_one(s);

		PEER_CHECK(wc.status == IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND) {
			acked++;
			continue;
		}
		/* Datagrams on one path keep their order here: the n-th is number n. */
		if (wc.src_qp == peer_qpn && (wc.wc_flags & IBV_WC_GRH) &&
		    wc.byte_len == GRH_LEN + ud_len(got) && wc.wr_id == got) {
			const uint8_t *p = recv_buf(s, wc.wr_id) + GRH_LEN;
			uint32_t i = 0;

			while (i < ud_len(got) && p[i] == pattern(from, got, i))
				i++;
			good += i == ud_len(got);
		}
		got++;
	}
	peer_say("datagrams received %u good %u", got, good);
	PEER_CHECK(ibv_destroy_ah(ah) == 0);
	PEER_CHECK(ibv_destroy_qp(qp) == 0);
}

static int role(const char *what)
{
	char name = what[0];
	struct side s;

	side_open(&s, name);
	if (strcmp(what + 1, ":dead") == 0) {
		side_connect(&s, 1, 8);
		side_orphan(&s);
		side_nobody(&s);
	} else if (strcmp(what + 1, ":ud") == 0) {
		side_connect(&s, 7, 14);
		side_ud(&s, name == 'a' ? 'b' : 'a');
	} else {
		side_connect(&s, 7, 14);
		side_traffic(&s, name == 'a' ? 'b' : 'a');
		side_one_sided(&s, name == 'a' ? 'b' : 'a');
	}
	PEER_CHECK(strcmp(peer_hear(), "bye") == 0);
	PEER_CHECK(ibv_destroy_qp(s.qp) == 0);
	PEER_CHECK(ibv_dereg_mr(s.mr) == 0);
	PEER_CHECK(ibv_destroy_cq(s.cq) == 0);
	PEER_CHECK(ibv_dealloc_pd(s.pd) == 0);
	PEER_CHECK(ibv_close_device(s.ctx) == 0);
	free(s.mem);
	return 0;
}

/* ==== the test ==================================================================== */

struct qp_line {
	unsigned int qpn;
	unsigned long long addr;
	unsigned int rkey;
};

/* Start a and b, and pass each the other's QP number and memory. */
static void start_pair(struct peer p[2], const char *mode, struct qp_line q[2])
{
	char role_a[16], role_b[16];

	snprintf(role_a, sizeof(role_a), "a:%s", mode);
	snprintf(role_b, sizeof(role_b), "b:%s", mode);
	peer_start(&p[0], self, role_a);
	peer_start(&p[1], self, role_b);
	for (int i = 0; i < 2; i++)
		assert_int_equal(sscanf(peer_expect(&p[i], "qp "), "%u %llx %x", &q[i].qpn,
					&q[i].addr, &q[i].rkey), 3);
	for (int i = 0; i < 2; i++)
		peer_send(&p[i], "peer %u %llx %x", q[1 - i].qpn, q[1 - i].addr, q[1 - i].rkey);
}

static void test_traffic(void **state)
{
	struct peer p[2];
	struct qp_line q[2];
	unsigned int sent, got, good, errors, read_good, written_good;
	unsigned int msgs = peer_under_valgrind() ? MSGS_VALGRIND : MSGS;

	(void)state;
	start_pair(p, "traffic", q);
	/* Unique on the machine: each in a block of its own, none in the shared block 0. */
	assert_int_not_equal(q[0].qpn >> BLOCK_SHIFT, 0);
	assert_int_not_equal(q[1].qpn >> BLOCK_SHIFT, 0);
	assert_int_not_equal(q[0].qpn >> BLOCK_SHIFT, q[1].qpn >> BLOCK_SHIFT);
	for (int i = 0; i < 2; i++)
		peer_expect(&p[i], "ready");
	for (int i = 0; i < 2; i++)
		peer_send(&p[i], "go %u", msgs);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sscanf(peer_expect(&p[i], "traffic "),
					"sent %u received %u good %u errors %u", &sent, &got,
					&good, &errors), 4);
		assert_int_equal(errors, 0);
		assert_int_equal(sent, msgs);
		assert_int_equal(got, msgs);
		assert_int_equal(good, msgs);
	}
	for (int i = 0; i < 2; i++)
		peer_send(&p[i], "one-sided");
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sscanf(peer_expect(&p[i], "area "), "read %u written %u",
					&read_good, &written_good), 2);
		assert_int_equal(read_good, AREA);
		assert_int_equal(written_good, AREA);
	}
	for (int i = 0; i < 2; i++) {
		peer_send(&p[i], "bye");
		assert_int_equal(peer_wait(&p[i], peer_timeout_ms(10000)), 0);
	}
}

static void test_ud(void **state)
{
	struct peer p[2];
	struct qp_line q[2];
	unsigned int ud[2], got, good;

	(void)state;
	start_pair(p, "ud", q);
	for (int i = 0; i < 2; i++)
		ud[i] = (unsigned int)atoi(peer_expect(&p[i], "ud "));
	assert_int_not_equal(ud[0] >> BLOCK_SHIFT, ud[1] >> BLOCK_SHIFT);
	for (int i = 0; i < 2; i++)
		peer_send(&p[i], "peer ud %u", ud[1 - i]);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sscanf(peer_expect(&p[i], "datagrams "), "received %u good %u",
					&got, &good), 2);
		assert_int_equal(got, UD_MSGS);
		assert_int_equal(good, UD_MSGS);
	}
	for (int i = 0; i < 2; i++) {
		peer_send(&p[i], "bye");
		assert_int_equal(peer_wait(&p[i], peer_timeout_ms(10000)), 0);
	}
}

static void test_dead(void **state)
{
	struct peer p[2];
	struct qp_line q[2];

	(void)state;
	start_pair(p, "dead", q);
	peer_kill(&p[1]);
	peer_send(&p[0], "send");
	assert_int_equal(atoi(peer_expect(&p[0], "status ")), IBV_WC_RETRY_EXC_ERR);
	peer_expect(&p[0], "qp ");
	peer_send(&p[0], "peer 0 0 0");
	assert_int_equal(atoi(peer_expect(&p[0], "status ")), IBV_WC_RETRY_EXC_ERR);
	peer_send(&p[0], "bye");
	assert_int_equal(peer_wait(&p[0], peer_timeout_ms(10000)), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traffic),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_dead),
	};
	int failed;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0)
		return role(argv[2]);
	self = argv[0];
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("rtr", tests, NULL, NULL);
	peer_cleanup_dir();
	return failed;
}
