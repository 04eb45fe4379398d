/* SPDX-License-Identifier: MIT */
/*
 * The system calls of a busy poller (rpcrdma_pace_due()): a server whose
 * connections all have work reads its epoll set, and a client polled without
 * waits its CM channel, about once a millisecond, not once in 16 polls; a
 * connection asleep beside a busy one is still heard of within a few
 * passes. White box: this thread owns both sides and steps the fabric, and
 * it counts its own epoll_wait() and read() calls by defining them over
 * libc's.
 */
#define _GNU_SOURCE	/* RTLD_NEXT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define BUSY_CALLS 3000

/* Only this thread's calls count: the fabric's threads have their own. */
static _Thread_local bool counting;
static unsigned int epoll_waits, reads;

int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	static int (*real)(int, struct epoll_event *, int, int);

	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	if (counting)
		epoll_waits++;
	return real(epfd, evs, max, timeout);
}

/* softrdma's rdma_get_cm_event() reads an eventfd: a bound on the CM reads. */
ssize_t read(int fd, void *buf, size_t len)
{
	static ssize_t (*real)(int, void *, size_t);

	if (!real)
		real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	if (counting)
		reads++;
	return real(fd, buf, len);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct fixture {
	struct harness_server hs;
	struct rpcrdma_clnt *busy;
	struct rpcrdma_clnt *sleeper;
};

/* A client with one call answered. */
static struct rpcrdma_clnt *fixture_clnt(struct fixture *fx)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	unsigned char msg[16], reply[16];
	size_t rlen = sizeof(reply);
	struct rpcrdma_clnt *clnt;

	harness_clnt_attr(&fx->hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	harness_fill_msg(msg, sizeof(msg), 1, 1);
	assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
	return clnt;
}

/* The busy client, and with @sleeper a second one; then this thread owns both sides. */
static void fixture_up(struct fixture *fx, bool sleeper)
{
	memset(fx, 0, sizeof(*fx));
	assert_int_equal(softrdma_set_mode(harness_run_mode()), 0);
	assert_int_equal(harness_server_start(&fx->hs, 8, 0, HARNESS_ECHO), 0);
	fx->busy = fixture_clnt(fx);
	if (sleeper)
		fx->sleeper = fixture_clnt(fx);
	assert_true(harness_wait_established(&fx->hs, sleeper ? 2 : 1, 5000));
	atomic_store(&fx->hs.sh->stop, true);
	pthread_join(fx->hs.thread, NULL);
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_STEP), 0);
}

static void fixture_down(struct fixture *fx)
{
	counting = false;
	assert_int_equal(softrdma_set_mode(harness_run_mode()), 0);
	rpcrdma_clnt_destroy(fx->busy);
	if (fx->sleeper)
		rpcrdma_clnt_destroy(fx->sleeper);
	rpcrdma_svc_destroy(fx->hs.svc);
	fx->hs.svc = NULL;
	harness_assert_fabric_idle();
}

struct paced_call {
	struct rpcrdma_call call;
	unsigned char msg[16];
	unsigned char reply[16];
	bool done;
};

static void paced_done(struct rpcrdma_call *call)
{
	((struct paced_call *)call->arg)->done = true;
}

static void submit(struct rpcrdma_clnt *clnt, struct paced_call *c, uint32_t xid)
{
	memset(c, 0, sizeof(*c));
	harness_fill_msg(c->msg, sizeof(c->msg), xid, xid);
	RPCRDMA_INIT(&c->call);
	c->call.msg = c->msg;
	c->call.msg_len = sizeof(c->msg);
	c->call.reply = c->reply;
	c->call.reply_max = sizeof(c->reply);
	c->call.done = paced_done;
	c->call.arg = c;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &c->call), 0);
}

/* One busy pass of both sides: the server's poll, the busy client's. */
static void pass(struct fixture *fx)
{
	softrdma_progress_all();
	rpcrdma_svc_poll(fx->hs.svc, 64);
	softrdma_progress_all();
	rpcrdma_clnt_poll(fx->busy, 16);
}

