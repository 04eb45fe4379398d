/* SPDX-License-Identifier: MIT */
/*
 * One-sided RDMA Writes and Reads between processes (wire_shm_keys.h): the
 * requester serves them itself through the responder's published keys, as
 * an HCA serves them without the responder's CPU. The test and a copy of
 * itself (the peer, the responder) connect over shared memory:
 *
 * - with the peer stopped (SIGSTOP), Reads and Writes of 3 bytes to 200 KiB,
 *   from several SGEs, complete and move the right bytes; continued, the
 *   peer takes a Send behind them at once (its expected PSN follows the
 *   ones it never saw) and finds every byte written;
 * - a deregistered MR, a range past the MR's end and an invalidated window
 *   are refused (IBV_WC_REM_ACCESS_ERR, by the responder), and no byte is
 *   written through them; a window bound to the peer's QP is written
 *   one-sidedly while the peer is stopped;
 * - the counts of softrdma_shm_stats() say which way each request went.
 *
 * THREAD mode: a post runs its WQE at once.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <rdma/rdma_cma.h>

#include "harness.h"
#include "peer.h"

#define REGION		(2u << 20)	/* the peer's registered region */
#define BIG		(1u << 20)
#define MID		(200u * 1024 + 13)	/* below the cooperative copy's 256 KiB */
#define WIN_OFF		8192u		/* the window the peer binds */
#define WIN_LEN		8192u
#define SEND_WORD_OFF	(REGION + 64)	/* a Send's word in the test's buffer */

static const char *self;

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + (i >> 12));
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

static bool filled(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			return false;
	return true;
}

/* One completion, polling; 0 after the deadline. */
static int spin(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(H_TIMEOUT_MS);
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (h_now_ms() > deadline)
			return 0;
	return n;
}

/* ==== the peer process ======================================================= */

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	uint8_t *region;
	uint32_t cmd[2];		/* where the test's Sends land */
	struct ibv_mr *cmd_mr;
};

static void p_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	PEER_CHECK(ev->event == want);
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
}

static void p_post_recv(struct side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->cmd, sizeof(s->cmd), s->cmd_mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	PEER_CHECK(ibv_post_recv(s->id->qp, &wr, &bad) == 0);
}

