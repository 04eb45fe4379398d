/* SPDX-License-Identifier: MIT */
/*
 * Exactly once, in order: an RC QP delivers each message once and in the
 * order it was posted, or breaks the connection. Numbered
 * Sends of many sizes, with a deep send queue, go from this process to a
 * peer process over rdma_cm (shared memory, or the socket with
 * SOFTRDMA_SHM=0; every device profile through SOFTRDMA_PROFILE), while
 * the peer's receive queue runs dry now and then (RNR NAKs, go back N)
 * and faults hold requests back. The peer checks every message: its
 * number is the next one, its length and bytes are that number's. Any
 * duplicate, gap or wrong byte fails the test, as does a Send that does
 * not complete successfully.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#include "harness.h"
#include "peer.h"

#define MSG_MAX		65536u
#define DEPTH		128u	/* Sends outstanding at once */
#define SINK_RECVS	256u	/* receives the peer has, when it has them all: more than DEPTH */

/* Sizes around the inline limits, the shared-memory slots and the path MTU. */
static const uint32_t sizes[] = { 8, 64, 1000, 2047, 2048, 2049, 4096, 16384, 65536, 3000, 40000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* A run's bound (under valgrind, tenfold), far above what it takes. */
#define RUN_MS		(uint64_t)peer_timeout_ms(getenv("ONCE_MS") ? atoi(getenv("ONCE_MS")) : 60000)

static const char *self;

/* 1: every message is MSG_MAX bytes (the sizes that fill shared-memory slots fastest). */
static int large_only;

static uint32_t msg_len(uint64_t n)
{
	return large_only ? MSG_MAX : sizes[n % NSIZES];
}

static uint8_t msg_byte(uint64_t n, uint32_t i)
{
	return (uint8_t)(n * 31u + i * 7u + 1u);
}

static void msg_fill(uint8_t *p, uint64_t n)
{
	uint32_t i, len = msg_len(n);

	memcpy(p, &n, sizeof(n));
	for (i = sizeof(n); i < len; i++)
		p[i] = msg_byte(n, i);
}

/* How many messages a run sends: fewer under valgrind and the sanitizers, which slow it 3-20 times. */
static uint64_t messages(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 1200;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	return 1200;
#endif
#endif
	return peer_under_valgrind() ? 240 : 6000;
}

/* ==== the peer: receive and check ============================================ */

struct sink {
	uint64_t expect, dup, gap, bad;
};

/* Check one received message against the number it should carry. */
static void sink_check(struct sink *k, const uint8_t *p, uint32_t byte_len)
{
	uint64_t n;
	uint32_t i;

	if (byte_len < sizeof(n)) {
		k->bad++;
		return;
	}
	memcpy(&n, p, sizeof(n));
	if (n < k->expect) {
		k->dup++;
		return;
	}
	if (n > k->expect)
		k->gap++;
	k->expect = n + 1;
	if (byte_len != msg_len(n)) {
		k->bad++;
		return;
	}
	for (i = sizeof(n); i < byte_len; i++)
		if (p[i] != msg_byte(n, i)) {
			k->bad++;
			return;
		}
}

static struct rdma_cm_event *p_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	PEER_CHECK(ev->event == want);
	return ev;
}

/*
 * Role "sink N STARVE": accept one connection, receive N messages and say
 * what they were. With STARVE 1 the receive queue holds a few receives
 * only, reposted one at a time, so the sender meets RNR NAKs all along.
 */