/* One call on the busy client, polled to its end; the passes it took. */
static unsigned int busy_call(struct fixture *fx, uint32_t xid)
{
	struct paced_call c;
	unsigned int passes = 0;

	submit(fx->busy, &c, xid);
	while (!c.done && passes < 100) {
		pass(fx);
		passes++;
	}
	assert_true(c.done);
	assert_int_equal(c.call.status, 0);
	return passes;
}

/*
 * While every connection of the server has work, the poller reads its
 * epoll set and the busy client its CM channel about once a millisecond:
 * calls taking a few microseconds each make a few such reads in all, where
 * one in 16 polls would make hundreds.
 */
static void t_busy_poller_quiet(void **state)
{
	struct fixture fx;
	unsigned int i, passes = 0;
	double t0, ms;

	(void)state;
	harness_skip_srq("with shared CQs every pass reads the epoll set");
	fixture_up(&fx, false);
	/* The connecting call's wait said what was ready; an arm forgets that. */
	rpcrdma_clnt_arm(fx.busy);
	for (i = 0; i < 200; i++)
		passes += busy_call(&fx, 0x1000 + i);
	epoll_waits = reads = 0;
	counting = true;
	t0 = now_ms();
	for (i = 0, passes = 0; i < BUSY_CALLS; i++)
		passes += busy_call(&fx, 0x2000 + i);
	ms = now_ms() - t0;
	counting = false;
	print_message("%u calls, %u passes in %.1f ms: %u epoll_wait, %u read\n",
		      BUSY_CALLS, passes, ms, epoll_waits, reads);
	/* At most one each per millisecond begun, and one for the first pass. */
	assert_true(epoll_waits <= (unsigned int)ms + 2);
	assert_true(reads <= (unsigned int)ms + 2);
	fixture_down(&fx);
}

/*
 * Beside a busy connection, a sleeping one (armed, heard of only through
 * the epoll set) has its call answered within a few busy passes, not a
 * millisecond later.
 */
static void t_sleeper_heard_while_busy(void **state)
{
	struct fixture fx;
	struct paced_call c;
	unsigned int i, passes;

	(void)state;
	harness_skip_srq("with shared CQs every pass reads the epoll set");
	fixture_up(&fx, true);
	/* Let the sleeper's connection arm: only its descriptor can wake it. */
	for (i = 0; i < 20; i++) {
		pass(&fx);
		rpcrdma_clnt_poll(fx.sleeper, 16);
		rpcrdma_clnt_arm(fx.sleeper);
	}
	for (i = 0; i < 200; i++)
		busy_call(&fx, 0x3000 + i);
	submit(fx.sleeper, &c, 0x4000);
	softrdma_progress_all();
	for (i = 0, passes = 0; !c.done && i < 2000; i++) {
		struct paced_call b;

		submit(fx.busy, &b, 0x5000 + i);
		while (!b.done && passes < 100000) {
			pass(&fx);
			rpcrdma_clnt_poll(fx.sleeper, 16);
			passes++;
		}
	}
	print_message("the sleeper's call took %u busy passes\n", passes);
	assert_true(c.done);
	assert_int_equal(c.call.status, 0);
	/* One pass in RPCRDMA_PACE_POLLS reads the set, and the reply takes a few more. */
	assert_true(passes <= 16 + 8);
	fixture_down(&fx);
}

/* One call on @clnt, polled to its end; the passes it took. */
static unsigned int call_on(struct fixture *fx, struct rpcrdma_clnt *clnt, uint32_t xid)
{
	struct paced_call c;
	unsigned int passes = 0;

	submit(clnt, &c, xid);
	while (!c.done && passes < 100) {
		softrdma_progress_all();
		rpcrdma_svc_poll(fx->hs.svc, 64);
		softrdma_progress_all();
		rpcrdma_clnt_poll(clnt, 16);
		passes++;
	}
	assert_true(c.done);
	assert_int_equal(c.call.status, 0);
	return passes;
}

/*
 * Calls that take turns on two connections: each finds its connection
 * asleep. A connection that found nothing the pass after its call arms in
 * the visit that serves its next one (svc_conn.c, early arms): one visit
 * a call, not a second that finds nothing. A call is answered in the pass
 * its Send arrived in, and each wake-up reads the completion channel once:
 * the event the arm raised, not until it is empty.
 */
