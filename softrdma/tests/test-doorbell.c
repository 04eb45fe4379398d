/* SPDX-License-Identifier: MIT */
/*
 * Doorbells between processes (wire_shm.c, ring_spared()): a record for a
 * peer whose net thread sleeps while a thread of the peer polls its CQs
 * wakes nobody, since that poller takes it; should the poller stop
 * without arming, the writer wakes the net thread after all, within
 * SHM_POLLER_NS of its own polling. The test and a copy of itself (the
 * peer) connect over shared memory; each round:
 *
 * - the peer arms its receive CQ and sleeps on its channel, long enough
 *   for its net thread to sleep too, and the test's Send wakes it;
 * - the peer spins on its CQ for 32 Sends and the test, polling, sends
 *   them: the records go without the doorbell (spared), and arrive;
 * - the test sends once more the moment the 32nd completed, as the peer's
 *   poller leaves: that record is spared too, and the test's poller rings
 *   late (or the peer's net thread, if it only dozed, takes it at its
 *   next look); the Send completes all the same: nothing waits for a
 *   poller that left.
 *
 * A second case posts after an arm, as an application may. The peer's net
 * thread sleeps for good, and so does the test's (it armed its send CQ and
 * stopped polling). The peer polls until a time both know; another thread
 * of the test polls meanwhile, and the test arms its send CQ again. The
 * moment the peer stops, that other thread posts an RDMA Read (which only
 * the peer's side serves: one-sided Reads are off here, and the QP has no
 * ACK timeout to send it again) and the test sleeps on the channel. No call
 * of the test comes after the post to ring late: a Read is never spared,
 * and completes. (Once, it was spared and waited for good, in about one
 * round in ten.) The same with a Send, which is spared: the test's net
 * thread, asleep for good, is woken by the spare to look lazily, and rings
 * late for it (without that, it waited for good every time).
 *
 * Whether a record is spared depends on the peer's poller having run in
 * the last 60 us, which a loaded machine may deny for a while: rounds go
 * on until a record was spared and one rung late, within a time budget.
 * The counts are asserted only if in some round the 33 Sends took less
 * than TOGETHER_MS (both pollers ran at once), and not under a sanitizer
 * or valgrind. The Sends complete and arrive in every case.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_pair.h"
#include "harness.h"
#include "peer.h"

#define BUF_LEN		4096u
/* Rounds go on this long while a spared record is still to be seen (a loaded machine). */
#define BUDGET_MS	10000
#define SPIN_SENDS	32	/* Sends to the spinning peer each round */
/* A round's Sends took less: both pollers ran at once (each Send waits for the peer's). */
#define TOGETHER_MS	5
/* Longer than the net thread's lazy looks (SHM_LAZY_MS): it sleeps for good then. */
#define NET_SLEEPS_MS	5

static const char *self;

/* gcc says so with macros, clang with __has_feature(). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static bool slowed(void)
{
#ifdef SANITIZED
	return true;
#else
	return peer_under_valgrind();
#endif
}

/* ==== the peer process ======================================================= */

/* The next Send of the test, taken from the CQ and its receive posted again. */
static void p_took(struct cm_side *s, struct ibv_wc *wc)
{
	PEER_CHECK(wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV);
	cm_side_post_recv(s);
}

/* Arm the receive CQ and sleep on its channel for the test's next Send. */
static void p_sleep(struct cm_side *s)
{
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *ctx;

	PEER_CHECK(ibv_req_notify_cq(s->id->recv_cq, 0) == 0);
	peer_say("sleeping");
	PEER_CHECK(ibv_get_cq_event(s->id->recv_cq_channel, &cq, &ctx) == 0);
	ibv_ack_cq_events(cq, 1);
	PEER_CHECK(cm_spin(s->id->recv_cq, &wc) == 1);
	p_took(s, &wc);
}

/* CLOCK_MONOTONIC in ns: the same clock in both processes. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Poll the receive CQ until @end (mono_ns()); then no more. A Send the
 * test posts as it ends may come within its last poll: it is taken, and
 * said ("polled 1").
 */
