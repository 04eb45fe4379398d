/* SPDX-License-Identifier: MIT */
/*
 * A peer that dies mid-operation. On an RC connection the operation fails
 * or the connection breaks; it never completes with bytes the dead side
 * did not send, and nothing queued behind it is delivered. Two peer
 * processes, connected by rdma_cm: the survivor and the victim, which the
 * test kills at a chosen point.
 *
 * - write, send: the victim posts a 256 KiB Write with immediate (or a
 *   256 KiB Send) from its memory, then a small inline Send, while the
 *   survivor is stopped; the victim is killed before the survivor reads
 *   its memory; the survivor, let go on, must complete nothing with wrong
 *   bytes and, over shared memory, nothing at all, and sees the connection
 *   end.
 * - read: the survivor reads 256 KiB of the victim's memory while the
 *   victim is stopped, then the victim is killed: the Read completes in
 *   error, or with the victim's bytes. The victim publishes no keys, so
 *   that the Read awaits it instead of being served one-sidedly.
 */
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "harness.h"
#include "peer.h"

#define LEN		(256u * 1024)	/* far above the shared-memory inline size */
#define SMALL		64u
#define SRC_BYTE	0x5a		/* what the victim's memory holds */
#define DST_BYTE	0xee		/* what the survivor's held before */

static const char *self;

static bool all_bytes(const uint8_t *p, size_t len, uint8_t b)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != b)
			return false;
	return true;
}

static struct rdma_cm_event *p_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	PEER_CHECK(ev->event == want);
	return ev;
}

/* Whether a DISCONNECTED event comes on @ch within @ms. */
static bool p_disconnected(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	bool disc;

	if (poll(&pfd, 1, peer_timeout_ms(ms)) != 1)
		return false;
	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	disc = ev->event == RDMA_CM_EVENT_DISCONNECTED;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	return disc;
}

static const struct ibv_qp_init_attr qp_attr = {
	.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1,
		 .max_inline_data = SMALL },
	.qp_type = IBV_QPT_RC,
	.sq_sig_all = 1,
};

/* ==== the survivor ============================================================ */

/* What arrived after the victim died: successful receives, and whether their bytes hold. */
static void survivor_receive(struct rdma_event_channel *ch, struct rdma_cm_id *id,
			     const uint8_t *mem)
{
	unsigned int ok = 0, wrong = 0;
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(1000);
	struct ibv_wc wc;

	while (h_now_ms() < deadline) {
		int n = ibv_poll_cq(id->recv_cq, 1, &wc);

		PEER_CHECK(n >= 0);
		if (n == 0 || wc.status != IBV_WC_SUCCESS)
			continue;
		if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			all_bytes(mem, LEN, SRC_BYTE) ? ok++ : wrong++;
		else
			all_bytes(mem + LEN + wc.wr_id * LEN, wc.byte_len, SRC_BYTE) ? ok++ :
										  wrong++;
	}
	peer_say("result ok %u wrong %u disconnected %d", ok, wrong, p_disconnected(ch, 5000));
}

/* The Read of the victim's memory: its completion, and whether its bytes hold. */
static void survivor_read(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *mem)
{
	unsigned long long raddr;
	unsigned int rkey, ok = 0, wrong = 0, failed = 0;
	uint64_t deadline;
	struct ibv_wc wc;
	int n = 0;

	PEER_CHECK(sscanf(peer_hear(), "read %llx %x", &raddr, &rkey) == 2);
	PEER_CHECK(h_post(id->qp, 1, IBV_WR_RDMA_READ, mem, LEN, mr->lkey, IBV_SEND_SIGNALED,
			  raddr, rkey) == 0);
	while (softrdma_qp_max_inflight(id->qp) < 1)
		poll(NULL, 0, 1);
	peer_say("posted");
	deadline = h_now_ms() + (uint64_t)peer_timeout_ms(10000);
	while (n == 0 && h_now_ms() < deadline)
		n = ibv_poll_cq(id->send_cq, 1, &wc);
	PEER_CHECK(n == 1);
	if (wc.status != IBV_WC_SUCCESS)
		failed++;
	else
		all_bytes(mem, LEN, SRC_BYTE) ? ok++ : wrong++;
	peer_say("result ok %u wrong %u failed %u", ok, wrong, failed);
}

