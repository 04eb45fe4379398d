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
#include "cm_pair.h"
#include "peer.h"

#define REGION		(2u << 20)	/* the peer's registered region */
#define BIG		(1u << 20)
#define MID		(200u * 1024 + 13)	/* below the cooperative copy's 256 KiB */
#define WIN_OFF		8192u		/* the window the peer binds */
#define WIN_LEN		8192u
#define SEND_WORD_OFF	(REGION + 64)	/* a Send's word in the test's buffer */

static const char *self;

/* ==== the peer process ======================================================= */

/* A BIND_MW or LOCAL_INV of the window on the peer's own QP, completed. */
static void p_window(struct cm_side *s, struct ibv_mw *mw, bool bind)
{
	struct ibv_send_wr wr = { .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (bind) {
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
			.mr = s->mr, .addr = (uintptr_t)s->region + WIN_OFF, .length = WIN_LEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	} else {
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = mw->rkey;
	}
	PEER_CHECK(ibv_post_send(s->id->qp, &wr, &bad) == 0);
	PEER_CHECK(cm_spin(s->id->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	if (bind)
		mw->rkey = wr.bind_mw.rkey;
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
	struct ibv_mw *mw;
	struct cm_side s;

	cm_side_serve(&s, REGION, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	mw = ibv_alloc_mw(s.id->pd, IBV_MW_TYPE_2);
	PEER_CHECK(mw);
	while (strcmp(cmd = peer_hear(), "quit") != 0) {
		unsigned int a, b;

		if (sscanf(cmd, "fill %u", &a) == 1) {
			struct softrdma_shm_stats st;

			cm_fill(s.region, REGION, a);
			/* The fabric's lock orders the fill before the peer's reads, for TSan. */
			softrdma_shm_stats(&st);
			peer_say("filled");
		} else if (sscanf(cmd, "check %u %u", &a, &b) == 2) {
			struct ibv_wc wc;

			PEER_CHECK(a <= REGION && b <= REGION - a);
			peer_say("polling");
			PEER_CHECK(cm_spin(s.id->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
			PEER_CHECK(cm_filled(s.region + a, b, s.cmd[0]));
			cm_side_post_recv(&s);
			peer_say("ok");
		} else if (strcmp(cmd, "dereg") == 0) {
			PEER_CHECK(ibv_dereg_mr(s.mr) == 0);
			s.mr = NULL;
			peer_say("dereged");
		} else if (strcmp(cmd, "bind") == 0) {
			p_window(&s, mw, true);
			peer_say("mw %x", mw->rkey);
		} else if (strcmp(cmd, "inval") == 0) {
			p_window(&s, mw, false);
			peer_say("invalidated");
		} else {
			peer_say("FAIL command %s", cmd);
			return 1;
		}
	}
	PEER_CHECK(ibv_dealloc_mw(mw) == 0);
	cm_side_close(&s);
	peer_say("done");
	return 0;
}

/* ==== the test ================================================================ */

/* Post one signaled WR at the peer's @raddr through @rkey and wait for its completion. */
static enum ibv_wc_status run(struct cm_client *c, enum ibv_wr_opcode op, struct ibv_sge *sge,
			      int nsge, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = sge, .num_sge = nsge, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(ibv_post_send(c->id->qp, &wr, &bad), 0);
	assert_int_equal(cm_spin(c->id->send_cq, &wc), 1);
	assert_int_equal(wc.wr_id, 7);
	return wc.status;
}

/* A Write of @len bytes, filled with @seed, from up to three SGEs at odd offsets. */
static enum ibv_wc_status write_at(struct cm_client *c, uint64_t raddr, uint32_t rkey,
				   uint32_t len, uint32_t seed)
{
	uint8_t *src = c->buf + 5;
	uint32_t a = len / 3, b = len / 3;
	struct ibv_sge sge[3] = {
		{ (uintptr_t)src, a, c->mr->lkey },
		{ (uintptr_t)(src + a), b, c->mr->lkey },
		{ (uintptr_t)(src + a + b), len - a - b, c->mr->lkey },
	};

	cm_fill(src, len, seed);
	return run(c, IBV_WR_RDMA_WRITE, sge, 3, raddr, rkey);
}

/* A Read of @len bytes at @raddr into a sink of two SGEs: its bytes. */
static const uint8_t *read_at(struct cm_client *c, uint64_t raddr, uint32_t len)
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
static void send_word(struct cm_client *c, uint32_t word)
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

static void cont(struct cm_client *c)
{
	assert_int_equal(kill(c->peer.pid, SIGCONT), 0);
}

/* A peer under valgrind publishes no keys (memcheck would not see what is written). */
static bool skip_under_valgrind(void)
{
	if (!peer_under_valgrind())
		return false;
	print_message("the peer runs under valgrind and publishes no keys: skipped\n");
	skip();
	return true;
}

/* Reads and Writes complete while the responder's process is stopped. */
static void test_stopped_responder(void **state)
{
	/* Below 256 KiB: a larger one of a polling requester goes to be shared (wire_shm_coop.h). */
	static const uint32_t sizes[] = { 3, 4096, 65536 + 13, MID };
	struct softrdma_shm_stats st0, st1;
	struct cm_client c;
	unsigned int i;

	(void)state;
	if (skip_under_valgrind())
		return;
	cm_client_connect(&c, self, "target", REGION + 4096, IBV_ACCESS_LOCAL_WRITE);
	peer_send(&c.peer, "fill 7");
	peer_expect(&c.peer, "filled");
	peer_send(&c.peer, "check 0 %u", MID);
	peer_expect(&c.peer, "polling");
	peer_stop(&c.peer);
	st0 = stats();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_true(cm_filled(read_at(&c, c.raddr, sizes[i]), sizes[i], 7));
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
	cm_client_disconnect(&c);
}

/* A deregistered MR is refused by the responder, and nothing is written. */
static void test_deregistered(void **state)
{
	struct softrdma_shm_stats st0;
	struct cm_client c;

	(void)state;
	cm_client_connect(&c, self, "target", REGION + 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(write_at(&c, c.raddr, c.rkey, 4096, 3), IBV_WC_SUCCESS);
	peer_send(&c.peer, "dereg");
	peer_expect(&c.peer, "dereged");
	st0 = stats();
	assert_int_equal(write_at(&c, c.raddr + 8192, c.rkey, 4096, 4), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(stats().one_sided_writes, st0.one_sided_writes);
	cm_client_disconnect(&c);
}

/* A Write that runs past the MR's end is refused whole. */
static void test_past_the_end(void **state)
{
	struct softrdma_shm_stats st0;
	struct cm_client c;

	(void)state;
	cm_client_connect(&c, self, "target", REGION + 4096, IBV_ACCESS_LOCAL_WRITE);
	st0 = stats();
	assert_int_equal(write_at(&c, c.raddr + REGION - 4000, c.rkey, 4096, 5),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(stats().one_sided_writes, st0.one_sided_writes);
	cm_client_disconnect(&c);
}

/* A window bound to the peer's QP is written one-sidedly; once invalidated, refused. */
static void test_window(void **state)
{
	struct softrdma_shm_stats st0;
	struct cm_client c;
	unsigned int mw;

	(void)state;
	if (skip_under_valgrind())
		return;
	cm_client_connect(&c, self, "target", REGION + 4096, IBV_ACCESS_LOCAL_WRITE);
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
	cm_client_disconnect(&c);
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