static void t_round_robin_wakes(void **state)
{
	struct softrdma_qp_stats c0, s0, c1, s1;
	struct rpcrdma_stats v0 = { RPCRDMA_SIZED(v0) }, v1 = { RPCRDMA_SIZED(v1) };
	struct fixture fx;
	unsigned int i, passes = 0, calls = 400;
	unsigned long arms, visits;
	double t0, ms;

	(void)state;
	harness_skip_srq("with shared CQs no connection sleeps by itself");
	fixture_up(&fx, true);
	for (i = 0; i < 50; i++)
		call_on(&fx, i % 2 ? fx.sleeper : fx.busy, 0x9000 + i);
	softrdma_qp_stats_sum(&c0, &s0);
	assert_int_equal(rpcrdma_svc_stats(fx.hs.svc, &v0), 0);
	epoll_waits = reads = 0;
	counting = true;
	t0 = now_ms();
	for (i = 0; i < calls; i++)
		passes += call_on(&fx, i % 2 ? fx.sleeper : fx.busy, 0xa000 + i);
	ms = now_ms() - t0;
	counting = false;
	softrdma_qp_stats_sum(&c1, &s1);
	assert_int_equal(rpcrdma_svc_stats(fx.hs.svc, &v1), 0);
	arms = s1.recv_cq_arms - s0.recv_cq_arms;
	visits = (unsigned long)(v1.conn_visits - v0.conn_visits);
	print_message("%u calls taking turns in %.1f ms: %u passes, %lu visits, %lu arms, "
		      "%u epoll_wait, %u read\n", calls, ms, passes, visits, arms, epoll_waits, reads);
	/* One visit a call, and one more for a signaled reply's completion (1 in 16). */
	assert_true(visits <= calls + calls / 16 + 2);
	/*
	 * One pass a call; a few more where a signaled reply's completion kept
	 * the other connection awake a pass longer (one reply in
	 * SVC_RDMA_UNSIG_MAX, 16, is signaled).
	 */
	assert_true(passes <= calls + calls / 16 + 2);
	/*
	 * Nearly every call's connection slept in between: one arm and one
	 * event per call. (Beside busy processes a few calls in 400 find theirs
	 * armed already, seen under TSan: fewer arms, and a pass fewer each.)
	 */
	assert_true(arms >= calls - calls / 16);
	/*
	 * And the looks at the device's async events: one arm in 16 takes one
	 * (ep.c), and each of the four endpoints (two clients, two server
	 * connections) one a millisecond at most while it polls (ep.h).
	 */
	assert_true(reads <= calls + calls / 16 + 4 * ((unsigned int)ms + 1));
	fixture_down(&fx);
}

/*
 * A pass that answers a call on one connection and puts another to sleep
 * says it did work: rpcrdma_svc_run()'s threads dispatch the calls a wait
 * queued only once it returns, and a pass that returned 0 would have them
 * wait for the next wake-up.
 */
static void t_pass_reports_work(void **state)
{
	struct paced_call a, b;
	struct fixture fx;
	unsigned int i;
	int n = 0;

	(void)state;
	harness_skip_srq("with shared CQs no connection sleeps by itself");
	fixture_up(&fx, true);
	for (i = 0; i < 40; i++) {
		/* Both connections busy: each stays on the ready list. */
		submit(fx.busy, &a, 0xb000 + 2 * i);
		submit(fx.sleeper, &b, 0xb001 + 2 * i);
		while (!a.done || !b.done) {
			softrdma_progress_all();
			rpcrdma_svc_poll(fx.hs.svc, 64);
			softrdma_progress_all();
			rpcrdma_clnt_poll(fx.busy, 16);
			rpcrdma_clnt_poll(fx.sleeper, 16);
		}
		/* Now only the second calls: the first connection finds nothing and arms. */
		submit(fx.sleeper, &b, 0xc000 + i);
		softrdma_progress_all();
		n = rpcrdma_svc_poll(fx.hs.svc, 64);
		assert_true(n > 0);
		while (!b.done) {
			softrdma_progress_all();
			rpcrdma_svc_poll(fx.hs.svc, 64);
			softrdma_progress_all();
			rpcrdma_clnt_poll(fx.sleeper, 16);
		}
	}
	fixture_down(&fx);
}