static int role_survivor(const char *mode)
{
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .rnr_retry_count = 7, .retry_count = 3 };
	struct ibv_qp_init_attr qa = qp_attr;
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct ibv_mr *mr;
	uint8_t *mem = malloc(4 * LEN);
	unsigned int i;

	PEER_CHECK(ch && mem && rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) == 0);
	memset(mem, DST_BYTE, 4 * LEN);
	PEER_CHECK(rdma_bind_addr(listen, (struct sockaddr *)&sin) == 0);
	PEER_CHECK(rdma_listen(listen, 1) == 0);
	peer_say("port %u", ntohs(rdma_get_src_port(listen)));
	ev = p_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	PEER_CHECK(rdma_create_qp(id, NULL, &qa) == 0);
	mr = ibv_reg_mr(id->pd, mem, 4 * LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	PEER_CHECK(mr);
	for (i = 0; i < 3; i++)
		PEER_CHECK(h_post_recv(id->qp, i, mem + LEN + i * LEN, LEN, mr->lkey) == 0);
	PEER_CHECK(rdma_accept(id, &param) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("ready %llx %x", (unsigned long long)(uintptr_t)mem, mr->rkey);
	if (strcmp(mode, "read") == 0)
		survivor_read(id, mr, mem);
	else
		survivor_receive(ch, id, mem);
	PEER_CHECK(strcmp(peer_hear(), "bye") == 0);
	rdma_destroy_qp(id);
	PEER_CHECK(ibv_dereg_mr(mr) == 0);
	PEER_CHECK(rdma_destroy_id(id) == 0);
	PEER_CHECK(rdma_destroy_id(listen) == 0);
	rdma_destroy_event_channel(ch);
	free(mem);
	return 0;
}

/* ==== the victim ============================================================= */

static int role_victim(const char *mode, uint16_t port)
{
	unsigned long long raddr;
	unsigned int rkey;
	struct sockaddr_in sin = h_loopback(port);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .rnr_retry_count = 7, .retry_count = 7 };
	struct ibv_qp_init_attr qa = qp_attr;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *mem = malloc(LEN + SMALL);

	/*
	 * A Read served one-sidedly completes from the stopped victim's memory
	 * at once, as an HCA's would (test-onesided.c): this one must await the
	 * victim, which publishes no keys for it.
	 */
	if (strcmp(mode, "read") == 0)
		setenv("SOFTRDMA_SHM_ONESIDED", "0", 1);
	PEER_CHECK(ch && mem && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	memset(mem, SRC_BYTE, LEN + SMALL);
	PEER_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)) == 0);
	PEER_CHECK(rdma_resolve_route(id, 2000) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) == 0);
	PEER_CHECK(rdma_create_qp(id, NULL, &qa) == 0);
	mr = ibv_reg_mr(id->pd, mem, LEN + SMALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	PEER_CHECK(mr);
	PEER_CHECK(rdma_connect(id, &param) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("connected %llx %x", (unsigned long long)(uintptr_t)mem, mr->rkey);
	/* A Read's victim only waits to be stopped and killed. */
	while (strcmp(mode, "read") == 0)
		pause();
	PEER_CHECK(sscanf(peer_hear(), "%llx %x", &raddr, &rkey) == 2);
	PEER_CHECK(strcmp(peer_hear(), "go") == 0);
	if (strcmp(mode, "write") == 0) {
		struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED, .num_sge = 1 };
		struct ibv_sge sge = { (uintptr_t)mem, LEN, mr->lkey };
		struct ibv_send_wr *bad;

		wr.sg_list = &sge;
		wr.imm_data = htonl(7);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		PEER_CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
	} else {
		PEER_CHECK(h_post(id->qp, 1, IBV_WR_SEND, mem, LEN, mr->lkey, IBV_SEND_SIGNALED,
				  0, 0) == 0);
	}
	PEER_CHECK(h_post(id->qp, 2, IBV_WR_SEND, mem + LEN, SMALL, mr->lkey,
			  IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, 0) == 0);
	/* Both are on their way (the survivor is stopped: no answer comes). */
	while (softrdma_qp_max_inflight(id->qp) < 2)
		poll(NULL, 0, 1);
	peer_say("posted");
	for (;;)
		pause();
}