/* Listen, accept the test, expose the region: "mr <addr> <rkey>". */
static void p_serve(struct side *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = { .responder_resources = 4, .initiator_depth = 4,
					 .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;
	int i;

	memset(s, 0, sizeof(*s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->ch = rdma_create_event_channel();
	PEER_CHECK(s->ch);
	PEER_CHECK(rdma_create_id(s->ch, &s->listen, NULL, RDMA_PS_TCP) == 0);
	PEER_CHECK(rdma_bind_addr(s->listen, (struct sockaddr *)&sin) == 0);
	PEER_CHECK(rdma_listen(s->listen, 1) == 0);
	peer_say("port %u", ntohs(rdma_get_src_port(s->listen)));
	PEER_CHECK(rdma_get_cm_event(s->ch, &ev) == 0);
	PEER_CHECK(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	s->id = ev->id;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	PEER_CHECK(rdma_create_qp(s->id, NULL, &qa) == 0);
	s->region = aligned_alloc(4096, REGION);
	PEER_CHECK(s->region);
	memset(s->region, 0, REGION);
	s->mr = ibv_reg_mr(s->id->pd, s->region, REGION, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	s->cmd_mr = ibv_reg_mr(s->id->pd, s->cmd, sizeof(s->cmd), IBV_ACCESS_LOCAL_WRITE);
	s->mw = ibv_alloc_mw(s->id->pd, IBV_MW_TYPE_2);
	PEER_CHECK(s->mr && s->cmd_mr && s->mw);
	for (i = 0; i < 8; i++)
		p_post_recv(s);
	PEER_CHECK(rdma_accept(s->id, &param) == 0);
	p_expect(s->ch, RDMA_CM_EVENT_ESTABLISHED);
	peer_say("mr %llx %x", (unsigned long long)(uintptr_t)s->region, s->mr->rkey);
}

/* A BIND_MW or LOCAL_INV of the window on the peer's own QP, completed. */
static void p_window(struct side *s, bool bind)
{
	struct ibv_send_wr wr = { .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (bind) {
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = s->mw;
		wr.bind_mw.rkey = ibv_inc_rkey(s->mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
			.mr = s->mr, .addr = (uintptr_t)s->region + WIN_OFF, .length = WIN_LEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	} else {
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = s->mw->rkey;
	}
	PEER_CHECK(ibv_post_send(s->id->qp, &wr, &bad) == 0);
	PEER_CHECK(spin(s->id->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	if (bind)
		s->mw->rkey = wr.bind_mw.rkey;
}

static void p_close(struct side *s)
{
	p_expect(s->ch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(s->id);
	PEER_CHECK(ibv_dealloc_mw(s->mw) == 0);
	PEER_CHECK(!s->mr || ibv_dereg_mr(s->mr) == 0);
	PEER_CHECK(ibv_dereg_mr(s->cmd_mr) == 0);
	free(s->region);
	PEER_CHECK(rdma_destroy_id(s->id) == 0);
	PEER_CHECK(rdma_destroy_id(s->listen) == 0);
	rdma_destroy_event_channel(s->ch);
}

/*
 * The responder, on commands:
 *   fill <seed>         fill the region: "filled"
 *   check <off> <len>   poll for the test's Send, whose word is a seed, and
 *                       check the region's [off, off + len) against it: "ok"
 *   dereg               deregister the region: "dereged"
 *   bind, inval         bind the window (WIN_OFF, WIN_LEN), invalidate it:
 *                       "mw <rkey>", "invalidated"
 *   quit
 */
static int role_target(void)
{
	const char *cmd;
	struct side s;

	p_serve(&s);
	while (strcmp(cmd = peer_hear(), "quit") != 0) {
		unsigned int a, b;

		if (sscanf(cmd, "fill %u", &a) == 1) {
			struct softrdma_shm_stats st;

			fill(s.region, REGION, a);
			/* The fabric's lock orders the fill before the peer's reads, for TSan. */
			softrdma_shm_stats(&st);
			peer_say("filled");
		} else if (sscanf(cmd, "check %u %u", &a, &b) == 2) {
			struct ibv_wc wc;

			PEER_CHECK(a <= REGION && b <= REGION - a);
			peer_say("polling");
			PEER_CHECK(spin(s.id->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
			PEER_CHECK(filled(s.region + a, b, s.cmd[0]));
			p_post_recv(&s);
			peer_say("ok");
		} else if (strcmp(cmd, "dereg") == 0) {
			PEER_CHECK(ibv_dereg_mr(s.mr) == 0);
			s.mr = NULL;
			peer_say("dereged");
		} else if (strcmp(cmd, "bind") == 0) {
			p_window(&s, true);
			peer_say("mw %x", s.mw->rkey);
		} else if (strcmp(cmd, "inval") == 0) {
			p_window(&s, false);
			peer_say("invalidated");
		} else {
			peer_say("FAIL command %s", cmd);
			return 1;
		}
	}
	p_close(&s);
	peer_say("done");
	return 0;
}

/* ==== the test ================================================================ */

struct client {
	struct peer peer;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t raddr;
	uint32_t rkey;
};

static void connect_peer(struct client *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = { .responder_resources = 4, .initiator_depth = 4,
					 .retry_count = 7, .rnr_retry_count = 7 };
	unsigned long long raddr;

	memset(c, 0, sizeof(*c));
	peer_start(&c->peer, self, "target");
	c->ch = rdma_create_event_channel();
	assert_non_null(c->ch);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)atoi(peer_expect(&c->peer, "port ")));
	assert_int_equal(rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c->id, 1000), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(c->id, NULL, &qa), 0);
	c->buf = aligned_alloc(4096, REGION + 4096);
	assert_non_null(c->buf);
	memset(c->buf, 0, REGION + 4096);
	c->mr = h_reg(c->id->pd, c->buf, REGION + 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rdma_connect(c->id, &param), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(sscanf(peer_expect(&c->peer, "mr "), "%llx %x", &raddr, &c->rkey), 2);
	c->raddr = raddr;
	assert_string_equal(softrdma_qp_transport(c->id->qp), "shm");
}

static void disconnect_peer(struct client *c)
{
	peer_send(&c->peer, "quit");
	assert_int_equal(rdma_disconnect(c->id), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c->peer, "done");
	h_settle();
	rdma_destroy_qp(c->id);
	assert_int_equal(ibv_dereg_mr(c->mr), 0);
	assert_int_equal(rdma_destroy_id(c->id), 0);
	rdma_destroy_event_channel(c->ch);
	free(c->buf);
	assert_int_equal(peer_wait(&c->peer, H_TIMEOUT_MS), 0);
}

/* Post one signaled WR at the peer's @raddr through @rkey and wait for its completion. */
static enum ibv_wc_status run(struct client *c, enum ibv_wr_opcode op, struct ibv_sge *sge,
			      int nsge, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = sge, .num_sge = nsge, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(ibv_post_send(c->id->qp, &wr, &bad), 0);
	assert_int_equal(spin(c->id->send_cq, &wc), 1);
	assert_int_equal(wc.wr_id, 7);
	return wc.status;
}

/* A Write of @len bytes, filled with @seed, from up to three SGEs at odd offsets. */
static enum ibv_wc_status write_at(struct client *c, uint64_t raddr, uint32_t rkey,
				   uint32_t len, uint32_t seed)
{
	uint8_t *src = c->buf + 5;
	uint32_t a = len / 3, b = len / 3;
	struct ibv_sge sge[3] = {
		{ (uintptr_t)src, a, c->mr->lkey },
		{ (uintptr_t)(src + a), b, c->mr->lkey },
		{ (uintptr_t)(src + a + b), len - a - b, c->mr->lkey },
	};

	fill(src, len, seed);
	return run(c, IBV_WR_RDMA_WRITE, sge, 3, raddr, rkey);
}

/* A Read of @len bytes at @raddr into a sink of two SGEs: its bytes. */
static const uint8_t *read_at(struct client *c, uint64_t raddr, uint32_t len)
{
	uint8_t *sink = c->buf + BIG + 3;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)sink, len / 2, c->mr->lkey },
		{ (uintptr_t)(sink + len / 2), len - len / 2, c->mr->lkey },
	};

	memset(sink, 0, len);
	assert_int_equal(run(c, IBV_WR_RDMA_READ, sge, 2, raddr, c->rkey), IBV_WC_SUCCESS);
	return sink;
}

/* The Send whose word the peer checks the region against ("check", "zero"). */
static void send_word(struct client *c, uint32_t word)
{
	uint32_t *w = (uint32_t *)(c->buf + SEND_WORD_OFF);
	struct ibv_sge sge = { (uintptr_t)w, sizeof(*w), c->mr->lkey };

	*w = word;
	assert_int_equal(run(c, IBV_WR_SEND, &sge, 1, 0, 0), IBV_WC_SUCCESS);
}

static struct softrdma_shm_stats stats(void)
{
	struct softrdma_shm_stats st;

	softrdma_shm_stats(&st);
	return st;
}

static void cont(struct client *c)
{
	assert_int_equal(kill(c->peer.pid, SIGCONT), 0);
}

/* Reads and Writes complete while the responder's process is stopped. */
static void test_stopped_responder(void **state)
{
	/* Below 256 KiB: a larger one of a polling requester goes to be shared (wire_shm_coop.h). */
	static const uint32_t sizes[] = { 3, 4096, 65536 + 13, MID };
	struct softrdma_shm_stats st0, st1;
	struct client c;
	unsigned int i;

	(void)state;
	connect_peer(&c);
	peer_send(&c.peer, "fill 7");
	peer_expect(&c.peer, "filled");
	peer_send(&c.peer, "check 0 %u", MID);
	peer_expect(&c.peer, "polling");
	peer_stop(&c.peer);
	st0 = stats();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_true(filled(read_at(&c, c.raddr, sizes[i]), sizes[i], 7));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_int_equal(write_at(&c, c.raddr, c.rkey, sizes[i], 9), IBV_WC_SUCCESS);
	st1 = stats();
	assert_int_equal(st1.one_sided_reads - st0.one_sided_reads, 4);
	assert_int_equal(st1.one_sided_writes - st0.one_sided_writes, 4);
	assert_int_equal(st1.one_sided_read_bytes - st0.one_sided_read_bytes,
			 3 + 4096 + 65536 + 13 + MID);
	cont(&c);
	/* The Send's PSN is ahead of every one the peer saw: taken at once, not dropped. */
	send_word(&c, 9);
	peer_expect(&c.peer, "ok");
	disconnect_peer(&c);
}

/* A deregistered MR is refused by the responder, and nothing is written. */
static void test_deregistered(void **state)
{
	struct softrdma_shm_stats st0;
	struct client c;

	(void)state;
	connect_peer(&c);
	assert_int_equal(write_at(&c, c.raddr, c.rkey, 4096, 3), IBV_WC_SUCCESS);
	peer_send(&c.peer, "dereg");
	peer_expect(&c.peer, "dereged");
	st0 = stats();
	assert_int_equal(write_at(&c, c.raddr + 8192, c.rkey, 4096, 4), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(stats().one_sided_writes, st0.one_sided_writes);
	disconnect_peer(&c);
}

/* A Write that runs past the MR's end is refused whole. */
static void test_past_the_end(void **state)
{
	struct softrdma_shm_stats st0;
	struct client c;

	(void)state;
	connect_peer(&c);
	st0 = stats();
	assert_int_equal(write_at(&c, c.raddr + REGION - 4000, c.rkey, 4096, 5),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(stats().one_sided_writes, st0.one_sided_writes);
	disconnect_peer(&c);
}

/* A window bound to the peer's QP is written one-sidedly; once invalidated, refused. */
static void test_window(void **state)
{
	struct softrdma_shm_stats st0;
	struct client c;
	unsigned int mw;

	(void)state;
	connect_peer(&c);
	peer_send(&c.peer, "bind");
	assert_int_equal(sscanf(peer_expect(&c.peer, "mw "), "%x", &mw), 1);
	peer_send(&c.peer, "check %u %u", WIN_OFF, WIN_LEN);
	peer_expect(&c.peer, "polling");
	peer_stop(&c.peer);
	st0 = stats();
	assert_int_equal(write_at(&c, c.raddr + WIN_OFF, mw, WIN_LEN, 11), IBV_WC_SUCCESS);
	assert_int_equal(stats().one_sided_writes - st0.one_sided_writes, 1);
	cont(&c);
	send_word(&c, 11);
	peer_expect(&c.peer, "ok");

	peer_send(&c.peer, "inval");
	peer_expect(&c.peer, "invalidated");
	st0 = stats();
	assert_int_equal(write_at(&c, c.raddr + WIN_OFF, mw, 64, 12), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(stats().one_sided_writes, st0.one_sided_writes);
	disconnect_peer(&c);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stopped_responder),
		cmocka_unit_test(test_deregistered),
		cmocka_unit_test(test_past_the_end),
		cmocka_unit_test(test_window),
	};
	int failed;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0)
		return strcmp(argv[2], "target") == 0 ? role_target() : 2;
	self = argv[0];
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("onesided", tests, h_group_thread, NULL);
	peer_cleanup_dir();
	return failed;
}