static void p_poll_until(struct cm_side *s, uint64_t end)
{
	unsigned int took = 0;
	struct ibv_wc wc;
	int n;

	peer_say("polling");
	while (mono_ns() < end) {
		n = ibv_poll_cq(s->id->recv_cq, 1, &wc);
		PEER_CHECK(n >= 0);
		if (n) {
			p_took(s, &wc);
			took++;
		}
	}
	peer_say("polled %u", took);
}

/*
 * The peer, on commands:
 *   sleep   arm, sleep on the channel for a Send: "sleeping", then "woke"
 *   spin N  poll for N Sends: "spinning", then "got"; then poll no more
 *   until T poll until T (mono_ns()): "polling", then "polled N" (Sends taken)
 *   take    poll for a Send that came meanwhile: "took"
 *   quit
 */
static int role_pinger(void)
{
	const char *cmd;
	struct cm_side s;

	cm_side_serve(&s, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	while (strcmp(cmd = peer_hear(), "quit") != 0) {
		unsigned long long end;
		struct ibv_wc wc;
		unsigned int n;

		if (strcmp(cmd, "sleep") == 0) {
			p_sleep(&s);
			peer_say("woke");
		} else if (sscanf(cmd, "spin %u", &n) == 1) {
			peer_say("spinning");
			while (n--) {
				PEER_CHECK(cm_spin(s.id->recv_cq, &wc) == 1);
				p_took(&s, &wc);
			}
			peer_say("got");
		} else if (sscanf(cmd, "until %llu", &end) == 1) {
			p_poll_until(&s, end);
		} else if (strcmp(cmd, "take") == 0) {
			PEER_CHECK(cm_spin(s.id->recv_cq, &wc) == 1);
			p_took(&s, &wc);
			peer_say("took");
		} else {
			peer_say("FAIL command %s", cmd);
			return 1;
		}
	}
	cm_side_close(&s);
	peer_say("done");
	return 0;
}

/* ==== the test ================================================================ */

/*
 * A signaled Send of 4 bytes, or (@send false) an RDMA Read of the peer's
 * region: a record only the peer's side can serve. ibv_post_send()'s return.
 */
static int post_wr(struct cm_client *c, uint64_t wr_id, bool send)
{
	struct ibv_sge sge = { (uintptr_t)c->buf, 4, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (!send) {
		wr.wr.rdma.remote_addr = c->raddr;
		wr.wr.rdma.rkey = c->rkey;
	}
	return ibv_post_send(c->id->qp, &wr, &bad);
}

static void post_send(struct cm_client *c, uint64_t wr_id)
{
	assert_int_equal(post_wr(c, wr_id, true), 0);
}

static void sent(struct cm_client *c, uint64_t wr_id)
{
	struct ibv_wc wc;

	assert_int_equal(cm_spin(c->id->send_cq, &wc), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/*
 * The peer arms its receive CQ and sleeps on its channel, long enough for
 * its net thread to sleep for good too; a Send wakes it.
 */
static void wake_sleeping_peer(struct cm_client *c)
{
	peer_send(&c->peer, "sleep");
	peer_expect(&c->peer, "sleeping");
	nanosleep(&(struct timespec){ 0, NET_SLEEPS_MS * 1000000L }, NULL);
	post_send(c, 1);
	sent(c, 1);
	peer_expect(&c->peer, "woke");
}

/* Poll a while: the peer spares records for a process whose poller runs too. */
static void poll_a_while(struct cm_client *c, unsigned int ms)
{
	uint64_t until = h_now_ms() + ms;
	struct ibv_wc wc;

	while (h_now_ms() < until)
		assert_int_equal(ibv_poll_cq(c->id->send_cq, 1, &wc), 0);
}

static struct softrdma_shm_stats stats(void)
{
	struct softrdma_shm_stats st;

	softrdma_shm_stats(&st);
	return st;
}

static void test_spared_and_late(void **state)
{
	unsigned long spared = 0, late = 0;
	uint64_t start = h_now_ms();
	unsigned int rounds = 0, together = 0;
	struct cm_client c;

	(void)state;
	cm_client_connect(&c, self, "pinger", BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	while (h_now_ms() - start < BUDGET_MS && !(spared && late) && !(slowed() && rounds >= 2)) {
		struct softrdma_shm_stats a, d;
		uint64_t sends_began;
		unsigned int i;

		rounds++;
		wake_sleeping_peer(&c);

		/* Each Send a chance for both pollers to run at once, on a loaded machine too. */
		peer_send(&c.peer, "spin %u", SPIN_SENDS);
		peer_expect(&c.peer, "spinning");
		poll_a_while(&c, 2);
		a = stats();
		sends_began = h_now_ms();
		/*
		 * One more than the peer takes: the last is sent the moment the
		 * one before it completed, which the peer's poller served just
		 * before it left. If spared, only the late ring (or the peer's
		 * net thread, at a look of its own) takes it.
		 */
		for (i = 0; i <= SPIN_SENDS; i++) {
			post_send(&c, 2);
			sent(&c, 2);
		}
		d = stats();
		if (h_now_ms() - sends_began < TOGETHER_MS)
			together++;
		peer_expect(&c.peer, "got");
		peer_send(&c.peer, "take");
		peer_expect(&c.peer, "took");
		spared += d.bells_spared - a.bells_spared;
		late += d.bells_late - a.bells_late;
	}
	print_message("%u rounds (%u with both pollers running): %lu records spared, %lu rung late\n",
		      rounds, together, spared, late);
	/*
	 * A Send waits for the peer's poller to take it: where each took a
	 * time slice (a process beside the test holds a core), the two pollers
	 * never ran at once, and nothing could be spared.
	 */
	if (!together)
		print_message("the two pollers never ran at once here: sparing is not checked\n");
	else if (!slowed()) {
		assert_true(spared > 0);
		assert_true(late > 0);
	}
	cm_client_disconnect(&c);
}

/*
 * Another thread of the test's process, polling a CQ where nothing comes
 * until @post_at (mono_ns()): then it posts the Read or Send (on the test's
 * connection) and polls no more. The test's own thread sleeps meanwhile,
 * so that only this thread and the peer's poller want a core.
 */
struct side_poller {
	pthread_t thread;
	struct cm_client *c;
	uint64_t post_at;
	bool send;
	bool failed;			/* something came to its CQ, or the post failed */
};

static void *side_poll(void *arg)
{
	struct side_poller *y = arg;
	struct ibv_wc wc;

	while (mono_ns() < y->post_at) {
		if (ibv_poll_cq(y->c->id->recv_cq, 1, &wc) != 0) {
			y->failed = true;
			return NULL;
		}
	}
	y->failed = post_wr(y->c, 3, y->send) != 0;
	return NULL;
}

/* Take the channel's events (it is non-blocking) and acknowledge them. */
static void drain_events(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;

	while (ibv_get_cq_event(ch, &cq, &ctx) == 0)
		ibv_ack_cq_events(cq, 1);
}

/* Sleep on @ch for the completion of @wr_id (for at most @ms): true if it came. */
static bool slept_for(struct cm_client *c, struct ibv_comp_channel *ch, uint64_t wr_id, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	uint64_t deadline = h_now_ms() + (uint64_t)ms;
	struct ibv_wc wc;

	while (h_now_ms() < deadline) {
		int left = (int)(deadline - h_now_ms());

		if (poll(&pfd, 1, left > 0 ? left : 0) <= 0)
			continue;
		drain_events(ch);
		if (ibv_poll_cq(c->id->send_cq, 1, &wc) == 1) {
			assert_int_equal(wc.wr_id, wr_id);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			return true;
		}
		assert_int_equal(ibv_req_notify_cq(c->id->send_cq, 0), 0);
	}
	return false;
}

/* Rounds of the case below: the post must come within the peer's stamp's freshness in one. */
#define ARMED_ROUNDS	10
/* Far longer than any ring, late (SHM_LAZY_MS) or not, or wake-up on a loaded machine. */
#define ARMED_WAIT_MS	3000
/* The peer polls until this long after it is told. */
#define PEER_POLL_NS	20000000u
/* And the Read is posted this long after the peer's last poll began. */
#define AFTER_PEER_NS	5000u

/*
 * The rounds of the second case, with an RDMA Read (@send false), which
 * is never spared (nothing at the peer would look for it), or a Send,
 * which may be: then only the test's net thread, woken to look lazily
 * while the side poller ran, rings late for it.
 */
static void posted_after_arm(bool send)
{
	const char *what = send ? "Send" : "Read";
	struct ibv_comp_channel *ch;
	unsigned long spared = 0;
	unsigned int round;
	struct cm_client c;

	/* No ACK timeout: a record left untaken is never sent again, it waits for good. */
	cm_client_connect_timeout(&c, self, "pinger", BUF_LEN, IBV_ACCESS_LOCAL_WRITE, 0);
	ch = c.id->send_cq_channel;
	assert_non_null(ch);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	for (round = 0; round < ARMED_ROUNDS; round++) {
		struct side_poller y = { .c = &c, .send = send };
		struct softrdma_shm_stats a, d;
		bool took_early;
		uint64_t end;

		/* The peer's net thread asleep for good (its poller armed), then ours. */
		wake_sleeping_peer(&c);
		assert_int_equal(ibv_req_notify_cq(c.id->send_cq, 0), 0);
		nanosleep(&(struct timespec){ 0, NET_SLEEPS_MS * 1000000L }, NULL);
		drain_events(ch);

		/*
		 * The peer polls; so does another thread of ours while this one
		 * arms. That one posts the moment the peer stops, while the
		 * peer's stamp still says it polls (60 us).
		 */
		end = mono_ns() + PEER_POLL_NS;
		y.post_at = end + AFTER_PEER_NS;
		assert_int_equal(pthread_create(&y.thread, NULL, side_poll, &y), 0);
		peer_send(&c.peer, "until %llu", (unsigned long long)end);
		peer_expect(&c.peer, "polling");
		assert_int_equal(ibv_req_notify_cq(c.id->send_cq, 0), 0);
		a = stats();
		assert_int_equal(pthread_join(y.thread, NULL), 0);
		d = stats();
		assert_false(y.failed);
		spared += d.bells_spared - a.bells_spared;
		took_early = strcmp(peer_expect(&c.peer, "polled"), " 1") == 0;
		if (!slept_for(&c, ch, 3, ARMED_WAIT_MS))
			fail_msg("round %u: the %s posted after the arm did not complete in %d ms "
				 "(%lu spared)", round, what, ARMED_WAIT_MS,
				 d.bells_spared - a.bells_spared);
		/* Unless its last poll took it, the Send waits on the peer's CQ. */
		if (send && !took_early) {
			peer_send(&c.peer, "take");
			peer_expect(&c.peer, "took");
		}
	}
	print_message("%u rounds: %lu %ss posted after the arm were spared their ring\n", round,
		      spared, what);
	if (!send)
		assert_int_equal(spared, 0);
	cm_client_disconnect(&c);
}

static void test_read_posted_after_arm(void **state)
{
	(void)state;
	posted_after_arm(false);
}

static void test_send_posted_after_arm(void **state)
{
	(void)state;
	posted_after_arm(true);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spared_and_late),
		cmocka_unit_test(test_read_posted_after_arm),
		cmocka_unit_test(test_send_posted_after_arm),
	};
	int failed;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0)
		return strcmp(argv[2], "pinger") == 0 ? role_pinger() : 2;
	self = argv[0];
	/* Reads served by the peer's side, not copied by ours (the peer inherits it). */
	setenv("SOFTRDMA_SHM_ONESIDED", "0", 1);
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("doorbell", tests, h_group_thread, NULL);
	peer_cleanup_dir();
	return failed;
}