/* ==== the test =============================================================== */

static bool over_shm(void)
{
	const char *v = getenv("SOFTRDMA_SHM");

	return !v || strcmp(v, "0") != 0;
}

static void start_pair(struct peer *s, struct peer *v, const char *mode, unsigned long long *addr,
		       unsigned int *rkey)
{
	unsigned long long saddr;
	unsigned int srkey, port;
	char role[128];

	snprintf(role, sizeof(role), "survivor:%s", mode);
	peer_start(s, self, role);
	port = (unsigned int)atoi(peer_expect(s, "port "));
	snprintf(role, sizeof(role), "victim:%s:%u", mode, port);
	peer_start(v, self, role);
	assert_int_equal(sscanf(peer_expect(s, "ready "), "%llx %x", &saddr, &srkey), 2);
	assert_int_equal(sscanf(peer_expect(v, "connected "), "%llx %x", addr, rkey), 2);
	/* Where to write: the survivor knows it once it accepted. */
	if (strcmp(mode, "read") != 0)
		peer_send(v, "%llx %x", saddr, srkey);
}

static void test_dies_mid(const char *mode)
{
	unsigned long long vaddr;
	unsigned int vrkey, ok, wrong, disc;
	struct peer s, v;

	start_pair(&s, &v, mode, &vaddr, &vrkey);
	peer_stop(&s);
	peer_send(&v, "go");
	peer_expect(&v, "posted");
	peer_kill(&v);
	assert_int_equal(kill(s.pid, SIGCONT), 0);
	assert_int_equal(sscanf(peer_expect(&s, "result "), "ok %u wrong %u disconnected %u",
				&ok, &wrong, &disc), 3);
	print_message("%s: %u completed with the victim's bytes, %u with others, %s\n", mode, ok,
		      wrong, disc ? "disconnected" : "still connected");
	assert_int_equal(wrong, 0);
	/* Over shared memory the first one failed: nothing after it arrives either. */
	if (over_shm())
		assert_int_equal(ok, 0);
	assert_int_equal(disc, 1);
	peer_send(&s, "bye");
	assert_int_equal(peer_wait(&s, peer_timeout_ms(H_TIMEOUT_MS)), 0);
}

static void test_dies_mid_write(void **state)
{
	(void)state;
	test_dies_mid("write");
}

static void test_dies_mid_send(void **state)
{
	(void)state;
	test_dies_mid("send");
}

static void test_dies_mid_read(void **state)
{
	unsigned long long vaddr;
	unsigned int vrkey, ok, wrong, failed;
	struct peer s, v;

	(void)state;
	start_pair(&s, &v, "read", &vaddr, &vrkey);
	peer_stop(&v);
	peer_send(&s, "read %llx %x", vaddr, vrkey);
	peer_expect(&s, "posted");
	peer_kill(&v);
	assert_int_equal(sscanf(peer_expect(&s, "result "), "ok %u wrong %u failed %u", &ok,
				&wrong, &failed), 3);
	print_message("read: %u completed with the victim's bytes, %u with others, %u failed\n",
		      ok, wrong, failed);
	assert_int_equal(wrong, 0);
	assert_int_equal(ok + failed, 1);
	peer_send(&s, "bye");
	assert_int_equal(peer_wait(&s, peer_timeout_ms(H_TIMEOUT_MS)), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dies_mid_write),
		cmocka_unit_test(test_dies_mid_send),
		cmocka_unit_test(test_dies_mid_read),
	};
	unsigned int port;
	char mode[16];
	int failed;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0) {
		if (sscanf(argv[2], "survivor:%15s", mode) == 1)
			return role_survivor(mode);
		if (sscanf(argv[2], "victim:%15[a-z]:%u", mode, &port) == 2)
			return role_victim(mode, (uint16_t)port);
		return 2;
	}
	self = argv[0];
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("dead", tests, h_group_thread, NULL);
	peer_cleanup_dir();
	return failed;
}