static int role_sink(uint64_t count, int starve)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = SINK_RECVS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = { .rnr_retry_count = 7 };
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS };
	struct sink k = { 0 };
	uint32_t posted = starve ? 3 : SINK_RECVS, i;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t got = 0, deadline;

	PEER_CHECK(ch && rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) == 0);
	PEER_CHECK(rdma_bind_addr(listen, (struct sockaddr *)&sin) == 0);
	PEER_CHECK(rdma_listen(listen, 1) == 0);
	peer_say("port %u", ntohs(rdma_get_src_port(listen)));
	ev = p_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	PEER_CHECK(rdma_create_qp(id, NULL, &qa) == 0);
	buf = malloc((size_t)SINK_RECVS * MSG_MAX);
	PEER_CHECK(buf);
	mr = ibv_reg_mr(id->pd, buf, (size_t)SINK_RECVS * MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	PEER_CHECK(mr);
	for (i = 0; i < posted; i++)
		PEER_CHECK(h_post_recv(id->qp, i, buf + (size_t)i * MSG_MAX, MSG_MAX,
				       mr->lkey) == 0);
	PEER_CHECK(rdma_accept(id, &param) == 0);
	PEER_CHECK(rdma_ack_cm_event(p_event(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	/* rdma_cm leaves min_rnr_timer 0, 655 ms an RNR NAK: 0.12 ms keeps a run short. */
	rts.min_rnr_timer = 8;
	PEER_CHECK(ibv_modify_qp(id->qp, &rts, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER) == 0);
	deadline = h_now_ms() + RUN_MS;
	while (got < count) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(id->recv_cq, 1, &wc);

		PEER_CHECK(n >= 0 && h_now_ms() < deadline);
		if (n == 0)
			continue;
		PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id < posted);
		sink_check(&k, buf + wc.wr_id * MSG_MAX, wc.byte_len);
		got++;
		PEER_CHECK(h_post_recv(id->qp, wc.wr_id, buf + wc.wr_id * MSG_MAX, MSG_MAX,
				       mr->lkey) == 0);
	}
	peer_say("got %llu dup %llu gap %llu bad %llu", (unsigned long long)got,
		 (unsigned long long)k.dup, (unsigned long long)k.gap, (unsigned long long)k.bad);
	PEER_CHECK(strcmp(peer_hear(), "bye") == 0);
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	PEER_CHECK(ibv_dereg_mr(mr) == 0);
	PEER_CHECK(rdma_destroy_id(id) == 0);
	PEER_CHECK(rdma_destroy_id(listen) == 0);
	rdma_destroy_event_channel(ch);
	free(buf);
	return 0;
}

/* ==== the test: send ========================================================== */

struct source {
	struct peer peer;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void source_connect(struct source *s, uint64_t count, int starve)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct sockaddr_in sin;
	char role[64];

	memset(s, 0, sizeof(*s));
	snprintf(role, sizeof(role), "sink:%llu:%d:%d", (unsigned long long)count, starve,
		 large_only);
	peer_start(&s->peer, self, role);
	sin = h_loopback((uint16_t)atoi(peer_expect(&s->peer, "port ")));
	s->ch = rdma_create_event_channel();
	assert_non_null(s->ch);
	assert_int_equal(rdma_create_id(s->ch, &s->id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(s->id, NULL, (struct sockaddr *)&sin, 2000), 0);
	h_cm_expect(s->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(s->id, 2000), 0);
	h_cm_expect(s->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(s->id, NULL, &qa), 0);
	s->buf = malloc((size_t)DEPTH * MSG_MAX);
	assert_non_null(s->buf);
	s->mr = h_reg(s->id->pd, s->buf, (size_t)DEPTH * MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rdma_connect(s->id, &param), 0);
	h_cm_expect(s->ch, RDMA_CM_EVENT_ESTABLISHED);
}

/* Post message @n from its own slot (free again once its Send completed). */
static void source_post(struct source *s, uint64_t n)
{
	uint8_t *p = s->buf + (size_t)(n % DEPTH) * MSG_MAX;

	msg_fill(p, n);
	assert_int_equal(h_post(s->id->qp, n, IBV_WR_SEND, p, msg_len(n), s->mr->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
}

/* Send @count numbered messages, DEPTH at a time; each completes, in order, successfully. */
static void source_run(struct source *s, uint64_t count)
{
	uint64_t posted = 0, done = 0, deadline = h_now_ms() + RUN_MS;
	struct ibv_wc wc[16];

	while (done < count) {
		int i, n;

		while (posted < count && posted - done < DEPTH)
			source_post(s, posted++);
		n = ibv_poll_cq(s->id->send_cq, 16, wc);
		assert_true(n >= 0);
		if (h_now_ms() >= deadline) {
			const char *line = peer_read(&s->peer, 100);

			print_message("the peer said: %s\n", line ? line : "nothing");
			fail_msg("%llu of %llu Sends completed, %llu posted, %lu sent again",
				 (unsigned long long)done, (unsigned long long)count,
				 (unsigned long long)posted, softrdma_qp_resends(s->id->qp));
		}
		for (i = 0; i < n; i++, done++) {
			assert_string_equal(ibv_wc_status_str(wc[i].status),
					    ibv_wc_status_str(IBV_WC_SUCCESS));
			assert_int_equal(wc[i].wr_id, done);
		}
	}
}

static void source_close(struct source *s)
{
	rdma_disconnect(s->id);
	rdma_destroy_qp(s->id);
	assert_int_equal(ibv_dereg_mr(s->mr), 0);
	assert_int_equal(rdma_destroy_id(s->id), 0);
	rdma_destroy_event_channel(s->ch);
	free(s->buf);
	assert_int_equal(peer_wait(&s->peer, peer_timeout_ms(H_TIMEOUT_MS)), 0);
}

static void run(int starve)
{
	uint64_t count = messages();
	unsigned long long got, dup, gap, bad;
	struct source s;

	source_connect(&s, count, starve);
	source_run(&s, count);
	assert_int_equal(sscanf(peer_expect(&s.peer, "got "), "%llu dup %llu gap %llu bad %llu",
				&got, &dup, &gap, &bad), 4);
	print_message("%s: %llu messages, %lu sent again, %llu duplicates, %llu gaps, %llu wrong\n",
		      softrdma_qp_transport(s.id->qp), got, softrdma_qp_resends(s.id->qp), dup,
		      gap, bad);
	assert_int_equal(got, count);
	assert_int_equal(dup, 0);
	assert_int_equal(gap, 0);
	assert_int_equal(bad, 0);
	peer_send(&s.peer, "bye");
	source_close(&s);
}

static void test_plenty(void **state)
{
	(void)state;
	run(0);
}

/* The peer's receive queue runs dry all along: RNR NAKs, and go back N behind each. */
/* Only 64 KiB Sends, 128 deep: every one takes a shared-memory slot while it is read. */
static void test_large(void **state)
{
	(void)state;
	large_only = 1;
	run(0);
	large_only = 0;
}

static void test_starved(void **state)
{
	(void)state;
	run(1);
}

/* As above, with Sends here and there held back 300 us or meeting a forced RNR NAK. */
static void test_faults(void **state)
{
	struct softrdma_fault delay = { .match = { .opcode_mask = 1u << IBV_WR_SEND, .count = 1 },
					.kind = SOFTRDMA_FAULT_DELAY, .delay_us = 300 };
	struct softrdma_fault rnr = { .match = { .opcode_mask = 1u << IBV_WR_SEND, .count = 1 },
				      .kind = SOFTRDMA_FAULT_RNR };
	int ids[40];
	unsigned int k;

	(void)state;
	for (k = 0; k < 20; k++) {
		/*
		 * Within the first 240 Sends: a fault counts only the WRs it
		 * is checked on, and one that fires hides a WR from those
		 * added after it, so the later ones slip a little.
		 */
		delay.match.nth = (k + 1) * 5;
		rnr.match.nth = (k + 1) * 7 + 1;
		ids[2 * k] = softrdma_fault_add(&delay);
		ids[2 * k + 1] = softrdma_fault_add(&rnr);
		assert_true(ids[2 * k] > 0 && ids[2 * k + 1] > 0);
	}
	run(1);
	for (k = 0; k < 40; k++)
		assert_int_equal(softrdma_fault_fired(ids[k]), 1);
	assert_int_equal(softrdma_fault_remove(0), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plenty),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_starved),
		cmocka_unit_test(test_faults),
	};
	unsigned long long count;
	int starve, failed;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0) {
		if (sscanf(argv[2], "sink:%llu:%d:%d", &count, &starve, &large_only) != 3)
			return 2;
		return role_sink(count, starve);
	}
	self = argv[0];
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("once", tests, h_group_thread, NULL);
	peer_cleanup_dir();
	return failed;
}