/* One call on the busy client, then @think server passes with nothing to do. */
static unsigned int call_then_think(struct fixture *fx, uint32_t xid, unsigned int think)
{
	unsigned int passes = busy_call(fx, xid), i;

	for (i = 0; i < think; i++) {
		softrdma_progress_all();
		rpcrdma_svc_poll(fx->hs.svc, 64);
	}
	return passes + think;
}

/* Over @calls calls with @think idle passes after each: the server's arms and epoll_waits. */
static void think_calls(struct fixture *fx, unsigned int calls, unsigned int think,
			unsigned long *arms, unsigned int *waits, unsigned int *passes)
{
	struct softrdma_qp_stats c0, s0, c1, s1;
	unsigned int i;

	for (i = 0; i < 100; i++)
		call_then_think(fx, 0x6000 + i, think);
	softrdma_qp_stats_sum(&c0, &s0);
	epoll_waits = 0;
	counting = true;
	for (i = 0, *passes = 0; i < calls; i++)
		*passes += call_then_think(fx, 0x7000 + i, think);
	counting = false;
	softrdma_qp_stats_sum(&c1, &s1);
	*arms = s1.recv_cq_arms - s0.recv_cq_arms;
	*waits = epoll_waits;
}

/*
 * A client that calls one at a time leaves the server a few idle passes
 * between calls. Without RPCRDMA_SVC_BUSY_POLL each idle pass of the
 * caller's reads the epoll set and the connection is armed at each gap;
 * with it, the connection stays polled through the gap and idle passes
 * read one in 16. A wait still arms it before it sleeps, and a call wakes
 * it.
 */
static void t_busy_poll_flag(void **state)
{
	struct fixture fx;
	struct paced_call c;
	unsigned long arms;
	unsigned int waits, passes, i;

	(void)state;
	harness_skip_srq("with shared CQs every pass reads the epoll set");
	fixture_up(&fx, false);
	think_calls(&fx, 500, 8, &arms, &waits, &passes);
	print_message("without the flag: %u passes, %lu arms, %u epoll_wait\n", passes, arms, waits);
	assert_true(arms >= 500);
	assert_true(waits >= 500 * 6);	/* every idle pass but the first, busy one */
	fixture_down(&fx);

	setenv("E2E_SVC_BUSY_POLL", "1", 1);
	fixture_up(&fx, false);
	unsetenv("E2E_SVC_BUSY_POLL");
	think_calls(&fx, 500, 8, &arms, &waits, &passes);
	print_message("with RPCRDMA_SVC_BUSY_POLL: %u passes, %lu arms, %u epoll_wait\n", passes,
		      arms, waits);
	assert_int_equal(arms, 0);
	assert_true(waits <= passes / 16 + 2);

	/* A wait arms at once; a call then wakes it. */
	{
		struct softrdma_qp_stats cb, sb, ca, sa;

		softrdma_qp_stats_sum(&cb, &sb);
		softrdma_progress_all();
		assert_int_equal(rpcrdma_svc_wait(fx.hs.svc, 0), 0);
		softrdma_qp_stats_sum(&ca, &sa);
		assert_true(sa.recv_cq_arms > sb.recv_cq_arms);
		assert_int_equal(rpcrdma_svc_arm(fx.hs.svc), 0);
	}
	submit(fx.busy, &c, 0x8000);
	for (i = 0; i < 50 && !c.done; i++) {
		softrdma_progress_all();
		rpcrdma_svc_wait(fx.hs.svc, 0);
		softrdma_progress_all();
		rpcrdma_clnt_poll(fx.busy, 16);
	}
	assert_true(c.done);
	assert_int_equal(c.call.status, 0);
	fixture_down(&fx);
}

int main(void)
{
	if (harness_white_box_skip())
		return 77;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_busy_poller_quiet),
		cmocka_unit_test(t_sleeper_heard_while_busy),
		cmocka_unit_test(t_busy_poll_flag),
		cmocka_unit_test(t_round_robin_wakes),
		cmocka_unit_test(t_pass_reports_work),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
